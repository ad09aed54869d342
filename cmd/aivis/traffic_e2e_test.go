package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/core/traffic/trafficfake"
)

// The user agents of the tests (sources.md 4a's examples).
const (
	uaGPTBot    = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot"
	uaClaudeBot = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)"
	uaChrome    = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)

// hitKey names a crawler-hit aggregate as the test counts it.
type hitKey struct{ day, page, agent, verification string }

type hitCount struct {
	hits   int64
	status [5]int64
	bytes  int64
}

// TestTrafficIngest: a domain's logs through the binary, from each source
// as its CDN sends them (trafficfake's senders, which refuse to go on
// when the endpoint fails what their CDN requires), and imported by the
// CLI: kept as aggregates per day, page, agent and verification (GPTBot
// from OpenAI's published ranges verified, from elsewhere spoofed,
// ClaudeBot unverified) and referral visits per assistant; a batch sent
// twice counted once; malformed lines counted; tokens of another source,
// unknown or revoked refused; a Vercel delivery with a wrong signature
// refused; and the range lists replaced by aivis crawlers update.
func TestTrafficIngest(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir)
	if r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: `{"domain":"acme.invalid"}`}); r.Status != 201 {
		t.Fatalf("POST /v1/domains: %d %s", r.Status, r.Body)
	}
	token := func(source string, extra ...string) (id, secret string) {
		var out struct {
			ID    string `json:"id"`
			Token string `json:"token"`
		}
		cli(t, dir, &out, append([]string{"traffic", "token", "create", "--account", a.ID, "--domain", "acme.invalid",
			"--name", source, "--source", source}, extra...)...)
		if out.ID == "" || !strings.HasPrefix(out.Token, "aivt_") {
			t.Fatalf("token create %s: %+v", source, out)
		}
		return out.ID, out.Token
	}
	_, cfToken := token("cloudflare")
	t.Setenv("AIVIS_TEST_VERCEL_SECRET", "drain-signature-secret")
	_, vcToken := token("vercel", "--signing-secret-env", "AIVIS_TEST_VERCEL_SECRET")
	fsID, fsToken := token("fastly")

	ctx := context.Background()
	day := time.Now().UTC().Truncate(24 * time.Hour)
	when := day.Add(9 * time.Hour)
	want := map[hitKey]*hitCount{}
	referrals := map[[3]string]int64{}
	hit := func(page, agent, verification string, status int, bytes int64) {
		k := hitKey{day.Format(time.DateOnly), page, agent, verification}
		if want[k] == nil {
			want[k] = &hitCount{}
		}
		c := want[k]
		c.hits++
		c.bytes += bytes
		c.status[map[int]int{2: 0, 3: 1, 4: 2, 5: 3}[status/100]]++
	}

	// Cloudflare: the validation upload, then a batch (timestamps as
	// unixnano and as RFC 3339), then the same batch again.
	cf := &trafficfake.Cloudflare{DestinationConf: s.URL + "/ingest/v1/cloudflare?header_Authorization=Bearer%20" + cfToken + "&site=acme", Client: s.HTTP}
	if err := cf.Validate(ctx); err != nil {
		t.Fatal(err)
	}
	record := func(ts any, ip, path, uri, ua, referer string, status, size int) string {
		tsJSON := fmt.Sprint(ts)
		if s, ok := ts.(string); ok {
			tsJSON = `"` + s + `"`
		}
		return fmt.Sprintf(`{"ClientIP":%q,"ClientRequestHost":"acme.invalid","ClientRequestMethod":"GET","ClientRequestPath":%q,"ClientRequestURI":%q,"ClientRequestUserAgent":%q,"ClientRequestReferer":%q,"EdgeResponseStatus":%d,"EdgeResponseBytes":%d,"EdgeStartTimestamp":%s,"RayID":"8f","ClientCountry":"de"}`,
			ip, path, uri, ua, referer, status, size, tsJSON)
	}
	batch := []string{
		record(when.UnixNano(), "52.230.152.7", "/pricing", "/pricing", uaGPTBot, "", 200, 5000),
		record(when.Format(time.RFC3339), "52.230.152.8", "/pricing", "/pricing?x=1", uaGPTBot, "", 404, 100),
		record(when.UnixNano(), "203.0.113.9", "/pricing", "/pricing", uaGPTBot, "", 200, 5000),
		record(when.UnixNano(), "198.51.100.4", "/docs", "/docs", uaClaudeBot, "", 503, 0),
		record(when.UnixNano(), "192.0.2.1", "/pricing", "/pricing?utm_source=chatgpt.com", uaChrome, "", 200, 7000),
		record(when.UnixNano(), "192.0.2.2", "/blog", "/blog", uaChrome, "https://www.perplexity.ai/search?q=x", 200, 7000),
		record(when.UnixNano(), "192.0.2.3", "/blog", "/blog", uaChrome, "https://evilchatgpt.com/", 200, 7000),
		`{"ClientIP":"192.0.2.9","EdgeStartTimestamp":"not a time"`,
	}
	hit("/pricing", "GPTBot", "verified", 200, 5000)
	hit("/pricing", "GPTBot", "verified", 404, 100)
	hit("/pricing", "GPTBot", "spoofed", 200, 5000)
	hit("/docs", "ClaudeBot", "unverified", 503, 0)
	referrals[[3]string{day.Format(time.DateOnly), "/pricing", "chatgpt"}]++
	referrals[[3]string{day.Format(time.DateOnly), "/blog", "perplexity"}]++
	var first struct {
		Duplicate bool  `json:"duplicate"`
		Lines     int64 `json:"lines"`
		Malformed int64 `json:"malformed"`
		Samples   []struct {
			Line    int    `json:"line"`
			Reason  string `json:"reason"`
			Excerpt string `json:"excerpt"`
		} `json:"malformed_samples"`
	}
	status, body, err := cf.Push(ctx, batch)
	if err != nil || status != 200 {
		t.Fatalf("cloudflare batch: %d %s %v", status, body, err)
	}
	mustJSON(t, body, &first)
	if first.Duplicate || first.Lines != 8 || first.Malformed != 1 || len(first.Samples) != 1 || first.Samples[0].Line != 8 ||
		strings.Contains(first.Samples[0].Excerpt, "192.0.2.9") {
		t.Errorf("the first batch: %s", body)
	}
	if status, body, _ := cf.Push(ctx, batch); status != 200 || !bytes.Contains(body, []byte(`"duplicate":true`)) {
		t.Errorf("the batch again: %d %s; want 200 and duplicate", status, body)
	}

	// The answers match the document.
	validate(t, "POST", "/ingest/v1/cloudflare", resp{Status: status, Body: body})

	// Tokens: another source's, an unknown one, none.
	for name, h := range map[string]map[string]string{
		"a fastly token":   {"Authorization": "Bearer " + fsToken},
		"an unknown token": {"Authorization": "Bearer aivt_" + strings.Repeat("x", 40)},
		"no token":         {"Authorization": ""},
	} {
		r := s.do(t, req{method: "POST", path: "/ingest/v1/cloudflare", header: with(h, "Content-Type", "application/x-ndjson"), body: batch[0]})
		if want := map[bool]string{true: "MISSING_CREDENTIALS", false: "INVALID_CREDENTIALS"}[name == "no token"]; r.Status != 401 || r.errorCode(t) != want {
			t.Errorf("cloudflare with %s: %d %s; want 401 %s", name, r.Status, r.Body, want)
		}
	}

	// Vercel: verification, a signed JSON array (userAgent an array,
	// milliseconds, a status of -1), a wrong signature.
	vc := &trafficfake.Vercel{URL: s.URL + "/ingest/v1/vercel?verify=vc-code-7", Secret: "drain-signature-secret", Code: "vc-code-7",
		Headers: map[string]string{"Authorization": "Bearer " + vcToken}, Client: s.HTTP}
	if err := vc.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	entries := fmt.Sprintf(`[{"id":"1","source":"static","host":"acme.invalid","timestamp":%[1]d,"proxy":{"timestamp":%[1]d,"method":"GET","host":"acme.invalid","path":"/about?utm_source=chatgpt.com","userAgent":[%[2]q],"referer":"https://chatgpt.com/","statusCode":200,"clientIp":"20.171.206.9","responseByteSize":300}},
{"id":"2","source":"lambda","host":"acme.invalid","timestamp":%[1]d,"proxy":{"timestamp":%[1]d,"method":"GET","host":"acme.invalid","path":"/about","userAgent":[%[3]q],"referer":"","statusCode":-1,"clientIp":"198.51.100.7","responseByteSize":0}},
{"id":"3","source":"build","message":"Build completed","timestamp":%[1]d}]`, when.UnixMilli(), uaGPTBot, uaClaudeBot)
	hit("/about", "GPTBot", "verified", 200, 300)
	hitNone := hitKey{day.Format(time.DateOnly), "/about", "ClaudeBot", "unverified"}
	want[hitNone] = &hitCount{hits: 1, status: [5]int64{0, 0, 0, 0, 1}}
	if r := s.do(t, req{method: "POST", path: "/ingest/v1/vercel?verify=vc-code-7", header: map[string]string{"Authorization": "Bearer " + vcToken,
		"x-vercel-signature": strings.Repeat("ab", 20)}, body: entries}); r.Status != 422 || r.errorCode(t) != "WEBHOOK_VERIFICATION_FAILED" ||
		r.Header.Get("x-vercel-verify") != "vc-code-7" {
		t.Errorf("vercel with a wrong signature: %d %s %s; want 422", r.Status, r.Header, r.Body)
	}
	if status, body, err := vc.Deliver(ctx, []byte(entries)); err != nil || status != 200 || !bytes.Contains(body, []byte(`"lines":2`)) {
		t.Errorf("vercel: %d %s %v", status, body, err)
	} else {
		validate(t, "POST", "/ingest/v1/vercel", resp{Status: status, Body: body})
	}
	if r := s.do(t, req{method: "GET", path: "/ingest/v1/vercel?verify=vc-code-8"}); r.Status != 200 || r.Header.Get("x-vercel-verify") != "vc-code-8" {
		t.Errorf("vercel's verification: %d %s", r.Status, r.Header)
	}

	// Fastly: the challenge first, then NDJSON (json_format 2).
	fs := &trafficfake.Fastly{URL: s.URL + "/ingest/v1/fastly", ServiceID: "7i6HN3TK9wS159v2gPAZ8A", HeaderName: "Authorization",
		HeaderValue: "Bearer " + fsToken, Client: s.HTTP}
	if err := fs.Challenge(ctx); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf(`{"timestamp":%q,"client_ip":"66.249.64.5","method":"GET","url":"/pricing","status":301,"bytes":10,"referer":"","user_agent":"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"}`, when.Format(time.RFC3339))
	if status, body, err := fs.Deliver(ctx, "application/x-ndjson", []byte(line+"\n")); err != nil || status != 200 {
		t.Errorf("fastly: %d %s %v", status, body, err)
	} else {
		validate(t, "POST", "/ingest/v1/fastly", resp{Status: status, Body: body})
	}
	hit("/pricing", "Googlebot", "verified", 301, 10)

	// A file, by the CLI: gzip, twice; then the fastly token revoked.
	logLine := fmt.Sprintf(`203.0.113.7 - - [%s] "GET /pricing?utm_source=chatgpt.com HTTP/1.1" 200 5123 "https://chatgpt.com/" %q`,
		when.Format("02/Jan/2006:15:04:05 -0700"), uaChrome)
	bot := fmt.Sprintf(`203.0.113.8 - - [%s] "GET /docs HTTP/1.1" 403 12 "-" %q`, when.Format("02/Jan/2006:15:04:05 -0700"), uaGPTBot)
	file := filepath.Join(t.TempDir(), "access.log.gz")
	writeGzip(t, file, logLine+"\n"+bot+"\nnot a log line\n")
	var imported []struct {
		Duplicate bool  `json:"duplicate"`
		Lines     int64 `json:"lines"`
		Malformed int64 `json:"malformed"`
	}
	cli(t, dir, &imported, "traffic", "import", "--account", a.ID, "--domain", "acme.invalid", file)
	if len(imported) != 1 || imported[0].Duplicate || imported[0].Lines != 3 || imported[0].Malformed != 1 {
		t.Errorf("import: %+v", imported)
	}
	referrals[[3]string{day.Format(time.DateOnly), "/pricing", "chatgpt"}]++
	hit("/docs", "GPTBot", "spoofed", 403, 12)
	cli(t, dir, &imported, "traffic", "import", "--account", a.ID, "--domain", "acme.invalid", file)
	if len(imported) != 1 || !imported[0].Duplicate {
		t.Errorf("the same file again: %+v", imported)
	}
	cli(t, dir, nil, "traffic", "token", "revoke", "--account", a.ID, "--domain", "acme.invalid", fsID)
	if r := s.do(t, req{method: "POST", path: "/ingest/v1/fastly", header: map[string]string{"Authorization": "Bearer " + fsToken}, body: line + "\n"}); r.Status != 401 ||
		r.errorCode(t) != "INVALID_CREDENTIALS" {
		t.Errorf("fastly after its token was revoked: %d %s; want 401", r.Status, r.Body)
	}

	// aivis crawlers update: OpenAI's GPTBot list replaced, so that a
	// request from 203.0.113.0/24 is now verified.
	lists := filepath.Join(t.TempDir(), "lists.json")
	os.WriteFile(lists, []byte(`{"openai-gptbot":{"creationTime":"2026-11-20T08:00:00.000000","prefixes":[{"ipv4Prefix":"203.0.113.0/24"}]}}`), 0o600)
	cli(t, dir, nil, "crawlers", "update", "--from", lists)
	if msg := cliFails(t, dir, "crawlers", "update", "--from", writeTemp(t, `{"no-such-list":{"prefixes":[]}}`)); !strings.Contains(msg, "no-such-list") {
		t.Errorf("an unknown list: %s", msg)
	}
	later := filepath.Join(t.TempDir(), "later.log")
	os.WriteFile(later, []byte(strings.Replace(bot, "/docs", "/later", 1)+"\n"), 0o600)
	cli(t, dir, nil, "traffic", "import", "--account", a.ID, "--domain", "acme.invalid", later)
	hit("/later", "GPTBot", "verified", 403, 12)

	// What the store keeps: the aggregates the test counted, and nothing
	// of an address or a query.
	db, err := sqlite.Open(ctx, filepath.Join(dir, "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ds, _, err := db.ListDomains(ctx, store.DomainFilter{AccountID: a.ID, Limit: 10})
	if err != nil || len(ds) != 1 {
		t.Fatalf("domains: %v %v", ds, err)
	}
	f := store.TrafficFilter{AccountID: a.ID, DomainID: ds[0].ID, From: day.AddDate(0, 0, -1), To: day.AddDate(0, 0, 1)}
	hits, err := db.ListCrawlerHits(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	got := map[hitKey]hitCount{}
	for _, h := range hits {
		got[hitKey{h.Day.Format(time.DateOnly), h.Page, h.Agent, h.Verification}] = hitCount{h.Hits, h.Status, h.Bytes}
	}
	if len(got) != len(want) {
		t.Errorf("%d aggregates of crawler hits, want %d: %+v", len(got), len(want), got)
	}
	for k, w := range want {
		if got[k] != *w {
			t.Errorf("%+v: %+v, want %+v", k, got[k], *w)
		}
	}
	refs, err := db.ListReferralVisits(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	gotRefs := map[[3]string]int64{}
	for _, r := range refs {
		gotRefs[[3]string{r.Day.Format(time.DateOnly), r.Page, r.Assistant}] = r.Visits
	}
	// GPTBot's own request from chatgpt.com's link is no referral.
	if fmt.Sprint(gotRefs) != fmt.Sprint(referrals) {
		t.Errorf("referral visits %v, want %v", gotRefs, referrals)
	}
	tokens, err := db.ListIngestTokens(ctx, a.ID, ds[0].ID)
	if err != nil || len(tokens) != 3 || !slices.ContainsFunc(tokens, func(t store.IngestToken) bool { return t.RevokedAt != nil }) {
		t.Errorf("tokens: %+v %v", tokens, err)
	}
	for _, tok := range tokens {
		if tok.Source == store.TrafficVercel && (tok.SigningSecret == "" || strings.Contains(tok.SigningSecret, "drain-signature-secret")) {
			t.Errorf("the vercel token's signing secret is not kept sealed: %q", tok.SigningSecret)
		}
	}
	dump := rawDatabase(t, dir)
	for _, secretish := range []string{"52.230.152.7", "203.0.113.9", "utm_source", "x=1", cfToken, "drain-signature-secret"} {
		if strings.Contains(dump, secretish) {
			t.Errorf("the database holds %q", secretish)
		}
	}
}

// rawDatabase is the bytes of dir's SQLite database and its WAL, where
// text is kept as it is.
func rawDatabase(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	wal, _ := os.ReadFile(filepath.Join(dir, "aivis.db-wal"))
	return string(b) + string(wal)
}

func writeGzip(t *testing.T, path, content string) {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(content))
	zw.Close()
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
}

// TestCrawlerRangesURL: a server with crawler_ranges_url fetches the
// lists at start and keeps them in the store, where the CLI (another
// process) reads them; a URL that fails keeps them and logs why.
func TestCrawlerRangesURL(t *testing.T) {
	dir := t.TempDir()
	served := `{"openai-gptbot":{"creationTime":"2026-11-20T08:00:00.000000","prefixes":[{"ipv4Prefix":"203.0.113.0/24"},{"ipv4Prefix":"198.51.100.0/24"}]}}`
	lists := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ranges.json" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, served)
	}))
	defer lists.Close()
	s := start(t, dir, "--crawler-ranges-url", lists.URL+"/ranges.json")
	gptbot := func() []string {
		var out []struct {
			Token string   `json:"token"`
			Lists []string `json:"lists"`
		}
		cli(t, dir, &out, "crawlers", "list")
		i := slices.IndexFunc(out, func(a struct {
			Token string   `json:"token"`
			Lists []string `json:"lists"`
		}) bool {
			return a.Token == "GPTBot"
		})
		if i < 0 {
			t.Fatalf("crawlers list has no GPTBot: %+v", out)
		}
		return out[i].Lists
	}
	if l := gptbot(); !slices.Equal(l, []string{"openai-gptbot"}) {
		t.Fatalf("GPTBot's lists: %v", l)
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	waitLong(t, 30*time.Second, "the lists of crawler_ranges_url kept", func() bool {
		kept, _, err := db.CrawlerRanges(context.Background())
		return err == nil && strings.Contains(string(kept["openai-gptbot"]), "198.51.100.0/24")
	})
	s.stop()
	// A URL that answers 404: the server starts, logs why, the lists stay.
	s = start(t, dir, "--crawler-ranges-url", lists.URL+"/gone.json")
	waitLong(t, 30*time.Second, "the failed fetch's warning", func() bool {
		return s.logged("crawler ranges: crawler_ranges_url could not be read; the lists kept stay", "")
	})
	if strings.Contains(s.Stderr.String(), "gone.json") || strings.Contains(s.Stderr.String(), lists.Listener.Addr().String()) {
		t.Errorf("the log names the URL:\n%s", s.Stderr)
	}
	if kept, _, err := db.CrawlerRanges(context.Background()); err != nil || !strings.Contains(string(kept["openai-gptbot"]), "198.51.100.0/24") {
		t.Errorf("the lists after a failed fetch: %v %v", kept, err)
	}
}
