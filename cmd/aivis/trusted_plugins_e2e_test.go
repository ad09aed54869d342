package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aivis/aivis/client"
)

// TestTrustedPluginsDir: the connectors of trusted_plugins_dir (the
// image's) are registered when serve starts and run with no command of
// the operator's; a directory that is not there stops serve at start,
// naming the setting.
func TestTrustedPluginsDir(t *testing.T) {
	dir, plugins := t.TempDir(), t.TempDir()
	buildTo := filepath.Join(plugins, "partner-chat")
	if out, err := exec.Command("go", "build", "-o", buildTo, "../../examples/partner-connector").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	a := newAccount(t, dir, "starter", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--trusted-plugins-dir", plugins)
	var page client.List[client.ConnectorKind]
	r := s.do(t, req{method: "GET", path: "/v1/connectors", header: bearer(k)})
	r.decode(t, &page)
	if r.Status != 200 || len(page.Items) != 1 || page.Items[0].Name != "partner-chat" || page.Items[0].Health.State != "running" {
		t.Fatalf("connectors: %d %s", r.Status, r.Body)
	}
	var list []map[string]any
	cli(t, dir, &list, "plugin", "list")
	if len(list) != 1 || list[0]["path"] != buildTo || list[0]["state"] != "ok" {
		t.Fatalf("plugin list: %v", list)
	}
	s.stop()

	cmd := exec.Command(binary, "serve", "--data-dir", dir, "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--trusted-plugins-dir", filepath.Join(plugins, "missing"))
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "trusted_plugins_dir") {
		t.Fatalf("serve with a missing trusted_plugins_dir: %v\n%s", err, out)
	}
}
