package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe/probefake"
)

// readCSV parses a CSV response: 200, text/csv, an attachment, RFC 4180
// (CRLF line ends), and returns its header and rows.
func readCSV(t *testing.T, r resp) ([]string, [][]string) {
	t.Helper()
	if r.Status != 200 || r.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		!strings.HasPrefix(r.Header.Get("Content-Disposition"), "attachment; filename=") {
		t.Fatalf("not a CSV export: %d %v %.300s", r.Status, r.Header, r.Body)
	}
	if !bytes.HasSuffix(r.Body, []byte("\r\n")) || bytes.Count(r.Body, []byte("\n")) != bytes.Count(r.Body, []byte("\r\n")) {
		t.Fatalf("the CSV's lines do not all end in CRLF: %q", r.Body)
	}
	rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("the CSV does not parse: %v: %s", err, r.Body)
	}
	return rows[0], rows[1:]
}

// column is the values of a CSV column by its header.
func column(t *testing.T, header []string, rows [][]string, name string) []string {
	t.Helper()
	i := slices.Index(header, name)
	if i < 0 {
		t.Fatalf("no column %s in %v", name, header)
	}
	out := make([]string, len(rows))
	for j, row := range rows {
		out[j] = row[i]
	}
	return out
}

// walk lists every item of a JSON list, page after page.
func walk[T any](t *testing.T, s *server, k key, path string) []T {
	t.Helper()
	var all []T
	cursor := ""
	for {
		p := path + "&limit=100"
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		var page client.List[T]
		r := s.do(t, req{method: "GET", path: p, header: bearer(k)})
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", p, r.Status, r.Body)
		}
		r.decode(t, &page)
		all = append(all, page.Items...)
		if !page.HasMore {
			return all
		}
		cursor = *page.NextCursor
	}
}

// TestCSVExportsEndToEnd: readings history, a scan's answers, its figures
// per engine, its cited domains and pages, and a webhook's deliveries come
// as CSV through the real binary, asked for with format=csv or Accept:
// text/csv: every item from the cursor on (past a page of 100), the same
// as the JSON list, a cell that could run as a formula made text; a bad
// format, table or cursor is the error envelope.
func TestCSVExportsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	engine := probefake.New()
	defer engine.Close()
	evil := `=HYPERLINK("https://evil.example","Acme")`
	engine.Script("fake-search-model",
		probefake.Reply{Text: evil + " Acme skates are the safest.", Citations: []probefake.Citation{
			{URL: "https://acme.invalid/safety", Title: "Safety"}, {URL: "https://reviews.example/skates", Title: "Reviews"}}},
		probefake.Reply{Text: "Globex leads the market.", Citations: []probefake.Citation{{URL: "https://reviews.example/skates", Title: "Reviews"}}})
	cfg := writeConfig(t, dir, map[string]any{"engines": []map[string]any{
		{"label": "Search", "base_url": engine.URL(), "model": "fake-search-model", "concurrency": 2}}})
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	stranger := newKey(t, dir, newAccount(t, dir, "enterprise", false).ID)
	s := start(t, dir, "--config", cfg, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets")

	rc := newHookReceiver(t)
	var wh client.Webhook
	if r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k),
		body: jsonBody(client.CreateWebhook{Domain: "acme.invalid", Events: []string{"ai_visibility_change"}, URL: rc.URL + "/hook"})}); r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	} else {
		r.decode(t, &wh)
	}
	var d client.MonitoredDomain
	s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: `{"domain":"acme.invalid","brands":["Acme"],"competitors":["Globex"]}`}).decode(t, &d)
	sc := completedScan(t, s, k, "acme.invalid")

	// 105 readings more, each moving the score 10 points: more than a
	// page, and an event (and a delivery) each.
	const readings = 105
	for i := range readings {
		recordEvent(t, s, k, fmt.Sprintf(`{"domain":"acme.invalid","visibility_score":%d,"sentiment":"negative","sentiment_score":-0.5}`, 90+10*(i%2)))
	}

	// Readings: format=csv and Accept: text/csv give the same rows, every
	// reading however small limit, as the JSON list has them.
	history := walk[client.VisibilityReading](t, s, k, "/v1/visibility/history?domain=acme.invalid")
	if len(history) != readings+1 {
		t.Fatalf("%d readings listed, want %d", len(history), readings+1)
	}
	byFormat := s.do(t, req{method: "GET", path: "/v1/visibility/history?domain=acme.invalid&format=csv&limit=5", header: bearer(k)})
	header, rows := readCSV(t, byFormat)
	if !slices.Equal(header, []string{"domain", "measured_at", "visibility_score", "sentiment", "sentiment_score", "source", "client_id", "formula_version", "market"}) {
		t.Errorf("readings header %v", header)
	}
	if len(rows) != len(history) {
		t.Fatalf("%d CSV rows, %d readings", len(rows), len(history))
	}
	for i, h := range history {
		want := []string{h.Domain, h.MeasuredAt.UTC().Format(time.RFC3339Nano), strconv.Itoa(h.VisibilityScore), h.Sentiment,
			strconv.FormatFloat(h.SentimentScore, 'f', -1, 64), h.Source, "", "", ""}
		if h.FormulaVersion != nil {
			want[7] = strconv.Itoa(*h.FormulaVersion)
		}
		if !slices.Equal(rows[i], want) {
			t.Errorf("reading %d: CSV %q, JSON %q", i, rows[i], want)
		}
	}
	if !slices.Contains(column(t, header, rows, "sentiment_score"), "-0.5") {
		t.Error("a negative number, no formula, does not stay a number")
	}
	byAccept := s.do(t, req{method: "GET", path: "/v1/visibility/history?domain=acme.invalid", header: with(bearer(k), "Accept", "text/csv")})
	if readCSV(t, byAccept); !bytes.Equal(byAccept.Body, byFormat.Body) {
		t.Errorf("Accept: text/csv and format=csv differ")
	}
	// From a cursor: the rows after it.
	var page client.List[client.VisibilityReading]
	s.do(t, req{method: "GET", path: "/v1/visibility/history?domain=acme.invalid&limit=10", header: bearer(k)}).decode(t, &page)
	_, rest := readCSV(t, s.do(t, req{method: "GET", path: "/v1/visibility/history?domain=acme.invalid&format=csv&cursor=" + url.QueryEscape(*page.NextCursor), header: bearer(k)}))
	if len(rest) != len(history)-10 || !slices.Equal(rest[0], rows[10]) {
		t.Errorf("from the cursor after 10: %d rows", len(rest))
	}
	// JSON stays the answer to a client that prefers it.
	for _, accept := range []string{"application/json, text/csv;q=0.5", "*/*", "text/html"} {
		r := s.do(t, req{method: "GET", path: "/v1/visibility/history?domain=acme.invalid&limit=1", header: with(bearer(k), "Accept", accept)})
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Errorf("Accept %s: %d %s", accept, r.Status, r.Header.Get("Content-Type"))
		}
	}
	if r := s.do(t, req{method: "GET", path: "/v1/visibility/history?domain=acme.invalid&format=csv", header: with(bearer(stranger))}); r.Status != 200 {
		t.Errorf("another account's history: %d", r.Status)
	} else if _, rows := readCSV(t, r); len(rows) != 0 {
		t.Errorf("another account's key exports %d of the account's readings", len(rows))
	}

	// A scan's answers: a row each, as the JSON list has them; the text
	// that starts with = is made text.
	answers := walk[client.ScanAnswer](t, s, k, "/v1/visibility/scans/"+sc.ID+"/answers?engine=Search")
	header, rows = readCSV(t, s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + sc.ID + "/answers?format=csv", header: bearer(k)}))
	if len(answers) == 0 || len(rows) != len(answers) {
		t.Fatalf("%d answers, %d CSV rows", len(answers), len(rows))
	}
	texts, seqs, cited := column(t, header, rows, "text"), column(t, header, rows, "seq"), column(t, header, rows, "citations")
	injected := 0
	for i, an := range answers {
		want := an.Text
		if strings.HasPrefix(an.Text, "=") {
			want, injected = "'"+an.Text, injected+1
		}
		urls := make([]string, len(an.Citations))
		for j, c := range an.Citations {
			urls[j] = c.URL
		}
		if texts[i] != want || seqs[i] != strconv.Itoa(an.Seq) || cited[i] != strings.Join(urls, "\n") {
			t.Errorf("answer %d: CSV %q %q %q, JSON %+v", i, seqs[i], texts[i], cited[i], an)
		}
	}
	if injected == 0 {
		t.Error("no answer started with =: the neutralisation went untested")
	}

	// Its figures: per engine (and all engines), cited domains, cited pages.
	header, rows = readCSV(t, s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + sc.ID + "?format=csv&table=engines", header: bearer(k)}))
	if engines := column(t, header, rows, "engine"); !slices.Equal(engines, []string{"Search", "all engines"}) {
		t.Errorf("engines table: %v", rows)
	}
	if probes := column(t, header, rows, "probes"); probes[0] != strconv.Itoa(len(answers)) || probes[1] != probes[0] {
		t.Errorf("probes %v, %d answers", probes, len(answers))
	}
	header, rows = readCSV(t, s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + sc.ID + "?table=cited_domains", header: with(bearer(k), "Accept", "text/csv")}))
	if !slices.Equal(header, []string{"domain", "answers_citing", "share_of_cited_sources", "this_domain"}) ||
		!slices.ContainsFunc(rows, func(r []string) bool {
			return r[0] == "reviews.example" && r[1] == strconv.Itoa(len(answers)) && r[2] != "" && r[3] == "false"
		}) ||
		!slices.ContainsFunc(rows, func(r []string) bool { return r[0] == "acme.invalid" && r[3] == "true" }) {
		t.Errorf("cited domains: %v %v", header, rows)
	}
	header, rows = readCSV(t, s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + sc.ID + "?format=csv&table=cited_pages", header: bearer(k)}))
	if !slices.Equal(header, []string{"url", "answers_citing"}) || len(rows) != 1 || rows[0][0] != "https://acme.invalid/safety" {
		t.Errorf("cited pages: %v %v", header, rows)
	}

	// A webhook's deliveries, once every event is delivered (the list
	// read at most 4 times a second: the account's rate limit).
	waitFor(t, "every event received", func() bool { return len(rc.kinds()) >= readings })
	waitFor(t, "every delivery delivered", func() bool {
		time.Sleep(250 * time.Millisecond)
		for _, d := range walk[client.Delivery](t, s, k, "/v1/webhooks/"+wh.ID+"/deliveries?") {
			if d.Status != "succeeded" {
				return false
			}
		}
		return true
	})
	deliveries := walk[client.Delivery](t, s, k, "/v1/webhooks/"+wh.ID+"/deliveries?")
	header, rows = readCSV(t, s.do(t, req{method: "GET", path: "/v1/webhooks/" + wh.ID + "/deliveries?format=csv", header: bearer(k)}))
	ids, events, states := column(t, header, rows, "id"), column(t, header, rows, "event_id"), column(t, header, rows, "status")
	if len(deliveries) < readings || len(rows) != len(deliveries) {
		t.Fatalf("%d deliveries, %d CSV rows", len(deliveries), len(rows))
	}
	for i, dl := range deliveries {
		if ids[i] != dl.ID || events[i] != dl.EventID || states[i] != dl.Status {
			t.Errorf("delivery %d: CSV %s %s %s, JSON %+v", i, ids[i], events[i], states[i], dl)
		}
	}

	// Refusals, in the envelope, before any CSV.
	for _, tc := range []struct{ path, field string }{
		{"/v1/visibility/history?domain=acme.invalid&format=xml", "format"},
		{"/v1/visibility/history?domain=acme.invalid&format=csv&cursor=bm90IGEgY3Vyc29y", "cursor"},
		{"/v1/visibility/scans/" + sc.ID + "?format=csv", "table"},
		{"/v1/visibility/scans/" + sc.ID + "?format=csv&table=prompts", "table"},
		{"/v1/visibility/scans/" + sc.ID + "?table=engines", "table"},
		{"/v1/webhooks/" + wh.ID + "/deliveries?format=csv&limit=0", "limit"},
	} {
		r := s.do(t, req{method: "GET", path: tc.path, header: bearer(k)})
		var e client.ErrorEnvelope
		r.decode(t, &e)
		if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" || len(e.Error.Details) != 1 || e.Error.Details[0].Field != tc.field {
			t.Errorf("%s: %d %s", tc.path, r.Status, r.Body)
		}
	}
	for _, path := range []string{"/v1/visibility/scans/" + sc.ID + "/answers?format=csv", "/v1/visibility/scans/" + sc.ID + "?format=csv&table=engines",
		"/v1/webhooks/" + wh.ID + "/deliveries?format=csv"} {
		if r := s.do(t, req{method: "GET", path: path, header: bearer(stranger)}); r.Status != 404 || r.errorCode(t) != "NOT_FOUND" {
			t.Errorf("another account's %s: %d %s", path, r.Status, r.Body)
		}
	}
}
