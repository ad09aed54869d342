package traffic

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

func TestReadHash(t *testing.T) {
	content := []byte(cloudflareBatch)
	sum := sha256.Sum256(content)
	bodies := map[string][]byte{
		"plain":             content,
		"gzip, named":       gz(t, content, "batch-1.log", time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC), gzip.BestSpeed),
		"gzip, other name":  gz(t, content, "retry.log", time.Date(2026, 10, 11, 0, 0, 0, 0, time.UTC), gzip.BestCompression),
		"gzip, two members": append(gz(t, content[:100], "", time.Time{}, 5), gz(t, content[100:], "", time.Time{}, 5)...),
	}
	for name, body := range bodies {
		agg := NewAggregator(NewCatalog(Snapshot()), Assistant, "acc", "dom")
		b, err := Read(store.TrafficCloudflare, bytes.NewReader(body), agg, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(b.Hash, sum[:]) {
			t.Errorf("%s: hash %x, want %x", name, b.Hash, sum)
		}
		if b.Lines != 7 || b.Malformed != 3 || len(b.Samples) != 3 {
			t.Errorf("%s: batch %+v", name, b)
		}
	}
	// What follows a JSON array is hashed too.
	a := []byte("[" + vercelEntries[0] + "]")
	b1, err1 := Read(store.TrafficVercel, bytes.NewReader(a), NewAggregator(NewCatalog(nil), Assistant, "", ""), 0)
	b2, err2 := Read(store.TrafficVercel, bytes.NewReader(append(a, '\n')), NewAggregator(NewCatalog(nil), Assistant, "", ""), 0)
	if err1 != nil || err2 != nil || bytes.Equal(b1.Hash, b2.Hash) || b1.Lines != 1 || b2.Lines != 1 {
		t.Errorf("%v %v %+v %+v", err1, err2, b1, b2)
	}
}

func TestReadUnreadable(t *testing.T) {
	content := []byte(strings.Repeat(`192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 1`+"\n", 1000))
	zipped := gz(t, content, "", time.Time{}, 5)
	corrupt := bytes.Clone(zipped)
	corrupt[len(corrupt)-6] ^= 0xff // the CRC
	corruptData := bytes.Clone(zipped)
	for i := 20; i < len(corruptData)-8; i++ {
		corruptData[i] = 0xff
	}
	for name, tc := range map[string]struct {
		source string
		body   []byte
		max    int64
		want   error
	}{
		"too large":       {store.TrafficFile, content, int64(len(content)) - 1, ErrTooLarge},
		"too large, gzip": {store.TrafficFile, zipped, int64(len(content)) - 1, ErrTooLarge},
		"bad checksum":    {store.TrafficFile, corrupt, 0, gzip.ErrChecksum},
		"corrupt":         {store.TrafficFile, corruptData, 0, ErrGzip},
		"cut short":       {store.TrafficFile, zipped[:len(zipped)/2], 0, io.ErrUnexpectedEOF},
		"header only":     {store.TrafficFile, []byte{0x1f, 0x8b}, 0, ErrGzip},
		"bad header":      {store.TrafficFile, []byte{0x1f, 0x8b, 0, 0}, 0, io.ErrUnexpectedEOF},
		"unknown source":  {"syslog", content, 0, nil},
	} {
		_, err := Read(tc.source, bytes.NewReader(tc.body), NewAggregator(NewCatalog(nil), Assistant, "", ""), tc.max)
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
		if broken := tc.body[0] == 0x1f && tc.want != ErrTooLarge; broken != errors.Is(err, ErrGzip) {
			t.Errorf("%s: %v, ErrGzip or not", name, err)
		}
	}
	// At the limit: read.
	b, err := Read(store.TrafficFile, bytes.NewReader(zipped), NewAggregator(NewCatalog(nil), Assistant, "", ""), int64(len(content)))
	if err != nil || b.Lines != 1000 {
		t.Errorf("%+v %v", b, err)
	}
}

// genAgent is an agent of the generated logs: its user agents, and the
// addresses its operator publishes (none when its lists are not in the
// snapshot, so Verify cannot tell: unverified).
type genAgent struct {
	token string
	uas   []string
	list  string
	addrs []netip.Prefix
}

var genAgents = []*genAgent{
	{token: "GPTBot", list: "openai-gptbot", uas: []string{gptbotUA}},
	{token: "OAI-SearchBot", list: "openai-searchbot", uas: []string{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36; compatible; OAI-SearchBot/1.3; +https://openai.com/searchbot"}},
	{token: "ChatGPT-User", list: "openai-chatgpt-user", uas: []string{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot"}},
	{token: "ClaudeBot", uas: []string{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)"}},
	{token: "Claude-User", uas: []string{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)", "Claude-User (claude-code/2.1.86; +https://support.anthropic.com/)"}},
	{token: "PerplexityBot", uas: []string{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)"}},
	{token: "meta-externalagent", uas: []string{"meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)"}},
	{token: "CCBot", list: "commoncrawl-ccbot", uas: []string{"CCBot/2.0 (https://commoncrawl.org/faq/)"}},
	{token: "DuckAssistBot", list: "duckduckgo-duckassistbot", uas: []string{"DuckAssistBot/1.2; (+http://duckduckgo.com/duckassistbot.html)"}},
	{token: "MistralAI-User", list: "mistralai-user", uas: []string{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MistralAI-User/1.0; +https://docs.mistral.ai/robots)"}},
	{token: "Amazonbot", uas: []string{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15 (Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)"}},
}

// loadGenAgents reads the agents' addresses from the snapshot's files.
func loadGenAgents(t testing.TB) {
	t.Helper()
	for _, a := range genAgents {
		if a.list == "" || a.addrs != nil {
			continue
		}
		data, err := os.ReadFile("ranges/" + a.list + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Prefixes []struct{ IPv4Prefix, IPv6Prefix string }
		}
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Prefixes {
			if pr, err := netip.ParsePrefix(p.IPv4Prefix + p.IPv6Prefix); err == nil {
				a.addrs = append(a.addrs, pr.Masked())
			}
		}
		if len(a.addrs) == 0 {
			t.Fatalf("no addresses in %s", a.list)
		}
	}
}

var genBrowsers = []string{
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
	`Mozilla/5.0 "quoted" (compatible; MSIE 9.0)`,
	"curl/8.5.0",
	"",
}

// genReferers are referers with the assistant each names ("" none).
var genReferers = []struct{ referer, assistant string }{
	{"", ""}, {"", ""}, {"", ""}, {"https://example.com/", ""}, {"https://www.google.com/", ""},
	{"https://chatgpt.com/", "chatgpt"}, {"https://chat.openai.com/c/123", "chatgpt"},
	{"https://www.perplexity.ai/search?q=aivis", "perplexity"}, {"https://perplexity.ai/", "perplexity"},
	{"https://gemini.google.com/app", "gemini"}, {"https://copilot.microsoft.com/", "copilot"},
	{"https://claude.ai/chat/9", "claude"}, {"https://notchatgpt.com/", ""},
}

var genPages = []string{"/", "/pricing", "/docs", "/docs/getting-started", "/blog/ai-visibility", "/a%20b", "/é", "/" + strings.Repeat("long/", 130)}

var genStatuses = []int{200, 200, 200, 200, 304, 301, 404, 500, 503, 0}

// genRequest is one generated request and what it must count as.
type genRequest struct {
	t            time.Time
	ip           netip.Addr
	method       string
	page, query  string
	status       int
	bytes        int64
	referer, ua  string
	agent, verif string // the hit's, "" for none
	assistant    string // the referral's, "" for none
}

// generator makes requests from a seeded source, and the aggregates they
// must add up to.
type generator struct {
	r         *rand.Rand
	start     time.Time
	hits      map[[4]string]*store.CrawlerHits
	refs      map[[3]string]int64
	malformed []int
}

func newGenerator(seed uint64) *generator {
	return &generator{
		r:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		start: time.Date(2026, 10, 9, 0, 0, 0, 0, time.UTC),
		hits:  map[[4]string]*store.CrawlerHits{},
		refs:  map[[3]string]int64{},
	}
}

func (g *generator) pick(n int) int { return g.r.IntN(n) }

func (g *generator) request() genRequest {
	q := genRequest{
		t:      g.start.Add(time.Duration(g.r.Int64N(int64(72 * time.Hour)))).Truncate(time.Second),
		method: []string{"GET", "GET", "GET", "HEAD", "POST"}[g.pick(5)],
		page:   genPages[g.pick(len(genPages))],
		status: genStatuses[g.pick(len(genStatuses))],
		bytes:  g.r.Int64N(100000),
	}
	if g.pick(10) == 0 {
		q.query = "q=" + strconv.Itoa(g.pick(100))
	}
	ref := genReferers[g.pick(len(genReferers))]
	q.referer = ref.referer
	if g.pick(3) == 0 {
		// An agent, its address theirs or not.
		a := genAgents[g.pick(len(genAgents))]
		q.ua, q.agent = a.uas[g.pick(len(a.uas))], a.token
		if a.list != "" && g.pick(2) == 0 {
			p := a.addrs[g.pick(len(a.addrs))]
			q.ip, q.verif = randomIn(g.r, p), "verified"
		} else {
			q.ip = g.spoofed()
			q.verif = "unverified"
			if a.list != "" {
				q.verif = "spoofed"
			}
		}
	} else {
		q.ua = genBrowsers[g.pick(len(genBrowsers))]
		q.ip = g.spoofed()
		q.assistant = ref.assistant
		if g.pick(20) == 0 {
			q.query = "utm_source=" + []string{"chatgpt.com", "chatgpt"}[g.pick(2)] + "&utm_medium=referral"
			q.assistant = "chatgpt"
		}
	}
	return q
}

// spoofed is an address in the ranges kept for documentation: in no list.
func (g *generator) spoofed() netip.Addr {
	if g.pick(4) == 0 {
		return randomIn(g.r, netip.MustParsePrefix("2001:db8::/32"))
	}
	return randomIn(g.r, netip.MustParsePrefix("192.0.2.0/24"))
}

func randomIn(r *rand.Rand, p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		if r.IntN(2) == 1 {
			b[i/8] |= 0x80 >> (i % 8)
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// count adds q to the aggregates it must add up to.
func (g *generator) count(q genRequest) {
	day := q.t.UTC().Truncate(24 * time.Hour)
	page := q.page
	if len(page) > store.MaxTrafficPage {
		page = page[:store.MaxTrafficPage] // the pages are ASCII
	}
	if q.agent != "" {
		k := [4]string{day.Format(time.DateOnly), page, q.agent, q.verif}
		h := g.hits[k]
		if h == nil {
			h = &store.CrawlerHits{AccountID: "acc", DomainID: "dom", Day: day, Page: page, Agent: q.agent, Verification: q.verif}
			g.hits[k] = h
		}
		h.Hits++
		h.Bytes += q.bytes
		switch {
		case q.status == 0:
			h.Status[4]++
		default:
			h.Status[q.status/100-2]++
		}
		return
	}
	if q.assistant != "" {
		g.refs[[3]string{day.Format(time.DateOnly), page, q.assistant}]++
	}
}

// check compares agg's aggregates with g's.
func (g *generator) check(t *testing.T, agg *Aggregator) {
	t.Helper()
	hits := agg.CrawlerHits()
	if len(hits) != len(g.hits) {
		t.Errorf("%d hit aggregates, want %d", len(hits), len(g.hits))
	}
	for i, h := range hits {
		w := g.hits[[4]string{h.Day.Format(time.DateOnly), h.Page, h.Agent, h.Verification}]
		if w == nil || h != *w {
			t.Errorf("hits %+v, want %+v", h, w)
		}
		if i > 0 && !hitsBefore(hits[i-1], h) {
			t.Errorf("hits out of order: %+v before %+v", hits[i-1], h)
		}
	}
	refs := agg.ReferralVisits()
	if len(refs) != len(g.refs) {
		t.Errorf("%d referral aggregates, want %d", len(refs), len(g.refs))
	}
	for _, r := range refs {
		if w := g.refs[[3]string{r.Day.Format(time.DateOnly), r.Page, r.Assistant}]; r.Visits != w || r.AccountID != "acc" || r.DomainID != "dom" {
			t.Errorf("referrals %+v, want %d visits", r, w)
		}
	}
}

func hitsBefore(a, b store.CrawlerHits) bool {
	if !a.Day.Equal(b.Day) {
		return a.Day.Before(b.Day)
	}
	if a.Page != b.Page {
		return a.Page < b.Page
	}
	if a.Agent != b.Agent {
		return a.Agent < b.Agent
	}
	return a.Verification < b.Verification
}

var genZones = []*time.Location{time.UTC, time.FixedZone("", -7*3600), time.FixedZone("", 5*3600+1800), time.FixedZone("", 3600)}

// combinedLine writes q as Apache and nginx do.
func (g *generator) combinedLine(w *bufio.Writer, q genRequest) {
	quote := func(s string) string {
		if s == "" {
			return "-"
		}
		if g.pick(2) == 0 {
			return strings.ReplaceAll(s, `"`, `\"`) // Apache
		}
		return strings.ReplaceAll(s, `"`, `\x22`) // nginx
	}
	target := q.page
	if q.query != "" {
		target += "?" + q.query
	}
	size := strconv.FormatInt(q.bytes, 10)
	if q.bytes == 0 {
		size = "-"
	}
	status := strconv.Itoa(q.status)
	if q.status == 0 {
		status = "-"
	}
	fmt.Fprintf(w, `%s - - [%s] "%s %s HTTP/1.1" %s %s "%s" "%s"`, q.ip, q.t.In(genZones[g.pick(len(genZones))]).Format("02/Jan/2006:15:04:05 -0700"),
		q.method, target, status, size, quote(q.referer), quote(q.ua))
	if g.pick(10) == 0 {
		fmt.Fprintf(w, ` 0.%03d "%s"`, g.pick(1000), q.ip) // $request_time, X-Forwarded-For
	}
	w.WriteByte('\n')
}

// malformedLine is a line no reader can read.
func (g *generator) malformedLine(q genRequest) string {
	switch g.pick(3) {
	case 0:
		return fmt.Sprintf(`%s - - [%s] "GET / HTTP/1.1" 200 1`, q.ip, q.t.Format("2006-01-02 15:04:05"))
	case 1:
		return fmt.Sprintf(`%s - - [10/Oct/2026:13:55:36 +0000] "GET /`, q.ip)
	}
	return "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"
}

// stream runs write in a goroutine, its output read from the result.
func stream(t testing.TB, compress bool, write func(w *bufio.Writer)) (io.Reader, *[32]byte) {
	pr, pw := io.Pipe()
	sum := new([32]byte)
	go func() {
		h := sha256.New()
		var out io.Writer = pw
		var zw *gzip.Writer
		if compress {
			zw = gzip.NewWriter(pw)
			out = zw
		}
		w := bufio.NewWriterSize(io.MultiWriter(out, h), 64<<10)
		write(w)
		err := w.Flush()
		if zw != nil && err == nil {
			err = zw.Close()
		}
		copy(sum[:], h.Sum(nil))
		pw.CloseWithError(err)
	}()
	return pr, sum
}

func TestIngestCombinedMillion(t *testing.T) {
	const n = 1_000_000
	loadGenAgents(t)
	g := newGenerator(1)
	body, sum := stream(t, false, func(w *bufio.Writer) {
		for i := 1; i <= n; i++ {
			q := g.request()
			if g.pick(100_000) == 0 {
				g.malformed = append(g.malformed, i)
				w.WriteString(g.malformedLine(q) + "\n")
				continue
			}
			g.count(q)
			g.combinedLine(w, q)
		}
	})
	agg := NewAggregator(NewCatalog(Snapshot()), Assistant, "acc", "dom")
	start := time.Now()
	b, err := Read(store.TrafficFile, body, agg, 1<<30) // ~290 MB
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d lines in %v (generation included), %d hit and %d referral aggregates", b.Lines, time.Since(start), len(agg.CrawlerHits()), len(agg.ReferralVisits()))
	if b.Lines != n || b.Malformed != int64(len(g.malformed)) || len(g.malformed) == 0 {
		t.Errorf("%d lines, %d malformed; want %d, %d", b.Lines, b.Malformed, n, len(g.malformed))
	}
	if !bytes.Equal(b.Hash, sum[:]) {
		t.Errorf("hash %x, want %x", b.Hash, sum)
	}
	for i, s := range b.Samples {
		if s.Line != g.malformed[i] || strings.Contains(s.Excerpt, "192.0.2.") || strings.Contains(s.Excerpt, "2001:db8:") {
			t.Errorf("sample %+v, want line %d, no address", s, g.malformed[i])
		}
	}
	if len(b.Samples) != min(MaxSamples, len(g.malformed)) {
		t.Errorf("%d samples", len(b.Samples))
	}
	g.check(t, agg)
}

// cloudflareRecord writes q as Logpush does, its time in one of the
// formats a job may choose.
func (g *generator) cloudflareRecord(w *bufio.Writer, q genRequest) {
	js := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	null := func(s string) string {
		if s == "" && g.pick(2) == 0 {
			return "null"
		}
		return js(s)
	}
	var ts string
	switch g.pick(3) {
	case 0:
		ts = strconv.FormatInt(q.t.UnixNano()+int64(g.pick(1e9)), 10)
	case 1:
		ts = strconv.FormatInt(q.t.Unix(), 10)
	default:
		ts = js(q.t.Format(time.RFC3339))
	}
	uri := q.page
	if q.query != "" {
		uri += "?" + q.query
	}
	status := strconv.Itoa(q.status)
	if q.status == 0 {
		status = "null"
	}
	fmt.Fprintf(w, `{"ClientIP":%s,"ClientRequestHost":"example.com","ClientRequestMethod":%s,"ClientRequestPath":%s,"ClientRequestURI":%s,"ClientRequestUserAgent":%s,"ClientRequestReferer":%s,"EdgeResponseStatus":%s,"EdgeResponseBytes":%d,"EdgeStartTimestamp":%s,"RayID":"%016x","ClientCountry":null,"VerifiedBotCategory":""}`+"\n",
		js(q.ip.String()), js(q.method), js(q.page), js(uri), null(q.ua), null(q.referer), status, q.bytes, ts, g.r.Uint64())
}

func TestIngestCloudflareStream(t *testing.T) {
	const n = 200_000
	loadGenAgents(t)
	g := newGenerator(2)
	body, sum := stream(t, true, func(w *bufio.Writer) {
		for i := 1; i <= n; i++ {
			q := g.request()
			if g.pick(20_000) == 0 {
				g.malformed = append(g.malformed, i)
				w.WriteString(`{"ClientIP":"` + q.ip.String() + `","ClientRequestPath":` + "\n")
				continue
			}
			g.count(q)
			g.cloudflareRecord(w, q)
		}
	})
	agg := NewAggregator(NewCatalog(Snapshot()), Assistant, "acc", "dom")
	b, err := Read(store.TrafficCloudflare, body, agg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b.Lines != n || b.Malformed != int64(len(g.malformed)) || len(g.malformed) == 0 || b.Validation {
		t.Errorf("batch %d lines, %d malformed; want %d, %d", b.Lines, b.Malformed, n, len(g.malformed))
	}
	if !bytes.Equal(b.Hash, sum[:]) {
		t.Errorf("hash %x, want %x", b.Hash, sum)
	}
	for i, s := range b.Samples {
		if s.Line != g.malformed[i] || s.Reason != "not a JSON object" || strings.Contains(s.Excerpt, "192.0.2.") || strings.Contains(s.Excerpt, "2001:db8:") {
			t.Errorf("sample %+v, want line %d, no address", s, g.malformed[i])
		}
	}
	g.check(t, agg)
}
