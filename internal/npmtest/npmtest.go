// Package npmtest installs pinned npm packages for tests that check aivis
// against JavaScript tools (the Standard Webhooks library, axe-core).
package npmtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Install returns an npm prefix holding pkg at version, installing it on
// first use into the user's cache (never into the repository). Node.js and
// npm are required: make test installs them (make deps), so their absence fails the
// test rather than skipping it.
func Install(t testing.TB, pkg, version string) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: this test needs the npm package %s and so Node.js and npm "+
				"(make deps installs them)", tool, pkg)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	parent := filepath.Join(cache, "aivis-test", "node")
	dir := filepath.Join(parent, pkg+"@"+version)
	if installed(dir, pkg, version) {
		return dir
	}
	// A scoped package (@scope/name) is a directory within its scope's.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	// Install beside the final directory and rename, so that concurrent
	// runs never see half an install.
	tmp, err := os.MkdirTemp(parent, "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--prefix", tmp, pkg+"@"+version)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s@%s: %v\n%s", pkg, version, err, out)
	}
	if !installed(tmp, pkg, version) {
		t.Fatalf("npm install %s@%s left no package in %s", pkg, version, tmp)
	}
	if err := os.Rename(tmp, dir); err != nil && !installed(dir, pkg, version) {
		t.Fatal(err)
	}
	return dir
}

// installed reports whether the prefix dir holds pkg at version.
func installed(dir, pkg, version string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
	if err != nil {
		return false
	}
	var p struct{ Version string }
	return json.Unmarshal(b, &p) == nil && p.Version == version
}
