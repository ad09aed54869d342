package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/webhook"
)

// crashReceiver records which event ids each webhook path received,
// verifying every signature and that webhook-id is the event's id.
type crashReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	verifier *webhook.Verifier
	got      map[string]map[string]int // path -> event id -> deliveries
	bad      []string
}

func newCrashReceiver(t *testing.T) *crashReceiver {
	c := &crashReceiver{got: map[string]map[string]int{}}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev webhook.Event
		err := json.Unmarshal(body, &ev)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.verifier != nil {
			if verr := c.verifier.Verify(r.Header, body); verr != nil || err != nil || r.Header.Get("webhook-id") != ev.ID {
				c.bad = append(c.bad, fmt.Sprintf("%s %s: %v %v", r.URL.Path, r.Header.Get("webhook-id"), verr, err))
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		}
		if c.got[r.URL.Path] == nil {
			c.got[r.URL.Path] = map[string]int{}
		}
		c.got[r.URL.Path][ev.ID]++
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.Close)
	return c
}

// readings is a burst of readings, a writer per key: each records its
// readings one after another, alternating the score so that every
// accepted reading is an event, until it has per events or a server is
// gone. Given several servers, a writer sends each reading to the next
// (round robin, as a load balancer would).
type readings struct {
	tokens   []string
	per      int
	accepted [][]string // by writer, the ids of its accepted events
	total    atomic.Int64
}

func (b *readings) burst(t *testing.T, ss ...*server) {
	var wg sync.WaitGroup
	for i, tok := range b.tokens {
		wg.Go(func() {
			for n := len(b.accepted[i]); len(b.accepted[i]) < b.per; n++ {
				code, body, err := post(ss[(i+n)%len(ss)], "/v1/visibility", tok,
					fmt.Sprintf(`{"domain":"example.com","visibility_score":%d,"sentiment":"neutral"}`, 10+n%2*10+n%7))
				if err != nil {
					return // the server is gone
				}
				var rec client.RecordedReading
				if code != 201 || json.Unmarshal(body, &rec) != nil {
					t.Errorf("reading: %d %s", code, body)
					return
				}
				if rec.EventID != nil {
					b.accepted[i] = append(b.accepted[i], *rec.EventID)
					b.total.Add(1)
				}
			}
		})
	}
	wg.Wait()
}

// post sends one request without the harness's checks: during the crash
// requests fail, and that is expected.
func post(s *server, path, token, body string) (int, []byte, error) {
	r, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	r.Header.Set("Authorization", "Bearer "+token)
	r.Header.Set("Content-Type", "application/json")
	resp, err := s.HTTP.Do(r)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// TestCrashLosesNoEvent kills the server with SIGKILL in the middle of a
// burst of 10,000 events, each for two of four endpoints, and restarts it:
// every event whose 201 the client saw reaches both of its endpoints at
// least once, and every duplicate carries the same webhook-id.
func TestCrashLosesNoEvent(t *testing.T) {
	const accounts, perAccount = 40, 250 // Enterprise allows 300 requests a minute
	dir := t.TempDir()
	flags := []string{"--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "2s"}
	type acct struct {
		token string
		paths [2]*struct {
			rc   *crashReceiver
			path string
		}
	}
	receivers := []*crashReceiver{newCrashReceiver(t), newCrashReceiver(t), newCrashReceiver(t), newCrashReceiver(t)}
	as := make([]acct, accounts)
	for i := range as {
		a := newAccount(t, dir, "enterprise", false)
		as[i].token = newKey(t, dir, a.ID).Key
	}
	began := time.Now()
	s := start(t, dir, flags...)
	var secrets []string
	for i := range as {
		for j := range 2 {
			rc := receivers[(i+j)%len(receivers)]
			path := fmt.Sprintf("/hook/%d/%d", i, j)
			code, body, err := post(s, "/v1/webhooks", as[i].token,
				jsonBody(client.CreateWebhook{Domain: "example.com", Events: []string{"ai_visibility_change"}, URL: rc.URL + path}))
			var wh client.Webhook
			json.Unmarshal(body, &wh)
			if err != nil || code != 201 {
				t.Fatalf("webhook %d/%d: %d %s %v", i, j, code, body, err)
			}
			secrets = append(secrets, wh.Secret)
			as[i].paths[j] = &struct {
				rc   *crashReceiver
				path string
			}{rc, path}
		}
	}
	for _, rc := range receivers {
		v, err := webhook.NewVerifier(secrets...)
		if err != nil {
			t.Fatal(err)
		}
		rc.mu.Lock()
		rc.verifier = v
		rc.mu.Unlock()
	}

	// Each account sends its readings; the server is killed once 4,000
	// have been accepted, and the burst goes on after the restart.
	tokens := make([]string, accounts)
	for i, a := range as {
		tokens[i] = a.token
	}
	b := &readings{tokens: tokens, per: perAccount, accepted: make([][]string, accounts)}
	t.Logf("set up in %v", time.Since(began).Round(time.Millisecond))
	began = time.Now()
	killed := make(chan struct{})
	go func() {
		for b.total.Load() < 4000 {
			time.Sleep(time.Millisecond)
		}
		s.cmd.Process.Kill() // SIGKILL: no shutdown, no flush
		close(killed)
	}()
	b.burst(t, s)
	<-killed
	s.cmd.Wait()
	before := b.total.Load()
	t.Logf("killed after %d accepted events in %v", before, time.Since(began).Round(time.Millisecond))
	if before >= accounts*perAccount {
		t.Fatal("the burst ended before the kill")
	}

	s = start(t, dir, flags...)
	b.burst(t, s)
	if b.total.Load() != accounts*perAccount {
		t.Fatalf("%d events accepted, want %d", b.total.Load(), accounts*perAccount)
	}

	t.Logf("burst done at %v", time.Since(began).Round(time.Millisecond))

	// Every accepted event at both of its endpoints.
	missing := func() int {
		n := 0
		for i, a := range as {
			for _, p := range a.paths {
				p.rc.mu.Lock()
				for _, id := range b.accepted[i] {
					if p.rc.got[p.path][id] == 0 {
						n++
					}
				}
				p.rc.mu.Unlock()
			}
		}
		return n
	}
	deadline := time.Now().Add(3 * time.Minute)
	for m := missing(); m > 0; m = missing() {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries never arrived", m, 2*accounts*perAccount)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("all delivered at %v", time.Since(began).Round(time.Millisecond))
	dups := 0
	for _, rc := range receivers {
		rc.mu.Lock()
		if len(rc.bad) > 0 {
			t.Errorf("%d deliveries failed verification, e.g. %s", len(rc.bad), rc.bad[0])
		}
		for _, ids := range rc.got {
			for _, n := range ids {
				dups += n - 1
			}
		}
		rc.mu.Unlock()
	}
	t.Logf("%d deliveries of %d events arrived after a SIGKILL; %d duplicates, each with its event's webhook-id",
		2*accounts*perAccount, accounts*perAccount, dups)
}
