package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
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
	orig, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	tamper(t, bin)
	cli(t, dir, &list, "plugin", "list")
	if list[0]["state"] != "changed" {
		t.Fatalf("after a change: %v", list)
	}
	// The registered binary in the data directory's plugins directory, as
	// an instance on another machine keeps it, is found there.
	if err := os.MkdirAll(filepath.Join(dir, "plugins"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugins", "chat"), orig, 0o755); err != nil {
		t.Fatal(err)
	}
	cli(t, dir, &list, "plugin", "list")
	if list[0]["state"] != "ok" {
		t.Fatalf("with the registered binary in the plugins directory: %v", list)
	}
	os.Remove(filepath.Join(dir, "plugins", "chat"))

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

// tamper changes the binary at path: a copy with bytes added takes its
// place, as an install does. A file replaced whole, unlike one written in
// place, cannot be refused as busy (ETXTBSY) by a plugin process still
// leaving it.
func tamper(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, append(b, "tampered"...), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
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
	tamper(t, bin)
	s = start(t, dir)
	r = s.do(t, req{method: "GET", path: "/v1/connectors", header: bearer(k)})
	r.decode(t, &page)
	if len(page.Items) != 1 || page.Items[0].Health.State != "unavailable" || page.Items[0].Health.Problem == nil ||
		!strings.Contains(*page.Items[0].Health.Problem, "changed") {
		t.Fatalf("a changed binary: %s", r.Body)
	}
	if len(pidsOf(bin)) != 0 {
		t.Fatal("a changed binary was started")
	}
}

// TestConnectorsOnEveryInstance: two servers on one store each run the
// registered connectors and list, per connector, its health on both; a
// plugin registered while they serve is started by each within a
// refresh, with no restart.
func TestConnectorsOnEveryInstance(t *testing.T) {
	dir := t.TempDir()
	cli(t, dir, nil, "plugin", "register", buildPlugin(t, "../../examples/partner-connector", "partner-connector"))
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	servers := []*server{start(t, dir, "--counter", "store"), start(t, dir, "--counter", "store")}
	// running lists the instances on which server s says the connector
	// runs, if it runs it itself.
	running := func(s *server, connector string) []string {
		var page client.List[client.ConnectorKind]
		r := s.do(t, req{method: "GET", path: "/v1/connectors", header: bearer(k)})
		if r.Status != 200 {
			t.Fatalf("GET /v1/connectors: %d %s", r.Status, r.Body)
		}
		r.decode(t, &page)
		var out []string
		for _, c := range page.Items {
			if c.Name != connector || c.Health.State != "running" {
				continue
			}
			for _, i := range c.Instances {
				if i.State == "running" && i.Problem == nil && time.Since(i.CheckedAt) < time.Minute {
					out = append(out, i.Instance)
				}
			}
		}
		return out
	}
	// Each instance reads the others' reports every 10 s (and reads the
	// registry every 5 s); each is asked once a second, well within the
	// tier.
	everywhere := func(connector string) []string {
		t.Helper()
		deadline := time.Now().Add(40 * time.Second)
		for {
			r0, r1 := running(servers[0], connector), running(servers[1], connector)
			if len(r0) == 2 && slices.Equal(r0, r1) && r0[0] != r0[1] {
				return r0
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the two servers list it running on %v and on %v, want both on both", connector, r0, r1)
			}
			time.Sleep(time.Second)
		}
	}
	instances := everywhere("partner-chat")

	cli(t, dir, nil, "plugin", "register", buildPlugin(t, "../../plugins/host/testdata/testplugin", "testplugin"))
	if got := everywhere("test"); !slices.Equal(got, instances) {
		t.Fatalf("the plugin registered while they serve runs on %v, the first on %v", got, instances)
	}
}
