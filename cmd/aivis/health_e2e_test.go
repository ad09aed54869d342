package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/internal/testsvc"
)

// probe gets a probe's status and its body's status and failing parts.
func probe(t *testing.T, c *http.Client, url string) (int, string, []string) {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	var body struct {
		Status  string   `json:"status"`
		Failing []string `json:"failing"`
	}
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
	}
	return res.StatusCode, body.Status, body.Failing
}

// TestProbesOnEveryListener: /livez, /readyz and /healthz answer on the
// API's port, on the plain HTTP listener (which answers everything else
// 403) and on the admin listener, which serves pprof only when asked to; at
// SIGTERM, /readyz answers 503 for shutdown_delay while the listener still
// takes requests, and then the server stops.
func TestProbesOnEveryListener(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir, "--http-addr", "127.0.0.1:0", "--shutdown-delay", "2s")
	if s.AdminURL == "" || s.HTTPURL == "" {
		t.Fatalf("the banner names no admin listener or plain HTTP listener:\n%s", s.Stdout)
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	for _, base := range []struct {
		name string
		url  string
		c    *http.Client
	}{{"API", s.URL, s.HTTP}, {"plain HTTP", s.HTTPURL, plain}, {"admin", s.AdminURL, plain}} {
		for path, want := range map[string]string{"/livez": "ok", "/healthz": "ok", "/readyz": "ready"} {
			if code, status, _ := probe(t, base.c, base.url+path); code != 200 || status != want {
				t.Errorf("%s %s: %d %s", base.name, path, code, status)
			}
		}
	}
	if r, err := plain.Get(s.HTTPURL + "/v1/domains"); err != nil || r.StatusCode != 403 {
		t.Errorf("plain HTTP /v1/domains: %v %v", r, err)
	}
	if r, err := plain.Get(s.AdminURL + "/debug/pprof/"); err != nil || r.StatusCode != 404 {
		t.Errorf("pprof without admin_pprof: %v %v", r, err)
	}
	if r, err := plain.Get(s.AdminURL + "/v1/domains"); err != nil || r.StatusCode != 404 {
		t.Errorf("the API on the admin listener: %v %v", r, err)
	}

	other := start(t, t.TempDir(), "--admin-pprof")
	if r, err := plain.Get(other.AdminURL + "/debug/pprof/"); err != nil || r.StatusCode != 200 {
		t.Errorf("pprof with admin_pprof: %v %v", r, err)
	}

	sent := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var drained time.Time
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		code, status, _ := probe(t, s.HTTP, s.URL+"/readyz")
		if code == 503 && status == "draining" {
			drained = time.Now()
			break
		}
	}
	if drained.IsZero() {
		t.Fatal("/readyz never answered draining after SIGTERM")
	}
	// Still taking requests while it drains: the listener is open.
	if code, status, _ := probe(t, s.HTTP, s.URL+"/livez"); code != 200 || status != "ok" {
		t.Errorf("/livez while draining: %d %s", code, status)
	}
	// The Go client says why, with the 503.
	gc, err := client.New(s.URL, client.WithHTTPClient(s.HTTP))
	if err != nil {
		t.Fatal(err)
	}
	if rd, err := gc.Readiness(context.Background()); !isStatus(err, 503) || rd == nil || rd.Status != "draining" {
		t.Errorf("the Go client's readiness while draining: %+v, %v", rd, err)
	}
	select {
	case <-s.closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop after its shutdown delay")
	}
	if took := time.Since(sent); took < 2*time.Second {
		t.Errorf("stopped %v after SIGTERM, before its 2 s shutdown delay", took)
	}
}

// TestReadinessFollowsTheParts: an instance of a cluster whose PostgreSQL,
// NATS and Redis are reached through relays the test cuts and mends is
// ready while each answers, not ready (503, naming the part by its kind
// and nothing of its address) while one does not, and ready again when it
// is back, without a restart.
func TestReadinessFollowsTheParts(t *testing.T) {
	c := newCluster(t)
	pg, nats, redis := testsvc.NewRelay(t, c.PostgresURL), testsvc.NewRelay(t, c.NATSURL), testsvc.NewRelay(t, c.RedisURL)
	t.Setenv("AIVIS_POSTGRES_URL", pg.URL())
	t.Setenv("AIVIS_NATS_URL", nats.URL())
	t.Setenv("AIVIS_REDIS_URL", redis.URL())
	s := start(t, t.TempDir())
	admin := &http.Client{Timeout: 10 * time.Second}
	until := func(what string, want int, parts ...string) {
		t.Helper()
		var code int
		var failing []string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			code, _, failing = probe(t, admin, s.AdminURL+"/readyz")
			if code == want && slices.Equal(failing, parts) {
				return
			}
		}
		t.Fatalf("%s: /readyz %d %v, want %d %v", what, code, failing, want, parts)
	}
	until("all answering", 200)
	for _, part := range []struct {
		relay *testsvc.Relay
		kinds []string
	}{{pg, []string{"store", "bus"}}, {nats, []string{"bus"}}, {redis, []string{"counter"}}} {
		part.relay.Cut()
		until(strings.Join(part.kinds, " and ")+" away", 503, part.kinds...)
		if code, _, _ := probe(t, admin, s.AdminURL+"/livez"); code != 200 {
			t.Errorf("/livez with %v away: %d", part.kinds, code)
		}
		part.relay.Mend(t)
		until(strings.Join(part.kinds, " and ")+" back", 200)
	}
}
