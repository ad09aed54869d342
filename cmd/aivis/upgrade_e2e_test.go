package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe/probefake"
)

// upgradeFrom is the earlier commit the upgrade tests build aivis at and
// upgrade from: the last release before goose ran SQLite's migrations.
const upgradeFrom = "bc684f8"

var earlier struct {
	once      sync.Once
	path      string // aivis
	connector string // the partner connector (examples/partner-connector)
	err       error
}

// earlierBinary is aivis built at upgradeFrom from this repository's
// history, once, kept in the user's cache (~/.cache/aivis-tools) by
// commit, with the partner connector of that commit. It fails the test
// when it cannot be built: a clone without that commit (a shallow one) is
// fetched nothing, and says so.
func earlierBinary(t *testing.T) (aivis, connector string) {
	t.Helper()
	earlier.once.Do(func() { earlier.path, earlier.connector, earlier.err = buildEarlier() })
	if earlier.err != nil {
		t.Fatalf("aivis at %s, for the upgrade: %v", upgradeFrom, earlier.err)
	}
	return earlier.path, earlier.connector
}

func buildEarlier() (aivis, connector string, err error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", "", err
	}
	dir := filepath.Join(cache, "aivis-tools")
	bin, conn := filepath.Join(dir, "aivis-"+upgradeFrom), filepath.Join(dir, "partner-connector-"+upgradeFrom)
	_, err1 := os.Stat(bin)
	_, err2 := os.Stat(conn)
	if err1 == nil && err2 == nil {
		return bin, conn, nil
	}
	return bin, conn, buildAt(dir, map[string]string{bin: "./cmd/aivis", conn: "./examples/partner-connector"})
}

// buildAt builds each package of upgradeFrom into its path (in dir).
func buildAt(dir string, builds map[string]string) error {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return fmt.Errorf("not in a git checkout (%v): the test builds aivis from the repository's history", err)
	}
	repo := strings.TrimSpace(string(top))
	if err := exec.Command("git", "-C", repo, "cat-file", "-e", upgradeFrom+"^{commit}").Run(); err != nil {
		return fmt.Errorf("the repository has no commit %s (a shallow clone?): clone it with its history (git fetch --unshallow)", upgradeFrom)
	}
	src, err := os.MkdirTemp("", "aivis-"+upgradeFrom)
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	var stderr bytes.Buffer
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", repo, upgradeFrom, src)
	archive.Stderr = &stderr
	if err := archive.Run(); err != nil {
		return fmt.Errorf("git archive %s: %v\n%s", upgradeFrom, err, stderr.String())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for bin, pkg := range builds {
		tmp := bin + fmt.Sprintf(".%d", os.Getpid())
		build := exec.Command("go", "build", "-trimpath", "-o", tmp, pkg)
		build.Dir, build.Env, build.Stderr = src, append(os.Environ(), "CGO_ENABLED=1"), &stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build %s at %s: %v\n%s", pkg, upgradeFrom, err, stderr.String())
		}
		if err := os.Rename(tmp, bin); err != nil {
			return err
		}
	}
	return nil
}

// scheduled are the fields that move whichever aivis serves: a domain's
// next and last scan, which the scheduler moves, and a key's last use,
// which the checks' own requests move (the counter writes it within a
// second, so a list read after them may or may not show it).
var scheduled = map[string]bool{"next_scan_at": true, "last_scan_at": true, "last_used_at": true}

// subset says where old is not within new: every field old has, new has
// with the same value, recursively; new may have fields old lacks (what a
// newer aivis adds), and a list of items with ids may have items old
// lacks (what was recorded since: events of the scans the scheduler ran,
// readings). "" when it is.
func subset(path string, old, new any) string {
	switch o := old.(type) {
	case map[string]any:
		n, ok := new.(map[string]any)
		if !ok {
			return path
		}
		for k, v := range o {
			if scheduled[k] {
				continue
			}
			if _, ok := n[k]; !ok {
				return path + "." + k + " (gone)"
			}
			if p := subset(path+"."+k, v, n[k]); p != "" {
				return p
			}
		}
		return ""
	case []any:
		n, ok := new.([]any)
		if !ok {
			return path
		}
		byID := map[any]any{}
		for _, x := range n {
			if m, ok := x.(map[string]any); ok && m["id"] != nil {
				byID[m["id"]] = x
			}
		}
		for i := range o {
			m, ok := o[i].(map[string]any)
			if ok && m["id"] != nil {
				if byID[m["id"]] == nil {
					return fmt.Sprintf("%s: %v (gone)", path, m["id"])
				}
				if p := subset(fmt.Sprintf("%s[%v]", path, m["id"]), o[i], byID[m["id"]]); p != "" {
					return p
				}
				continue
			}
			if len(n) != len(o) {
				return path + " (length)"
			}
			if p := subset(fmt.Sprintf("%s[%d]", path, i), o[i], n[i]); p != "" {
				return p
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(old, new) {
			return fmt.Sprintf("%s: %v, now %v", path, old, new)
		}
		return ""
	}
}

func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

// earlierData is what the earlier aivis made: the keys, the webhooks and
// their receivers, the events whose deliveries it left pending, and what
// its lists read.
type earlierData struct {
	serve   []string // serve's arguments, the earlier aivis's and the new one's
	keys    []key
	owner   key           // the standard account's key
	agency  key           // the agency's own key
	live    *hookReceiver // receives the standard account's webhook, verifying its secret
	down    *hookReceiver // the agency's, down (503) while the earlier aivis ran
	pending []string      // events whose deliveries to down it left pending
	chat    *chatReceiver // the destination of the standard account's connection, a sealed setting
	scan    string        // a scan it completed, with answers
	client  key           // the agency client's key
	// The webhooks of the standard account (live) and of the client
	// (gone), and the standard account's connection.
	liveID, goneID, connID string
	lists                  map[string]any
	cliLists               map[string]any
}

type listRead struct {
	k    *key
	path string
}

// header authenticates a read with k as its API asks.
func (l listRead) header() map[string]string {
	if strings.HasPrefix(l.path, "/api/") {
		return keyed(*l.k)
	}
	return bearer(*l.k)
}

func (d *earlierData) reads() []listRead {
	var out []listRead
	for _, p := range []string{"/v1/webhooks", "/v1/connections", "/v1/domains", "/v1/visibility?domain=example.com",
		"/v1/events?limit=100", "/api/v1/ai/content-requests", "/v1/visibility/scans/" + d.scan, "/v1/visibility/scans/" + d.scan + "/answers",
		"/v1/visibility/history?domain=example.com", "/v1/webhooks/" + d.liveID + "/deliveries?limit=100",
		"/v1/connections/" + d.connID + "/deliveries?limit=100"} {
		out = append(out, listRead{&d.owner, p})
	}
	for _, p := range []string{"/v1/webhooks", "/v1/webhooks/" + d.goneID + "/deliveries?limit=100"} {
		out = append(out, listRead{&d.client, p})
	}
	// The agency's webhooks are left out: its deliveries, once its
	// receiver is back, change what they say of its failures.
	for _, p := range []string{"/v1/events?limit=100", "/v1/visibility?domain=agency.example"} {
		out = append(out, listRead{&d.agency, p})
	}
	return out
}

// fillEarlier fills dataDir (and the store the environment names) with
// the aivis at bin: accounts, an agency with a client, keys, users, the
// connector plugin, a domain and a scan of it with answers (a fake engine),
// content requests in every state that lasts (queued, cancelled,
// completed, failed), webhooks with secrets (one whose
// receiver answers, one down with deliveries pending, one gone with its
// delivery failed), a connection whose destination is a secret setting,
// and readings with their events.
func fillEarlier(t *testing.T, bin, connector, dataDir string, serveArgs ...string) *earlierData {
	t.Helper()
	engine := probefake.New()
	t.Cleanup(engine.Close)
	engine.Answer("fake-model", "I would pick Example (https://scanned.invalid/).", "Example or Globex.")
	cfg := writeConfig(t, t.TempDir(), map[string]any{"engines": []map[string]any{
		{"label": "Plain", "base_url": engine.URL(), "model": "fake-model", "concurrency": 2}}})
	d := &earlierData{lists: map[string]any{}, cliLists: map[string]any{}, serve: append([]string{"--config", cfg}, serveArgs...)}
	base := serveArgs
	serveArgs = d.serve
	cliOf(t, bin, dataDir, nil, "plugin", "register", connector)
	var std, ag account
	cliOf(t, bin, dataDir, &std, "account", "create", "--name", "Standard", "--tier", "enterprise")
	cliOf(t, bin, dataDir, &ag, "account", "create", "--name", "Agency", "--tier", "enterprise", "--agency")
	var cl struct {
		ID string `json:"id"`
	}
	cliOf(t, bin, dataDir, &cl, "client", "create", "--account", ag.ID, "--name", "Client")
	newKeyOf := func(extra ...string) key {
		var k key
		cliOf(t, bin, dataDir, &k, append([]string{"key", "create", "--name", "key"}, extra...)...)
		d.keys = append(d.keys, k)
		return k
	}
	d.owner, d.agency = newKeyOf("--account", std.ID), newKeyOf("--account", ag.ID)
	d.client = newKeyOf("--account", ag.ID, "--client", cl.ID)
	ck := d.client
	newKeyOf("--account", std.ID, "--scopes", "visibility:read")
	cliOf(t, bin, dataDir, nil, "user", "invite", "--account", std.ID, "--email", "ops@example.com")

	// Content requests that end: one completed by a fake engine, one
	// failed (nothing to analyse), with content workers; the ones that
	// wait are made below, without.
	writer := probefake.New()
	t.Cleanup(writer.Close)
	writer.Answer("m", engineRewrite, engineDrafts)
	cs := startOf(t, bin, dataDir, append(append([]string{"--config", contentConfig(t, t.TempDir(), writer)}, base...), "--content-workers", "2")...)
	for _, want := range []struct{ status, body string }{
		{"completed", jsonBody(client.CreateContentRequest{Domain: "example.com", Budget: client.Dollars(1), Content: defectivePage(t),
			TargetQueries: []string{"best widgets for home"}})},
		{"failed", `{"domain":"example.com","budget":1}`},
	} {
		cr, r := create(t, cs, keyed(d.owner), want.body)
		if r.Status != 201 {
			t.Fatalf("content request: %d %s", r.Status, r.Body)
		}
		poll(t, "the content request "+want.status, func() bool {
			cr = getCR(t, cs, d.owner, cr.ID)
			return cr.Status != "queued" && cr.Status != "processing"
		})
		if cr.Status != want.status {
			t.Fatalf("content request %s, want %s: %+v", cr.Status, want.status, cr)
		}
	}
	cs.stop()

	s := startOf(t, bin, dataDir, serveArgs...)
	hook := func(k key, domain string, rc *hookReceiver) string {
		var wh client.Webhook
		r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k),
			body: jsonBody(client.CreateWebhook{Domain: domain, Events: []string{"ai_visibility_change"}, URL: rc.URL})})
		r.decode(t, &wh)
		if r.Status != 201 {
			t.Fatalf("webhook: %d %s", r.Status, r.Body)
		}
		rc.mu.Lock()
		rc.secrets = []string{wh.Secret}
		rc.mu.Unlock()
		return wh.ID
	}
	d.live, d.down = newHookReceiver(t), newHookReceiver(t)
	gone := newHookReceiver(t)
	d.liveID = hook(d.owner, "example.com", d.live)
	downID := hook(d.agency, "agency.example", d.down)
	d.goneID = hook(ck, "client.example", gone)
	goneID := d.goneID
	d.down.mu.Lock()
	d.down.status = 503
	d.down.mu.Unlock()
	gone.mu.Lock()
	gone.status = 410
	gone.mu.Unlock()

	d.chat = newChatReceiver(t)
	d.connID = connect(t, s, d.owner, "partner-chat", `{"webhook_url":"`+d.chat.URL+`"}`).ID

	if r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(d.owner), body: `{"domain":"scanned.invalid","brands":["Example"]}`}); r.Status != 201 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	d.scan = completedScan(t, s, d.owner, "scanned.invalid").ID
	var answers client.List[json.RawMessage]
	s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + d.scan + "/answers", header: bearer(d.owner)}).decode(t, &answers)
	if len(answers.Items) == 0 {
		t.Fatal("the earlier aivis's scan recorded no answers")
	}
	for i := range 2 {
		cr, r := create(t, s, keyed(d.owner), `{"domain":"example.com","budget":1}`)
		if r.Status != 201 || cr.ID == "" {
			t.Fatalf("content request: %d %s", r.Status, r.Body)
		}
		if i == 1 {
			if r := s.do(t, req{method: "POST", path: "/api/v1/ai/content-requests/" + cr.ID + "/cancel", header: keyed(d.owner)}); r.Status != 200 {
				t.Fatalf("cancel: %d %s", r.Status, r.Body)
			}
		}
	}

	reading := func(k key, domain string, score int) string {
		return recordEvent(t, s, k, fmt.Sprintf(`{"domain":%q,"visibility_score":%d,"sentiment":"positive"}`, domain, score))
	}
	first := reading(d.owner, "example.com", 40)
	waitFor(t, "the live webhook's delivery", func() bool { return d.live.got(first) })
	waitFor(t, "the connection's delivery", func() bool { return d.chat.text(first) != "" })
	goneEvent := reading(ck, "client.example", 40)
	var last []byte
	defer func() {
		if t.Failed() {
			t.Logf("the gone webhook's deliveries: %s", last)
		}
	}()
	waitFor(t, "the gone webhook's delivery failed", func() bool {
		var page client.List[client.Delivery]
		r := s.do(t, req{method: "GET", path: "/v1/webhooks/" + goneID + "/deliveries?limit=100", header: bearer(ck)})
		r.decode(t, &page)
		last = r.Body
		for _, dl := range page.Items {
			if dl.EventID == goneEvent {
				return dl.Status == "failed"
			}
		}
		return false
	})

	// What its lists read (none changes with the deliveries' attempts):
	// the agency's last, right before the stop.
	snapshot := func(agency bool) {
		for _, l := range d.reads() {
			if (l.k == &d.agency) != agency {
				continue
			}
			r := s.do(t, req{method: "GET", path: l.path, header: l.header()})
			if r.Status != 200 {
				t.Fatalf("GET %s: %d %s", l.path, r.Status, r.Body)
			}
			d.lists[l.k.ID+" "+l.path] = decodeAny(t, r.Body)
			if strings.HasPrefix(l.path, "/api/v1/ai/content-requests") {
				for _, st := range []string{"queued", "cancelled", "completed", "failed"} {
					if !strings.Contains(string(r.Body), `"status":"`+st+`"`) {
						t.Fatalf("no content request %s: %s", st, r.Body)
					}
				}
			}
		}
	}
	snapshot(false)

	for _, score := range []int{30, 60, 90} {
		d.pending = append(d.pending, reading(d.agency, "agency.example", score))
	}
	// Each pending delivery has had its first attempt (503); the next is
	// 5 s later, by the new aivis: the earlier one stops before.
	waitFor(t, "the first attempts of the pending deliveries", func() bool {
		var page client.List[client.Delivery]
		s.do(t, req{method: "GET", path: "/v1/webhooks/" + downID + "/deliveries?limit=100", header: bearer(d.agency)}).decode(t, &page)
		tried := 0
		for _, dl := range page.Items {
			if dl.Status == "pending" && dl.Attempts >= 1 {
				tried++
			}
		}
		return tried == len(d.pending)
	})
	snapshot(true)
	s.stop()
	for _, args := range [][]string{{"account", "list"}, {"client", "list", "--account", ag.ID}, {"key", "list", "--account", std.ID},
		{"key", "list", "--account", ag.ID}, {"user", "list", "--account", std.ID}} {
		var v any
		cliOf(t, bin, dataDir, &v, args...)
		d.cliLists[strings.Join(args, " ")] = v
	}
	return d
}

// startOf starts the aivis at bin and waits until it listens.
func startOf(t *testing.T, bin, dataDir string, args ...string) *server {
	t.Helper()
	s := launchBinary(t, bin, dataDir, args...)
	s.listening(t)
	return s
}

// checkUpgraded checks, on the new aivis serving what the earlier one
// made: every key authenticates; the lists read as before, but for fields
// the new aivis adds; every pending delivery is delivered once, signed
// with the secret the earlier aivis sealed, which the receiver verifies.
func checkUpgraded(t *testing.T, s *server, d *earlierData, cliLists func(args ...string) any) {
	t.Helper()
	for _, k := range d.keys {
		// 404: authenticated, with no reading of the domain for its account.
		if r := s.do(t, req{method: "GET", path: "/v1/visibility?domain=example.com", header: bearer(k)}); r.Status != 200 && r.errorCode(t) != "NOT_FOUND" {
			t.Errorf("key %s of the earlier aivis: %d %s", k.ID, r.Status, r.Body)
		}
	}
	for _, l := range d.reads() {
		r := s.do(t, req{method: "GET", path: l.path, header: l.header()})
		if p := subset("", d.lists[l.k.ID+" "+l.path], decodeAny(t, r.Body)); p != "" {
			t.Errorf("GET %s reads otherwise after the upgrade: %s\nbefore: %v\nafter: %s", l.path, p, d.lists[l.k.ID+" "+l.path], r.Body)
		}
	}
	for what, before := range d.cliLists {
		if p := subset("", before, cliLists(strings.Fields(what)...)); p != "" {
			t.Errorf("aivis %s reads otherwise after the upgrade: %s", what, p)
		}
	}
	// A pending delivery an instance had claimed when it stopped (the
	// rolling upgrade stops earlier instances while they serve) is
	// attempted again once its lease ends: 9 webhook timeouts of 3 s and
	// 5 s (delivery.Engine's lease), then its attempt.
	for _, id := range d.pending {
		waitLong(t, 45*time.Second, "pending delivery of "+id, func() bool { return d.down.got(id) })
	}
	// Fence: an event recorded now is delivered after the pending ones
	// were; then each of those has been delivered once.
	fence := recordEvent(t, s, d.agency, `{"domain":"agency.example","visibility_score":10,"sentiment":"positive"}`)
	waitFor(t, "the fence event", func() bool { return d.down.got(fence) })
	live := recordEvent(t, s, d.owner, `{"domain":"example.com","visibility_score":75,"sentiment":"positive"}`)
	waitFor(t, "a new event to the live webhook", func() bool { return d.live.got(live) })
	// The connection's destination is a secret setting the earlier aivis
	// sealed: the message reaching it unsealed it.
	waitFor(t, "a new event to the connection", func() bool { return d.chat.text(live) != "" })
	for _, rc := range []*hookReceiver{d.down, d.live} {
		rc.mu.Lock()
		for _, id := range d.pending {
			if rc == d.down && rc.ids[id] != 1 {
				t.Errorf("pending event %s delivered %d times", id, rc.ids[id])
			}
		}
		if rc.invalid > 0 {
			t.Errorf("%d deliveries failed the receiver's check of the earlier secret", rc.invalid)
		}
		rc.mu.Unlock()
	}
}

var upgradeServe = []string{"--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "3s", "--content-workers", "0"}

// TestUpgradeSQLite: a data directory filled by the earlier aivis is
// served by this one, which migrates it at start (its schema_migrations
// carried into goose's table); every command first refuses it, naming
// aivis migrate up.
func TestUpgradeSQLite(t *testing.T) {
	old, connector := earlierBinary(t)
	dir := t.TempDir()
	d := fillEarlier(t, old, connector, dir, upgradeServe...)
	if msg := cliFails(t, dir, "account", "list"); !strings.Contains(msg, "run `aivis migrate up`") {
		t.Fatalf("a command on the earlier schema: %s", msg)
	}
	d.down.mu.Lock()
	d.down.status = 0
	d.down.mu.Unlock()
	s := start(t, dir, d.serve...)
	checkUpgraded(t, s, d, func(args ...string) any {
		var v any
		cli(t, dir, &v, args...)
		return v
	})
	s.stop()
	// The earlier aivis still runs on the migrated schema (expand/contract).
	s = startOf(t, old, dir, d.serve...)
	if r := s.do(t, req{method: "GET", path: "/v1/webhooks", header: bearer(d.owner)}); r.Status != 200 {
		t.Fatalf("the earlier aivis on the migrated schema: %d %s", r.Status, r.Body)
	}
}

// TestUpgradePostgresRolling: on PostgreSQL, NATS and Redis, a database
// filled by the earlier aivis is upgraded as a rolling upgrade does: an
// earlier instance serves while a new one starts, migrating the schema
// under it, and both serve together while readings flow through each;
// every reading's event is delivered once, none lost or doubled. Then,
// the earlier instance stopped, the new one reads what the earlier aivis
// made as the SQLite test checks.
func TestUpgradePostgresRolling(t *testing.T) {
	old, connector := earlierBinary(t)
	c := newCluster(t)
	d := fillEarlier(t, old, connector, c.dir, upgradeServe...)
	if msg := cliFails(t, c.dir, "account", "list"); !strings.Contains(msg, "run `aivis migrate up`") {
		t.Fatalf("a command on the earlier schema: %s", msg)
	}
	// The receiver is back before any instance serves again: the pending
	// deliveries go to it once, from whichever instance is due first.
	d.down.mu.Lock()
	d.down.status = 0
	d.down.mu.Unlock()

	var flowAcct account
	cliOf(t, old, c.dir, &flowAcct, "account", "create", "--name", "Flow", "--tier", "enterprise")
	var fk key
	cliOf(t, old, c.dir, &fk, "key", "create", "--account", flowAcct.ID, "--name", "flow")
	a := startOf(t, old, t.TempDir(), d.serve...)
	flow := newHookReceiver(t)
	var wh client.Webhook
	a.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(fk),
		body: jsonBody(client.CreateWebhook{Domain: "flow.example", Events: []string{"ai_visibility_change"}, URL: flow.URL})}).decode(t, &wh)
	flow.mu.Lock()
	flow.secrets = []string{wh.Secret}
	flow.mu.Unlock()

	var events []string
	n := 0
	read := func(s *server) {
		n++
		events = append(events, recordEvent(t, s, fk, fmt.Sprintf(`{"domain":"flow.example","visibility_score":%d,"sentiment":"positive"}`, 10+n%2*80)))
	}
	for range 10 {
		read(a)
	}
	// The new instance starts, migrating the schema, while the earlier one
	// serves and readings flow through it.
	b := launch(t, t.TempDir(), d.serve...)
	for range 10 {
		read(a)
	}
	b.listening(t)
	for range 10 {
		read(a)
		read(b)
	}
	// An earlier instance started on the migrated schema runs too
	// (expand/contract; bc684f8 predates the refusal of a newer schema).
	a.stop()
	a = startOf(t, old, t.TempDir(), d.serve...)
	for range 10 {
		read(a)
		read(b)
	}
	a.stop()
	for range 10 {
		read(b)
	}
	fence := events[len(events)-1]
	waitFor(t, "the last reading's event", func() bool { return flow.got(fence) })
	for _, id := range events {
		waitFor(t, "event "+id, func() bool { return flow.got(id) })
	}
	flow.mu.Lock()
	for _, id := range events {
		if flow.ids[id] != 1 {
			t.Errorf("event %s delivered %d times", id, flow.ids[id])
		}
	}
	if flow.invalid > 0 {
		t.Errorf("%d deliveries failed the receiver's check", flow.invalid)
	}
	flow.mu.Unlock()
	checkUpgraded(t, b, d, func(args ...string) any {
		var v any
		cli(t, c.dir, &v, args...)
		return v
	})
}
