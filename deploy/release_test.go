// Package deploy_test checks what aivis ships: the release tarballs, the
// container image, the compose files, the Helm chart and the systemd
// unit, built by the Makefile as an operator builds them.
package deploy_test

import (
	"archive/tar"
	"compress/gzip"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// root is the repository's root.
const root = ".."

// run runs a command in dir and returns its standard output.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// checkout is a clone of the repository in a directory of its own, with
// the working tree's changes: what a developer would release from here
// (in a clean checkout, the commit).
func checkout(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	run(t, root, nil, "git", "clone", "-q", ".", dir)
	for _, f := range strings.Split(run(t, root, nil, "git", "ls-files", "-m", "-o", "--exclude-standard"), "\n") {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(filepath.Join(root, f))
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range strings.Split(run(t, root, nil, "git", "ls-files", "-d"), "\n") {
		if f != "" {
			os.Remove(filepath.Join(dir, f))
		}
	}
	return dir
}

// connectors are the official connectors, one folder each.
func connectors(t *testing.T) []string {
	t.Helper()
	mains, err := filepath.Glob(filepath.Join(root, "connectors", "*", "main.go"))
	if err != nil || len(mains) == 0 {
		t.Fatalf("no connectors: %v", err)
	}
	var names []string
	for _, m := range mains {
		names = append(names, filepath.Base(filepath.Dir(m)))
	}
	return names
}

// untar extracts a .tar.gz into dir and lists its files.
func untar(t *testing.T, path, dir string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		} else if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" && h.Uname != "root" {
			t.Errorf("%s: owner %d:%d %q, want root", h.Name, h.Uid, h.Gid, h.Uname)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		names = append(names, h.Name)
		out := filepath.Join(dir, h.Name)
		os.MkdirAll(filepath.Dir(out), 0o755)
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, b, os.FileMode(h.Mode).Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// static checks that an ELF binary needs no dynamic loader nor library.
func static(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s is dynamically linked", path)
		}
	}
}

// TestRelease: make release builds, for linux/amd64, a tarball of aivis
// (static, -trimpath, stamped with git's description of the commit, the
// commit and its time), every official connector, the SBOM of each
// (CycloneDX) and the systemd unit, with its SHA-256 in SHA256SUMS; two
// builds of one commit from two checkouts at other paths are byte for
// byte the same. (linux/arm64 is left out here for time: its build is the
// same but for the C cross compiler.)
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds aivis and the connectors twice")
	}
	var dirs, outs []string
	for _, name := range []string{"a", "second-checkout"} {
		dir := checkout(t, name)
		dirs = append(dirs, dir)
		start := time.Now()
		run(t, dir, nil, "make", "-s", "release", "RELEASE="+filepath.Join(dir, "out"), "RELEASE_ARCHS=amd64")
		t.Logf("make release (linux/amd64) in %s: %s", name, time.Since(start).Round(time.Second))
		outs = append(outs, filepath.Join(dir, "out"))
	}
	a := dirs[0]
	version := strings.TrimSpace(run(t, a, nil, "git", "describe", "--tags", "--always", "--dirty"))
	commit := strings.TrimSpace(run(t, a, nil, "git", "rev-parse", "HEAD"))
	date := strings.TrimSpace(run(t, a, []string{"TZ=UTC"}, "git", "log", "-1", "--date=format-local:%Y-%m-%dT%H:%M:%SZ", "--format=%cd"))

	// Byte for byte the same.
	var files [2][]string
	for i, out := range outs {
		ents, err := os.ReadDir(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			files[i] = append(files[i], e.Name())
		}
	}
	tarball := "aivis-" + version + "-linux-amd64.tar.gz"
	if want := []string{"SHA256SUMS", tarball}; !slices.Equal(files[0], want) || !slices.Equal(files[1], want) {
		t.Fatalf("make release wrote %v and %v, want %v", files[0], files[1], want)
	}
	for _, f := range files[0] {
		x, _ := os.ReadFile(filepath.Join(outs[0], f))
		y, _ := os.ReadFile(filepath.Join(outs[1], f))
		if string(x) != string(y) {
			t.Errorf("%s differs between two builds of one commit", f)
		}
	}
	run(t, outs[0], nil, "sha256sum", "--check", "--strict", "SHA256SUMS")

	// What the tarball holds.
	x := t.TempDir()
	got := untar(t, filepath.Join(outs[0], tarball), x)
	top := strings.TrimSuffix(tarball, ".tar.gz") + "/"
	want := []string{top + "README.md", top + "aivis", top + "aivis.service", top + "sbom/aivis.cdx.json"}
	for _, c := range connectors(t) {
		want = append(want, top+"connectors/"+c, top+"sbom/"+c+".cdx.json")
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the tarball holds %v, want %v", got, want)
	}
	bin := filepath.Join(x, top, "aivis")
	static(t, bin)
	for _, c := range connectors(t) {
		static(t, filepath.Join(x, top, "connectors", c))
	}
	var stamped map[string]string
	if err := json.Unmarshal([]byte(run(t, x, nil, bin, "version", "--json")), &stamped); err != nil {
		t.Fatal(err)
	}
	if stamped["version"] != version || stamped["commit"] != commit || stamped["date"] != date {
		t.Errorf("the released aivis says %v, want version %s, commit %s, date %s", stamped, version, commit, date)
	}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["-trimpath"] != "true" || settings["-tags"] != "netgo,osusergo,sqlite_omit_load_extension" || settings["CGO_ENABLED"] != "1" {
		t.Errorf("aivis built with %v", settings)
	}
	var sbom struct {
		BOMFormat string `json:"bomFormat"`
		Metadata  struct {
			Component struct{ Name string } `json:"component"`
		} `json:"metadata"`
		Components []struct{ Name, Version string } `json:"components"`
	}
	b, err := os.ReadFile(filepath.Join(x, top, "sbom", "aivis.cdx.json"))
	if err != nil || json.Unmarshal(b, &sbom) != nil {
		t.Fatalf("aivis's SBOM: %v %s", err, b)
	}
	if sbom.BOMFormat != "CycloneDX" || sbom.Metadata.Component.Name != "github.com/aivis/aivis" ||
		!slices.ContainsFunc(sbom.Components, func(c struct{ Name, Version string }) bool {
			return c.Name == "github.com/mattn/go-sqlite3" && c.Version != ""
		}) {
		t.Errorf("aivis's SBOM: %s", b)
	}
}

// TestVersionFromFile: in a source tree without git, the version make
// stamps is the VERSION file's.
func TestVersionFromFile(t *testing.T) {
	dir := t.TempDir()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), mk, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir), "VERSION="} // git finds no repository
	if v := run(t, dir, env, "make", "-s", "version"); v != "\n" {
		t.Errorf("with neither git nor a VERSION file: %q", v)
	}
	if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte("v9.8.7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v := run(t, dir, env, "make", "-s", "version"); v != "v9.8.7\n" {
		t.Errorf("with VERSION v9.8.7: %q", v)
	}
	if v := run(t, root, nil, "make", "-s", "version"); v != run(t, root, nil, "git", "describe", "--tags", "--always", "--dirty") {
		t.Errorf("in the repository: %q", v)
	}
}

// TestReleaseArm64: make release builds linux/arm64 with the C cross
// compiler, and what it builds runs on arm64 (here under qemu's user-mode
// emulation): aivis, static, says its stamp, makes an account in a new
// data directory (cgo SQLite and the migrations, on arm64) and lists it;
// each connector, static too, starts and says it is a plugin.
func TestReleaseArm64(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles aivis and the connectors")
	}
	qemu, err := exec.LookPath("qemu-aarch64")
	if err != nil {
		t.Fatal("qemu-aarch64 (Debian's qemu-user) runs the arm64 build: make deps installs it")
	}
	dir := checkout(t, "arm64")
	out := filepath.Join(dir, "out")
	start := time.Now()
	run(t, dir, nil, "make", "-s", "release", "RELEASE="+out, "RELEASE_ARCHS=arm64")
	t.Logf("make release (linux/arm64): %s", time.Since(start).Round(time.Second))
	version := strings.TrimSpace(run(t, dir, nil, "git", "describe", "--tags", "--always", "--dirty"))
	tarball := "aivis-" + version + "-linux-arm64.tar.gz"
	run(t, out, nil, "sha256sum", "--check", "--strict", "SHA256SUMS")

	x := t.TempDir()
	untar(t, filepath.Join(out, tarball), x)
	top := filepath.Join(x, strings.TrimSuffix(tarball, ".tar.gz"))
	arm64 := func(path string) {
		t.Helper()
		static(t, path)
		f, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if f.Machine != elf.EM_AARCH64 {
			t.Errorf("%s is for %v, want %v", path, f.Machine, elf.EM_AARCH64)
		}
	}
	bin := filepath.Join(top, "aivis")
	arm64(bin)
	var stamped map[string]string
	if err := json.Unmarshal([]byte(run(t, x, nil, qemu, bin, "version", "--json")), &stamped); err != nil {
		t.Fatal(err)
	}
	if commit := strings.TrimSpace(run(t, dir, nil, "git", "rev-parse", "HEAD")); stamped["version"] != version || stamped["commit"] != commit {
		t.Errorf("the arm64 aivis says %v, want version %s, commit %s", stamped, version, commit)
	}
	data := filepath.Join(x, "data")
	var acct struct{ ID, Name string }
	if err := json.Unmarshal([]byte(run(t, x, nil, qemu, bin, "account", "create", "--name", "Acme", "--tier", "starter", "--data-dir", data, "--json")), &acct); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(acct.ID, "acct_") || acct.Name != "Acme" {
		t.Errorf("account create on arm64: %+v", acct)
	}
	if list := run(t, x, nil, qemu, bin, "account", "list", "--data-dir", data); !strings.Contains(list, acct.ID) {
		t.Errorf("account list on arm64 lacks %s:\n%s", acct.ID, list)
	}
	for _, c := range connectors(t) {
		path := filepath.Join(top, "connectors", c)
		arm64(path)
		// Started by hand, a plugin refuses to serve and says what it is.
		cmd := exec.Command(qemu, path)
		msg, err := cmd.CombinedOutput()
		if _, exited := err.(*exec.ExitError); !exited || !strings.Contains(string(msg), "plugin") {
			t.Errorf("connector %s on arm64: %v: %s", c, err, msg)
		}
	}
}
