package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/plugins/sdk"
)

var events = []sdk.Event{{ID: "evt_1", Kind: "webhook_test", Timestamp: time.Now(), Body: []byte(`{}`)}}

// deliver has the connector "test" deliver one event with settings.
func deliver(h *hub.Hub, settings string) (sdk.Result, error) {
	rs, err := h.Deliver(context.Background(), "test", json.RawMessage(settings), events)
	if err != nil {
		return sdk.Result{}, err
	}
	return rs[0], nil
}

func delivers(t *testing.T, h *hub.Hub) {
	t.Helper()
	if r, err := deliver(h, `{"mode":"ok"}`); err != nil || r.Outcome != sdk.Delivered {
		t.Fatalf("deliver: %+v %v", r, err)
	}
}

// pidsOf lists the processes running the binary at path.
func pidsOf(path string) []string {
	out, _ := exec.Command("pgrep", "-f", "^"+path+"$").Output()
	return strings.Fields(string(out))
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 15 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// running says whether the hub runs the connector "test" of version.
func running(h *hub.Hub, version string) bool {
	cs := h.Connectors()
	return len(cs) == 1 && cs[0].Health.State == "running" && cs[0].Info.Version == version
}

// TestRegisteredLaterStarts: a plugin registered while the hub runs is
// started within a refresh, and delivers.
func TestRegisteredLaterStarts(t *testing.T) {
	db := newStore(t)
	h := openHub(t, db, hub.Options{Dir: t.TempDir()})
	if cs := h.Connectors(); len(cs) != 0 {
		t.Fatalf("connectors of an empty registry: %+v", cs)
	}
	bin := filepath.Join(t.TempDir(), "testplugin")
	build(t, bin, "1")
	register(t, db, bin)
	waitUntil(t, "the plugin registered later running", func() bool { return running(h, "1") })
	delivers(t, h)
}

// TestRemovedStops: a plugin removed from the registry is stopped within
// a refresh: no longer listed, no longer called, its process gone.
func TestRemovedStops(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "testplugin")
	build(t, bin, "1")
	db := newStore(t)
	register(t, db, bin)
	h := openHub(t, db, hub.Options{Dir: t.TempDir()})
	delivers(t, h)
	if err := db.RemovePlugin(context.Background(), "test"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the removed plugin unlisted", func() bool { return len(h.Connectors()) == 0 })
	if _, err := deliver(h, `{"mode":"ok"}`); !errors.Is(err, hub.ErrUnknown) {
		t.Fatalf("a call of the removed plugin: %v, want ErrUnknown", err)
	}
	waitUntil(t, "the removed plugin's process ended", func() bool { return len(pidsOf(bin)) == 0 })
}

// TestRegisteredAgainIsSwapped: a plugin registered again with another
// binary is started from it within a refresh, and the calls that the old
// one has in flight end on it as if nothing happened; then the old
// process ends.
func TestRegisteredAgainIsSwapped(t *testing.T) {
	v1, v2 := filepath.Join(t.TempDir(), "testplugin"), filepath.Join(t.TempDir(), "testplugin")
	build(t, v1, "1")
	build(t, v2, "2")
	db := newStore(t)
	register(t, db, v1)
	h := openHub(t, db, hub.Options{Dir: t.TempDir()})

	signals := t.TempDir()
	settings, _ := json.Marshal(map[string]string{"mode": "wait", "dir": signals})
	type answer struct {
		r   sdk.Result
		err error
	}
	inFlight := make(chan answer, 1)
	go func() {
		r, err := deliver(h, string(settings))
		inFlight <- answer{r, err}
	}()
	waitUntil(t, "the call in flight on version 1", func() bool {
		_, err := os.Stat(filepath.Join(signals, "started"))
		return err == nil
	})

	register(t, db, v2)
	waitUntil(t, "version 2 running", func() bool { return running(h, "2") })
	delivers(t, h)
	if len(pidsOf(v2)) != 1 {
		t.Fatalf("version 2's processes: %v", pidsOf(v2))
	}
	if len(pidsOf(v1)) != 1 {
		t.Fatal("version 1 was stopped with a call in flight")
	}
	if err := os.WriteFile(filepath.Join(signals, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if a := <-inFlight; a.err != nil || a.r.Outcome != sdk.Delivered {
		t.Fatalf("the call in flight during the swap: %+v %v", a.r, a.err)
	}
	waitUntil(t, "version 1's process ended", func() bool { return len(pidsOf(v1)) == 0 })
}

// TestBinaryFoundInPluginsDir: an instance that has not the registered
// path runs the binary of the plugins directory that has the registered
// SHA-256, the file of the registered name first, else any executable
// there; until one is there it reports the connector missing, naming no
// path, and starts it within a refresh of its arrival.
func TestBinaryFoundInPluginsDir(t *testing.T) {
	registered := filepath.Join(t.TempDir(), "testplugin")
	build(t, registered, "1")
	db := newStore(t)
	register(t, db, registered)
	bin, err := os.ReadFile(registered)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(registered); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	h := openHub(t, db, hub.Options{Dir: dir})

	cs := h.Connectors()
	if len(cs) != 1 || cs[0].Health.State != "unavailable" || !strings.Contains(cs[0].Problem, "not on this instance") {
		t.Fatalf("a binary found nowhere: %+v", cs)
	}
	_, err = deliver(h, `{"mode":"ok"}`)
	if !errors.Is(err, hub.ErrUnavailable) {
		t.Fatalf("a call of a connector found nowhere: %v", err)
	}
	for _, said := range []string{cs[0].Problem, err.Error()} {
		if strings.Contains(said, filepath.Dir(registered)) || strings.Contains(said, dir) {
			t.Errorf("what is said of a missing binary names a path: %s", said)
		}
	}

	// Of the registered name, another binary; under another name, the
	// registered one.
	build(t, filepath.Join(dir, "testplugin"), "9")
	if err := os.WriteFile(filepath.Join(dir, "renamed"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the binary found in the plugins directory running", func() bool { return running(h, "1") })
	delivers(t, h)
	if len(pidsOf(filepath.Join(dir, "renamed"))) != 1 || len(pidsOf(filepath.Join(dir, "testplugin"))) != 0 {
		t.Fatalf("processes: %v of the registered SHA-256, %v of the other", pidsOf(filepath.Join(dir, "renamed")), pidsOf(filepath.Join(dir, "testplugin")))
	}

	// Of the registered name, the registered binary: that one first.
	h.Close()
	if err := os.WriteFile(filepath.Join(dir, "testplugin"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	h = openHub(t, db, hub.Options{Dir: dir})
	delivers(t, h)
	if len(pidsOf(filepath.Join(dir, "testplugin"))) != 1 || len(pidsOf(filepath.Join(dir, "renamed"))) != 0 {
		t.Fatalf("processes: %v of the registered name, %v of another", pidsOf(filepath.Join(dir, "testplugin")), pidsOf(filepath.Join(dir, "renamed")))
	}
}

// TestHealthOfEveryInstance: two instances on one store each report their
// connectors' health under their own name, and each lists both; one that
// stops forgets its own, and the report of one that died without a word
// is taken as gone once stale, and pruned.
func TestHealthOfEveryInstance(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "testplugin")
	build(t, bin, "1")
	path := filepath.Join(t.TempDir(), "aivis.db")
	dbA, dbB := openStore(t, path), openStore(t, path)
	register(t, dbA, bin)
	dead := store.PluginHealth{Plugin: "test", State: "running", CheckedAt: time.Now().Add(-time.Hour)}
	if err := dbA.PutPluginHealth(context.Background(), "proc_dead", []store.PluginHealth{dead}); err != nil {
		t.Fatal(err)
	}

	a := openHub(t, dbA, hub.Options{Dir: t.TempDir(), Instance: "proc_a"})
	b := openHub(t, dbB, hub.Options{Dir: t.TempDir(), Instance: "proc_b"})
	instances := func(h *hub.Hub) []string {
		var out []string
		for _, c := range h.Connectors() {
			for _, i := range c.Instances {
				if i.Plugin == "test" && i.State == "running" && i.Problem == "" && !i.CheckedAt.IsZero() {
					out = append(out, i.Instance)
				}
			}
		}
		return out
	}
	for _, h := range []*hub.Hub{a, b} {
		waitUntil(t, "both instances listed", func() bool { return slices.Equal(instances(h), []string{"proc_a", "proc_b"}) })
	}
	rows, err := dbA.ListPluginHealth(context.Background(), store.MinTime)
	if err != nil || slices.ContainsFunc(rows, func(r store.PluginHealth) bool { return r.Instance == "proc_dead" }) {
		t.Errorf("the stale report of a dead instance is kept: %+v %v", rows, err)
	}

	b.Close()
	rows, err = dbA.ListPluginHealth(context.Background(), store.MinTime)
	if err != nil || slices.ContainsFunc(rows, func(r store.PluginHealth) bool { return r.Instance == "proc_b" }) {
		t.Errorf("the instance that stopped did not forget its report: %+v %v", rows, err)
	}
	waitUntil(t, "the instance that stopped unlisted", func() bool { return slices.Equal(instances(a), []string{"proc_a"}) })
}

// TestStartFailureNamesNoPath: a registered binary that fails to start is
// unavailable, reported by the problem and by the error of a call (as
// ErrUnavailable), without the path where this instance keeps it.
func TestStartFailureNamesNoPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secret-place")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "broken")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho not a plugin\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	db := newStore(t)
	register(t, db, bin)
	h := openHub(t, db, hub.Options{Dir: t.TempDir()})
	cs := h.Connectors()
	_, err := deliver(h, `{"mode":"ok"}`)
	if len(cs) != 1 || cs[0].Problem == "" || !errors.Is(err, hub.ErrUnavailable) {
		t.Fatalf("a binary that does not start: %+v, %v (want ErrUnavailable)", cs, err)
	}
	if got := h.Unavailable(); !slices.Equal(got, []string{"test"}) {
		t.Errorf("Unavailable with a binary that does not start: %v", got)
	}
	for _, said := range []string{cs[0].Problem, cs[0].Health.LastError, err.Error()} {
		if strings.Contains(said, dir) {
			t.Errorf("what is said of a binary that does not start names its path: %s", said)
		}
	}
}

// TestStartFailureReportedAsText: a binary that prints a NUL and bytes
// that are not UTF-8 instead of the handshake is reported with a problem
// that is text, which the store keeps, so that every instance sees it.
func TestStartFailureReportedAsText(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "garbled")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nprintf 'garbled \\000\\377\\376 words\\n'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	db := newStore(t)
	register(t, db, bin)
	openHub(t, db, hub.Options{Dir: t.TempDir(), Instance: "proc_a"})
	var got []store.PluginHealth
	waitUntil(t, "the instance's report kept", func() bool {
		rows, err := db.ListPluginHealth(context.Background(), store.MinTime)
		got = slices.DeleteFunc(rows, func(r store.PluginHealth) bool { return r.Instance != "proc_a" || r.Problem == "" })
		return err == nil && len(got) == 1
	})
	if p := got[0].Problem; !utf8.ValidString(p) || strings.ContainsRune(p, 0) || !strings.Contains(p, "garbled \uFFFD words") {
		t.Errorf("the problem reported: %q", p)
	}
}

// TestStartFailureNamesNoAddress: what a binary that does not start
// printed is reported without the paths and addresses it holds.
func TestStartFailureNamesNoAddress(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "chatty")
	script := "#!/bin/sh\necho 'listening on 10.1.2.3:7000 and [fd00::7]:80 at /var/lib/aivis/secret.sock (unix=/run/x/y)'\nexit 1\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	db := newStore(t)
	register(t, db, bin)
	h := openHub(t, db, hub.Options{Dir: t.TempDir()})
	cs := h.Connectors()
	if len(cs) != 1 || !strings.Contains(cs[0].Problem, "listening on [address] and [address] at secret.sock") {
		t.Fatalf("a binary that does not start: %+v", cs)
	}
	for _, f := range []string{"10.1.2.3", "fd00", "/var/lib", "/run/x"} {
		if strings.Contains(cs[0].Problem, f) {
			t.Errorf("the problem carries %q: %s", f, cs[0].Problem)
		}
	}
}
