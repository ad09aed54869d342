package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/connectors/zapier/zapierfake"
	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/webhook"
)

// calls records the method, path and status of every request the client
// sends.
type calls struct {
	next http.RoundTripper
	mu   sync.Mutex
	done []string // "GET /v1/domains 200"
}

func (c *calls) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := c.next.RoundTrip(r)
	if err == nil {
		c.mu.Lock()
		c.done = append(c.done, fmt.Sprintf("%s %s %d", r.Method, r.URL.EscapedPath(), res.StatusCode))
		c.mu.Unlock()
	}
	return res, err
}

// answered reports whether a request of method to a path matching the
// template (openapi.json's, {name} for a segment) was answered 2xx.
func (c *calls) answered(method, template string) bool {
	re := regexp.MustCompile("^" + method + " " + regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(template), `[^/]+`) + ` 2\d\d$`)
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.done, re.MatchString)
}

// everyOperationDir is a data directory where every operation can be
// made: the zapier connector registered and cfg, a configuration with a
// fake answer engine (closed with the test) for its scans.
func everyOperationDir(t *testing.T) (dir, cfg string) {
	dir = t.TempDir()
	engine := probefake.New()
	t.Cleanup(engine.Close)
	engine.Answer("fake-model", "Acme makes fine rocket skates (https://acme.invalid/skates).")
	cfg = scanConfig(t, dir, engine)
	cli(t, dir, nil, "plugin", "register", buildPlugin(t, "../../connectors/zapier", "zapier"))
	return dir, cfg
}

// TestGoClientEveryOperation calls every method of the Go client against
// a real aivis serve and checks what each returns; at the end, every
// operation of openapi.json must have been answered 2xx to one of the
// client's requests. Both interfaces: the key and secret at /api/v1/ai,
// the bearer key at /v1; webhook deliveries are verified with
// client.VerifyEvent.
func TestGoClientEveryOperation(t *testing.T) {
	dir, cfg := everyOperationDir(t)
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--config", cfg, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets",
		"--webhook-timeout", "3s", "--content-workers", "0")
	zap := zapierfake.New()
	defer zap.Close()

	rec := &calls{next: s.HTTP.Transport}
	c, err := client.New(s.URL, client.WithKey(k.Key, k.Secret), client.WithHTTPClient(&http.Client{Transport: rec, Timeout: 30 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// Unauthenticated: health, readiness, the document, the catalog.
	h, err := c.Health(ctx)
	must("health", err)
	l, err := c.Liveness(ctx)
	must("liveness", err)
	rd, err := c.Readiness(ctx)
	must("readiness", err)
	if h.Status != "ok" || l.Status != "ok" || rd.Status != "ready" {
		t.Errorf("health %+v, liveness %+v, readiness %+v", h, l, rd)
	}
	doc, err := c.OpenAPIDocument(ctx)
	must("openapi.json", err)
	served := operationsOf(t, doc)
	onDisk, err := os.ReadFile(filepath.Join("..", "..", "core", "api", "openapi.json"))
	must("read openapi.json", err)
	if want := operationsOf(t, onDisk); !slices.Equal(served, want) {
		t.Fatalf("the served document's operations %v, the file's %v", served, want)
	}
	kinds, err := c.ListEventTypes(ctx)
	must("event types", err)
	var catalog []string
	for _, et := range kinds.Items {
		if len(et.Schema) == 0 || len(et.Example) == 0 || et.Description == "" {
			t.Errorf("event type %+v lacks a part", et)
		}
		catalog = append(catalog, et.Kind)
	}
	if !slices.Contains(catalog, "ai_visibility_change") || !slices.Contains(catalog, "webhook_test") {
		t.Fatalf("catalog %v", catalog)
	}

	// The key-and-secret interface: budget and content requests.
	bs, err := c.BudgetStatus(ctx)
	must("budget status", err)
	if bs.AccountID != a.ID || bs.QuotaTier == "" {
		t.Errorf("budget status %+v", bs)
	}
	// Usage: the key's own requests, once the counts reach the store; the
	// iterator pages through them.
	waitLong(t, 15*time.Second, "the key's requests in its usage", func() bool {
		page, err := c.ListUsage(ctx, client.UsageParams{KeyID: k.ID, Limit: 100})
		must("usage", err)
		return len(page.Items) > 0 && page.Items[0].Requests > 0
	})
	rows := 0
	for u, err := range c.Usage(ctx, client.UsageParams{From: time.Now().Add(-2 * time.Hour), Limit: 1}) {
		must("usage pages", err)
		if u.KeyID != k.ID || u.KeyHint == "" || u.ClientID != nil || u.Requests < 1 {
			t.Errorf("usage %+v", u)
		}
		rows++
	}
	if rows == 0 {
		t.Error("the usage iterator gave no count")
	}
	cr, err := c.CreateContentRequest(ctx, client.CreateContentRequest{Domain: "acme.invalid", Budget: client.Dollars(2),
		Content: "Acme makes rocket skates."}, client.IdempotencyKey("cr-1"))
	must("create content request", err)
	again, err := c.CreateContentRequest(ctx, client.CreateContentRequest{Domain: "acme.invalid", Budget: client.Dollars(2),
		Content: "Acme makes rocket skates."}, client.IdempotencyKey("cr-1"))
	must("repeat content request", err)
	if cr.Status != client.StatusQueued || cr.Budget != client.Dollars(2) || again.ID != cr.ID {
		t.Errorf("content request %+v, its repeat %s", cr, again.ID)
	}
	got, err := c.GetContentRequest(ctx, cr.ID)
	must("get content request", err)
	if got.ID != cr.ID || got.Content == nil || *got.Content != "Acme makes rocket skates." {
		t.Errorf("get content request %+v", got)
	}
	second, err := c.CreateContentRequest(ctx, client.CreateContentRequest{Domain: "acme.invalid", Budget: client.Dollars(1), Content: "More."})
	must("second content request", err)
	page, err := c.ListContentRequests(ctx, client.ListParams{Limit: 1})
	must("list content requests", err)
	if len(page.Items) != 1 || !page.HasMore || page.Items[0].ID != second.ID {
		t.Errorf("first page %+v", page)
	}
	var crs []string
	for it, err := range c.ContentRequests(ctx, client.ListParams{Limit: 1}) {
		must("content requests", err)
		crs = append(crs, it.ID)
	}
	if !slices.Equal(crs, []string{second.ID, cr.ID}) {
		t.Errorf("content requests %v", crs)
	}
	cancelled, err := c.CancelContentRequest(ctx, cr.ID)
	must("cancel", err)
	if cancelled.Status != client.StatusCancelled || cancelled.Reserved != 0 {
		t.Errorf("cancelled %+v", cancelled)
	}

	// Domains, prompts and a scan.
	d, err := c.CreateDomain(ctx, client.CreateDomain{Domain: "acme.invalid", Brands: []string{"Acme"}}, client.IdempotencyKey("dom-1"))
	must("create domain", err)
	topics := []string{"rocket skates"}
	d2, err := c.UpdateDomain(ctx, d.ID, client.UpdateDomain{Topics: &topics})
	must("update domain", err)
	gd, err := c.GetDomain(ctx, d.ID)
	must("get domain", err)
	if d.Domain != "acme.invalid" || !slices.Equal(d2.Topics, topics) || !slices.Equal(gd.Topics, topics) || !slices.Equal(gd.Brands, []string{"Acme"}) {
		t.Errorf("domain %+v, updated %+v, read %+v", d, d2, gd)
	}
	put, err := c.PutDomainPrompts(ctx, d.ID, client.PutPrompts{Prompts: []client.Prompt{{Text: "Which rocket skates should I buy?"}}})
	must("put prompts", err)
	prompts, err := c.GetDomainPrompts(ctx, d.ID)
	must("get prompts", err)
	if len(put.Prompts) != 1 || prompts.PromptSetID != put.PromptSetID || prompts.Prompts[0].Text != "Which rocket skates should I buy?" {
		t.Errorf("prompts put %+v, read %+v", put, prompts)
	}
	other, err := c.CreateDomain(ctx, client.CreateDomain{Domain: "other.invalid", Brands: []string{"Other"}})
	must("second domain", err)
	var domains []string
	for it, err := range c.Domains(ctx, client.PageParams{Limit: 1}) {
		must("domains", err)
		domains = append(domains, it.ID)
	}
	dp, err := c.ListDomains(ctx, client.PageParams{})
	must("list domains", err)
	if len(domains) != 2 || !slices.Contains(domains, d.ID) || !slices.Contains(domains, other.ID) || len(dp.Items) != 2 {
		t.Errorf("domains %v, a page of %d", domains, len(dp.Items))
	}
	must("delete domain", c.DeleteDomain(ctx, other.ID))
	if _, err := c.GetDomain(ctx, other.ID); !isStatus(err, 404) {
		t.Errorf("a deleted domain: %v", err)
	}

	sc, err := c.RequestScan(ctx, client.RequestScan{Domain: "acme.invalid"})
	must("request scan", err)
	waitFor(t, "the scan completed", func() bool {
		sc, err = c.GetScan(ctx, sc.ID)
		must("get scan", err)
		return sc.Status == "completed" || sc.Status == "failed"
	})
	if sc.Status != "completed" || sc.DomainID != d.ID {
		t.Fatalf("scan %+v", sc)
	}
	yes := true
	ap, err := c.ListScanAnswers(ctx, sc.ID, client.AnswerParams{Limit: 1, Mentioned: &yes})
	must("list answers", err)
	var answers int
	for an, err := range c.ScanAnswers(ctx, sc.ID, client.AnswerParams{Limit: 2, Engine: "Fake"}) {
		must("answers", err)
		if an.Engine != "Fake" || !an.Mentioned || !strings.Contains(an.Text, "Acme") {
			t.Errorf("answer %+v", an)
		}
		answers++
	}
	if len(ap.Items) != 1 || !ap.HasMore || answers < 2 {
		t.Errorf("answers: a first page of %d (has_more %v), %d in all", len(ap.Items), ap.HasMore, answers)
	}
	// Traffic, its pages joined with the scan's citations.
	goClientTraffic(t, c, d.ID)
	goClientChanges(t, c, d.ID)
	vis, err := c.Visibility(ctx, "acme.invalid")
	must("visibility", err)
	if vis.LastScan == nil || vis.LastScan.ID != sc.ID || vis.FormulaVersion == nil {
		t.Errorf("visibility %+v", vis)
	}

	// Webhooks, verified with the webhook package through the client.
	hooks := newRecorder(t)
	wh, err := c.CreateWebhook(ctx, client.CreateWebhook{Domain: "acme.invalid", Events: []string{"ai_visibility_change", "webhook_test"}, URL: hooks.URL + "/hook"})
	must("create webhook", err)
	v, err := webhook.NewVerifier(wh.Secret)
	must("verifier", err)
	setup := hooks.deliveries()
	if len(setup) != 1 {
		t.Fatalf("%d setup deliveries", len(setup))
	}
	ev, err := client.VerifyEvent(v, setup[0].header, setup[0].body)
	must("verify the setup event", err)
	if ev.Event != "webhook_test" || !strings.HasPrefix(ev.ID, "evt_") {
		t.Errorf("setup event %+v", ev)
	}
	if _, err := client.VerifyEvent(v, setup[0].header, append(slices.Clone(setup[0].body), ' ')); !errors.Is(err, webhook.ErrInvalidSignature) {
		t.Errorf("a changed body verified: %v", err)
	}
	score := 40
	recd, err := c.RecordReading(ctx, client.RecordReading{Domain: "acme.invalid", VisibilityScore: &score, Sentiment: client.SentimentNeutral})
	must("record reading", err)
	if recd.EventID == nil || recd.VisibilityScore != 40 {
		t.Fatalf("recorded %+v", recd)
	}
	var delivered client.Delivery
	waitFor(t, "the change delivered", func() bool {
		for dl, err := range c.WebhookDeliveries(ctx, wh.ID, client.DeliveryParams{Limit: 1}) {
			must("webhook deliveries", err)
			if dl.EventID == *recd.EventID && dl.Status == "succeeded" {
				delivered = dl
				return true
			}
		}
		return false
	})
	var change *client.Event
	for _, dl := range hooks.deliveries() {
		if e, err := client.VerifyEvent(v, dl.header, dl.body); err == nil && e.ID == *recd.EventID {
			change = e
		}
	}
	if change == nil || change.Event != "ai_visibility_change" {
		t.Fatalf("the change's delivery did not verify: %+v", change)
	}
	full, err := c.GetWebhookDelivery(ctx, wh.ID, delivered.ID)
	must("get webhook delivery", err)
	if len(full.AttemptLog) != 1 || full.AttemptLog[0].StatusCode == nil || *full.AttemptLog[0].StatusCode != 200 {
		t.Errorf("delivery %+v", full)
	}
	whp, err := c.ListWebhookDeliveries(ctx, wh.ID, client.DeliveryParams{Status: "succeeded"})
	must("list webhook deliveries", err)
	if len(whp.Items) < 2 {
		t.Errorf("%d succeeded deliveries, want the setup's and the change's", len(whp.Items))
	}
	re, err := c.RedeliverWebhookDelivery(ctx, wh.ID, delivered.ID)
	must("redeliver", err)
	if re.ID != delivered.ID || re.EventID != *recd.EventID {
		t.Errorf("redelivered %+v", re)
	}
	waitFor(t, "the redelivery", func() bool {
		n := 0
		for _, dl := range hooks.deliveries() {
			if dl.header.Get("webhook-id") == *recd.EventID {
				n++
			}
		}
		return n == 2
	})
	tr, err := c.TestWebhook(ctx, wh.ID)
	must("test webhook", err)
	waitFor(t, "the test event", func() bool {
		for _, dl := range hooks.deliveries() {
			if dl.header.Get("webhook-id") == tr.EventID {
				return true
			}
		}
		return false
	})
	rp, err := c.ReplayWebhookDeliveries(ctx, wh.ID, client.Replay{Since: time.Now().Add(-time.Hour)})
	must("replay", err)
	if rp.Scheduled != 0 {
		t.Errorf("replayed %d, but none failed", rp.Scheduled)
	}
	off := false
	up, err := c.UpdateWebhook(ctx, wh.ID, client.UpdateWebhook{Enabled: &off})
	must("update webhook", err)
	rot, err := c.RotateWebhookSecret(ctx, wh.ID, client.RotateSecret{})
	must("rotate", err)
	gw, err := c.GetWebhook(ctx, wh.ID)
	must("get webhook", err)
	if up.Enabled || rot.Secret == "" || rot.Secret == wh.Secret || gw.Secret != "" || gw.PreviousSecretExpiresAt == nil {
		t.Errorf("updated %+v, rotated %+v, read %+v", up, rot, gw)
	}
	var whs []string
	for it, err := range c.Webhooks(ctx, client.PageParams{}) {
		must("webhooks", err)
		whs = append(whs, it.ID)
	}
	wl, err := c.ListWebhooks(ctx, client.PageParams{Limit: 5})
	must("list webhooks", err)
	if !slices.Equal(whs, []string{wh.ID}) || len(wl.Items) != 1 {
		t.Errorf("webhooks %v", whs)
	}
	must("delete webhook", c.DeleteWebhook(ctx, wh.ID))
	if gone, err := c.GetWebhook(ctx, wh.ID); err != nil || gone.DeletedAt == nil {
		t.Errorf("a deleted webhook: %+v %v", gone, err)
	}

	// Events and history.
	ep, err := c.ListEvents(ctx, client.EventParams{Event: "ai_visibility_change"})
	must("list events", err)
	if len(ep.Items) == 0 || ep.Items[0].ID != *recd.EventID || ep.Items[0].Event != "ai_visibility_change" {
		t.Errorf("events %+v", ep.Items)
	}
	var evs []string
	for e, err := range c.Events(ctx, client.EventParams{}) {
		must("events", err)
		evs = append(evs, e.ID)
	}
	if !slices.Contains(evs, *recd.EventID) {
		t.Errorf("events %v lack the change", evs)
	}
	hp, err := c.ListVisibilityHistory(ctx, client.HistoryParams{Domain: "acme.invalid", Limit: 1})
	must("history", err)
	var history []int
	for r, err := range c.VisibilityHistory(ctx, client.HistoryParams{Domain: "acme.invalid", Limit: 1}) {
		must("history", err)
		history = append(history, r.VisibilityScore)
	}
	if len(hp.Items) != 1 || hp.Items[0].VisibilityScore != 40 || len(history) != 2 || history[0] != 40 {
		t.Errorf("history: first page %+v, all %v", hp.Items, history)
	}

	// Connectors, connections and Zapier hooks.
	cks, err := c.ListConnectors(ctx)
	must("connectors", err)
	if !slices.ContainsFunc(cks.Items, func(k client.ConnectorKind) bool { return k.Name == "zapier" && k.Health.State == "running" }) {
		t.Errorf("connectors %+v", cks.Items)
	}
	sub, err := c.ZapierSubscribe(ctx, client.ZapierSubscribe{TargetURL: zap.Hook("standard", "1"), Event: "ai_visibility_change"})
	must("zapier subscribe", err)
	conn, err := c.CreateConnection(ctx, client.CreateConnection{Connector: "zapier", Name: "Zap", Events: []string{"ai_visibility_change"},
		Settings: json.RawMessage(`{"target_url":"` + zap.Hook("standard", "2") + `"}`)})
	must("create connection", err)
	name := "Renamed"
	uc, err := c.UpdateConnection(ctx, conn.ID, client.UpdateConnection{Name: &name})
	must("update connection", err)
	gc, err := c.GetConnection(ctx, conn.ID)
	must("get connection", err)
	if uc.Name != name || gc.Name != name || gc.Connector != "zapier" || !slices.Equal(gc.SecretFields, []string{"target_url"}) {
		t.Errorf("connection updated %+v, read %+v", uc, gc)
	}
	ct, err := c.TestConnection(ctx, conn.ID)
	must("test connection", err)
	if ct.Result != "delivered" && ct.Result != "succeeded" {
		t.Errorf("connection test %+v", ct)
	}
	// The subscription's deliveries: the webhook_test its target accepted.
	var cdl []client.Delivery
	for dl, err := range c.ConnectionDeliveries(ctx, sub.ID, client.DeliveryParams{Limit: 1}) {
		must("connection deliveries", err)
		cdl = append(cdl, dl)
	}
	cp, err := c.ListConnectionDeliveries(ctx, sub.ID, client.DeliveryParams{})
	must("list connection deliveries", err)
	if len(cdl) == 0 || len(cp.Items) != len(cdl) {
		t.Fatalf("connection deliveries %+v, a page of %d", cdl, len(cp.Items))
	}
	gcd, err := c.GetConnectionDelivery(ctx, sub.ID, cdl[0].ID)
	must("get connection delivery", err)
	rcd, err := c.RedeliverConnectionDelivery(ctx, sub.ID, cdl[0].ID)
	must("redeliver connection delivery", err)
	if len(cdl) != 1 || gcd.ID != cdl[0].ID || gcd.ConnectionID != sub.ID || gcd.Event != "webhook_test" || rcd.ID != gcd.ID {
		t.Errorf("connection delivery %+v, redelivered %+v", gcd, rcd)
	}
	crp, err := c.ReplayConnectionDeliveries(ctx, conn.ID, client.Replay{Since: time.Now().Add(-time.Hour)})
	must("replay connection", err)
	if crp.Scheduled != 0 {
		t.Errorf("replayed %d, but none failed", crp.Scheduled)
	}
	var conns []string
	for it, err := range c.Connections(ctx, client.PageParams{Limit: 1}) {
		must("connections", err)
		conns = append(conns, it.ID)
	}
	cl, err := c.ListConnections(ctx, client.PageParams{})
	must("list connections", err)
	if len(conns) != 2 || !slices.Contains(conns, sub.ID) || !slices.Contains(conns, conn.ID) || len(cl.Items) != 2 {
		t.Errorf("connections %v", conns)
	}
	must("zapier unsubscribe", c.ZapierUnsubscribe(ctx, sub.ID))
	must("delete connection", c.DeleteConnection(ctx, conn.ID))
	for _, id := range []string{conn.ID, sub.ID} {
		if gone, err := c.GetConnection(ctx, id); err != nil || gone.DeletedAt == nil {
			t.Errorf("connection %s after its delete: %+v %v", id, gone, err)
		}
	}

	// The account's export, last: it holds what the calls above made.
	exported := map[string]int{}
	for r, err := range c.ExportAccount(ctx) {
		must("export", err)
		exported[r.Kind]++
	}
	if exported["end"] != 1 || exported["monitored_domains"] == 0 || exported["content_requests"] != 2 || exported["webhooks"] == 0 {
		t.Errorf("export kinds %v", exported)
	}
	// A content request's result marked published needs a completed one:
	// the server again, with a content worker.
	goClientPublished(t, s, rec, k, "--config", cfg, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets",
		"--webhook-timeout", "3s", "--content-workers", "1")

	// Every operation of the document was answered 2xx to the client.
	var missed []string
	for _, op := range operationsOf(t, onDisk) {
		method, path, _ := strings.Cut(op, " ")
		if !rec.answered(method, path) {
			missed = append(missed, op)
		}
	}
	if len(missed) > 0 {
		t.Errorf("operations the client never called with success: %v", missed)
	}
}

// isStatus reports whether err is an API error of this HTTP status.
func isStatus(err error, status int) bool {
	var e *client.Error
	return errors.As(err, &e) && e.StatusCode == status
}

// operationsOf lists an OpenAPI document's operations as "METHOD /path",
// sorted.
func operationsOf(t *testing.T, doc []byte) []string {
	t.Helper()
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for path, item := range d.Paths {
		for method, op := range item {
			var o struct {
				OperationID string `json:"operationId"`
			}
			if json.Unmarshal(op, &o) == nil && o.OperationID != "" {
				ops = append(ops, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(ops)
	return ops
}

// TestGoClientRateLimited: past the Starter tier's 60 requests a minute,
// the client waits the retry_after the server's 429 gives and tries
// again, on both interfaces, and after its last attempt returns the 429
// as a *client.Error with that wait.
func TestGoClientRateLimited(t *testing.T) {
	dir := t.TempDir()
	k := newKey(t, dir, newAccount(t, dir, "starter", false).ID)
	s := start(t, dir)
	awayFromMinuteEnd(20 * time.Second)
	rec := &calls{next: s.HTTP.Transport}
	var waits []time.Duration
	c, err := client.New(s.URL, client.WithKey(k.Key, k.Secret), client.WithHTTPClient(&http.Client{Transport: rec, Timeout: 30 * time.Second}),
		client.WithMaxAttempts(2), client.WithSleep(func(ctx context.Context, d time.Duration) error {
			waits = append(waits, d)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 60 {
		if _, err := c.BudgetStatus(ctx); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	if len(waits) != 0 {
		t.Fatalf("waited %v within the limit", waits)
	}
	for _, call := range []func() error{
		func() error { _, err := c.BudgetStatus(ctx); return err },
		func() error { _, err := c.ListDomains(ctx, client.PageParams{}); return err },
	} {
		before := len(rec.done)
		err := call()
		var e *client.Error
		if !errors.As(err, &e) || e.StatusCode != 429 || e.Code != "RATE_LIMIT_EXCEEDED" || e.RetryAfter < time.Second || e.RetryAfter > time.Minute {
			t.Fatalf("past the limit: %v", err)
		}
		tried := rec.done[before:]
		if len(tried) != 2 || !strings.HasSuffix(tried[0], " 429") || !strings.HasSuffix(tried[1], " 429") {
			t.Errorf("attempts %v, want two 429s", tried)
		}
		// The wait is the first 429's retry_after, the error the second's,
		// a second less when a second went by in between.
		if len(waits) == 0 || waits[len(waits)-1] != e.RetryAfter && waits[len(waits)-1] != e.RetryAfter+time.Second {
			t.Errorf("waited %v before the second attempt, the server asked %v", waits, e.RetryAfter)
		}
	}
	if len(waits) != 2 {
		t.Errorf("waits %v, want one per call", waits)
	}
}
