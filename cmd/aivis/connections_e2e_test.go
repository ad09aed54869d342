package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
)

// buildPlugin compiles a connector plugin into a temporary directory.
func buildPlugin(t *testing.T, pkg, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// chatReceiver is the destination of the partner connector: it records
// each message by its Idempotency-Key (the event id) and answers with the
// status it is told.
type chatReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	status int
	got    map[string]int    // event id -> messages
	texts  map[string]string // event id -> text
	order  []string
}

func newChatReceiver(t *testing.T) *chatReceiver {
	c := &chatReceiver{status: 200, got: map[string]int{}, texts: map[string]string{}}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			Content string `json:"content"`
		}
		json.NewDecoder(r.Body).Decode(&m)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.status == 200 {
			id := r.Header.Get("Idempotency-Key")
			c.got[id]++
			c.texts[id] = m.Content
			c.order = append(c.order, id)
		}
		w.WriteHeader(c.status)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *chatReceiver) answer(status int) {
	c.mu.Lock()
	c.status = status
	c.mu.Unlock()
}

func (c *chatReceiver) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

func (c *chatReceiver) text(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.texts[id]
}

func connectionBody(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// connect makes a connection of connector with settings, for the
// ai_visibility_change events of every domain; the API must accept it.
func connect(t *testing.T, s *server, k key, connector, settings string) client.Connection {
	t.Helper()
	r := s.do(t, req{method: "POST", path: "/v1/connections", header: bearer(k), body: connectionBody(t, client.CreateConnection{
		Connector: connector, Events: []string{"ai_visibility_change"}, Settings: json.RawMessage(settings)})})
	var c client.Connection
	r.decode(t, &c)
	if r.Status != 201 {
		t.Fatalf("create %s %s: %d %s", connector, settings, r.Status, r.Body)
	}
	return c
}

func TestConnectionsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	bin := buildPlugin(t, "../../examples/partner-connector", "partner-connector")
	cli(t, dir, nil, "plugin", "register", bin)
	a := newAccount(t, dir, "enterprise", true)
	k := newKey(t, dir, a.ID)
	var clA, clB struct {
		ID string `json:"id"`
	}
	cli(t, dir, &clA, "client", "create", "--account", a.ID, "--name", "Client A")
	cli(t, dir, &clB, "client", "create", "--account", a.ID, "--name", "Client B")
	ka := newKey(t, dir, a.ID, "--client", clA.ID)
	kb := newKey(t, dir, a.ID, "--client", clB.ID)
	s := start(t, dir, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "3s")
	rA, rB := newChatReceiver(t), newChatReceiver(t)

	// Bad settings are refused with the plugin's field errors; nothing is kept.
	for _, bad := range []string{`{}`, `{"webhook_url":"not a url"}`, `{"webhook_url":42}`, `{"webhook_url":"` + rA.URL + `","colour":"red"}`, `[]`} {
		r := s.do(t, req{method: "POST", path: "/v1/connections", header: bearer(ka),
			body: `{"connector":"partner-chat","events":["ai_visibility_change"],"settings":` + bad + `}`})
		if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" || !strings.Contains(string(r.Body), `"field":"settings`) {
			t.Fatalf("settings %s: %d %s", bad, r.Status, r.Body)
		}
	}
	r := s.do(t, req{method: "POST", path: "/v1/connections", header: bearer(ka),
		body: `{"connector":"nope","events":["ai_visibility_change"],"settings":{}}`})
	if r.Status != 400 || !strings.Contains(string(r.Body), `"field":"connector"`) {
		t.Fatalf("unknown connector: %d %s", r.Status, r.Body)
	}
	r = s.do(t, req{method: "POST", path: "/v1/connections", header: bearer(ka),
		body: `{"connector":"partner-chat","events":["no_such_kind"],"domains":["not a domain"],"settings":{"webhook_url":"` + rA.URL + `"}}`})
	if r.Status != 400 || !strings.Contains(string(r.Body), `"events[0]"`) || !strings.Contains(string(r.Body), `"domains[0]"`) {
		t.Fatalf("bad events and domains: %d %s", r.Status, r.Body)
	}
	var page client.List[client.Connection]
	s.do(t, req{method: "GET", path: "/v1/connections?client_id=*", header: bearer(k)}).decode(t, &page)
	if len(page.Items) != 0 {
		t.Fatalf("refused connections were kept: %+v", page.Items)
	}

	// One connection per client; the secret URL is sealed and never shown.
	create := func(key key, url string) client.Connection {
		r := s.do(t, req{method: "POST", path: "/v1/connections", header: bearer(key), body: connectionBody(t, client.CreateConnection{
			Connector: "partner-chat", Events: []string{"ai_visibility_change", "connection_disabled"}, Domains: []string{"Example.COM"},
			Settings: json.RawMessage(`{"webhook_url":"` + url + `/hook","username":"aivis"}`)})})
		var c client.Connection
		r.decode(t, &c)
		if r.Status != 201 || c.Name != "Partner Chat" || string(c.Settings) != `{"username":"aivis"}` ||
			len(c.SecretFields) != 1 || c.SecretFields[0] != "webhook_url" || c.Domains[0] != "example.com" || !c.Enabled {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		return c
	}
	ca, cb := create(ka, rA.URL), create(kb, rB.URL)
	for _, name := range []string{"aivis.db", "aivis.db-wal"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && bytes.Contains(b, []byte(rA.URL+"/hook")) {
			t.Errorf("%s holds a connection's secret setting in clear", name)
		}
	}
	r = s.do(t, req{method: "GET", path: "/v1/connections/" + ca.ID, header: bearer(kb)})
	if r.Status != 404 {
		t.Fatalf("client B reads client A's connection: %d", r.Status)
	}
	if r = s.do(t, req{method: "GET", path: "/v1/webhooks/" + ca.ID, header: bearer(ka)}); r.Status != 404 {
		t.Fatalf("a connection read as a webhook: %d", r.Status)
	}
	s.do(t, req{method: "GET", path: "/v1/connections?client_id=*", header: bearer(k)}).decode(t, &page)
	if len(page.Items) != 2 {
		t.Fatalf("the agency sees %d connections", len(page.Items))
	}

	// Test sends a real test event through the plugin.
	var res client.ConnectionTestResult
	r = s.do(t, req{method: "POST", path: "/v1/connections/" + ca.ID + "/test", header: bearer(ka)})
	r.decode(t, &res)
	if r.Status != 200 || res.Result != "delivered" || !strings.Contains(rA.text(res.EventID), "webhook_test") {
		t.Fatalf("test: %d %s (%q)", r.Status, r.Body, rA.text(res.EventID))
	}

	// Client A's reading reaches client A's tool only.
	r = s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(ka), body: `{"domain":"example.com","visibility_score":61,"sentiment":"positive"}`})
	var rec client.RecordedReading
	r.decode(t, &rec)
	waitFor(t, "client A's event delivered", func() bool { return rA.text(*rec.EventID) != "" })
	if !strings.Contains(rA.text(*rec.EventID), "visibility 61") || rB.count() != 0 {
		t.Fatalf("delivered %q; client B got %d", rA.text(*rec.EventID), rB.count())
	}
	// Another domain is not wanted.
	s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(ka), body: `{"domain":"other.org","visibility_score":10,"sentiment":"neutral"}`})

	var dl client.List[client.Delivery]
	waitFor(t, "the delivery log", func() bool {
		s.do(t, req{method: "GET", path: "/v1/connections/" + ca.ID + "/deliveries", header: bearer(ka)}).decode(t, &dl)
		return len(dl.Items) == 1 && dl.Items[0].Status == "succeeded"
	})
	var one client.Delivery
	s.do(t, req{method: "GET", path: "/v1/connections/" + ca.ID + "/deliveries/" + dl.Items[0].ID, header: bearer(ka)}).decode(t, &one)
	if one.ConnectionID != ca.ID || one.EventID != *rec.EventID || len(one.AttemptLog) != 1 || one.AttemptLog[0].Result != "delivered" {
		t.Fatalf("delivery: %+v", one)
	}

	// A failing destination is retried with the same event id.
	rA.answer(503)
	r = s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(ka), body: `{"domain":"example.com","visibility_score":70,"sentiment":"positive"}`})
	r.decode(t, &rec)
	waitFor(t, "a failed attempt", func() bool {
		s.do(t, req{method: "GET", path: "/v1/connections/" + ca.ID + "/deliveries", header: bearer(ka)}).decode(t, &dl)
		return len(dl.Items) == 2 && dl.Items[0].Attempts >= 1
	})
	if dl.Items[0].Status != "pending" || dl.Items[0].NextAttemptAt == nil || dl.Items[0].LastError == nil {
		t.Fatalf("after a 503: %+v", dl.Items[0])
	}
	rA.answer(200)
	waitFor(t, "the retry delivered", func() bool { return rA.text(*rec.EventID) != "" })

	// Settings merge: the secret URL is kept when left out; bad ones are refused.
	r = s.do(t, req{method: "PATCH", path: "/v1/connections/" + ca.ID, header: bearer(ka), body: `{"settings":{"username":"bot"},"min_score_change":5}`})
	var upd client.Connection
	r.decode(t, &upd)
	if r.Status != 200 || string(upd.Settings) != `{"username":"bot"}` || upd.MinScoreChange != 5 || len(upd.SecretFields) != 1 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	r = s.do(t, req{method: "PATCH", path: "/v1/connections/" + ca.ID, header: bearer(ka), body: `{"settings":{"webhook_url":"ftp://x"}}`})
	if r.Status != 400 || !strings.Contains(string(r.Body), "settings.webhook_url") {
		t.Fatalf("bad patch: %d %s", r.Status, r.Body)
	}
	if res := s.do(t, req{method: "POST", path: "/v1/connections/" + ca.ID + "/test", header: bearer(ka)}); !strings.Contains(string(res.Body), `"delivered"`) {
		t.Fatalf("the secret was lost by a patch: %s", res.Body)
	}

	// A destination that is gone disables the connection.
	rB.answer(410)
	r = s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(kb), body: `{"domain":"example.com","visibility_score":30,"sentiment":"negative"}`})
	var got client.Connection
	waitFor(t, "client B's connection disabled", func() bool {
		s.do(t, req{method: "GET", path: "/v1/connections/" + cb.ID, header: bearer(kb)}).decode(t, &got)
		return !got.Enabled
	})
	if got.DisabledReason == nil || !strings.Contains(*got.DisabledReason, "gone") {
		t.Fatalf("disabled: %+v", got)
	}

	// The recent events of an owner, newest first.
	var evs client.List[json.RawMessage]
	s.do(t, req{method: "GET", path: "/v1/events?event=ai_visibility_change", header: bearer(ka)}).decode(t, &evs)
	if len(evs.Items) != 3 || !strings.Contains(string(evs.Items[0]), `"visibility_score":70`) {
		t.Fatalf("recent events: %s", evs.Items)
	}

	// Delete: no longer listed nor changed, but readable with its
	// deliveries until they age out.
	if r = s.do(t, req{method: "DELETE", path: "/v1/connections/" + ca.ID, header: bearer(ka)}); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	var gone client.Connection
	if r = s.do(t, req{method: "GET", path: "/v1/connections/" + ca.ID, header: bearer(ka)}); r.Status != 200 {
		t.Fatalf("after delete: %d", r.Status)
	} else if r.decode(t, &gone); gone.DeletedAt == nil || gone.Enabled {
		t.Fatalf("after delete: %s", r.Body)
	}
	if r = s.do(t, req{method: "POST", path: "/v1/connections/" + ca.ID + "/test", header: bearer(ka)}); r.Status != 404 {
		t.Fatalf("a test of a deleted connection: %d", r.Status)
	}
}

// TestConnectorKilledMidStream kills the plugin process again and again
// while events flow: the host restarts it and every event still arrives.
func TestConnectorKilledMidStream(t *testing.T) {
	dir := t.TempDir()
	bin := buildPlugin(t, "../../examples/partner-connector", "partner-connector")
	cli(t, dir, nil, "plugin", "register", bin)
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "3s")
	rc := newChatReceiver(t)
	r := s.do(t, req{method: "POST", path: "/v1/connections", header: bearer(k), body: connectionBody(t, client.CreateConnection{
		Connector: "partner-chat", Events: []string{"ai_visibility_change"}, Settings: json.RawMessage(`{"webhook_url":"` + rc.URL + `"}`)})})
	var created client.Connection
	r.decode(t, &created)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	const n = 250
	ids := make([]string, 0, n)
	kills := 0
	for i := range n {
		code, body, err := post(s, "/v1/visibility", k.Key, fmt.Sprintf(`{"domain":"d%d.example.com","visibility_score":%d,"sentiment":"neutral"}`, i, i%101))
		if err != nil || code != 201 {
			t.Fatalf("reading %d: %d %v %s", i, code, err, body)
		}
		var rec client.RecordedReading
		json.Unmarshal(body, &rec)
		ids = append(ids, *rec.EventID)
		if i%60 == 30 {
			waitFor(t, "the plugin running", func() bool { return len(pidsOf(bin)) > 0 })
			for _, pid := range pidsOf(bin) {
				var p int
				fmt.Sscan(pid, &p)
				if syscall.Kill(p, syscall.SIGKILL) == nil {
					kills++
				}
			}
		}
	}
	if kills < 3 {
		t.Fatalf("killed the plugin %d times", kills)
	}
	deadline := time.Now().Add(60 * time.Second)
	for rc.count() < n && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var missing []string
	for _, id := range ids {
		if rc.got[id] == 0 {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		var dl client.List[client.Delivery]
		s.do(t, req{method: "GET", path: "/v1/connections/" + created.ID + "/deliveries?status=pending", header: bearer(k)}).decode(t, &dl)
		for _, d := range dl.Items {
			var one client.Delivery
			s.do(t, req{method: "GET", path: "/v1/connections/" + created.ID + "/deliveries/" + d.ID, header: bearer(k)}).decode(t, &one)
			for _, at := range one.AttemptLog {
				t.Logf("pending %s attempt %d at %s: %s %v", d.EventID, at.N, at.At.Format(time.StampMilli), at.Result, *at.Error)
			}
		}
		t.Fatalf("%d of %d events never arrived after %d kills (first %s)", len(missing), n, kills, missing[0])
	}
	if len(pidsOf(bin)) != 1 {
		t.Fatalf("plugin processes after the kills: %v", pidsOf(bin))
	}
	var kinds client.List[client.ConnectorKind]
	s.do(t, req{method: "GET", path: "/v1/connectors", header: bearer(k)}).decode(t, &kinds)
	if len(kinds.Items) != 1 || kinds.Items[0].Health.Restarts < 1 || kinds.Items[0].Health.State != "running" {
		t.Fatalf("the restarts are not reported: %+v", kinds.Items)
	}
	t.Logf("%d events, %d kills, %d messages (duplicates are at-least-once redeliveries)", n, kills, len(rc.order))
}

// TestMisbehavingConnectors: a plugin that hangs, one that answers
// garbage and one whose binary changed are each contained and reported;
// the server and the other connections go on. (One that crashes:
// TestConnectorKilledMidStream.)
func TestMisbehavingConnectors(t *testing.T) {
	dir := t.TempDir()
	bad := buildPlugin(t, "../../plugins/host/testdata/testplugin", "testplugin")
	good := buildPlugin(t, "../../examples/partner-connector", "partner-connector")
	cli(t, dir, nil, "plugin", "register", bad)
	cli(t, dir, nil, "plugin", "register", good)
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "2s")
	rc := newChatReceiver(t)
	fine := connect(t, s, k, "partner-chat", `{"webhook_url":"`+rc.URL+`"}`).ID
	lastError := func(id string) string {
		var dl client.List[client.Delivery]
		s.do(t, req{method: "GET", path: "/v1/connections/" + id + "/deliveries", header: bearer(k)}).decode(t, &dl)
		for _, d := range dl.Items {
			if d.LastError != nil {
				return *d.LastError
			}
		}
		return ""
	}
	for i, tc := range []struct{ mode, want string }{{"hang", "deadline"}, {"garbage", "results"}} {
		id := connect(t, s, k, "test", `{"mode":"`+tc.mode+`"}`).ID
		before := rc.count()
		code, _, err := post(s, "/v1/visibility", k.Key, fmt.Sprintf(`{"domain":"x.example.com","visibility_score":%d,"sentiment":"neutral"}`, 10+i))
		if err != nil || code != 201 {
			t.Fatalf("reading: %d %v", code, err)
		}
		waitFor(t, "the healthy connection's delivery beside "+tc.mode, func() bool { return rc.count() == before+1 })
		waitFor(t, "a recorded failure of "+tc.mode, func() bool { return lastError(id) != "" })
		if e := lastError(id); !strings.Contains(e, tc.want) || !strings.Contains(e, "connector test") {
			t.Errorf("%s: last error %q, want it to mention %q", tc.mode, e, tc.want)
		}
		if r := s.do(t, req{method: "DELETE", path: "/v1/connections/" + id, header: bearer(k)}); r.Status != 204 {
			t.Fatalf("delete: %d", r.Status)
		}
	}

	// A binary changed on disk is not started again: the connector is
	// reported unavailable, and the server still serves.
	s.stop()
	tamper(t, bad)
	s = start(t, dir, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "2s")
	r := s.do(t, req{method: "POST", path: "/v1/connections", header: bearer(k), body: `{"connector":"test","events":["ai_visibility_change"],"settings":{}}`})
	if r.Status != 503 || r.errorCode(t) != "CONNECTOR_UNAVAILABLE" || !strings.Contains(string(r.Body), "changed") {
		t.Fatalf("a changed plugin: %d %s", r.Status, r.Body)
	}
	if r = s.do(t, req{method: "POST", path: "/v1/connections/" + fine + "/test", header: bearer(k)}); !strings.Contains(string(r.Body), `"delivered"`) {
		t.Fatalf("the healthy connector after a restart: %s", r.Body)
	}
}
