package dashboard_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

var downloadLink = regexp.MustCompile(`<a href="([^"]+)" download aria-label="[^"]+">Download CSV</a>`)

// TestDomainTablesDownloadAsCSV: each table of the domain page's figures
// has a "Download CSV" link that, fetched with the session, gives the
// table as CSV, the rows the page shows (the engines' text as it is, not
// markup); without a session it gives nothing; an unknown table is 400.
func TestDomainTablesDownloadAsCSV(t *testing.T) {
	e, c := domainWithFigures(t)
	p := e.get(c, "/domains/acme.example")
	links := downloadLink.FindAllStringSubmatch(p.body, -1)
	if len(links) != 5 { // and the answers' (TestDomainAnswersDownloadAsCSV)
		t.Fatalf("%d Download CSV links on the domain page, want 5", len(links))
	}
	fetch := func(c *http.Client, link string) (*http.Response, []byte) {
		t.Helper()
		res, err := c.Get(e.srv.URL + link)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	tables := map[string][][]string{}
	for _, l := range links {
		link := html.UnescapeString(l[1])
		res, b := fetch(c, link)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
			!strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment; filename=acme.example-") {
			t.Fatalf("%s: %d %v\n%s", link, res.StatusCode, res.Header, b)
		}
		rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v\n%s", link, err, b)
		}
		tables[link[strings.Index(link, "csv=")+4:]] = rows
	}
	want := [][]string{{"domain", "answers_citing", "share_of_cited_sources", "this_domain"},
		{"rival.example", "9", "0.36", "false"}, {"acme.example", "4", "0.16", "true"},
		{"<img src=x onerror=alert(1)>", "2", "0.08", "false"}, {"blog.acme.example", "1", "0.04", "true"}}
	if got := tables["cited_domains"]; !reflect.DeepEqual(got, want) {
		t.Errorf("cited domains:\n got  %q\n want %q", got, want)
	}
	want = [][]string{{"url", "answers_citing"}, {"https://acme.example/pricing", "3"}, {"https://acme.example/a?q=<script>alert(1)</script>", "1"}}
	if got := tables["cited_pages"]; !reflect.DeepEqual(got, want) {
		t.Errorf("cited pages:\n got  %q\n want %q", got, want)
	}
	if got := tables["readings"]; len(got) != 3 || got[1][0] != "acme.example" || got[1][2] != "60" || got[2][2] != "55" {
		t.Errorf("readings, newest first: %q", got)
	}
	engines := tables["engines"]
	if len(engines) != 4 || engines[1][0] != "GPT search" || engines[2][0] != "Local" || engines[3][0] != "all engines" ||
		engines[1][13] != "0.6" || engines[2][28] != "" || engines[1][3] != "search_api" || engines[2][3] != "model" {
		t.Errorf("engines: %q", engines)
	}

	// Without a session: the sign-in, no table.
	res, b := fetch(e.browser(), "/domains/acme.example?csv=engines")
	if res.StatusCode == 200 || strings.Contains(string(b), "GPT search") {
		t.Errorf("without a session: %d %s", res.StatusCode, b)
	}
	if res, _ := fetch(c, "/domains/acme.example?csv=prompts"); res.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown table: %d", res.StatusCode)
	}
}

// TestWebhookDeliveriesDownloadAsCSV: the deliveries table of a webhook's
// page links every delivery as CSV, with the session; another account's
// session gets none of them.
func TestWebhookDeliveriesDownloadAsCSV(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	other, _ := e.owner("other@example.com", false)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer recv.Close()
	tok := csrf(t, e.get(c, "/webhooks"))
	if p := e.post(c, "/webhooks", url.Values{"csrf": {tok}, "domain": {"acme.example"}, "url": {recv.URL}, "events": {"ai_visibility_change"}}); p.status != http.StatusCreated {
		t.Fatalf("create: %d\n%s", p.status, p.body)
	}
	ws, _, _ := e.db.ListWebhooks(context.Background(), store.WebhookFilter{AccountID: u.AccountID})
	ds, _, _ := e.db.ListDeliveries(context.Background(), store.DeliveryFilter{WebhookID: ws[0].ID, Limit: 10})
	if len(ws) != 1 || len(ds) != 1 {
		t.Fatalf("%d webhooks, %d deliveries", len(ws), len(ds))
	}
	links := downloadLink.FindAllStringSubmatch(e.get(c, "/webhooks/"+ws[0].ID).body, -1)
	if len(links) != 1 || html.UnescapeString(links[0][1]) != "/webhooks/"+ws[0].ID+"?csv=deliveries" {
		t.Fatalf("Download CSV links: %q", links)
	}
	res, err := c.Get(e.srv.URL + html.UnescapeString(links[0][1]))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/csv; charset=utf-8" || err != nil || len(rows) != 2 ||
		!reflect.DeepEqual(rows[0], []string{"id", "event_id", "event", "status", "attempts", "next_attempt_at", "last_status_code", "last_error", "created_at", "updated_at"}) ||
		rows[1][0] != ds[0].ID || rows[1][2] != "webhook_test" || rows[1][3] != "succeeded" || rows[1][6] != "200" {
		t.Fatalf("deliveries CSV: %d %v %q", res.StatusCode, err, b)
	}
	res, err = other.Get(e.srv.URL + "/webhooks/" + ws[0].ID + "?csv=deliveries")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound || strings.Contains(string(b), ds[0].ID) {
		t.Errorf("another account's session: %d %s", res.StatusCode, b)
	}
}

// TestUsageDownloadsAsCSV: the usage page links the per-key hourly counts
// behind its charts as CSV, a row per key and hour with the key's and
// client's names; another account's session gets its own, empty.
func TestUsageDownloadsAsCSV(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	other, _ := e.owner("other@example.com", false)
	if p := e.post(c, "/keys", url.Values{"csrf": {csrf(t, e.get(c, "/keys"))}, "name": {"=cmd|' /C calc'!A0"}}); p.status != http.StatusOK && p.status != http.StatusCreated {
		t.Fatalf("create key: %d\n%s", p.status, p.body)
	}
	ks, _ := e.db.ListKeys(context.Background(), u.AccountID)
	hour := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	if len(ks) != 1 || e.db.SaveCounts(context.Background(), nil, []store.KeyUsage{
		{KeyID: ks[0].ID, AccountID: u.AccountID, Hour: hour, Count: 7, LastUsed: hour},
		{KeyID: ks[0].ID, AccountID: u.AccountID, Hour: hour.Add(time.Hour), Count: 3, LastUsed: hour.Add(time.Hour)}}) != nil {
		t.Fatalf("keys %v", ks)
	}
	links := downloadLink.FindAllStringSubmatch(e.get(c, "/usage").body, -1)
	if len(links) != 1 || links[0][1] != "/usage?csv=requests" {
		t.Fatalf("Download CSV links: %q", links)
	}
	get := func(c *http.Client) [][]string {
		res, err := c.Get(e.srv.URL + "/usage?csv=requests")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/csv; charset=utf-8" || err != nil {
			t.Fatalf("usage CSV: %d %v %s", res.StatusCode, err, b)
		}
		return rows
	}
	name := "'=cmd|' /C calc'!A0 (" + ks[0].Hint + ")" // a key's name that would run as a formula, made text
	want := [][]string{{"hour", "key_id", "key", "client_id", "client", "requests"},
		{hour.Format(time.RFC3339Nano), ks[0].ID, name, "", "Account keys", "7"},
		{hour.Add(time.Hour).Format(time.RFC3339Nano), ks[0].ID, name, "", "Account keys", "3"}}
	if got := get(c); !reflect.DeepEqual(got, want) {
		t.Errorf("usage:\n got  %q\n want %q", got, want)
	}
	if got := get(other); len(got) != 1 {
		t.Errorf("another account's usage CSV has the account's rows: %q", got)
	}
}

// TestDomainAnswersDownloadAsCSV: the answers' Download CSV link carries
// the search form's filters and gives every answer they select, past a
// page of 100, as the API's CSV, a text that would run as a formula made
// text.
func TestDomainAnswersDownloadAsCSV(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	md := e.monitor(c, u.AccountID, "acme.example", "")
	e.readings(md, 60)
	sc := e.completedScan(md, "scan_new", `{"overall":{"probes":130,"mention_rate":`+rate(9, 130, 0.2, 0.56)+`},
		"engines":[{"label":"GPT search","kind":"openai-responses"},{"label":"Local","kind":"openai-chat"}]}`)
	e.answers(sc, 130, store.ScanAnswer{Prompt: "Best rocket skates?", Engine: "GPT search", Kind: "openai-responses",
		Text: "=1+1 rocket skates", Detail: json.RawMessage(`{}`)})
	for _, tc := range []struct {
		page string
		rows int
	}{{"/domains/acme.example", 130}, {"/domains/acme.example?engine=Local", 65}} {
		links := downloadLink.FindAllStringSubmatch(e.get(c, tc.page).body, -1)
		var link string
		for _, l := range links {
			if strings.Contains(l[1], "csv=answers") {
				link = html.UnescapeString(l[1])
			}
		}
		if link == "" {
			t.Fatalf("%s links no answers CSV: %q", tc.page, links)
		}
		res, err := c.Get(e.srv.URL + link)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
		if res.StatusCode != 200 || err != nil || len(rows) != tc.rows+1 || rows[0][0] != "seq" {
			t.Fatalf("%s: %d %v, %d rows", link, res.StatusCode, err, len(rows))
		}
		engine, text := slices.Index(rows[0], "engine"), slices.Index(rows[0], "text")
		for _, row := range rows[1:] {
			if strings.Contains(tc.page, "engine=Local") && row[engine] != "Local" {
				t.Errorf("%s: an answer of %s", link, row[engine])
			}
		}
		if tc.rows == 130 && rows[1][text] != "'=1+1 rocket skates" {
			t.Errorf("the first answer's text: %q", rows[1][text])
		}
	}
}
