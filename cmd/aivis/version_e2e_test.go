package main

import (
	"debug/buildinfo"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// versionOf runs `aivis version` of a binary three ways and checks they
// agree: the line of `version` and of `--version`, and the fields of
// `version --json`, which it returns.
func versionOf(t *testing.T, bin string) (line string, fields map[string]string) {
	t.Helper()
	out := func(args ...string) string {
		b, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("aivis %s: %v", strings.Join(args, " "), err)
		}
		return string(b)
	}
	line = out("version")
	if dashed := out("--version"); dashed != line {
		t.Errorf("--version printed %q, version %q", dashed, line)
	}
	if err := json.Unmarshal([]byte(out("version", "--json")), &fields); err != nil {
		t.Fatal(err)
	}
	return line, fields
}

// TestVersionStamped: a binary built with the linker's -X stamps, as make
// build does, prints them and the Go version.
func TestVersionStamped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "aivis")
	pkg := "github.com/aivis/aivis/internal/buildinfo"
	ldflags := "-X " + pkg + ".version=v1.2.3-4-gabcdef0-dirty -X " + pkg + ".commit=abcdef0123456789 -X " + pkg + ".date=2026-11-27T12:00:00Z"
	if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	line, fields := versionOf(t, bin)
	if want := "aivis v1.2.3-4-gabcdef0-dirty (commit abcdef0123456789, 2026-11-27T12:00:00Z) " + runtime.Version() + "\n"; line != want {
		t.Errorf("version printed %q, want %q", line, want)
	}
	want := map[string]string{"version": "v1.2.3-4-gabcdef0-dirty", "commit": "abcdef0123456789", "date": "2026-11-27T12:00:00Z", "go_version": runtime.Version()}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("version --json %s = %q, want %q (all: %v)", k, fields[k], v, fields)
		}
	}
	if len(fields) != len(want) {
		t.Errorf("version --json: %v", fields)
	}
	if err := exec.Command(bin, "version", "extra").Run(); err == nil {
		t.Error("version with an argument succeeded")
	}
}

// TestVersionUnstamped: a binary built without stamps (go build, as the
// tests build it) says what Go recorded in it, the module's version and
// the commit and its time when Go recorded them, else (devel); serve logs
// the same at start, in one line.
func TestVersionUnstamped(t *testing.T) {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"version": bi.Main.Version, "go_version": bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			want["commit"] = s.Value
		case "vcs.time":
			want["date"] = s.Value
		}
	}
	if want["version"] == "" {
		want["version"] = "(devel)"
	}
	line, fields := versionOf(t, binary)
	for _, k := range []string{"version", "commit", "date", "go_version"} {
		if fields[k] != want[k] {
			t.Errorf("version --json %s = %q, want %q", k, fields[k], want[k])
		}
	}
	if !strings.HasPrefix(line, "aivis "+want["version"]) || !strings.HasSuffix(line, " "+bi.GoVersion+"\n") {
		t.Errorf("version printed %q", line)
	}

	s := start(t, t.TempDir(), "--log-level", "info", "--log-format", "json")
	var started []map[string]any
	waitFor(t, "serve's start line", func() bool {
		started = nil
		for _, l := range strings.Split(s.Stderr.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "aivis starting" {
				started = append(started, rec)
			}
		}
		return len(started) > 0
	})
	if len(started) != 1 || started[0]["level"] != "INFO" || started[0]["version"] != want["version"] || started[0]["commit"] != want["commit"] || started[0]["go"] != bi.GoVersion {
		t.Errorf("serve's start lines %v, want one with version %q, commit %q, go %q:\n%s", started, want["version"], want["commit"], bi.GoVersion, s.Stderr)
	}
}
