package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aivis/aivis/client"
)

// concurrently sends n requests at once and counts the answers by status
// and error code ("201", "403 WEBHOOK_LIMIT_REACHED").
func concurrently(t *testing.T, s *server, n int, r func(i int) req) map[string]int {
	t.Helper()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res := s.do(t, r(i))
			k := fmt.Sprint(res.Status)
			if res.Status >= 400 {
				k += " " + res.errorCode(t)
			}
			mu.Lock()
			got[k]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return got
}

// The Starter tier keeps 10 webhooks of an agency account, its clients'
// included. Of 32 creations sent at once at 9, exactly one is kept; past
// the cap a creation is refused with 403 WEBHOOK_LIMIT_REACHED before any
// test payload is sent.
func TestWebhookCapThroughTheAPI(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "starter", true)
	k := newKey(t, dir, a.ID)
	var cl struct {
		ID string `json:"id"`
	}
	cli(t, dir, &cl, "client", "create", "--account", a.ID, "--name", "Client One")
	s := start(t, dir, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets")
	rc := newHookReceiver(t)
	create := func(i int) req {
		in := client.CreateWebhook{Domain: fmt.Sprintf("d%d.example.com", i), Events: []string{"ai_visibility_change"}, URL: rc.URL + "/hook"}
		if i%2 == 1 {
			in.ClientID = cl.ID // a client's webhooks count toward its agency
		}
		return req{method: "POST", path: "/v1/webhooks", header: bearer(k), body: jsonBody(in)}
	}
	for i := range 9 {
		if r := s.do(t, create(i)); r.Status != 201 {
			t.Fatalf("webhook %d: %d %s", i, r.Status, r.Body)
		}
	}
	got := concurrently(t, s, 32, func(i int) req { return create(100 + i) })
	if got["201"] != 1 || got["403 WEBHOOK_LIMIT_REACHED"] != 31 {
		t.Fatalf("32 concurrent creations at 9 of 10: %v", got)
	}
	var page client.List[client.Webhook]
	s.do(t, req{method: "GET", path: "/v1/webhooks?client_id=*&limit=100", header: bearer(k)}).decode(t, &page)
	if len(page.Items) != 10 {
		t.Fatalf("%d webhooks kept, want 10", len(page.Items))
	}

	tests := len(rc.kinds())
	r := s.do(t, create(200))
	var e client.ErrorEnvelope
	r.decode(t, &e)
	if r.Status != 403 || r.errorCode(t) != "WEBHOOK_LIMIT_REACHED" || !strings.Contains(e.Error.Message, "10 webhooks") {
		t.Fatalf("past the cap: %d %s", r.Status, r.Body)
	}
	if n := len(rc.kinds()); n != tests {
		t.Errorf("a creation past the cap sent %d test payloads", n-tests)
	}
	// A deleted webhook leaves room for another.
	if r := s.do(t, req{method: "DELETE", path: "/v1/webhooks/" + page.Items[0].ID, header: bearer(k)}); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	if r := s.do(t, create(201)); r.Status != 201 {
		t.Fatalf("after a delete: %d %s", r.Status, r.Body)
	}
}
