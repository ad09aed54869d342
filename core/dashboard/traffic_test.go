package dashboard_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// User agents of the catalog's agents, as they send them.
const (
	uaGPTBot     = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot"
	uaAmazonbot  = "Mozilla/5.0 (compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)"
	uaMeta       = "meta-externalfetcher/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)"
	uaCohere     = "cohere-ai"
	uaBrowser    = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 Version/17.5 Safari/605.1.15"
	openAIAddr   = "52.230.152.7" // in OpenAI's published GPTBot ranges
	elsewhere    = "203.0.113.9"  // in no operator's ranges
	browserAddr  = "198.51.100.20"
	combinedTime = "02/Jan/2006:15:04:05 -0700"
)

// logLine is one request of a combined log.
type logLine struct {
	at                  time.Time
	addr, path, referer string
	status              int
	ua                  string
}

func (l logLine) String() string {
	ref := l.referer
	if ref == "" {
		ref = "-"
	}
	return fmt.Sprintf("%s - - [%s] \"GET %s HTTP/1.1\" %d 512 %q %q\n", l.addr, l.at.Format(combinedTime), l.path, l.status, ref, l.ua)
}

// repeat is n copies of l.
func repeat(n int, l logLine) []logLine {
	out := make([]logLine, n)
	for i := range out {
		out[i] = l
	}
	return out
}

// importLog imports lines as a combined log file of md through the
// traffic service, as aivis traffic import does.
func (e *env) importLog(md store.MonitoredDomain, lines ...[]logLine) {
	e.t.Helper()
	var b strings.Builder
	for _, ls := range lines {
		for _, l := range ls {
			b.WriteString(l.String())
		}
	}
	r, err := e.traffic.Import(context.Background(), md, strings.NewReader(b.String()))
	if err != nil || r.Duplicate || r.Batch.Malformed != 0 {
		e.t.Fatalf("import: %+v %v", r, err)
	}
}

// sampleTraffic is what the traffic tests send of a domain: today and
// two days ago, GPTBot from OpenAI's addresses (8, two of them 404) and
// from elsewhere (3, spoofed), Amazonbot (5, one 503), a Meta fetcher (2)
// and Cohere's agent (1); and a browser's visits: 4 from ChatGPT (one
// only by utm_source), 2 from Perplexity, 1 from no assistant.
func sampleTraffic(today time.Time) []logLine {
	ago := today.AddDate(0, 0, -2)
	return slices.Concat(
		repeat(4, logLine{today, openAIAddr, "/pricing", "", 200, uaGPTBot}),
		repeat(2, logLine{ago, openAIAddr, "/docs?page=2", "", 200, uaGPTBot}),
		repeat(2, logLine{today, openAIAddr, "/old", "", 404, uaGPTBot}),
		repeat(3, logLine{today, elsewhere, "/pricing", "", 200, uaGPTBot}),
		repeat(4, logLine{ago, elsewhere, "/pricing", "", 200, uaAmazonbot}),
		repeat(1, logLine{today, elsewhere, "/api", "", 503, uaAmazonbot}),
		repeat(2, logLine{today, elsewhere, "/docs", "", 200, uaMeta}),
		repeat(1, logLine{ago, elsewhere, "/", "", 200, uaCohere}),
		repeat(2, logLine{today, browserAddr, "/pricing", "https://chatgpt.com/", 200, uaBrowser}),
		repeat(1, logLine{ago, browserAddr, "/docs", "https://chatgpt.com/c/abc", 200, uaBrowser}),
		repeat(1, logLine{today, browserAddr, "/pricing?utm_source=chatgpt.com", "", 200, uaBrowser}),
		repeat(2, logLine{ago, browserAddr, "/", "https://www.perplexity.ai/search?q=x", 200, uaBrowser}),
		repeat(1, logLine{today, browserAddr, "/", "https://news.example/", 200, uaBrowser}),
	)
}

// cells are the rows of a table's body as their cells' text.
func cells(t *testing.T, body, id string) [][]string {
	t.Helper()
	var out [][]string
	for _, r := range tableRows(t, body, id, "tbody") {
		out = append(out, r.cells)
	}
	return out
}

// TestTrafficTabShowsWhatWasSent: logs imported through the traffic
// service are shown as sent: the agents with their verification and
// errors, the requests per day by purpose and the referrals per day by
// assistant (charts and their tables), the problems, the top pages and
// the pages joined with the latest scan's citations; each window counts
// only its days, and the CSV has the join.
func TestTrafficTabShowsWhatWasSent(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	md := e.monitor(c, u.AccountID, "acme.example", "")
	e.completedScan(md, "scn_cited", `{"engines":[{"label":"GPT search","kind":"openai","probes":3,"cited_pages":[{"url":"https://acme.example/pricing","count":3}]}]}`)
	today := time.Now().UTC().Truncate(24 * time.Hour).Add(10 * time.Hour)
	e.importLog(md, sampleTraffic(today))
	// A week ago: in the 30-day window, not the 7-day one.
	e.importLog(md, repeat(6, logLine{today.AddDate(0, 0, -10), openAIAddr, "/archive", "", 200, uaGPTBot}))

	p := e.get(c, "/domains/acme.example/traffic?days=7")
	if p.status != http.StatusOK {
		t.Fatalf("GET the traffic tab: %d\n%s", p.status, p.body)
	}
	wantAgents := [][]string{
		// agent, operator, purpose, requests, verified, unverified, spoofed, 4xx, 5xx
		{"GPTBot", "OpenAI", "train", "11", "8", "0", "3", "2", "0"},
		{"Amazonbot", "Amazon", "index", "5", "0", "5", "0", "0", "1"},
		{"meta-externalfetcher", "Meta", "fetch", "2", "0", "2", "0", "0", "0"},
		{"cohere-ai", "Cohere", "other", "1", "0", "1", "0", "0", "0"},
	}
	if got := cells(t, p.body, "agents"); !slices.EqualFunc(got, wantAgents, slices.Equal) {
		t.Errorf("agents:\n got %q\nwant %q", got, wantAgents)
	}
	wantProblems := [][]string{{"/old", "GPTBot", "4xx", "2"}, {"/api", "Amazonbot", "5xx", "1"}}
	if got := cells(t, p.body, "problems"); !slices.EqualFunc(got, wantProblems, slices.Equal) {
		t.Errorf("problems:\n got %q\nwant %q", got, wantProblems)
	}
	for _, r := range tableRows(t, p.body, "problems", "tbody") {
		if r.class != "bad" {
			t.Errorf("problem %q is not highlighted (class %q)", r.cells, r.class)
		}
	}
	// Spoofed requests are left out of the pages and the purposes.
	wantPages := [][]string{{"/pricing", "8", "2"}, {"/docs", "4", "2"}, {"/old", "2", "1"}, {"/", "1", "1"}, {"/api", "1", "1"}}
	if got := cells(t, p.body, "top-pages"); !slices.EqualFunc(got, wantPages, slices.Equal) {
		t.Errorf("top pages:\n got %q\nwant %q", got, wantPages)
	}
	wantRefs := [][]string{{"chatgpt", "4"}, {"perplexity", "2"}}
	if got := cells(t, p.body, "referrals"); !slices.EqualFunc(got, wantRefs, slices.Equal) {
		t.Errorf("referrals:\n got %q\nwant %q", got, wantRefs)
	}

	// The charts: 7 days each, today last, their numbers in tables.
	day := func(d time.Time) string { return d.Format("Jan 2") }
	requests := chartNumbers(t, p.body, "AI agent requests to acme.example per day, by purpose")
	wantReq := map[string][]string{
		day(today):                   {"6", "1", "2"},
		day(today.AddDate(0, 0, -2)): {"2", "4", "0", "1"},
	}
	checkChart(t, "requests", requests, []string{"train", "index", "fetch", "other"}, wantReq)
	referrals := chartNumbers(t, p.body, "Visits to acme.example referred by AI assistants per day")
	checkChart(t, "referrals", referrals, []string{"chatgpt", "perplexity"}, map[string][]string{
		day(today): {"3", "0"}, day(today.AddDate(0, 0, -2)): {"1", "2"},
	})
	if !strings.Contains(p.body, `<svg class="chart"`) || strings.Count(p.body, `<svg class="chart"`) != 2 {
		t.Errorf("want two charts drawn")
	}
	if !strings.Contains(p.body, "Latest batch received "+time.Now().UTC().Format("2006-01-02")) {
		t.Errorf("the latest batch's date is not shown")
	}

	// The join: the cited page comes from the latest scan.
	joined := cells(t, p.body, "joined-pages")
	if i := slices.IndexFunc(joined, func(r []string) bool { return r[0] == "/pricing" }); i < 0 ||
		!slices.Equal(joined[i], []string{"/pricing", "Amazonbot 4, GPTBot 4", "GPT search 3", "chatgpt 3"}) {
		t.Errorf("joined pages: %q", joined)
	}

	// 30 days: the week-old batch too.
	p30 := e.get(c, "/domains/acme.example/traffic?days=30")
	if got := cells(t, p30.body, "agents"); len(got) == 0 || got[0][3] != "17" {
		t.Errorf("30 days: agents %q, want GPTBot with 17 requests", got)
	}
	if p := e.get(c, "/domains/acme.example/traffic?days=8"); p.status != http.StatusBadRequest {
		t.Errorf("?days=8: %d, want 400", p.status)
	}

	// The join as CSV.
	res, err := c.Get(e.srv.URL + strings.ReplaceAll(regexp.MustCompile(`href="([^"]*csv=pages[^"]*)"`).FindStringSubmatch(p.body)[1], "&amp;", "&"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Errorf("CSV content type %q", ct)
	}
	rows, err := csv.NewReader(res.Body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rows, func(r []string) bool { return r[0] == "/pricing" })
	if len(rows) != 6 || i < 0 {
		t.Fatalf("CSV rows %q: want a header and the 5 pages", rows)
	}
	if want := []string{"/pricing", "8", "0", "Amazonbot 4\nGPTBot 4", "3", "GPT search 3", "3", "chatgpt 3"}; !slices.Equal(rows[i], want) {
		t.Errorf("CSV /pricing:\n got %q\nwant %q", rows[i], want)
	}
	if rows[0][0] != "page" || rows[0][1] != "crawler_hits" {
		t.Errorf("CSV header %q", rows[0])
	}
}

// chartNumbers reads the table of a chart's numbers: the series' names,
// and each day's values.
func chartNumbers(t *testing.T, body, title string) map[string][]string {
	t.Helper()
	i := strings.Index(body, "<figcaption>"+title)
	if i < 0 {
		t.Fatalf("no chart %q", title)
	}
	fig := body[i:]
	fig = fig[:strings.Index(fig, "</figure>")]
	out := map[string][]string{}
	re := regexp.MustCompile(`<tr><th scope="row">([^<]*)</th>(.*?)</tr>`)
	for _, m := range re.FindAllStringSubmatch(fig, -1) {
		out[m[1]] = regexp.MustCompile(`<td>([^<]*)</td>`).FindAllString(m[2], -1)
		for j, v := range out[m[1]] {
			out[m[1]][j] = strings.TrimSuffix(strings.TrimPrefix(v, "<td>"), "</td>")
		}
	}
	heads := regexp.MustCompile(`<th scope="col">([^<]*)</th>`).FindAllStringSubmatch(fig, -1)
	for _, h := range heads[1:] {
		out[""] = append(out[""], h[1])
	}
	return out
}

// checkChart checks a chart's series and that it has 7 days, the values
// of want on those days, and zeros on the others.
func checkChart(t *testing.T, name string, got map[string][]string, series []string, want map[string][]string) {
	t.Helper()
	if !slices.Equal(got[""], series) {
		t.Errorf("%s chart: series %q, want %q", name, got[""], series)
	}
	if len(got) != 8 {
		t.Errorf("%s chart: %d days, want 7", name, len(got)-1)
	}
	for d, vs := range got {
		if d == "" {
			continue
		}
		w, ok := want[d]
		if !ok {
			w = slices.Repeat([]string{"0"}, len(series))
		}
		for len(w) < len(series) {
			w = append(w, "0")
		}
		if !slices.Equal(vs, w) {
			t.Errorf("%s chart on %s: %q, want %q", name, d, vs, w)
		}
	}
}

// TestTrafficTabEmptyState: a domain without logs says how to send them,
// with no chart; a window without requests says so, with no chart.
func TestTrafficTabEmptyState(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	md := e.monitor(c, u.AccountID, "quiet.example", "")
	p := e.get(c, "/domains/quiet.example/traffic")
	if p.status != http.StatusOK {
		t.Fatalf("%d\n%s", p.status, p.body)
	}
	for _, want := range []string{`id="traffic-empty"`, "aivis traffic token create --account " + u.AccountID + " --domain quiet.example",
		"aivis traffic import", "/ingest/v1", "/v1/domains/" + md.ID + "/traffic/logs", `id="token-form"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the empty state lacks %q", want)
		}
	}
	if strings.Contains(p.body, "<svg") {
		t.Error("the empty state draws a chart")
	}
	// Logs of long ago only: the window says none, and draws nothing.
	e.importLog(md, repeat(3, logLine{time.Now().UTC().AddDate(0, 0, -40), openAIAddr, "/", "", 200, uaGPTBot}))
	p = e.get(c, "/domains/quiet.example/traffic?days=7")
	for _, want := range []string{`id="no-requests"`, `id="no-referrals"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("an empty window lacks %q", want)
		}
	}
	if strings.Contains(p.body, "<svg") || strings.Contains(p.body, `id="traffic-empty"`) {
		t.Error("an empty window draws a chart, or says no logs came")
	}
	// The visibility tab links the traffic tab.
	if v := e.get(c, "/domains/quiet.example"); !strings.Contains(v.body, `href="/domains/quiet.example/traffic"`) {
		t.Error("the domain page does not link its traffic tab")
	}
	if p := e.get(c, "/domains/nobody.example/traffic"); p.status != http.StatusNotFound {
		t.Errorf("a domain not monitored: %d, want 404", p.status)
	}
}

var secretRE = regexp.MustCompile(`id="new-token" readonly value="(aivt_[A-Za-z0-9]+)"`)

// TestIngestTokensFromTheTrafficTab: a token made on the tab is shown
// once with its source's setup, works at its source's endpoint, is
// listed without its secret, and revoked stops working; the forms need
// the session's CSRF token, a viewer may neither make nor revoke one,
// and another account's domain and tokens answer 404.
func TestIngestTokensFromTheTrafficTab(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	md := e.monitor(c, u.AccountID, "acme.example", "")
	tok := csrf(t, e.get(c, "/domains/acme.example/traffic"))
	form := url.Values{"csrf": {tok}, "name": {"edge"}, "source": {"cloudflare"}}

	// A Vercel token needs its signing secret: the form says so.
	p := e.post(c, "/domains/acme.example/traffic/tokens", url.Values{"csrf": {tok}, "name": {"drain"}, "source": {"vercel"}})
	if p.status != http.StatusBadRequest && p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "signing_secret") {
		t.Errorf("vercel without a signing secret: %d", p.status)
	}
	if secretRE.MatchString(p.body) {
		t.Error("a refused token was shown")
	}

	p = e.post(c, "/domains/acme.example/traffic/tokens", form)
	if p.status != http.StatusCreated {
		t.Fatalf("make a token: %d\n%s", p.status, p.body)
	}
	m := secretRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("the new token is not shown:\n%s", p.body)
	}
	secret := m[1]
	if !strings.Contains(p.body, "/ingest/v1/cloudflare?header_Authorization=Bearer%20"+secret) {
		t.Error("the Cloudflare setup does not carry the token")
	}
	got, err := e.traffic.Authenticate(context.Background(), store.TrafficCloudflare, secret)
	if err != nil || got.DomainID != md.ID {
		t.Fatalf("the token shown does not authenticate for its domain: %+v %v", got, err)
	}
	// Vercel's, with its signing secret, shows the drain's setup.
	p = e.post(c, "/domains/acme.example/traffic/tokens", url.Values{"csrf": {tok}, "name": {"drain"}, "source": {"vercel"}, "signing_secret": {"vercel-secret"}})
	if p.status != http.StatusCreated || !strings.Contains(p.body, "/ingest/v1/vercel?verify=CODE") || strings.Contains(p.body, "vercel-secret") {
		t.Errorf("a vercel token: %d, want its setup and never its signing secret shown", p.status)
	}

	list := e.get(c, "/domains/acme.example/traffic")
	if strings.Contains(list.body, secret) {
		t.Error("the list shows a token's secret")
	}
	rows := cells(t, list.body, "tokens")
	if len(rows) != 2 || rows[1][0] != "edge" || rows[1][1] != "cloudflare" || rows[1][2] != secret[:11]+"…" || rows[1][3] != "never" || rows[1][4] != "active" {
		t.Errorf("tokens %q", rows)
	}
	// Used once: its last use is shown.
	if _, err := e.traffic.Ingest(context.Background(), got, strings.NewReader(`{"ClientIP":"`+openAIAddr+`","ClientRequestPath":"/","ClientRequestUserAgent":"`+uaGPTBot+`","EdgeResponseStatus":200,"EdgeStartTimestamp":"`+time.Now().UTC().Format(time.RFC3339)+`"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	if rows := cells(t, e.get(c, "/domains/acme.example/traffic").body, "tokens"); rows[1][3] == "never" {
		t.Errorf("a used token's last use: %q", rows[1])
	}

	// A viewer sees the list but no form, and is refused both actions.
	viewer, _ := e.member(u.AccountID, "viewer@example.com", store.RoleViewer)
	vp := e.get(viewer, "/domains/acme.example/traffic")
	if vp.status != http.StatusOK || strings.Contains(vp.body, `id="token-form"`) || strings.Contains(vp.body, "/revoke") {
		t.Errorf("the viewer's tab: %d, shows a form", vp.status)
	}
	vtok := csrf(t, vp)
	if p := e.post(viewer, "/domains/acme.example/traffic/tokens", url.Values{"csrf": {vtok}, "name": {"x"}, "source": {"cloudflare"}}); p.status != http.StatusForbidden {
		t.Errorf("a viewer making a token: %d, want 403", p.status)
	}
	if p := e.post(viewer, "/domains/acme.example/traffic/tokens/"+got.ID+"/revoke", url.Values{"csrf": {vtok}}); p.status != http.StatusForbidden {
		t.Errorf("a viewer revoking a token: %d, want 403", p.status)
	}
	// Without the session's CSRF token, or from another site: refused.
	for name, pr := range map[string]page{
		"no csrf":         e.post(c, "/domains/acme.example/traffic/tokens", url.Values{"name": {"x"}, "source": {"cloudflare"}}),
		"another's":       e.post(c, "/domains/acme.example/traffic/tokens", url.Values{"csrf": {vtok}, "name": {"x"}, "source": {"cloudflare"}}),
		"other origin":    e.post(c, "/domains/acme.example/traffic/tokens", url.Values{"csrf": {tok}, "name": {"x"}, "source": {"cloudflare"}}, "Origin", "https://evil.example"),
		"revoke, no csrf": e.post(c, "/domains/acme.example/traffic/tokens/"+got.ID+"/revoke", url.Values{}),
	} {
		if pr.status != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, pr.status)
		}
	}
	if ts, _ := e.db.ListIngestTokens(context.Background(), u.AccountID, md.ID); len(ts) != 2 || ts[0].RevokedAt != nil || ts[1].RevokedAt != nil {
		t.Fatalf("refused forms changed the tokens: %+v", ts)
	}

	// Another account sees nothing of the domain and cannot revoke.
	other, ou := e.owner("other@example.com", false)
	e.monitor(other, ou.AccountID, "other.example", "")
	otok := csrf(t, e.get(other, "/domains/other.example/traffic"))
	if p := e.get(other, "/domains/acme.example/traffic"); p.status != http.StatusNotFound || strings.Contains(p.body, "edge") {
		t.Errorf("another account's tab: %d", p.status)
	}
	if p := e.post(other, "/domains/acme.example/traffic/tokens/"+got.ID+"/revoke", url.Values{"csrf": {otok}}); p.status != http.StatusNotFound {
		t.Errorf("another account revoking: %d, want 404", p.status)
	}
	if p := e.post(other, "/domains/other.example/traffic/tokens/"+got.ID+"/revoke", url.Values{"csrf": {otok}}); p.status != http.StatusNotFound {
		t.Errorf("another account revoking through its own domain: %d, want 404", p.status)
	}

	// Revoked by the owner: listed as revoked, refused at its endpoint.
	p = e.post(c, "/domains/acme.example/traffic/tokens/"+got.ID+"/revoke", url.Values{"csrf": {tok}})
	if p.status != http.StatusSeeOther || p.loc != "/domains/acme.example/traffic?done=irevoked" {
		t.Fatalf("revoke: %d %q\n%s", p.status, p.loc, p.body)
	}
	after := e.get(c, p.loc)
	if !strings.Contains(after.body, "The ingest token is revoked") {
		t.Error("no notice of the revocation")
	}
	if rows := cells(t, after.body, "tokens"); rows[1][4] == "active" || !strings.HasPrefix(rows[1][4], "revoked") {
		t.Errorf("after revocation: %q", rows[1])
	}
	if _, err := e.traffic.Authenticate(context.Background(), store.TrafficCloudflare, secret); err == nil {
		t.Error("a revoked token still authenticates")
	}
}

// TestTrafficTabOfAClientsDomain: an agency's client's domain has its own
// tab (?client=), apart from the account's of the same name; a developer
// makes its tokens; the join lists the busiest 50 pages and its CSV every
// one.
func TestTrafficTabOfAClientsDomain(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", true)
	cl, err := e.accts.CreateClient(context.Background(), u.AccountID, "Client One")
	if err != nil {
		t.Fatal(err)
	}
	own := e.monitor(c, u.AccountID, "shared.example", "")
	theirs := e.monitor(c, u.AccountID, "shared.example", cl.ID)
	today := time.Now().UTC().Truncate(24 * time.Hour).Add(8 * time.Hour)
	e.importLog(own, repeat(2, logLine{today, openAIAddr, "/own", "", 200, uaGPTBot}))
	var lines []logLine
	for i := range 60 {
		lines = append(lines, repeat(i+1, logLine{today, elsewhere, fmt.Sprintf("/p%02d", i), "", 200, uaAmazonbot})...)
	}
	e.importLog(theirs, lines)

	p := e.get(c, "/domains/shared.example/traffic?client="+cl.ID)
	if got := cells(t, p.body, "agents"); len(got) != 1 || got[0][0] != "Amazonbot" || got[0][3] != "1830" {
		t.Errorf("the client's agents: %q", got)
	}
	joined := cells(t, p.body, "joined-pages")
	if len(joined) != 50 || joined[0][0] != "/p59" || joined[49][0] != "/p10" || !strings.Contains(p.body, "The 50 busiest of 60 pages") {
		t.Errorf("the join lists %d pages, from %q to %q; want the 50 busiest of 60", len(joined), joined[0], joined[len(joined)-1])
	}
	res, err := c.Get(e.srv.URL + "/domains/shared.example/traffic?client=" + cl.ID + "&csv=pages&days=7")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(res.Body).ReadAll()
	res.Body.Close()
	if err != nil || len(rows) != 61 {
		t.Errorf("the client's CSV: %d rows, want a header and 60 pages (%v)", len(rows), err)
	}
	if got := cells(t, e.get(c, "/domains/shared.example/traffic").body, "agents"); len(got) != 1 || got[0][0] != "GPTBot" || got[0][3] != "2" {
		t.Errorf("the account's own agents: %q", got)
	}

	dev, _ := e.member(u.AccountID, "dev@example.com", store.RoleDeveloper)
	tok := csrf(t, e.get(dev, "/domains/shared.example/traffic?client="+cl.ID))
	p = e.post(dev, "/domains/shared.example/traffic/tokens", url.Values{"csrf": {tok}, "client_id": {cl.ID}, "name": {"logs"}, "source": {"cloudflare"}})
	if p.status != http.StatusCreated || !strings.Contains(p.body, "/ingest/v1/cloudflare?header_Authorization=Bearer%20aivt_") {
		t.Fatalf("a developer's token for the client's domain: %d", p.status)
	}
	if ts, _ := e.db.ListIngestTokens(context.Background(), u.AccountID, theirs.ID); len(ts) != 1 || ts[0].ClientID != cl.ID {
		t.Errorf("the client's tokens: %+v", ts)
	}
	if ts, _ := e.db.ListIngestTokens(context.Background(), u.AccountID, own.ID); len(ts) != 0 {
		t.Errorf("the token went to the account's own domain: %+v", ts)
	}
}
