package hub_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/plugins/host"
)

// copyTo copies the binary at from to dir (made if needed), as a machine
// of another instance has it, and returns its path there.
func copyTo(t *testing.T, from, dir string) string {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(dir, filepath.Base(from))
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return to
}

func sumOf(t *testing.T, path string) []byte {
	t.Helper()
	sum, err := host.Checksum(path)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestEachInstanceRunsItsBuild: a plugin with two registered builds (a
// rolling upgrade: the new one registered while the old one runs) runs on
// each instance from the build that instance has, each reporting the
// build it runs; an instance that has both runs the newer.
func TestEachInstanceRunsItsBuild(t *testing.T) {
	v1, v2 := filepath.Join(t.TempDir(), "testplugin"), filepath.Join(t.TempDir(), "testplugin")
	build(t, v1, "1")
	build(t, v2, "2")
	path := filepath.Join(t.TempDir(), "aivis.db")
	dbA, dbB := openStore(t, path), openStore(t, path)
	register(t, dbA, v1)
	oldDir, newDir := t.TempDir(), t.TempDir()
	old := openHub(t, dbA, hub.Options{Dir: oldDir, Instance: "proc_old"})
	waitUntil(t, "version 1 running", func() bool { return running(old, "1") })

	// Each machine keeps its own build alone; then the new one is
	// registered (as the new image's trusted_plugins_dir or an operator
	// does) from a path the old machine does not have.
	copyTo(t, v1, oldDir)
	copyTo(t, v2, newDir)
	rec := store.PluginRecord{Name: "test", Path: "/elsewhere/testplugin", SHA256: sumOf(t, v2), Kind: "other", RegisteredAt: time.Now()}
	for _, p := range []string{v1, v2} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := dbB.PutPlugin(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	ps, err := dbA.ListPlugins(context.Background())
	if err != nil || len(ps) != 1 || len(ps[0].Builds) != 2 {
		t.Fatalf("registered: %+v %v", ps, err)
	}
	sum1, sum2 := ps[0].Builds[0].SHA256, ps[0].Builds[1].SHA256
	fresh := openHub(t, dbB, hub.Options{Dir: newDir, Instance: "proc_new"})
	waitUntil(t, "version 2 running on the new instance", func() bool { return running(fresh, "2") })
	delivers(t, fresh)
	// The old instance runs on with version 1: the registration of
	// another build does not stop it.
	if !running(old, "1") {
		t.Fatalf("the old instance: %+v", old.Connectors())
	}
	delivers(t, old)
	runs := func() map[string][]byte {
		rows, err := dbA.ListPluginHealth(context.Background(), store.MinTime)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, r := range rows {
			if r.State == "running" {
				out[r.Instance] = r.SHA256
			}
		}
		return out
	}
	waitUntil(t, "each instance reporting the build it runs", func() bool {
		r := runs()
		return bytes.Equal(r["proc_old"], sum1) && bytes.Equal(r["proc_new"], sum2)
	})

	// An instance with both builds runs the newer.
	copyTo(t, filepath.Join(newDir, "testplugin"), t.TempDir())
	both := t.TempDir()
	if err := os.WriteFile(filepath.Join(both, "old"), mustRead(t, filepath.Join(oldDir, "testplugin")), 0o755); err != nil {
		t.Fatal(err)
	}
	copyTo(t, filepath.Join(newDir, "testplugin"), both)
	h := openHub(t, dbA, hub.Options{Dir: both})
	if !running(h, "2") {
		t.Fatalf("an instance with both builds: %+v", h.Connectors())
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestUnregisteredBuildWaitsForItsRegistration: a rebuilt binary (another
// SHA-256) where the registered one was is not started after a restart:
// the connector is unavailable, says why (the new SHA-256's prefix, no
// path), and a call of it fails as ErrUnavailable; once the rebuilt binary
// is registered, it runs within a refresh.
func TestUnregisteredBuildWaitsForItsRegistration(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secret-place")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "testplugin")
	build(t, bin, "1")
	db := newStore(t)
	register(t, db, bin)
	h := openHub(t, db, hub.Options{Dir: t.TempDir(), Instance: "proc_a"})
	delivers(t, h)
	h.Close()

	build(t, bin, "2")
	sum := sumOf(t, bin)
	h = openHub(t, db, hub.Options{Dir: t.TempDir(), Instance: "proc_a"})
	cs := h.Connectors()
	if len(cs) != 1 || cs[0].Health.State != "unavailable" || cs[0].SHA256 != nil ||
		!strings.Contains(cs[0].Problem, fmt.Sprintf("SHA-256 %x…", sum[:4])) || !strings.Contains(cs[0].Problem, "aivis plugin register") {
		t.Fatalf("a rebuilt binary not registered: %+v", cs)
	}
	if strings.Contains(cs[0].Problem, dir) || strings.Contains(cs[0].Problem, fmt.Sprintf("%x", sum[:5])) {
		t.Errorf("the problem names a path or more of the SHA-256 than its prefix: %s", cs[0].Problem)
	}
	if got := h.Unavailable(); !slices.Equal(got, []string{"test"}) {
		t.Errorf("Unavailable: %v", got)
	}
	if _, err := deliver(h, `{"mode":"ok"}`); !errors.Is(err, hub.ErrUnavailable) {
		t.Fatalf("a call of it: %v, want ErrUnavailable", err)
	}
	if len(pidsOf(bin)) != 0 {
		t.Fatal("the binary not registered was started")
	}

	register(t, db, bin)
	waitUntil(t, "the rebuilt binary running once registered", func() bool { return running(h, "2") })
	delivers(t, h)
	if got := h.Unavailable(); len(got) != 0 {
		t.Errorf("Unavailable once it runs: %v", got)
	}
	if cs := h.Connectors(); len(cs[0].Record.Builds) != 2 || !bytes.Equal(cs[0].SHA256, sum) {
		t.Errorf("its record: %+v", cs[0])
	}
}

// TestCrashedAndNotRestartedIsUnavailable: a running connector whose
// process dies while its binary was replaced by an unregistered build
// cannot be restarted: a call of it fails as ErrUnavailable (no call was
// made), and it is listed unavailable.
func TestCrashedAndNotRestartedIsUnavailable(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "testplugin")
	build(t, bin, "1")
	db := newStore(t)
	register(t, db, bin)
	h := openHub(t, db, hub.Options{Dir: t.TempDir()})
	delivers(t, h)
	pids := pidsOf(bin)
	if len(pids) != 1 {
		t.Fatalf("processes: %v", pids)
	}
	tmp := bin + ".new"
	build(t, tmp, "2")
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(pids[0])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the connector unavailable", func() bool { return slices.Equal(h.Unavailable(), []string{"test"}) })
	_, err := deliver(h, `{"mode":"ok"}`)
	if !errors.Is(err, hub.ErrUnavailable) {
		t.Fatalf("a call of a connector that cannot be restarted: %v, want ErrUnavailable", err)
	}
}
