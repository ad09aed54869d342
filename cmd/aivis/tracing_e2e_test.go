package main

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/internal/otlptest"
)

// tracedTo sends the traces of every aivis the test starts to an OTLP
// receiver of its own, every 100 ms.
func tracedTo(t *testing.T) *otlptest.Receiver {
	rc := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	return rc
}

// parentReceiver is a webhook endpoint that answers 200 and keeps the
// traceparent each event came with, by event.
type parentReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	parents map[string]string // webhook-id (the event's id) -> traceparent
}

func newParentReceiver(t *testing.T) *parentReceiver {
	p := &parentReceiver{parents: map[string]string{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		p.mu.Lock()
		p.parents[r.Header.Get("webhook-id")] = r.Header.Get("traceparent")
		p.mu.Unlock()
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *parentReceiver) parent(eventID string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tp, ok := p.parents[eventID]
	return tp, ok
}

// hookTo makes a webhook of a domain's events to url.
func hookTo(t *testing.T, s *server, k key, domain, url string, events ...string) client.Webhook {
	t.Helper()
	r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k), body: jsonBody(client.CreateWebhook{Domain: domain,
		Events: events, URL: url})})
	var wh client.Webhook
	r.decode(t, &wh)
	if r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	return wh
}

// tracedReading records a reading that changes the score, with a
// caller's sampled traceparent, and returns its event's id, the trace's id
// and the caller's span's.
func tracedReading(t *testing.T, s *server, k key, body string) (eventID, traceID, spanID string) {
	t.Helper()
	b := make([]byte, 24)
	rand.Read(b)
	traceID, spanID = hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	r := s.do(t, req{method: "POST", path: "/v1/visibility", header: with(bearer(k), "traceparent", "00-"+traceID+"-"+spanID+"-01"),
		body: body})
	var rec client.RecordedReading
	r.decode(t, &rec)
	if r.Status != 201 || rec.EventID == nil {
		t.Fatalf("reading: %d %s", r.Status, r.Body)
	}
	return *rec.EventID, traceID, spanID
}

// childOf finds, in a trace's spans, the span of a name whose parent is
// parent (a span id), waiting for it to be received.
func childOf(t *testing.T, rc *otlptest.Receiver, traceID, name, parent string) otlptest.Span {
	t.Helper()
	var found otlptest.Span
	rc.Wait(t, name+" under "+parent+" in trace "+traceID, 30*time.Second, func(spans []otlptest.Span) bool {
		for _, s := range otlptest.Trace(spans, traceID) {
			if s.Name == name && s.ParentID == parent {
				found = s
				return true
			}
		}
		return false
	})
	return found
}

// hasAttrs checks that a span carries these attributes.
func hasAttrs(t *testing.T, s otlptest.Span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if s.Attributes[k] != v {
			t.Errorf("%s: %s = %q, want %q (attributes %v)", s.Name, k, s.Attributes[k], v, s.Attributes)
		}
	}
}

// noTenantContent checks every attribute of every span received: none
// holds a secret, a key, a URL (its query with it), an address, a domain,
// an account or what a tenant wrote.
func noTenantContent(t *testing.T, spans []otlptest.Span, forbidden ...string) {
	t.Helper()
	forbidden = append(forbidden, "://", "127.0.0.1", "?", "whsec_", "svc_")
	for _, s := range spans {
		for k, v := range s.Attributes {
			for _, f := range forbidden {
				if f != "" && strings.Contains(v, f) {
					t.Errorf("span %q: attribute %s=%q holds %q", s.Name, k, v, f)
				}
			}
		}
	}
}

// TestTracesEndToEnd: on the SQLite bus, one trace runs from a reading's
// POST /v1/visibility, whose caller's traceparent is its parent, through
// the event's publish and its handling by the fan-out, to the attempts of
// its delivery to a webhook, whose POST carries the attempt's
// traceparent, and to a connection, through its connector's call; the
// access log of the request carries its trace id. A scan is a trace of
// its own with its engine calls. No attribute of any span holds a
// secret, a URL, a domain, an account or a tenant's words.
func TestTracesEndToEnd(t *testing.T) {
	rc := tracedTo(t)
	dir := t.TempDir()
	cli(t, dir, nil, "plugin", "register", buildPlugin(t, "../../examples/partner-connector", "partner-connector"))
	engine := probefake.New()
	defer engine.Close()
	engine.Answer("fake-model", "Acme (https://acme.invalid/skates) beats Globex.")
	cfgFile := scanConfig(t, dir, engine)
	a := newAccount(t, dir, "professional", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--config", cfgFile, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--log-level", "info")

	hooks, chat := newParentReceiver(t), newChatReceiver(t)
	wh := hookTo(t, s, k, "acme.invalid", hooks.URL+"/hook?token=hook-query-secret", "ai_visibility_change", "scan_completed")
	conn := connect(t, s, k, "partner-chat", `{"webhook_url":"`+chat.URL+`/chat?key=chat-query-secret"}`)
	// A HEAD is served by its GET's route, and named after it.
	if r := s.do(t, req{method: "HEAD", path: "/v1/webhooks/" + wh.ID, header: bearer(k)}); r.Status != 200 {
		t.Fatalf("HEAD of the webhook: %d", r.Status)
	}
	rc.Wait(t, "the HEAD's span", 30*time.Second, func(spans []otlptest.Span) bool {
		sp, ok := otlptest.Named(spans, "HEAD /v1/webhooks/{id}")
		return ok && sp.Attributes["http.route"] == "/v1/webhooks/{id}" && sp.Attributes["http.response.status_code"] == "200"
	})
	event, traceID, callerSpan := tracedReading(t, s, k, `{"domain":"acme.invalid","visibility_score":61,"sentiment":"positive"}`)
	waitFor(t, "the event at the webhook and the connection's destination", func() bool {
		_, ok := hooks.parent(event)
		return ok && chat.count() > 0
	})

	server := childOf(t, rc, traceID, "POST /v1/visibility", callerSpan)
	if server.Kind != "SPAN_KIND_SERVER" {
		t.Errorf("the request's span is %s", server.Kind)
	}
	hasAttrs(t, server, map[string]string{"http.request.method": "POST", "http.route": "/v1/visibility", "http.response.status_code": "201"})
	publish := childOf(t, rc, traceID, "publish aivis.events", server.ID)
	hasAttrs(t, publish, map[string]string{"aivis.event.kind": "ai_visibility_change", "messaging.message.id": event})
	process := childOf(t, rc, traceID, "process aivis.events", publish.ID)
	hasAttrs(t, process, map[string]string{"messaging.consumer.group.name": "webhooks", "messaging.message.id": event})
	toHook := childOf(t, rc, traceID, "deliver webhook", process.ID)
	hasAttrs(t, toHook, map[string]string{"aivis.target.kind": "webhook", "aivis.event.kind": "ai_visibility_change",
		"aivis.delivery.attempt": "1", "aivis.outcome": "delivered", "http.response.status_code": "200"})
	if got, _ := hooks.parent(event); got != "00-"+traceID+"-"+toHook.ID+"-01" {
		t.Errorf("the webhook's POST came with traceparent %q, want the attempt's span %s of trace %s", got, toHook.ID, traceID)
	}
	toConn := childOf(t, rc, traceID, "deliver connection", process.ID)
	hasAttrs(t, toConn, map[string]string{"aivis.target.kind": "connection", "aivis.connector": "partner-chat", "aivis.outcome": "delivered"})
	call := childOf(t, rc, traceID, "connector deliver", toConn.ID)
	hasAttrs(t, call, map[string]string{"aivis.connector": "partner-chat", "aivis.connector.call": "deliver", "aivis.deliveries": "1"})
	waitFor(t, "the request's access log with its trace id", func() bool {
		for _, line := range strings.Split(s.Stderr.String(), "\n") {
			if strings.Contains(line, "msg=request ") && strings.Contains(line, "path=/v1/visibility ") &&
				strings.Contains(line, "trace_id="+traceID) {
				return true
			}
		}
		return false
	})

	// The webhook's creation: its transaction a span of the request's
	// trace, on SQLite.
	rc.Wait(t, "a store update under POST /v1/webhooks", 30*time.Second, func(spans []otlptest.Span) bool {
		create, ok := otlptest.Named(spans, "POST /v1/webhooks")
		if !ok {
			return false
		}
		for _, sp := range otlptest.Trace(spans, create.TraceID) {
			if sp.Name == "store update" && sp.Attributes["db.system.name"] == "sqlite" && sp.Attributes["aivis.outcome"] == "committed" {
				return true
			}
		}
		return false
	})

	// A scan: a trace of its own, its engine calls in it, and its events.
	r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: jsonBody(client.CreateDomain{Domain: "acme.invalid",
		Brands: []string{"Acme"}, Competitors: []string{"Globex"}, Prompts: []string{"Which rocket skates should I buy?"}})})
	if r.Status != 201 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	var sc client.Scan
	s.do(t, req{method: "POST", path: "/v1/visibility/scans", header: bearer(k), body: `{"domain":"acme.invalid"}`}).decode(t, &sc)
	spans := rc.Wait(t, "the scan's trace", 30*time.Second, func(spans []otlptest.Span) bool {
		scan, ok := otlptest.Named(spans, "scan")
		if !ok {
			return false
		}
		var calls, published int
		for _, sp := range otlptest.Trace(spans, scan.TraceID) {
			switch {
			case sp.Name == "engine call" && sp.ParentID == scan.ID:
				calls++
			case sp.Name == "publish aivis.events":
				published++
			}
		}
		return scan.ParentID == "" && calls > 0 && published > 0
	})
	call, _ = otlptest.Named(spans, "engine call")
	hasAttrs(t, call, map[string]string{"aivis.engine.label": "Fake", "aivis.engine.kind": "openai-chat", "aivis.attempts": "1"})

	noTenantContent(t, spans, k.Key, k.Secret, a.ID, wh.Secret, conn.ID, "acme", "hook-query-secret", "chat-query-secret", "sk-test",
		"rocket", "Globex", "Acme")
}

// TestTracesOnTheClusterBuses: on a cluster (PostgreSQL, NATS, Redis;
// two instances), one trace runs from the reading's request on one
// instance through the publish in its transaction and, on bus nats, the
// forwarder's forward to NATS, or, on bus postgres, the outbox's table
// itself, to the fan-out and the webhook's attempt, on whichever instance.
func TestTracesOnTheClusterBuses(t *testing.T) {
	for _, bus := range []string{"nats", "postgres"} {
		t.Run(bus, func(t *testing.T) { tracesOnCluster(t, bus) })
	}
}

func tracesOnCluster(t *testing.T, bus string) {
	c := newCluster(t)
	t.Setenv("AIVIS_BUS", bus)
	rc := tracedTo(t)
	k := newKey(t, c.dir, newAccount(t, c.dir, "professional", false).ID)
	args := []string{"--allowed-targets", "127.0.0.1/32", "--allow-http-targets"}
	a, _ := c.start(t, args...), c.start(t, args...)
	hooks := newParentReceiver(t)
	wh := hookTo(t, a.server, k, "example.com", hooks.URL+"/hook?token=hook-query-secret", "ai_visibility_change")
	event, traceID, callerSpan := tracedReading(t, a.server, k, `{"domain":"example.com","visibility_score":70,"sentiment":"neutral"}`)
	waitFor(t, "the event at the webhook", func() bool { _, ok := hooks.parent(event); return ok })

	server := childOf(t, rc, traceID, "POST /v1/visibility", callerSpan)
	publish := childOf(t, rc, traceID, "publish aivis.events", server.ID)
	parent := publish.ID
	if bus == "nats" {
		forward := childOf(t, rc, traceID, "forward aivis.events", publish.ID)
		hasAttrs(t, forward, map[string]string{"messaging.message.id": event, "messaging.destination.name": "aivis.events"})
		parent = forward.ID
	}
	process := childOf(t, rc, traceID, "process aivis.events", parent)
	attempt := childOf(t, rc, traceID, "deliver webhook", process.ID)
	if got, _ := hooks.parent(event); got != "00-"+traceID+"-"+attempt.ID+"-01" {
		t.Errorf("the webhook's POST came with traceparent %q, want the attempt's span %s of trace %s", got, attempt.ID, traceID)
	}
	spans := rc.Wait(t, "a store update on postgresql", 30*time.Second, func(spans []otlptest.Span) bool {
		for _, sp := range spans {
			if sp.Name == "store update" && sp.Attributes["db.system.name"] == "postgresql" {
				return true
			}
		}
		return false
	})
	noTenantContent(t, spans, k.Key, k.Secret, wh.Secret, "example.com", "hook-query-secret")
}
