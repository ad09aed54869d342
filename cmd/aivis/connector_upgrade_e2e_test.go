package main

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/plugins/host"
)

// buildPartner builds the partner connector at path: the first build with
// rebuilt false, else another build of it (stripped: another SHA-256), as
// an upgrade of the connector brings.
func buildPartner(t *testing.T, path string, rebuilt bool) {
	t.Helper()
	flags := ""
	if rebuilt {
		flags = "-s -w"
	}
	if out, err := exec.Command("go", "build", "-ldflags="+flags, "-o", path, "../../examples/partner-connector").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
}

// connector is what GET /v1/connectors says of one connector.
func connector(t *testing.T, s *server, k key, name string) client.ConnectorKind {
	t.Helper()
	var page client.List[client.ConnectorKind]
	r := s.do(t, req{method: "GET", path: "/v1/connectors", header: bearer(k)})
	r.decode(t, &page)
	for _, c := range page.Items {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("GET /v1/connectors: no %s: %d %s", name, r.Status, r.Body)
	return client.ConnectorKind{}
}

// TestConnectorUpgradeDeliveriesWait: a connector's binary replaced by a
// rebuilt one (another SHA-256, not registered) is not started by the
// server that restarts on it: /v1/connectors says it is unavailable and
// why, /readyz answers 200 and names it degraded, and the deliveries of
// its connection wait, pending with no attempt consumed; once the new
// binary is registered (no restart), each is delivered, once.
func TestConnectorUpgradeDeliveriesWait(t *testing.T) {
	dir := t.TempDir()
	binDir := filepath.Join(t.TempDir(), "secret-place")
	if err := os.Mkdir(binDir, 0o700); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "partner-connector")
	buildPartner(t, bin, false)
	cli(t, dir, nil, "plugin", "register", bin)
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	args := []string{"--allowed-targets", "127.0.0.1/32", "--allow-http-targets"}
	s := start(t, dir, args...)
	rc := newChatReceiver(t)
	con := connect(t, s, k, "partner-chat", `{"webhook_url":"`+rc.URL+`/hook"}`)
	first := recordEvent(t, s, k, `{"domain":"before.example.com","visibility_score":50,"sentiment":"positive"}`)
	waitFor(t, "the first event delivered", func() bool { return rc.text(first) != "" })

	// The upgrade: a rebuilt binary in place of the registered one, and a
	// restart.
	s.stop()
	rebuilt := bin + ".new"
	buildPartner(t, rebuilt, true)
	if err := os.Rename(rebuilt, bin); err != nil {
		t.Fatal(err)
	}
	sum, err := host.Checksum(bin)
	if err != nil {
		t.Fatal(err)
	}
	s = start(t, dir, args...)
	c := connector(t, s, k, "partner-chat")
	if c.Health.State != "unavailable" || c.Health.Problem == nil || c.Health.Build != nil ||
		!strings.Contains(*c.Health.Problem, fmt.Sprintf("SHA-256 %x…", sum[:4])) || !strings.Contains(*c.Health.Problem, "aivis plugin register") {
		t.Fatalf("the connector whose binary was rebuilt: %+v", c.Health)
	}
	if strings.Contains(*c.Health.Problem, binDir) {
		t.Errorf("the problem names the binary's path: %s", *c.Health.Problem)
	}
	r := s.do(t, req{method: "GET", path: "/readyz"})
	var ready struct {
		Status   string   `json:"status"`
		Degraded []string `json:"degraded"`
	}
	r.decode(t, &ready)
	if r.Status != 200 || ready.Status != "ready" || len(ready.Degraded) != 1 || ready.Degraded[0] != "connector:partner-chat" {
		t.Fatalf("/readyz with a connector that does not run: %d %s", r.Status, r.Body)
	}

	const n = 8
	ids := []string{first}
	for i := range n {
		ids = append(ids, recordEvent(t, s, k, fmt.Sprintf(`{"domain":"d%d.example.com","visibility_score":%d,"sentiment":"neutral"}`, i, 40+i)))
	}
	// The fence: the server tried them and found the connector not
	// running; then they are pending, no attempt consumed.
	waitLong(t, 30*time.Second, "the deliveries held for their connector", func() bool {
		return s.logged("connections: the connector does not run: the connection's deliveries wait for it, consuming no attempt", "connector=partner-chat")
	})
	for _, id := range ids[1:] {
		fannedOut(t, s, k, id)
	}
	var dl client.List[client.Delivery]
	s.do(t, req{method: "GET", path: "/v1/connections/" + con.ID + "/deliveries?limit=100", header: bearer(k)}).decode(t, &dl)
	if len(dl.Items) != n+1 {
		t.Fatalf("%d deliveries, want %d", len(dl.Items), n+1)
	}
	for _, d := range dl.Items {
		if d.EventID == first {
			continue
		}
		if d.Status != "pending" || d.Attempts != 0 {
			t.Errorf("a delivery waiting for its connector: %+v", d)
		}
	}
	if rc.count() != 1 {
		t.Fatalf("delivered while the connector does not run: %d", rc.count())
	}

	// The rebuilt binary registered: it starts within a refresh, and every
	// waiting delivery arrives.
	var reg map[string]any
	cli(t, dir, &reg, "plugin", "register", bin)
	if reg["builds"] != float64(2) {
		t.Errorf("register: %v", reg)
	}
	waitLong(t, 60*time.Second, "every waiting delivery delivered", func() bool { return rc.count() == n+1 })
	waitLong(t, 15*time.Second, "every delivery succeeded", func() bool {
		s.do(t, req{method: "GET", path: "/v1/connections/" + con.ID + "/deliveries?limit=100", header: bearer(k)}).decode(t, &dl)
		for _, d := range dl.Items {
			if d.Status != "succeeded" {
				return false
			}
		}
		return len(dl.Items) == n+1
	})
	rc.mu.Lock()
	for _, id := range ids {
		if rc.got[id] != 1 {
			t.Errorf("event %s arrived %d times", id, rc.got[id])
		}
	}
	rc.mu.Unlock()
	for _, d := range dl.Items {
		if d.Attempts != 1 {
			t.Errorf("delivery %s: %d attempts, want 1", d.ID, d.Attempts)
		}
	}
	c = connector(t, s, k, "partner-chat")
	if c.Health.State != "running" || c.Health.Build == nil || *c.Health.Build != fmt.Sprintf("%x", sum[:4]) {
		t.Errorf("the connector once registered: %+v", c.Health)
	}
	r = s.do(t, req{method: "GET", path: "/readyz"})
	ready.Degraded = nil
	r.decode(t, &ready)
	if r.Status != 200 || ready.Degraded != nil {
		t.Errorf("/readyz once the connector runs: %d %s", r.Status, r.Body)
	}
}

// TestPluginBuildsPruned: registering a second build keeps the first;
// list shows each build and the instances that run it; prune with no
// server running prunes nothing, and with one running drops the build it
// does not run, never the one it runs.
func TestPluginBuildsPruned(t *testing.T) {
	dir := t.TempDir()
	v1 := buildPlugin(t, "../../examples/partner-connector", "partner-connector")
	v2 := filepath.Join(t.TempDir(), "partner-connector")
	buildPartner(t, v2, true)
	cli(t, dir, nil, "plugin", "register", v1)
	cli(t, dir, nil, "plugin", "register", v2)
	sum1, _ := host.Checksum(v1)
	sum2, _ := host.Checksum(v2)
	type build struct {
		SHA256    string   `json:"sha256"`
		Path      string   `json:"path"`
		Instances []string `json:"instances"`
	}
	var list []struct {
		Name   string  `json:"name"`
		SHA256 string  `json:"sha256"`
		Builds []build `json:"builds"`
	}
	cli(t, dir, &list, "plugin", "list")
	if len(list) != 1 || len(list[0].Builds) != 2 || list[0].Builds[0].SHA256 != fmt.Sprintf("%x", sum2) ||
		list[0].Builds[1].SHA256 != fmt.Sprintf("%x", sum1) || len(list[0].Builds[0].Instances) != 0 {
		t.Fatalf("list of two builds: %+v", list)
	}
	var pruned []map[string]any
	cli(t, dir, &pruned, "plugin", "prune")
	if len(pruned) != 0 {
		t.Fatalf("pruned with no server running: %v", pruned)
	}
	if msg := cliFails(t, dir, "plugin", "prune", "nope"); !strings.Contains(msg, `no plugin "nope"`) {
		t.Errorf("prune of a plugin not registered: %s", msg)
	}

	s := start(t, dir)
	waitFor(t, "the server reporting the build it runs", func() bool {
		cli(t, dir, &list, "plugin", "list")
		return len(list[0].Builds) == 2 && len(list[0].Builds[0].Instances) == 1
	})
	cli(t, dir, &pruned, "plugin", "prune", "partner-chat")
	if len(pruned) != 1 || pruned[0]["sha256"] != fmt.Sprintf("%x", sum1) {
		t.Fatalf("prune: %v", pruned)
	}
	cli(t, dir, &list, "plugin", "list")
	if len(list[0].Builds) != 1 || list[0].Builds[0].SHA256 != fmt.Sprintf("%x", sum2) || len(list[0].Builds[0].Instances) != 1 {
		t.Fatalf("list after the prune: %+v", list)
	}
	cli(t, dir, &pruned, "plugin", "prune")
	if len(pruned) != 0 {
		t.Fatalf("pruned the build the server runs: %v", pruned)
	}
	s.stop()
}

// TestRollingConnectorUpgradeOnACluster: two instances of a cluster, the
// old one with the first build of the partner connector in its plugins
// directory and the new one with a rebuilt one, both builds registered
// (neither at its registered path any more): each runs its own, both
// deliver, each instance's build is listed by the API and by plugin list;
// once the old instance is gone, prune drops its build alone.
func TestRollingConnectorUpgradeOnACluster(t *testing.T) {
	c := newCluster(t)
	old, fresh := filepath.Join(t.TempDir(), "partner-connector"), filepath.Join(t.TempDir(), "partner-connector")
	buildPartner(t, old, false)
	buildPartner(t, fresh, true)
	sumOld, _ := host.Checksum(old)
	sumNew, _ := host.Checksum(fresh)
	cli(t, c.dir, nil, "plugin", "register", old)
	cli(t, c.dir, nil, "plugin", "register", fresh)
	// Each machine has its own build alone, in its plugins directory.
	dirs := map[string]string{}
	for name, bin := range map[string]string{"old": old, "new": fresh} {
		dirs[name] = t.TempDir()
		if err := os.MkdirAll(filepath.Join(dirs[name], "plugins"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(bin, filepath.Join(dirs[name], "plugins", "partner-connector")); err != nil {
			t.Fatal(err)
		}
	}
	a := newAccount(t, c.dir, "enterprise", false)
	k := newKey(t, c.dir, a.ID)
	args := []string{"--allowed-targets", "127.0.0.1/32", "--allow-http-targets"}
	servers := map[string]*server{}
	holders := map[string]string{}
	for _, name := range []string{"old", "new"} {
		before := c.holders(t)
		servers[name] = start(t, dirs[name], args...)
		for _, h := range c.holders(t) {
			if !slices.Contains(before, h) {
				holders[name] = h
			}
		}
	}
	rc := newChatReceiver(t)
	connect(t, servers["old"], k, "partner-chat", `{"webhook_url":"`+rc.URL+`/hook"}`)
	var ids []string
	for i := range 6 {
		s := servers[[]string{"old", "new"}[i%2]]
		ids = append(ids, recordEvent(t, s, k, fmt.Sprintf(`{"domain":"r%d.example.com","visibility_score":%d,"sentiment":"neutral"}`, i, 30+i)))
	}
	waitLong(t, 60*time.Second, "every event delivered", func() bool { return rc.count() == len(ids) })

	want := map[string]string{holders["old"]: fmt.Sprintf("%x", sumOld[:4]), holders["new"]: fmt.Sprintf("%x", sumNew[:4])}
	waitLong(t, 40*time.Second, "each instance's build listed by the other", func() bool {
		for _, s := range servers {
			got := map[string]string{}
			for _, i := range connector(t, s, k, "partner-chat").Instances {
				if i.State == "running" && i.Build != nil {
					got[i.Instance] = *i.Build
				}
			}
			if !maps.Equal(got, want) {
				return false
			}
		}
		return true
	})
	type build struct {
		SHA256    string   `json:"sha256"`
		Instances []string `json:"instances"`
	}
	var list []struct {
		Builds []build `json:"builds"`
	}
	cli(t, c.dir, &list, "plugin", "list")
	if len(list) != 1 || len(list[0].Builds) != 2 ||
		!slices.Equal(list[0].Builds[0].Instances, []string{holders["new"]}) || !slices.Equal(list[0].Builds[1].Instances, []string{holders["old"]}) {
		t.Fatalf("plugin list on the cluster: %+v (old %s, new %s)", list, holders["old"], holders["new"])
	}

	// The old instance gone, its build is pruned, and the new one runs on.
	servers["old"].stop()
	var pruned []map[string]any
	cli(t, c.dir, &pruned, "plugin", "prune")
	if len(pruned) != 1 || pruned[0]["sha256"] != fmt.Sprintf("%x", sumOld) {
		t.Fatalf("prune once the old instance is gone: %v", pruned)
	}
	last := recordEvent(t, servers["new"], k, `{"domain":"after.example.com","visibility_score":70,"sentiment":"positive"}`)
	waitFor(t, "the event after the prune delivered", func() bool { return rc.text(last) != "" })
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, id := range append(ids, last) {
		if rc.got[id] != 1 {
			t.Errorf("event %s arrived %d times", id, rc.got[id])
		}
	}
}
