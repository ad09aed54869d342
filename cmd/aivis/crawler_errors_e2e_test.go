package main

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/core/traffic/trafficfake"
	"github.com/aivis/aivis/webhook"
)

// TestCrawlerErrorsEndToEnd: a scan whose answers cite /pricing, then
// Cloudflare batches (trafficfake's Logpush sender) in which GPTBot gets
// a 404 on /pricing and a 503 on a page no answer cites, and a spoofed
// GPTBot a 500 on /pricing: the webhook of the default min_crawler_errors
// hears of /pricing alone with GPTBot's one 404, signed; the webhook of
// 2 hears only of a later batch of three errors (fenced by the fan-out's
// log of the first event); the first batch sent again fires nothing (fenced
// by a third batch, which does).
func TestCrawlerErrorsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	engine := probefake.New()
	defer engine.Close()
	engine.Key = "sk-test"
	t.Setenv("AIVIS_TEST_ENGINE_KEY", "sk-test")
	engine.Answer("model-a", "Acme (https://acme.invalid/pricing) is the one to buy.")
	cfg := writeConfig(t, dir, map[string]any{"engines": []map[string]any{
		{"label": "Alpha", "base_url": engine.URL(), "model": "model-a", "api_key_env": "AIVIS_TEST_ENGINE_KEY", "concurrency": 2}}})
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--config", cfg, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets")

	var dom client.MonitoredDomain
	r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: jsonBody(client.CreateDomain{Domain: "acme.invalid",
		Brands: []string{"Acme"}, Competitors: []string{"Globex"}, Prompts: []string{"Which rocket skates should I buy?"}})})
	if r.Status != 201 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	r.decode(t, &dom)
	hook := func(rc *hookReceiver, minErrors *int) client.Webhook {
		t.Helper()
		var wh client.Webhook
		r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k), body: jsonBody(client.CreateWebhook{Domain: "acme.invalid",
			Events: []string{"crawler_errors"}, URL: rc.URL, MinCrawlerErrors: minErrors})})
		r.decode(t, &wh)
		if r.Status != 201 {
			t.Fatalf("webhook: %d %s", r.Status, r.Body)
		}
		rc.mu.Lock()
		rc.secrets = []string{wh.Secret}
		rc.mu.Unlock()
		return wh
	}
	all, strict := newHookReceiver(t), newHookReceiver(t)
	two := 2
	whAll, whStrict := hook(all, nil), hook(strict, &two)
	if whAll.MinCrawlerErrors != 1 || whStrict.MinCrawlerErrors != 2 {
		t.Fatalf("min_crawler_errors %d and %d, want the default 1 and 2", whAll.MinCrawlerErrors, whStrict.MinCrawlerErrors)
	}
	r = s.do(t, req{method: "PATCH", path: "/v1/webhooks/" + whStrict.ID, header: bearer(k), body: `{"min_crawler_errors": 1000001}`})
	if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" || !strings.Contains(string(r.Body), `"field":"min_crawler_errors"`) {
		t.Fatalf("min_crawler_errors 1000001: %d %s", r.Status, r.Body)
	}

	sc := completedScan(t, s, k, "acme.invalid")
	// Every answer of the scan cites /pricing: the engine answers alike.
	answers := 0
	for path := "/v1/visibility/scans/" + sc.ID + "/answers?limit=100"; ; {
		var page client.List[client.ScanAnswer]
		if r := s.do(t, req{method: "GET", path: path, header: bearer(k)}); r.Status != 200 {
			t.Fatalf("answers: %d %s", r.Status, r.Body)
		} else {
			r.decode(t, &page)
		}
		answers += len(page.Items)
		if !page.HasMore || page.NextCursor == nil {
			break
		}
		path = "/v1/visibility/scans/" + sc.ID + "/answers?limit=100&cursor=" + *page.NextCursor
	}
	if answers == 0 {
		t.Fatal("the scan has no answers")
	}
	var tok client.IngestToken
	if r := s.do(t, req{method: "POST", path: "/v1/domains/" + dom.ID + "/ingest-tokens", header: bearer(k),
		body: `{"name":"edge","source":"cloudflare"}`}); r.Status != 201 {
		t.Fatalf("POST ingest-tokens: %d %s", r.Status, r.Body)
	} else {
		r.decode(t, &tok)
	}
	ctx := context.Background()
	cf := &trafficfake.Cloudflare{DestinationConf: s.URL + "/ingest/v1/cloudflare?header_Authorization=Bearer%20" + tok.Token, Client: s.HTTP}
	if err := cf.Validate(ctx); err != nil {
		t.Fatal(err)
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
	when := day.Add(9 * time.Hour)
	record := func(n int, ip, path, ua string, status int) string {
		return fmt.Sprintf(`{"ClientIP":%q,"ClientRequestHost":"acme.invalid","ClientRequestMethod":"GET","ClientRequestPath":%q,"ClientRequestURI":%q,"ClientRequestUserAgent":%q,"EdgeResponseStatus":%d,"EdgeResponseBytes":10,"EdgeStartTimestamp":%d,"RayID":"8f%d"}`,
			ip, path, path, ua, status, when.Add(time.Duration(n)*time.Second).UnixNano(), n)
	}
	push := func(what string, batch []string, duplicate bool) {
		t.Helper()
		status, body, err := cf.Push(ctx, batch)
		var res struct {
			Duplicate bool `json:"duplicate"`
		}
		if err != nil || status != 200 || json.Unmarshal(body, &res) != nil || res.Duplicate != duplicate {
			t.Fatalf("%s: %d %s %v; want 200 with duplicate %v", what, status, body, err, duplicate)
		}
	}
	first := []string{
		record(1, "52.230.152.7", "/pricing", uaGPTBot, 404),
		record(2, "52.230.152.8", "/uncited", uaGPTBot, 503),
		record(3, "203.0.113.9", "/pricing", uaGPTBot, 500), // spoofed
		record(4, "52.230.152.7", "/pricing", uaGPTBot, 200),
	}
	push("the first batch", first, false)

	received := func(rc *hookReceiver) (ds []events.CrawlerErrorsData, ids []string) {
		rc.mu.Lock()
		evs := append([]webhook.Event(nil), rc.events...)
		rc.mu.Unlock()
		for _, ev := range evs {
			if ev.Event == "crawler_errors" {
				var d events.CrawlerErrorsData
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					t.Fatal(err)
				}
				ds, ids = append(ds, d), append(ids, ev.ID)
			}
		}
		return ds, ids
	}
	waitFor(t, "the first batch's crawler_errors at the default webhook", func() bool { ds, _ := received(all); return len(ds) == 1 })
	ds, ids := received(all)
	pricing := func(e4xx, e5xx int64) events.CrawlerErrorsData {
		return events.CrawlerErrorsData{Domain: "acme.invalid", Days: []string{day.Format(time.DateOnly)}, ScanID: sc.ID, Errors: e4xx + e5xx,
			PagesWithErrors: 1, Pages: []events.CrawlerErrorsPage{{Path: "/pricing", Errors: e4xx + e5xx,
				Agents:  []events.CrawlerErrorsAgent{{Agent: "GPTBot", Verification: "verified", Status4xx: e4xx, Status5xx: e5xx}},
				CitedBy: []events.CrawlerErrorsEngine{{Engine: "Alpha", Answers: answers}}}}}
	}
	if !reflect.DeepEqual(ds[0], pricing(1, 0)) {
		t.Errorf("crawler_errors\n got  %+v\n want %+v", ds[0], pricing(1, 0))
	}

	// A batch of three errors on /pricing: past the strict webhook's 2.
	second := []string{
		record(5, "52.230.152.7", "/pricing", uaGPTBot, 404),
		record(6, "52.230.152.8", "/pricing", uaGPTBot, 404),
		record(7, "52.230.152.8", "/pricing", uaGPTBot, 500),
	}
	push("the second batch", second, false)
	waitFor(t, "the second batch's crawler_errors at both webhooks", func() bool {
		a, _ := received(all)
		s, _ := received(strict)
		return len(a) == 2 && len(s) == 1
	})
	fannedOut(t, s, k, ids[0])
	if deliveredTo(t, s, k, whStrict.ID, ids[0]) || !deliveredTo(t, s, k, whAll.ID, ids[0]) {
		t.Errorf("the first batch's one error delivered to the webhook of 2, or not to the default one")
	}
	if got, _ := received(strict); len(got) != 1 || !reflect.DeepEqual(got[0], pricing(2, 1)) || strict.got(ids[0]) {
		t.Errorf("the strict webhook received %+v, want the second batch's alone: %+v", got, pricing(2, 1))
	}

	// The first batch again is a duplicate: nothing new. A third batch
	// fences it: once its event has come, the duplicate's never will.
	push("the first batch again", first, true)
	push("the third batch", []string{record(8, "52.230.152.7", "/pricing", uaGPTBot, 410)}, false)
	waitFor(t, "the third batch's crawler_errors", func() bool { a, _ := received(all); return len(a) >= 3 })
	got, gotIDs := received(all)
	if len(got) != 3 || !reflect.DeepEqual(got[1], pricing(2, 1)) || !reflect.DeepEqual(got[2], pricing(1, 0)) || gotIDs[2] == ids[0] {
		t.Errorf("the default webhook received %+v, want the three batches' once each", got)
	}
	var listed client.List[json.RawMessage]
	s.do(t, req{method: "GET", path: "/v1/events?limit=100", header: bearer(k)}).decode(t, &listed)
	n := 0
	for _, ev := range listed.Items {
		if strings.Contains(string(ev), `"event":"crawler_errors"`) {
			n++
		}
	}
	if n != 3 {
		t.Errorf("GET /v1/events lists %d crawler_errors, want 3", n)
	}
	if all.invalid+strict.invalid != 0 {
		t.Errorf("%d deliveries failed verification", all.invalid+strict.invalid)
	}
}
