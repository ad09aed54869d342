package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/probe/probefake"
)

// liftPrompts are the domain's own prompts: the change targets the
// skates ones; the helmets ones, which it does not target, answer alike
// before and after it, half of them citing the domain.
var (
	skatesPrompts  = []string{"Which rocket skates are best for kids?", "Which rocket skates are fastest?", "Which rocket skates last longest?", "Which rocket skates are cheapest?", "Which rocket skates are safest?", "Which rocket skates do pros use?"}
	helmetsPrompts = []string{"Which helmets for kids are best?", "Which helmets for kids are lightest?", "Which helmets for kids fit best?", "Which helmets for adults are best?", "Which helmets for adults are lightest?", "Which helmets for adults fit best?"}
)

const (
	citing    = "Acme (https://acme.invalid/skates) makes the rocket skates to buy."
	notCiting = "Acme and others make rocket skates."
)

// citingTurns is n answers of which cite cite the domain, in turn.
func citingTurns(cite, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = notCiting
		if i < cite {
			out[i] = citing
		}
	}
	return out
}

// TestChangesLiftEndToEnd: a domain scanned by a fake engine whose answers
// to the prompts a change targets (and the two generated ones) cite the
// domain 20% of the time before the change and 45% after, while the
// helmets prompts answer alike throughout. Right after the change its
// lift is insufficient_data with the scans still needed; four scans on
// each side later, the citation rate's lift is +25 points or so, its
// interval above 0, the difference-in-differences against the untargeted
// prompts too. When 14 scans after the change have answers, lift_measured
// comes to the webhook once, signed, with the change and the headline
// figures, and the change shows lift_measured_at; a second change, made a
// scan later, fences it: its own lift_measured, published by the next
// scan, follows any the first change could have had again.
func TestChangesLiftEndToEnd(t *testing.T) {
	dir := t.TempDir()
	engine := probefake.New()
	defer engine.Close()
	engine.Answer("fake-model", citingTurns(1, 5)...)
	for _, p := range helmetsPrompts {
		answer := notCiting
		if strings.Contains(p, "kids") {
			answer = citing
		}
		engine.AnswerTo("fake-model", p, answer)
	}
	cfg := scanConfig(t, dir, engine)
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--config", cfg, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets")

	var dom client.MonitoredDomain
	r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: jsonBody(client.CreateDomain{Domain: "acme.invalid",
		Brands: []string{"Acme"}, Prompts: slices.Concat(skatesPrompts, helmetsPrompts)})})
	if r.Status != 201 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	r.decode(t, &dom)
	rc := newHookReceiver(t)
	var wh client.Webhook
	r = s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k), body: jsonBody(client.CreateWebhook{Domain: "acme.invalid",
		Events: []string{"lift_measured"}, URL: rc.URL})})
	if r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	r.decode(t, &wh)
	rc.mu.Lock()
	rc.secrets = []string{wh.Secret}
	rc.mu.Unlock()

	scan := func() {
		t.Helper()
		var sc client.Scan
		s.do(t, req{method: "POST", path: "/v1/visibility/scans", header: bearer(k), body: `{"domain":"acme.invalid"}`}).decode(t, &sc)
		pollEvery(t, 30*time.Second, 150*time.Millisecond, "scan "+sc.ID, func() bool {
			s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + sc.ID, header: bearer(k)}).decode(t, &sc)
			return sc.Status == "completed" || sc.Status == "failed"
		})
		if sc.Status != "completed" {
			t.Fatalf("scan %+v", sc)
		}
	}
	for range 6 {
		scan()
	}
	base := "/v1/domains/" + dom.ID + "/changes"
	var c1 client.Change
	r = s.do(t, req{method: "POST", path: base, header: bearer(k), body: jsonBody(client.CreateChange{Title: "New skates pages",
		Pages: []string{"https://acme.invalid/skates"}, Prompts: []string{strings.ToUpper(skatesPrompts[0]), skatesPrompts[1], skatesPrompts[2],
			skatesPrompts[3], skatesPrompts[4], skatesPrompts[5]}})})
	if r.Status != 201 || r.Header.Get("Location") != base+"/"+jsonID(r.Body) {
		t.Fatalf("POST changes: %d %s %s", r.Status, r.Header.Get("Location"), r.Body)
	}
	r.decode(t, &c1)
	engine.Answer("fake-model", citingTurns(9, 20)...)
	if !slices.Equal(c1.Prompts, skatesPrompts) || !slices.Equal(c1.Pages, []string{"/skates"}) || c1.LiftMeasuredAt != nil {
		t.Fatalf("change %+v", c1)
	}

	// No scan after the change: no figure, and the scans still needed.
	lift := func(query string) client.ChangeLift {
		t.Helper()
		var l client.ChangeLift
		r := s.do(t, req{method: "GET", path: base + "/" + c1.ID + "/lift" + query, header: bearer(k)})
		if r.Status != 200 {
			t.Fatalf("lift%s: %d %s", query, r.Status, r.Body)
		}
		if strings.Contains(string(r.Body), `"status":"insufficient_data","reason":"`) && strings.Contains(string(r.Body), `"insufficient_data","estimate"`) {
			t.Errorf("an insufficient difference with a figure: %s", r.Body)
		}
		r.decode(t, &l)
		return l
	}
	measure := func(l client.ChangeLift, metric string) client.MeasureLift {
		for _, m := range l.Lift.Overall.Measures {
			if m.Metric == metric {
				return m
			}
		}
		t.Fatalf("no %s in %+v", metric, l.Lift.Overall)
		return client.MeasureLift{}
	}
	early := measure(lift("?scans=6&effect=0.25"), "citation_rate")
	if d := early.Difference; d.Status != "insufficient_data" || d.Reason == "" || d.Estimate != nil || d.Interval != nil ||
		d.ScansNeeded < 1 || d.MoreScans < 1 {
		t.Errorf("the lift before any scan after the change: %+v", d)
	}

	scan()
	var c2 client.Change
	r = s.do(t, req{method: "POST", path: base, header: bearer(k), body: `{"title":"Helmets FAQ"}`})
	if r.Status != 201 {
		t.Fatalf("POST the second change: %d %s", r.Status, r.Body)
	}
	r.decode(t, &c2)
	for range 5 {
		scan()
	}
	l := lift("?scans=6&effect=0.2")
	cit := measure(l, "citation_rate")
	if l.Lift.Before.Scans != 6 || l.Lift.After.Scans != 6 || !l.Lift.Targeted || len(l.Lift.Engines) != 1 || l.Lift.Engines[0].Engine != "Fake" {
		t.Fatalf("lift windows %+v %+v, targeted %v, engines %d", l.Lift.Before, l.Lift.After, l.Lift.Targeted, len(l.Lift.Engines))
	}
	if d := cit.Difference; d.Status != "ok" || d.Estimate == nil || d.Interval == nil || d.Interval.Low <= 0 ||
		!(d.Interval.Low <= 0.25 && 0.25 <= d.Interval.High) || d.Effect != 0.2 {
		t.Errorf("citation rate: before %+v after %+v difference %+v; want about +0.25 within an interval above 0", cit.Before, cit.After, d)
	}
	if cit.Control == nil || cit.DiD == nil || cit.DiD.Status != "ok" || cit.DiD.Estimate == nil ||
		!(cit.DiD.Interval.Low <= *cit.DiD.Estimate && *cit.DiD.Estimate <= cit.DiD.Interval.High) {
		t.Errorf("citation rate's control %+v and difference-in-differences %+v", cit.Control, cit.DiD)
	}
	t.Logf("citation rate: %.3f -> %.3f, lift %+.3f [%+.3f, %+.3f], did %+.3f", cit.Before.Value, cit.After.Value,
		*cit.Difference.Estimate, cit.Difference.Interval.Low, cit.Difference.Interval.High, *cit.DiD.Estimate)

	// 14 scans after the first change: its lift_measured. One more: the
	// second change's, which follows any other of the first.
	for range 8 {
		scan()
	}
	measured := func() map[string][]events.LiftMeasuredData {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		out := map[string][]events.LiftMeasuredData{}
		for _, ev := range rc.events {
			var d events.LiftMeasuredData
			if ev.Event == "lift_measured" && json.Unmarshal(ev.Data, &d) == nil {
				out[d.Change.ID] = append(out[d.Change.ID], d)
			}
		}
		return out
	}
	waitFor(t, "the first change's lift_measured", func() bool { return len(measured()[c1.ID]) == 1 })
	if len(measured()[c2.ID]) != 0 {
		t.Fatal("the second change measured with 13 scans after it")
	}
	scan()
	waitFor(t, "the second change's lift_measured", func() bool { return len(measured()[c2.ID]) == 1 })
	got := measured()
	if len(got[c1.ID]) != 1 || rc.invalid != 0 {
		t.Fatalf("lift_measured of the first change %d times (%d deliveries failed verification)", len(got[c1.ID]), rc.invalid)
	}
	ev := got[c1.ID][0]
	var evCit *events.LiftMeasure
	for i := range ev.Measures {
		if ev.Measures[i].Metric == "citation_rate" {
			evCit = &ev.Measures[i]
		}
	}
	if ev.Domain != "acme.invalid" || ev.Scans != 14 || !ev.Targeted || ev.Change.Title != "New skates pages" || len(ev.Measures) != 5 ||
		evCit == nil || evCit.Lift.Status != "ok" || evCit.Lift.Interval == nil || evCit.Lift.Interval.Low <= 0 || evCit.DiD == nil ||
		evCit.DiD.Estimate == nil ||
		ev.ClientID != nil {
		t.Errorf("lift_measured %+v", ev)
	}
	if c2ev := got[c2.ID][0]; c2ev.Targeted || c2ev.Measures[0].DiD != nil {
		t.Errorf("an untargeted change's lift_measured has a difference-in-differences: %+v", c2ev)
	}
	var read client.Change
	s.do(t, req{method: "GET", path: base + "/" + c1.ID, header: bearer(k)}).decode(t, &read)
	if read.LiftMeasuredAt == nil {
		t.Errorf("the change after its lift_measured: %+v", read)
	}
	var page client.List[client.Change]
	s.do(t, req{method: "GET", path: base + "?limit=1", header: bearer(k)}).decode(t, &page)
	if len(page.Items) != 1 || page.Items[0].ID != c2.ID || !page.HasMore {
		t.Errorf("the first page of one: %+v", page)
	}
	s.do(t, req{method: "GET", path: base + "?to=" + c2.At.Format(time.RFC3339Nano), header: bearer(k)}).decode(t, &page)
	if len(page.Items) != 1 || page.Items[0].ID != c1.ID {
		t.Errorf("the changes before the second: %+v", page)
	}
}

// jsonID is the id of a JSON object.
func jsonID(b []byte) string {
	var v struct {
		ID string `json:"id"`
	}
	json.Unmarshal(b, &v)
	return v.ID
}

// TestChangesAPIEndToEnd: a content request's result marked published
// makes one change (twice: the same), targeting its page and its target
// queries that are the domain's prompts; a page on no monitored domain is
// a validation error naming url; the fields of a change are checked by
// name; an agency client sees none of the account's changes; a key
// without visibility:write records none.
func TestChangesAPIEndToEnd(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "enterprise", true)
	k := newKey(t, dir, a.ID)
	var cl struct {
		ID string `json:"id"`
	}
	cli(t, dir, &cl, "client", "create", "--account", a.ID, "--name", "Client One")
	ck := newKey(t, dir, a.ID, "--client", cl.ID)
	ro := newKey(t, dir, a.ID, "--scopes", "visibility:read,content:read")
	s := start(t, dir)

	var dom client.MonitoredDomain
	s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: jsonBody(client.CreateDomain{Domain: "acme.invalid",
		Brands: []string{"Acme"}, Prompts: []string{"Which rocket skates are best for kids?"}})}).decode(t, &dom)
	completed := func(domain string) client.ContentRequest {
		t.Helper()
		cr, r := create(t, s, keyed(k), jsonBody(client.CreateContentRequest{Domain: domain, Budget: client.Dollars(1), Type: "analyze",
			Content: "# Rocket skates\n\nAcme rocket skates reach 40 km/h.", TargetQueries: []string{"which rocket skates are best for kids?", "skates"}}))
		if r.Status != 201 {
			t.Fatalf("content request: %d %s", r.Status, r.Body)
		}
		poll(t, "the request completes", func() bool { cr = getCR(t, s, k, cr.ID); return cr.Status != "queued" && cr.Status != "processing" })
		if cr.Status != "completed" {
			t.Fatalf("request %+v", cr)
		}
		return cr
	}
	cr := completed("acme.invalid")
	publish := func(h map[string]string, id, body string) resp {
		t.Helper()
		return s.do(t, req{method: "POST", path: crPath + "/" + id + "/published", header: h, body: body})
	}
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	r := publish(keyed(k), cr.ID, fmt.Sprintf(`{"url":"https://www.acme.invalid/skates?ref=x","published_at":%q}`, at.Format(time.RFC3339)))
	var env client.Envelope[client.Change]
	r.decode(t, &env)
	c := env.Data
	if r.Status != 200 || c.DomainID != dom.ID || c.ContentRequestID == nil || *c.ContentRequestID != cr.ID || !c.At.Equal(at) ||
		!slices.Equal(c.Pages, []string{"/skates"}) || !slices.Equal(c.Prompts, []string{"Which rocket skates are best for kids?"}) {
		t.Fatalf("published: %d %s", r.Status, r.Body)
	}
	r = publish(keyed(k), cr.ID, `{"url":"https://acme.invalid/other"}`)
	r.decode(t, &env)
	if r.Status != 200 || env.Data.ID != c.ID || !slices.Equal(env.Data.Pages, []string{"/skates"}) {
		t.Errorf("published again: %d %s, want the same change", r.Status, r.Body)
	}
	var page client.List[client.Change]
	s.do(t, req{method: "GET", path: "/v1/domains/" + dom.ID + "/changes", header: bearer(k)}).decode(t, &page)
	if len(page.Items) != 1 || page.Items[0].ID != c.ID {
		t.Errorf("changes %+v, want the published one alone", page.Items)
	}
	elsewhere := completed("unmonitored.invalid")
	for _, tc := range []struct{ id, body, field string }{
		{elsewhere.ID, `{"url":"https://unmonitored.invalid/skates"}`, "url"},
		{cr.ID + "x", `{}`, ""},
		{elsewhere.ID, `{"url":"https://acme.invalid/skates"}`, "url"},
		{elsewhere.ID, `{"published_at":"2999-01-01T00:00:00Z","url":"https://unmonitored.invalid/"}`, "published_at"},
		{elsewhere.ID, `{"url":7}`, "url"},
	} {
		r := publish(keyed(k), tc.id, tc.body)
		want := 400
		if tc.field == "" {
			want = 404
		}
		if r.Status != want || tc.field != "" && !strings.Contains(string(r.Body), `"field":"`+tc.field+`"`) {
			t.Errorf("published %s %s: %d %s, want %d naming %q", tc.id, tc.body, r.Status, r.Body, want, tc.field)
		}
	}

	// Fields by name, and the lift's options.
	base := "/v1/domains/" + dom.ID + "/changes"
	for body, fields := range map[string][]string{
		`{"title":""}`: {"title"},
		`{"title":"x","at":"1999-12-31T00:00:00Z","pages":["https://other.invalid/a","/ok","ftp://acme.invalid/"],"prompts":["Which rocket skates are best for kids?","nope"]}`: {"at", "pages[0]", "pages[2]", "prompts[1]"},
		`{"title":"x","notes":"` + strings.Repeat("n", 4001) + `"}`: {"notes"},
		`{"title":"x","colour":"red"}`:                              {"colour"},
	} {
		r := s.do(t, req{method: "POST", path: base, header: bearer(k), body: body})
		var e struct {
			Error struct {
				Code    string              `json:"code"`
				Details []client.FieldError `json:"details"`
			} `json:"error"`
		}
		r.decode(t, &e)
		var got []string
		for _, d := range e.Error.Details {
			got = append(got, d.Field)
		}
		if r.Status != 400 || e.Error.Code != "VALIDATION_ERROR" || !slices.Equal(got, fields) {
			t.Errorf("POST %.80s: %d %s, want fields %v", body, r.Status, r.Body, fields)
		}
	}
	for q, field := range map[string]string{"scans=0": "scans", "scans=181": "scans", "effect=1": "effect", "effect=x": "effect",
		"position_effect=-1": "position_effect"} {
		r := s.do(t, req{method: "GET", path: base + "/" + c.ID + "/lift?" + q, header: bearer(k)})
		if r.Status != 400 || !strings.Contains(string(r.Body), `"field":"`+field+`"`) {
			t.Errorf("lift?%s: %d %s", q, r.Status, r.Body)
		}
	}
	for q, field := range map[string]string{"from=yesterday": "from", "from=2026-02-01&to=2026-01-01": "from", "to=x": "to"} {
		if r := s.do(t, req{method: "GET", path: base + "?" + q, header: bearer(k)}); r.Status != 400 || !strings.Contains(string(r.Body), `"field":"`+field+`"`) {
			t.Errorf("changes?%s: %d %s", q, r.Status, r.Body)
		}
	}

	// An agency client sees none of the account's; a read-only key records none.
	for _, p := range []string{base, base + "/" + c.ID, base + "/" + c.ID + "/lift"} {
		if r := s.do(t, req{method: "GET", path: p, header: bearer(ck)}); r.Status != 404 {
			t.Errorf("the client's GET %s: %d %s", p, r.Status, r.Body)
		}
	}
	if r := publish(keyed(ck), cr.ID, `{}`); r.Status != 404 {
		t.Errorf("the client marks the account's request published: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "DELETE", path: base + "/" + c.ID, header: bearer(ck)}); r.Status != 404 {
		t.Errorf("the client's DELETE: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "POST", path: base, header: bearer(ro), body: `{"title":"x"}`}); r.Status != 403 || r.errorCode(t) != "INSUFFICIENT_SCOPE" {
		t.Errorf("a read-only key's POST: %d %s", r.Status, r.Body)
	}
	if r := publish(keyed(ro), cr.ID, `{}`); r.Status != 403 {
		t.Errorf("a read-only key's published: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "GET", path: base + "/" + c.ID, header: bearer(ro)}); r.Status != 200 {
		t.Errorf("a read-only key's GET: %d %s", r.Status, r.Body)
	}

	// Deleted, the request may make another.
	if r := s.do(t, req{method: "DELETE", path: base + "/" + c.ID, header: bearer(k)}); r.Status != 204 {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "GET", path: base + "/" + c.ID, header: bearer(k)}); r.Status != 404 {
		t.Errorf("a deleted change: %d %s", r.Status, r.Body)
	}
	r = publish(keyed(k), cr.ID, `{"url":"https://acme.invalid"}`)
	r.decode(t, &env)
	if r.Status != 200 || env.Data.ID == c.ID || !slices.Equal(env.Data.Pages, []string{"/"}) {
		t.Errorf("published after its change's delete: %d %s", r.Status, r.Body)
	}
}

// goClientChanges makes the changes operations with the Go client, on a
// domain scanned once: a change made after the scan, listed, read, its
// lift (no scan after it), deleted.
func goClientChanges(t *testing.T, c *client.Client, domainID string) {
	t.Helper()
	ctx := context.Background()
	at := time.Now().UTC() // after the domain's one scan
	in := client.CreateChange{Title: "FAQ markup", At: &at, Pages: []string{"/skates"}}
	made, err := c.CreateChange(ctx, domainID, in, client.IdempotencyKey("chg-1"))
	if err != nil {
		t.Fatalf("create change: %v", err)
	}
	again, err := c.CreateChange(ctx, domainID, in, client.IdempotencyKey("chg-1"))
	if err != nil || again.ID != made.ID {
		t.Errorf("create change again: %+v %v", again, err)
	}
	var ids []string
	for ch, err := range c.Changes(ctx, domainID, client.ChangeParams{From: at.Add(-time.Second).Format(time.RFC3339), Limit: 1}) {
		if err != nil {
			t.Fatalf("changes: %v", err)
		}
		ids = append(ids, ch.ID)
	}
	page, err := c.ListChanges(ctx, domainID, client.ChangeParams{})
	if err != nil || !slices.Equal(ids, []string{made.ID}) || len(page.Items) != 1 {
		t.Errorf("changes %v, a page %+v %v", ids, page, err)
	}
	got, err := c.GetChange(ctx, domainID, made.ID)
	if err != nil || got.Title != "FAQ markup" || got.At.Unix() != at.Unix() {
		t.Errorf("get change %+v %v", got, err)
	}
	l, err := c.GetChangeLift(ctx, domainID, made.ID, client.LiftParams{Scans: 2, Effect: 0.3})
	if err != nil || l.Change.ID != made.ID || l.Lift.Scans != 2 || l.Lift.After.Scans != 0 || l.Lift.Before.Scans != 1 ||
		len(l.Lift.Overall.Measures) != 5 || l.Lift.Overall.Measures[0].Difference.Status != "insufficient_data" ||
		l.Lift.Overall.Measures[0].Difference.Effect != 0.3 {
		t.Errorf("lift %+v %v", l, err)
	}
	if err := c.DeleteChange(ctx, domainID, made.ID); err != nil {
		t.Errorf("delete change: %v", err)
	}
	if _, err := c.GetChange(ctx, domainID, made.ID); !isStatus(err, http.StatusNotFound) {
		t.Errorf("a deleted change: %v", err)
	}
}

// goClientPublished makes the one operation a server without content
// workers cannot answer 2xx: it stops s, starts the server again on its
// data directory with args (a content worker on) and rec's transport,
// lets an analysis of the monitored domain complete, and marks it
// published with the Go client.
func goClientPublished(t *testing.T, s *server, rec *calls, k key, args ...string) {
	t.Helper()
	ctx := context.Background()
	s.stop()
	s2 := start(t, s.DataDir, args...)
	rec.next = s2.HTTP.Transport
	c, err := client.New(s2.URL, client.WithKey(k.Key, k.Secret), client.WithHTTPClient(&http.Client{Transport: rec, Timeout: 30 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	cr, err := c.CreateContentRequest(ctx, client.CreateContentRequest{Domain: "acme.invalid", Budget: client.Dollars(1), Type: "analyze",
		Content: "# Rocket skates\n\nAcme rocket skates reach 40 km/h."})
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "the analysis completes", func() bool {
		cr, err = c.GetContentRequest(ctx, cr.ID)
		return err == nil && cr.Status != client.StatusQueued && cr.Status != client.StatusProcessing
	})
	if cr.Status != client.StatusCompleted {
		t.Fatalf("content request %+v", cr)
	}
	ch, err := c.PublishContentRequest(ctx, cr.ID, client.PublishContent{URL: "https://acme.invalid/skates"})
	if err != nil || ch.ContentRequestID == nil || *ch.ContentRequestID != cr.ID || !slices.Equal(ch.Pages, []string{"/skates"}) {
		t.Fatalf("published: %+v %v", ch, err)
	}
	again, err := c.PublishContentRequest(ctx, cr.ID, client.PublishContent{})
	if err != nil || again.ID != ch.ID {
		t.Errorf("published again: %+v %v", again, err)
	}
}
