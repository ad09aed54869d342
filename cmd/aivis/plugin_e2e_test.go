package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
