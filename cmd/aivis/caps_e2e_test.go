package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/connectors/zapier/zapierfake"
)

// concurrently sends n requests at once, request i to ss[i % len(ss)],
// and counts the answers by status and error code ("201", "403
// WEBHOOK_LIMIT_REACHED").
func concurrently(t *testing.T, ss []*server, n int, r func(i int) req) map[string]int {
	t.Helper()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res := ss[i%len(ss)].do(t, r(i))
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
	got := concurrently(t, []*server{s}, 32, func(i int) req { return create(100 + i) })
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

// A Zapier subscription is kept only if its target_url accepts a
// webhook_test event, as a webhook is: a hook that refuses it (unknown, or
// its Zap turned off) keeps nothing. Subscriptions count as connections
// against the tier's cap, checked and kept in one step.
func TestZapierSubscriptionsVerifiedAndCapped(t *testing.T) {
	dir := t.TempDir()
	cli(t, dir, nil, "plugin", "register", buildPlugin(t, "../../connectors/zapier", "zapier"))
	a := newAccount(t, dir, "starter", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "3s")
	zap := zapierfake.New()
	defer zap.Close()
	subscribe := func(target string) req {
		return req{method: "POST", path: "/v1/zapier/hooks", header: bearer(k), body: jsonBody(client.ZapierSubscribe{TargetURL: target,
			Event: "ai_visibility_change"})}
	}

	off := zap.Hook("standard", "off")
	zap.TurnOff(off)
	for name, target := range map[string]string{"an unknown hook": zap.URL() + "/hooks/standard/nope/", "a hook turned off": off} {
		r := s.do(t, subscribe(target))
		if r.Status != 422 || r.errorCode(t) != "WEBHOOK_VERIFICATION_FAILED" {
			t.Fatalf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	var list client.List[client.Connection]
	s.do(t, req{method: "GET", path: "/v1/connections", header: bearer(k)}).decode(t, &list)
	if len(list.Items) != 0 || len(zap.Received()) != 0 {
		t.Fatalf("refused subscriptions kept: %+v, received %+v", list.Items, zap.Received())
	}

	var sub client.ZapierSubscription
	r := s.do(t, subscribe(zap.Hook("standard", "1")))
	r.decode(t, &sub)
	if r.Status != 201 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	hit := zap.Received()
	if len(hit) != 1 || hit[0].Payload["event"] != "webhook_test" || hit[0].Payload["data"].(map[string]any)["connection_id"] != sub.ID {
		t.Fatalf("the test event the hook received: %+v", hit)
	}
	var log client.List[client.Delivery]
	s.do(t, req{method: "GET", path: "/v1/connections/" + sub.ID + "/deliveries", header: bearer(k)}).decode(t, &log)
	if len(log.Items) != 1 || log.Items[0].Event != "webhook_test" || log.Items[0].Status != "succeeded" {
		t.Fatalf("the verification's delivery: %+v", log.Items)
	}

	// The Starter tier keeps 5 connections: at 4, 32 subscriptions at once
	// keep exactly one.
	for i := range 3 {
		if r := s.do(t, subscribe(zap.Hook("standard", fmt.Sprint(10+i)))); r.Status != 201 {
			t.Fatalf("subscription %d: %d %s", i, r.Status, r.Body)
		}
	}
	var hooks [32]string
	for i := range hooks {
		hooks[i] = zap.Hook("standard", fmt.Sprint(100+i))
	}
	got := concurrently(t, []*server{s}, 32, func(i int) req { return subscribe(hooks[i]) })
	if got["201"] != 1 || got["403 CONNECTION_LIMIT_REACHED"] != 31 {
		t.Fatalf("32 concurrent subscriptions at 4 of 5: %v", got)
	}
	sent := len(zap.Received())
	r = s.do(t, subscribe(zap.Hook("standard", "past")))
	if r.Status != 403 || r.errorCode(t) != "CONNECTION_LIMIT_REACHED" {
		t.Fatalf("past the cap: %d %s", r.Status, r.Body)
	}
	s.do(t, req{method: "GET", path: "/v1/connections", header: bearer(k)}).decode(t, &list)
	if len(list.Items) != 5 || len(zap.Received()) != sent {
		t.Errorf("%d connections kept (want 5); %d test events sent past the cap", len(list.Items), len(zap.Received())-sent)
	}
}
