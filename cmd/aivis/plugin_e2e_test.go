package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPluginRegistry(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "partner-connector")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/partner-connector").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var reg map[string]any
	cli(t, dir, &reg, "plugin", "register", bin)
	if reg["name"] != "partner-chat" || reg["kind"] != "chat" || reg["version"] != "1.0.0" || reg["state"] != "ok" || len(reg["sha256"].(string)) != 64 {
		t.Fatalf("register: %v", reg)
	}
	var list []map[string]any
	cli(t, dir, &list, "plugin", "list")
	if len(list) != 1 || list[0]["state"] != "ok" || list[0]["path"] != bin {
		t.Fatalf("list: %v", list)
	}

	// A binary changed after registration is reported, and would not start.
	f, err := os.OpenFile(bin, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("tampered"))
	f.Close()
	cli(t, dir, &list, "plugin", "list")
	if list[0]["state"] != "changed" {
		t.Fatalf("after a change: %v", list)
	}

	// Something that is not a plugin is refused, and nothing is recorded.
	msg := cliFails(t, dir, "plugin", "register", "/bin/true")
	if !strings.Contains(msg, "not a working aivis connector plugin") {
		t.Fatalf("registering /bin/true: %s", msg)
	}
	var removed map[string]any
	cli(t, dir, &removed, "plugin", "remove", "partner-chat")
	cli(t, dir, &list, "plugin", "list")
	if len(list) != 0 {
		t.Fatalf("after remove: %v", list)
	}
	if msg := cliFails(t, dir, "plugin", "remove", "partner-chat"); !strings.Contains(msg, "no plugin") {
		t.Fatalf("removing twice: %s", msg)
	}
}

// pidsOf lists the processes running the binary at path.
func pidsOf(path string) []string {
	out, _ := exec.Command("pgrep", "-f", "^"+path+"$").Output()
	return strings.Fields(string(out))
}

func TestServeRunsRegisteredConnectors(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "partner-connector")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/partner-connector").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cli(t, dir, nil, "plugin", "register", bin)
	a := newAccount(t, dir, "starter", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir)
	r := s.do(t, req{method: "GET", path: "/v1/connectors", header: bearer(k)})
	var page struct {
		Items []struct {
			Name           string         `json:"name"`
			Kind           string         `json:"kind"`
			SettingsSchema map[string]any `json:"settings_schema"`
			SecretFields   []string       `json:"secret_fields"`
			Health         struct {
				State   string  `json:"state"`
				Problem *string `json:"problem"`
			} `json:"health"`
		} `json:"items"`
	}
	r.decode(t, &page)
	if r.Status != 200 || len(page.Items) != 1 || page.Items[0].Name != "partner-chat" || page.Items[0].Health.State != "running" ||
		page.Items[0].SettingsSchema["type"] != "object" || page.Items[0].SecretFields[0] != "webhook_url" {
		t.Fatalf("connectors: %d %s", r.Status, r.Body)
	}
	if len(pidsOf(bin)) != 1 {
		t.Fatalf("plugin processes: %v", pidsOf(bin))
	}

	// The server killed outright: its plugin does not outlive it.
	s.cmd.Process.Kill()
	s.cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for len(pidsOf(bin)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the plugin outlived the server: %v", pidsOf(bin))
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A binary changed since registration is not started, and says why.
	f, _ := os.OpenFile(bin, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte("x"))
	f.Close()
	s = start(t, dir)
	r = s.do(t, req{method: "GET", path: "/v1/connectors", header: bearer(k)})
	r.decode(t, &page)
	if len(page.Items) != 1 || page.Items[0].Health.State != "stopped" || page.Items[0].Health.Problem == nil ||
		!strings.Contains(*page.Items[0].Health.Problem, "changed") {
		t.Fatalf("a changed binary: %s", r.Body)
	}
	if len(pidsOf(bin)) != 0 {
		t.Fatal("a changed binary was started")
	}
}
