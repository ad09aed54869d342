package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnit: systemd-analyze verify finds nothing to say of the unit
// (its ExecStart pointed at a binary this machine has), and rates its
// exposure OK (at most 2 of 10).
func TestSystemdUnit(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Fatal("systemd-analyze is missing (Debian: apt-get install -y systemd; make deps installs it)")
	}
	unit, err := os.ReadFile(filepath.Join(root, "deploy", "systemd", "aivis.service"))
	if err != nil {
		t.Fatal(err)
	}
	const bin = "ExecStart=/usr/local/bin/aivis serve"
	if !strings.Contains(string(unit), "\n"+bin+"\n") {
		t.Fatalf("the unit does not say %s", bin)
	}
	stub, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "aivis.service")
	if err := os.WriteFile(path, []byte(strings.Replace(string(unit), bin, "ExecStart="+stub+" serve", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
	var said []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// systemd's own list of system calls names some this machine's
		// libseccomp does not know.
		if l != "" && !strings.Contains(l, "Failed to parse system call, ignoring") {
			said = append(said, l)
		}
	}
	if err != nil || len(said) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, strings.Join(said, "\n"))
	}
	out, err = exec.Command("systemd-analyze", "security", "--offline=yes", "--threshold=20", path).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: %v\n%s", err, out)
	}
	i := strings.Index(string(out), "Overall exposure level")
	if i < 0 {
		t.Fatalf("systemd-analyze security:\n%s", out)
	}
	t.Log(strings.TrimSpace(string(out[i:])))
}
