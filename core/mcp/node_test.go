package mcp_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestNodeSDK runs testdata/node's tests (node --test): the official
// TypeScript SDK's client (@modelcontextprotocol/sdk, pinned by
// package-lock.json, installed by npm ci into the git-ignored
// node_modules) against aivis serve, listing and calling every tool.
// Node.js and npm are required (make deps installs them).
func TestNodeSDK(t *testing.T) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: this test needs Node.js and npm (make deps installs them)", tool)
		}
	}
	dir := filepath.Join("testdata", "node")
	install := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	install.Dir = dir
	install.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	e := serve(t)
	ca, err := filepath.Abs(e.CA)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "--test", "mcp.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+ca, "AIVIS_URL="+e.URL, "AIVIS_KEY="+e.Key.Key,
		"AIVIS_READ_KEY="+e.ReadKey.Key, "AIVIS_DOMAIN="+e.Domain)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("node --test: %v", err)
	}
	if !bytes.Contains(out, []byte("# pass 3")) || !bytes.Contains(out, []byte("# fail 0")) {
		t.Fatal("node --test did not pass its 3 tests")
	}
}
