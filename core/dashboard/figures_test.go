package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/aivis/aivis/core/dashboard"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// monitor monitors a domain through the Domains form (for a client of an
// agency when clientID is set) and returns it as stored.
func (e *env) monitor(c *http.Client, accountID, domain, clientID string) store.MonitoredDomain {
	e.t.Helper()
	p := e.post(c, "/domains", url.Values{"csrf": {csrf(e.t, e.get(c, "/domains"))}, "domain": {domain}, "client_id": {clientID}})
	if p.status != http.StatusSeeOther {
		e.t.Fatalf("monitor %s: %d\n%s", domain, p.status, p.body)
	}
	ds, _, err := e.db.ListDomains(context.Background(), store.DomainFilter{AccountID: accountID, AllClients: true, Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, d := range ds {
		if d.Domain == domain && d.ClientID == clientID {
			return d
		}
	}
	e.t.Fatalf("%s is not monitored after the form", domain)
	return store.MonitoredDomain{}
}

// readings records a domain's readings, the last measured an hour ago,
// the others an hour apart before it.
func (e *env) readings(md store.MonitoredDomain, scores ...int) {
	e.t.Helper()
	now := time.Now().UTC()
	for i, score := range scores {
		if _, err := e.db.AddReading(context.Background(), store.Reading{AccountID: md.AccountID, ClientID: md.ClientID, Domain: md.Domain,
			VisibilityScore: score, Sentiment: "neutral", Source: "scan", MeasuredAt: now.Add(time.Duration(i-len(scores)) * time.Hour)}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// completedScan stores a completed scan of a monitored domain whose
// breakdown is the JSON a scan writes.
func (e *env) completedScan(md store.MonitoredDomain, id, breakdown string) store.Scan {
	e.t.Helper()
	if !json.Valid([]byte(breakdown)) {
		e.t.Fatalf("the breakdown of %s is not JSON", id)
	}
	now := time.Now().UTC()
	sc := store.Scan{ID: id, AccountID: md.AccountID, ClientID: md.ClientID, DomainID: md.ID, Domain: md.Domain, Trigger: store.ScanManual,
		Status: store.ScanCompleted, CreatedAt: now, StartedAt: now, FinishedAt: now,
		Result: json.RawMessage(`{"visibility_score":60,"sentiment":"neutral","sentiment_score":0,"readiness_score":55,"breakdown":` + breakdown + `}`)}
	if err := e.db.Update(context.Background(), func(tx store.Tx) error { return tx.InsertScan(sc) }); err != nil {
		e.t.Fatal(err)
	}
	return sc
}

// row is a table row as a reader sees it: each cell's text, and the row's
// class.
type row struct {
	class string
	cells []string
}

// tableRows reads the rows of the table with that id in one of its
// sections (thead, tbody, tfoot).
func tableRows(t *testing.T, body, id, section string) []row {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	table := find(doc, func(n *html.Node) bool { return attr(n, "id") == id })
	if table == nil {
		t.Fatalf("the page has no #%s", id)
	}
	var rows []row
	var walk func(*html.Node, bool)
	walk = func(n *html.Node, in bool) {
		in = in || n.Type == html.ElementNode && n.Data == section
		if in && n.Type == html.ElementNode && n.Data == "tr" {
			r := row{class: attr(n, "class")}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && (c.Data == "td" || c.Data == "th") {
					r.cells = append(r.cells, strings.Join(strings.Fields(text(c)), " "))
				}
			}
			rows = append(rows, r)
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, in)
		}
	}
	walk(table, false)
	return rows
}

func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	if n.Type == html.ElementNode && match(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, match); f != nil {
			return f
		}
	}
	return nil
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(text(c) + " ")
	}
	return b.String()
}

func cellsOf(rows []row) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = r.cells
	}
	return out
}

// rate is a rate's JSON: hits of n, its value and the interval given.
func rate(hits, n int, low, high float64) string {
	v := 0.0
	if n > 0 {
		v = float64(hits) / float64(n)
	}
	b, _ := json.Marshal(map[string]any{"value": v, "hits": hits, "of": n, "interval_95": map[string]float64{"low": low, "high": high}})
	return string(b)
}

// domainWithFigures is an owner's domain, acme.example, with readings and
// a scan of two engines, and the owner's session.
func domainWithFigures(t *testing.T) (*env, *http.Client) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	md := e.monitor(c, u.AccountID, "acme.example", "")
	e.readings(md, 55, 60)
	e.completedScan(md, "scan_figures", `{"basis":"engines","components":{"mention":40,"readiness":55},"weights":{"mention":0.5,"readiness":0.5},
		"overall":{"probes":20,"failed":1,"mention_rate":`+rate(8, 19, 0.231, 0.637)+`,"citation_rate":`+rate(5, 19, 0.118, 0.488)+`,
			"sources_reported":`+rate(10, 19, 0.317, 0.727)+`,"source_share":`+rate(5, 25, 0.089, 0.391)+`,
			"cited_domains":[{"domain":"rival.example","count":9},{"domain":"acme.example","count":4},
				{"domain":"<img src=x onerror=alert(1)>","count":2},{"domain":"blog.acme.example","count":1}],
			"cited_pages":[{"url":"https://acme.example/pricing","count":3},{"url":"https://acme.example/a?q=<script>alert(1)</script>","count":1}]},
		"engines":[
			{"label":"GPT search","kind":"openai-responses","probes":10,"failed":0,"mention_rate":`+rate(6, 10, 0.313, 0.832)+`,
				"citation_rate":`+rate(5, 10, 0.237, 0.763)+`,"sources_reported":`+rate(10, 10, 0.722, 1)+`,"source_share":`+rate(5, 25, 0.089, 0.391)+`},
			{"label":"Local","kind":"openai-chat","probes":10,"failed":1,"mention_rate":`+rate(2, 9, 0.063, 0.547)+`,
				"citation_rate":`+rate(0, 9, 0, 0.299)+`,"sources_reported":`+rate(0, 9, 0, 0.299)+`,"source_share":null}]}`)
	return e, c
}

// The domain page shows the latest scan's figures per engine (mention,
// citation and source share with their intervals, "no sources reported"
// for an engine that reported none), the cited domains with the page's
// own marked, and its cited pages; what the engines wrote is text, never
// markup.
func TestDomainPageShowsPerEngineFiguresAndCitedDomains(t *testing.T) {
	e, c := domainWithFigures(t)

	p := e.get(c, "/domains/acme.example")
	if p.status != http.StatusOK {
		t.Fatalf("domain page: %d\n%s", p.status, p.body)
	}
	want := [][]string{
		{"GPT search", "openai-responses", "search API", "10", "60% 31–83%", "50% 24–76%", "20% 8.9–39% sources in 10 of 10 answers", "—"},
		{"Local", "openai-chat", "model", "9 (1 failed)", "22% 6.3–55%", "0% 0–30%", "no sources reported sources in 0 of 9 answers", "—"},
	}
	if got := cellsOf(tableRows(t, p.body, "engines", "tbody")); !reflect.DeepEqual(got, want) {
		t.Errorf("per engine:\n got  %q\n want %q", got, want)
	}
	want = [][]string{{"All engines", "", "", "19 (1 failed)", "42% 23–64%", "26% 12–49%", "20% 8.9–39% sources in 10 of 19 answers", "—"}}
	if got := cellsOf(tableRows(t, p.body, "engines", "tfoot")); !reflect.DeepEqual(got, want) {
		t.Errorf("all engines:\n got  %q\n want %q", got, want)
	}
	cited := tableRows(t, p.body, "cited-domains", "tbody")
	want = [][]string{{"rival.example", "9", "36%"}, {"acme.example this domain", "4", "16%"},
		{"<img src=x onerror=alert(1)>", "2", "8.0%"}, {"blog.acme.example this domain", "1", "4.0%"}}
	if got := cellsOf(cited); !reflect.DeepEqual(got, want) {
		t.Errorf("cited domains:\n got  %q\n want %q", got, want)
	}
	for i, r := range cited {
		if own := r.class == "own"; own != (i == 1 || i == 3) {
			t.Errorf("cited domain %q is marked own: %v", r.cells[0], own)
		}
	}
	want = [][]string{{"https://acme.example/pricing", "3"}, {"https://acme.example/a?q=<script>alert(1)</script>", "1"}}
	if got := cellsOf(tableRows(t, p.body, "cited-pages", "tbody")); !reflect.DeepEqual(got, want) {
		t.Errorf("cited pages:\n got  %q\n want %q", got, want)
	}
	for _, markup := range []string{"<img src=x", "<script>alert"} {
		if strings.Contains(p.body, markup) {
			t.Errorf("the page carries the engines' %q as markup", markup)
		}
	}
	if !strings.Contains(p.body, `<h2>Citation share</h2><p class="big">20%</p>`) {
		t.Error("the page does not show the domain's citation share beside its score")
	}
}

// countingStore counts the dashboard's reads of readings and scans.
type countingStore struct {
	*sqlite.DB
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingStore) count(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[method]++
}

func (c *countingStore) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := c.calls
	c.calls = map[string]int{}
	return calls
}

func (c *countingStore) LatestReadings(ctx context.Context, accountID string, ids []string, n int) (map[string][]store.Reading, error) {
	c.count("LatestReadings")
	return c.DB.LatestReadings(ctx, accountID, ids, n)
}

func (c *countingStore) LatestScans(ctx context.Context, accountID string, ids []string) (map[string]store.Scan, error) {
	c.count("LatestScans")
	return c.DB.LatestScans(ctx, accountID, ids)
}

func (c *countingStore) LatestScan(ctx context.Context, accountID, clientID, domain string) (store.Scan, error) {
	c.count("LatestScan")
	return c.DB.LatestScan(ctx, accountID, clientID, domain)
}

func (c *countingStore) ListReadings(ctx context.Context, f store.ReadingFilter, cursor string, limit int) ([]store.Reading, string, error) {
	c.count("ListReadings")
	return c.DB.ListReadings(ctx, f, cursor, limit)
}

// The Overview leads with every domain's score, its trend and its
// citation share (the source share, or the citation rate of engines that
// reported no sources), then the latest changes (of the scores and of
// the engines' citation rates), then API usage; it reads the readings and
// the scans of all the domains in one query each. An agency's client's
// page shows that client's domains and changes only.
func TestOverviewLeadsWithScoresTrendsAndCitationShare(t *testing.T) {
	var counted *countingStore
	e := newEnv(t, func(db *sqlite.DB) dashboard.Store {
		counted = &countingStore{DB: db, calls: map[string]int{}}
		return counted
	})
	c, u := e.owner("owner@example.com", true)
	globex, err := e.accts.CreateClient(context.Background(), u.AccountID, "Globex")
	if err != nil {
		t.Fatal(err)
	}
	acme := e.monitor(c, u.AccountID, "acme.example", "")
	shop := e.monitor(c, u.AccountID, "shop.example", globex.ID)
	e.monitor(c, u.AccountID, "new.example", "")
	e.readings(acme, 40, 50, 65)
	e.readings(shop, 70, 70)
	e.completedScan(acme, "scan_acme", `{"overall":{"probes":12,"failed":0,"mention_rate":`+rate(6, 12, 0.254, 0.746)+`,
		"citation_rate":`+rate(0, 12, 0, 0.243)+`,"sources_reported":`+rate(12, 12, 0.757, 1)+`,"source_share":`+rate(0, 20, 0, 0.161)+`,
		"cited_domains":[{"domain":"rival.example","count":12},{"domain":"other.example","count":8}],"cited_pages":[]}}`)
	e.completedScan(shop, "scan_shop", `{"overall":{"probes":10,"failed":0,"mention_rate":`+rate(4, 10, 0.168, 0.687)+`,
		"citation_rate":`+rate(1, 10, 0.018, 0.404)+`,"sources_reported":`+rate(0, 10, 0, 0.278)+`,"source_share":null,
		"cited_domains":[],"cited_pages":[]}}`)
	now := time.Now().UTC()
	e.citationChange(acme, "GPT search", 0.2, 0.455, now.Add(-90*time.Minute))
	e.citationChange(shop, "Local", 0.1, 0, now.Add(-30*time.Minute))
	counted.reset()

	p := e.get(c, "/")
	if p.status != http.StatusOK {
		t.Fatalf("overview: %d\n%s", p.status, p.body)
	}
	if calls := counted.reset(); !reflect.DeepEqual(calls, map[string]int{"LatestReadings": 1, "LatestScans": 1}) {
		t.Errorf("the Overview of 3 domains read the store %v times, want LatestReadings and LatestScans once each", calls)
	}
	if i, j := strings.Index(p.body, `id="domain-visibility"`), strings.Index(p.body, "<h2>API usage</h2>"); i < 0 || j < 0 || i > j {
		t.Errorf("the domains' table (at %d) does not come before API usage (at %d)", i, j)
	}
	rows := cellsOf(tableRows(t, p.body, "domain-visibility", "tbody"))
	want := map[string][]string{
		"acme.example": {"acme.example", "Account", "65 /100 +15", "", "0% of the cited sources, 95% 0–16%", "*"},
		"shop.example": {"shop.example", "Globex", "70 /100", "", "10% citation rate: no sources reported, 95% 1.8–40%", "*"},
		"new.example":  {"new.example", "Account", "—", "no readings yet", "—", "none yet"},
	}
	if len(rows) != len(want) {
		t.Fatalf("the Overview lists %d domains, want %d: %q", len(rows), len(want), rows)
	}
	for _, r := range rows {
		w := want[r[0]]
		if len(r) == len(w) && w[5] == "*" && strings.HasSuffix(r[5], "UTC") {
			r[5] = "*" // a scan's time
		}
		if !reflect.DeepEqual(r, w) {
			t.Errorf("the Overview's row:\n got  %q\n want %q", r, w)
		}
	}
	// The trend: a point per reading, on a 0-100 scale, said in words.
	for domain, n := range map[string]int{"acme.example": 3, "shop.example": 2} {
		label := "Visibility score of " + domain + " over the last " + string(rune('0'+n)) + " readings"
		i := strings.Index(p.body, `aria-label="`+label)
		if i < 0 {
			t.Errorf("no trend of %s", domain)
			continue
		}
		pts := p.body[i:]
		pts = pts[strings.Index(pts, `points="`)+len(`points="`):]
		if got := len(strings.Fields(pts[:strings.Index(pts, `"`)])); got != n {
			t.Errorf("the trend of %s has %d points, want %d", domain, got, n)
		}
	}
	if !strings.Contains(p.body, `href="/domains/shop.example?client=`+globex.ID+`"`) {
		t.Error("the client's domain does not link to its owner's page")
	}
	if want := []string{"shop.example : citation rate in Local 10% → 0% (-10 points)", "acme.example : score 50 → 65 (+15)",
		"acme.example : citation rate in GPT search 20% → 46% (+25.5 points)", "acme.example : score 40 → 50 (+10)"}; !reflect.DeepEqual(changesOf(t, p.body), want) {
		t.Errorf("latest changes: %q, want %q", changesOf(t, p.body), want)
	}

	// The client's page: its own domain and changes only.
	p = e.get(c, "/clients/"+globex.ID)
	rows = cellsOf(tableRows(t, p.body, "domain-visibility", "tbody"))
	if len(rows) != 1 || rows[0][0] != "shop.example" {
		t.Errorf("the client's page lists %q, want its shop.example only", rows)
	}
	if got, want := changesOf(t, p.body), []string{"shop.example : citation rate in Local 10% → 0% (-10 points)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("the client's latest changes: %q, want %q", got, want)
	}
	// The domain page of the client's domain is the client's.
	p = e.get(c, "/domains/shop.example?client="+globex.ID)
	if !strings.Contains(p.body, `<p class="big">70<small>/100</small>`) || !strings.Contains(p.body, "The engines cited no source.") {
		t.Errorf("the client's domain page does not show its reading and scan:\n%s", p.body)
	}
	// A domain no engine cited still has its row among the cited domains.
	p = e.get(c, "/domains/acme.example")
	if got := cellsOf(tableRows(t, p.body, "cited-domains", "tbody")); !reflect.DeepEqual(got, [][]string{
		{"rival.example", "12", "60%"}, {"other.example", "8", "40%"}, {"acme.example this domain", "0", "0%"}}) {
		t.Errorf("acme's cited domains: %q", got)
	}
}

// changesOf are the latest changes a page lists, each without its time.
func changesOf(t *testing.T, body string) []string {
	t.Helper()
	var items []string
	changes := find(mustParse(t, body), func(n *html.Node) bool { return attr(n, "id") == "changes" })
	for li := changes.FirstChild; li != nil; li = li.NextSibling {
		if li.Type == html.ElementNode {
			s := strings.Join(strings.Fields(text(li)), " ")
			items = append(items, s[:strings.LastIndex(s, ",")])
		}
	}
	return items
}

// citationChange logs a citation_change of a domain's engine, as the
// delivery engine logs every event.
func (e *env) citationChange(md store.MonitoredDomain, engine string, from, to float64, at time.Time) {
	e.t.Helper()
	ev, err := events.New(events.CitationChange, at, md.AccountID, md.ClientID, md.Domain, events.CitationChangeData{Domain: md.Domain,
		Engine: engine, Kind: "openai-chat", PreviousCitationRate: events.Rate{Value: from}, CitationRate: events.Rate{Value: to},
		CitationChange: math.Round((to-from)*10000) / 100})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.Update(context.Background(), func(tx store.Tx) error {
		return tx.LogEvents(store.LoggedEvent{ID: ev.ID, AccountID: md.AccountID, ClientID: md.ClientID, Event: ev.Event, Domain: md.Domain,
			Payload: ev.AppendJSON(nil), CreatedAt: at})
	}); err != nil {
		e.t.Fatal(err)
	}
}

func mustParse(t *testing.T, body string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// answers keeps a scan's answers: n of them, the engines GPT search and
// Local in turn, every third mentioning the brand, every fourth citing
// the domain; extra replaces the first ones.
func (e *env) answers(sc store.Scan, n int, extra ...store.ScanAnswer) {
	e.t.Helper()
	as := make([]store.ScanAnswer, n)
	for i := range as {
		as[i] = store.ScanAnswer{ScanID: sc.ID, Seq: i, PromptIndex: i / 2, Prompt: fmt.Sprintf("Which shop sells item %d?", i/2), Intent: "discovery",
			Run: i % 2, Engine: []string{"GPT search", "Local"}[i%2], Kind: []string{"openai-responses", "openai-chat"}[i%2],
			Text: fmt.Sprintf("Answer %d: several shops do.", i), SourcesReported: i%2 == 0, Mentioned: i%3 == 0, Cited: i%4 == 0,
			Detail: json.RawMessage(`{"sources":[],"citations":[],"queries":[],"competitors":[],"sentences":[]}`), RecordedAt: sc.FinishedAt}
	}
	for i, a := range extra {
		a.ScanID, a.Seq, a.RecordedAt = sc.ID, i, sc.FinishedAt
		as[i] = a
	}
	if err := e.db.Update(context.Background(), func(tx store.Tx) error { return tx.InsertScanAnswers(as) }); err != nil {
		e.t.Fatal(err)
	}
}

// answerIDs are the answers a page lists, by their element's id.
func answerIDs(t *testing.T, body string) []string {
	t.Helper()
	list := find(mustParse(t, body), func(n *html.Node) bool { return attr(n, "id") == "answer-list" })
	if list == nil {
		t.Fatalf("the page lists no answers:\n%s", body)
	}
	var ids []string
	for li := list.FirstChild; li != nil; li = li.NextSibling {
		if li.Type == html.ElementNode && li.Data == "li" {
			ids = append(ids, strings.TrimPrefix(attr(li, "id"), "answer-"))
		}
	}
	return ids
}

// The domain page lists the answers behind the latest scan, 20 at a time,
// searched by their text (case folded, the matches marked) and filtered
// by engine, mention and citation from a form that works without script;
// an answer's text, sources and citations are the engines' words, shown
// as text; a filter the page cannot read is said, with nothing listed.
func TestDomainPageListsTheLatestScansAnswersSearchable(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	md := e.monitor(c, u.AccountID, "acme.example", "")
	e.readings(md, 60)
	old := e.completedScan(md, "scan_old", `{"overall":{"probes":1,"mention_rate":`+rate(0, 1, 0, 0.79)+`}}`)
	e.answers(old, 1, store.ScanAnswer{Engine: "Local", Kind: "openai-chat", Text: "An old answer about rocket skates."})
	sc := e.completedScan(md, "scan_new", `{"overall":{"probes":25,"mention_rate":`+rate(9, 25, 0.2, 0.56)+`},
		"engines":[{"label":"GPT search","kind":"openai-responses"},{"label":"Local","kind":"openai-chat"}]}`)
	start, end := 0, len("Acme Rocket Skates")
	e.answers(sc, 25,
		store.ScanAnswer{Prompt: "Best rocket skates?", Engine: "GPT search", Kind: "openai-responses", SourcesReported: true, Mentioned: true,
			Cited: true, Position: 1, Text: "Acme Rocket Skates lead. <script>alert(1)</script>",
			Detail: json.RawMessage(`{"sources":[{"url":"https://acme.example/skates","title":"Acme <b>skates</b>","domain":"acme.example"},
				{"url":"javascript:alert(2)","title":"trap","domain":"trap.example"}],
				"citations":[{"url":"https://acme.example/skates","title":"Acme","domain":"acme.example","start":` + fmt.Sprint(start) + `,"end":` + fmt.Sprint(end) + `,"text":""}],
				"queries":["best rocket skates"],"competitors":[],"sentences":[{"text":"Acme Rocket Skates lead.","sentiment":0.42}]}`)},
		store.ScanAnswer{Prompt: "Who sells skates?", Engine: "Local", Kind: "openai-chat", Text: "Try ROCKET SKATES from anyone.",
			Detail: json.RawMessage(`{}`)},
		store.ScanAnswer{Prompt: "Who sells skates?", Engine: "Local", Kind: "openai-chat", Error: "the engine answered 503",
			Detail: json.RawMessage(`{}`)})

	// The first page: 20 of 25, in the scan's order, the next page linked.
	p := e.get(c, "/domains/acme.example")
	if ids := answerIDs(t, p.body); len(ids) != 20 || ids[0] != "0" || ids[19] != "19" {
		t.Fatalf("the first page lists answers %v, want 0 to 19", ids)
	}
	next := find(mustParse(t, p.body), func(n *html.Node) bool { return n.Data == "a" && text(n) == "Next answers " })
	if next == nil {
		t.Fatal("the first page does not link to the next")
	}
	if ids := answerIDs(t, e.get(c, attr(next, "href")).body); len(ids) != 5 || ids[0] != "20" {
		t.Errorf("the next page lists %v, want 20 to 24", ids)
	}
	// The first answer: its facts, its text as text, its sources'
	// addresses only where they are web addresses, the span a citation
	// supports, the sentence naming the brand.
	shown := strings.Join(strings.Fields(text(mustParse(t, p.body))), " ")
	for _, want := range []string{"mentioned, named #1", "cites the domain", "2 sources", "Acme Rocket Skates lead. <script>alert(1)</script>",
		"Acme <b>skates</b>", "Searched: best rocket skates", "Acme Rocket Skates lead. sentiment +0.42",
		"The engine gave no answer: the engine answered 503", "no sources reported", "does not cite the domain"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the answers do not read %q", want)
		}
	}
	for _, want := range []string{`href="#ZgotmplZ"`, "<q>Acme Rocket Skates</q>"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the answers lack %s", want)
		}
	}
	for _, markup := range []string{"<script>alert", "<b>skates", "javascript:"} {
		if strings.Contains(p.body, markup) {
			t.Errorf("the page carries the engines' %q as markup", markup)
		}
	}

	// A text search: case folded, the matches marked, the old scan's
	// answer not among them.
	p = e.get(c, "/domains/acme.example?q=Rocket+skates")
	if ids := answerIDs(t, p.body); !reflect.DeepEqual(ids, []string{"0", "1"}) {
		t.Errorf("searching \"Rocket skates\" lists %v, want 0 and 1", ids)
	}
	for _, want := range []string{"<mark>Rocket Skates</mark> lead.", "Try <mark>ROCKET SKATES</mark> from anyone.", `value="Rocket skates"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the search's page lacks %q", want)
		}
	}
	// Filters, alone and together, kept in the form.
	for query, want := range map[string][]string{
		"engine=Local&cited=false&q=answer+1":   {"11", "13", "15", "17", "19"},
		"engine=GPT+search&mentioned=true":      {"0", "6", "12", "18", "24"},
		"mentioned=false&cited=true&q=answer+2": {"20"},
		"q=nothing+says+this":                   nil,
	} {
		p := e.get(c, "/domains/acme.example?"+query)
		var ids []string
		if want != nil {
			ids = answerIDs(t, p.body)
		} else if !strings.Contains(p.body, "No answer of the latest scan matches.") {
			t.Errorf("?%s does not say that nothing matches", query)
		}
		if !reflect.DeepEqual(ids, want) {
			t.Errorf("?%s lists %v, want %v", query, ids, want)
		}
	}
	if p := e.get(c, "/domains/acme.example?engine=Local&mentioned=false"); !strings.Contains(p.body, `<option selected>Local</option>`) ||
		!strings.Contains(p.body, `<option value="false" selected>Not mentioned</option>`) {
		t.Error("the form does not keep the filters it was sent")
	}
	// What the page cannot read: said, nothing listed.
	for _, query := range []string{"mentioned=maybe", "cursor=not-a-cursor"} {
		p := e.get(c, "/domains/acme.example?"+query)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, `class="problem"`) || strings.Contains(p.body, `id="answer-0"`) {
			t.Errorf("?%s: %d, want 400 with the problem and no answer", query, p.status)
		}
	}
}

// A scan of two markets over two surfaces: the engines' rows name their
// market, surface and how they asked it, the surfaces have a table, and
// the market switch shows one market's engines with that market's
// figures; a market the scan did not ask shows them all.
func TestDomainPageMarketsAndSurfaces(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	md := e.monitor(c, u.AccountID, "acme.example", "")
	e.readings(md, 55)
	stats := func(k, n, shown int) string {
		return `"probes":` + strconv.Itoa(n) + `,"failed":0,"overview_presence":` + rate(shown, n, 0.1, 0.9) + `,"mention_rate":` + rate(k, n, 0.1, 0.9) +
			`,"citation_rate":` + rate(0, n, 0, 0.5) + `,"sources_reported":` + rate(0, n, 0, 0.5) + `,"source_share":null`
	}
	de, us := `{"country":"DE","language":"de"}`, `{"country":"US","language":"en"}`
	e.completedScan(md, "scan_markets", `{"basis":"engines","components":{"mention":40},"weights":{"mention":1},
		"overall":{`+stats(3, 8, 6)+`},
		"engines":[
			{"label":"Chat","kind":"openai-chat","surface":"model","market":`+de+`,"localisation":"prompt",`+stats(2, 2, 2)+`},
			{"label":"Chat","kind":"openai-chat","surface":"model","market":`+us+`,"localisation":"prompt",`+stats(0, 2, 2)+`},
			{"label":"AI Overviews","kind":"serpapi","surface":"serp","market":`+de+`,"localisation":"native",`+stats(1, 2, 1)+`},
			{"label":"AI Overviews","kind":"serpapi","surface":"serp","market":`+us+`,"localisation":"native",`+stats(0, 2, 1)+`}],
		"surfaces":[{"surface":"model",`+stats(2, 4, 4)+`},{"surface":"serp",`+stats(1, 4, 2)+`}],
		"markets":[{"market":`+de+`,`+stats(3, 4, 3)+`},{"market":`+us+`,`+stats(0, 4, 3)+`}]}`)

	p := e.get(c, "/domains/acme.example")
	rows := cellsOf(tableRows(t, p.body, "engines", "tbody"))
	if len(rows) != 4 || rows[0][2] != "model" || rows[0][3] != "de-DE (approximated in the prompt)" || rows[2][2] != "search page (SERP)" ||
		rows[3][3] != "en-US (asked as the market)" || rows[2][8] != "50% 10–90%" {
		t.Errorf("per engine and market: %q", rows)
	}
	if s := cellsOf(tableRows(t, p.body, "surfaces", "tbody")); len(s) != 2 || s[0][0] != "model" || s[1][0] != "search page (SERP)" || s[1][5] != "50% 10–90%" {
		t.Errorf("per surface: %q", s)
	}
	if !strings.Contains(p.body, `<select id="market" name="market">`) || !strings.Contains(p.body, `<option value="de-DE">de-DE</option>`) {
		t.Error("the page has no market switch")
	}

	p = e.get(c, "/domains/acme.example?market=de-DE")
	rows = cellsOf(tableRows(t, p.body, "engines", "tbody"))
	foot := cellsOf(tableRows(t, p.body, "engines", "tfoot"))
	if len(rows) != 2 || rows[0][3] != "de-DE (approximated in the prompt)" || rows[1][3] != "de-DE (asked as the market)" ||
		len(foot) != 1 || foot[0][0] != "All engines in de-DE" || foot[0][4] != "4" || !strings.HasPrefix(foot[0][5], "75%") {
		t.Errorf("de-DE: rows %q, foot %q", rows, foot)
	}
	if !strings.Contains(p.body, `<option value="de-DE" selected>`) || strings.Contains(p.body, `id="surfaces"`) {
		t.Error("the switch does not keep de-DE, or the surfaces over every market show beside one market's")
	}
	if rows := cellsOf(tableRows(t, p.body, "engines", "tbody")); len(rows) != 2 {
		t.Errorf("rows %q", rows)
	}
	if rows := cellsOf(tableRows(t, e.get(c, "/domains/acme.example?market=fr-FR").body, "engines", "tbody")); len(rows) != 4 {
		t.Errorf("a market the scan did not ask: %d rows, want all 4", len(rows))
	}
}
