package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe/probefake"
)

// combinedLine is a line of a combined log.
func combinedLine(at time.Time, ip, target string, status, size int, referer, ua string) string {
	return fmt.Sprintf("%s - - [%s] \"GET %s HTTP/1.1\" %d %d %q %q\n", ip, at.Format("02/Jan/2006:15:04:05 -0700"), target, status, size,
		referer, ua)
}

func gzipped(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// trafficLog is a generated log of three days and what a summary and the
// pages of the domain must say of it, counted as it is made.
type trafficLog struct {
	log      string
	days     []string
	agents   map[string]*client.AgentTraffic
	top      map[string]int64           // page -> hits, spoofed left out
	crawled  map[string]map[string]bool // page -> agents
	problems map[[3]string]int64        // page, agent, class
	refs     map[string][]int64         // assistant -> visits per day
	crawls   map[[2]string]*client.AgentHits
	visits   map[[2]string]int64 // page, assistant
}

// newTrafficLog makes n lines over the three days up to today: GPTBot
// from OpenAI's ranges and from elsewhere (spoofed), ClaudeBot
// (unverified), and browsers sent by ChatGPT (utm_source) or Perplexity
// (Referer), over five pages, some answered 404 or 503.
func newTrafficLog(n int, today time.Time) *trafficLog {
	tl := &trafficLog{agents: map[string]*client.AgentTraffic{}, top: map[string]int64{}, crawled: map[string]map[string]bool{},
		problems: map[[3]string]int64{}, refs: map[string][]int64{}, crawls: map[[2]string]*client.AgentHits{}, visits: map[[2]string]int64{}}
	for d := 2; d >= 0; d-- {
		tl.days = append(tl.days, today.AddDate(0, 0, -d).Format(time.DateOnly))
	}
	pages := []string{"/", "/docs", "/pricing", "/skates", "/blog/post"}
	var b strings.Builder
	for i := range n {
		day := i % 3
		at := today.AddDate(0, 0, day-2).Add(time.Duration(i) * time.Second)
		page := pages[i%5]
		status := 200
		switch {
		case i%7 == 0:
			status = 404
		case i%11 == 0:
			status = 503
		}
		class := map[int]int{200: 0, 404: 2, 503: 3}[status]
		var agent, verification, ip, ua string
		switch i % 4 {
		case 0:
			agent, verification, ip, ua = "GPTBot", "verified", fmt.Sprintf("52.230.152.%d", 1+i%200), uaGPTBot
		case 1:
			agent, verification, ip, ua = "GPTBot", "spoofed", "203.0.113.9", uaGPTBot
		case 2:
			agent, verification, ip, ua = "ClaudeBot", "unverified", "198.51.100.4", uaClaudeBot
		default:
			target, referer, assistant := page+"?utm_source=chatgpt.com", "-", "chatgpt"
			if i%8 == 7 {
				target, referer, assistant = page, "https://www.perplexity.ai/search?q=x", "perplexity"
			}
			b.WriteString(combinedLine(at, "192.0.2.1", target, status, 100, referer, uaChrome))
			if tl.refs[assistant] == nil {
				tl.refs[assistant] = make([]int64, 3)
			}
			tl.refs[assistant][day]++
			tl.visits[[2]string{page, assistant}]++
			continue
		}
		b.WriteString(combinedLine(at, ip, page, status, 1000, "-", ua))
		a := tl.agents[agent]
		if a == nil {
			a = &client.AgentTraffic{Agent: agent, Purpose: "train", Days: make([]client.DayCount, 3)}
			for j := range a.Days {
				a.Days[j].Day = tl.days[j]
			}
			tl.agents[agent] = a
		}
		a.Hits++
		a.Bytes += 1000
		a.Days[day].Count++
		switch verification {
		case "verified":
			a.ByVerification.Verified++
		case "spoofed":
			a.ByVerification.Spoofed++
			continue // counted in its agent's figures only
		default:
			a.ByVerification.Unverified++
		}
		tl.top[page]++
		if tl.crawled[page] == nil {
			tl.crawled[page] = map[string]bool{}
		}
		tl.crawled[page][agent] = true
		c := tl.crawls[[2]string{page, agent}]
		if c == nil {
			c = &client.AgentHits{Agent: agent}
			tl.crawls[[2]string{page, agent}] = c
		}
		c.Hits++
		if class > 0 {
			tl.problems[[3]string{page, agent, map[int]string{2: "4xx", 3: "5xx"}[class]}]++
			c.Errors++
		}
	}
	// Status classes and spoofed requests: counted apart, as the agents
	// hold them.
	for i := range n {
		if i%4 == 3 {
			continue
		}
		agent := map[int]string{0: "GPTBot", 1: "GPTBot", 2: "ClaudeBot"}[i%4]
		switch {
		case i%7 == 0:
			tl.agents[agent].Status.S4xx++
		case i%11 == 0:
			tl.agents[agent].Status.S5xx++
		default:
			tl.agents[agent].Status.S2xx++
		}
	}
	tl.log = b.String()
	return tl
}

// TestTrafficAPI: a domain's log uploaded through the API and read back:
// the summary and the pages (joined with the engines that cite them in
// the domain's scan) agree with what the test counted as it wrote the
// log; the window's dates are checked; the pages as CSV; an agency
// client's key sees only its client's domains (404 for the account's),
// the account's sees both; a read-only key reads and may not upload or
// make tokens; tokens made through the API deliver until revoked.
func TestTrafficAPI(t *testing.T) {
	dir := t.TempDir()
	engine := probefake.New()
	t.Cleanup(engine.Close)
	engine.Answer("fake-model", "Acme makes fine rocket skates (https://acme.invalid/skates).")
	cfg := scanConfig(t, dir, engine)
	a := newAccount(t, dir, "enterprise", true)
	k := newKey(t, dir, a.ID)
	var cl struct {
		ID string `json:"id"`
	}
	cli(t, dir, &cl, "client", "create", "--account", a.ID, "--name", "Client")
	ck := newKey(t, dir, a.ID, "--client", cl.ID)
	ro := newKey(t, dir, a.ID, "--scopes", "visibility:read")
	s := start(t, dir, "--config", cfg)
	bh := bearer(k)

	var dom, cdom client.MonitoredDomain
	if r := s.do(t, req{method: "POST", path: "/v1/domains", header: bh, body: `{"domain":"acme.invalid","brands":["Acme"]}`}); r.Status != 201 {
		t.Fatalf("POST /v1/domains: %d %s", r.Status, r.Body)
	} else {
		r.decode(t, &dom)
	}
	if r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(ck), body: `{"domain":"client.invalid"}`}); r.Status != 201 {
		t.Fatalf("the client's domain: %d %s", r.Status, r.Body)
	} else {
		r.decode(t, &cdom)
	}
	// A scan, whose answers cite https://acme.invalid/skates.
	var sc client.Scan
	s.do(t, req{method: "POST", path: "/v1/visibility/scans", header: bh, body: `{"domain":"acme.invalid"}`}).decode(t, &sc)
	waitFor(t, "the scan completed", func() bool {
		s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + sc.ID, header: bh}).decode(t, &sc)
		return sc.Status == "completed" || sc.Status == "failed"
	})
	var result struct {
		Breakdown struct {
			Engines []struct {
				Label      string `json:"label"`
				CitedPages []struct {
					URL   string `json:"url"`
					Count int    `json:"count"`
				} `json:"cited_pages"`
			} `json:"engines"`
		} `json:"breakdown"`
	}
	if err := json.Unmarshal(sc.Result, &result); sc.Status != "completed" || err != nil {
		t.Fatalf("scan %s: %s %v", sc.Status, sc.Result, err)
	}
	cited := map[string]map[string]int{} // page -> engine -> answers
	for _, e := range result.Breakdown.Engines {
		for _, p := range e.CitedPages {
			u, _ := url.Parse(p.URL)
			if cited[u.Path] == nil {
				cited[u.Path] = map[string]int{}
			}
			cited[u.Path][e.Label] += p.Count
		}
	}
	if cited["/skates"]["Fake"] == 0 {
		t.Fatalf("the scan cites no /skates: %s", sc.Result)
	}

	today := time.Now().UTC().Truncate(24 * time.Hour)
	tl := newTrafficLog(600, today)
	logs := "/v1/domains/" + dom.ID + "/traffic/logs"
	up := s.do(t, req{method: "POST", path: logs, header: with(bh, "Content-Type", "application/gzip"), body: gzipped(t, tl.log+"not a line\n")})
	var kept client.IngestResult
	up.decode(t, &kept)
	if up.Status != 200 || kept.Duplicate || kept.Lines != 601 || kept.Malformed != 1 || len(kept.MalformedSamples) != 1 {
		t.Fatalf("upload: %d %s", up.Status, up.Body)
	}
	// The same file again, plain: kept once.
	if r := s.do(t, req{method: "POST", path: logs, header: with(bh, "Content-Type", "text/plain"), body: tl.log + "not a line\n"}); r.Status != 200 ||
		!bytes.Contains(r.Body, []byte(`"duplicate":true`)) {
		t.Errorf("the file again: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "POST", path: logs, header: bh, body: `{"log":"x"}`}); r.Status != 415 {
		t.Errorf("a JSON body: %d %s; want 415", r.Status, r.Body)
	}

	// The summary of the three days.
	traffic := "/v1/domains/" + dom.ID + "/traffic"
	var sum client.TrafficSummary
	if r := s.do(t, req{method: "GET", path: traffic + "?from=" + tl.days[0] + "&to=" + tl.days[2], header: bh}); r.Status != 200 {
		t.Fatalf("GET traffic: %d %s", r.Status, r.Body)
	} else {
		r.decode(t, &sum)
	}
	checkSummary(t, sum, tl, dom.ID)

	// The window: 30 days to today by default; dates checked by field.
	var def client.TrafficSummary
	s.do(t, req{method: "GET", path: traffic, header: bh}).decode(t, &def)
	if def.FirstDay != today.AddDate(0, 0, -29).Format(time.DateOnly) || def.LastDay != today.Format(time.DateOnly) ||
		len(def.Agents) != 2 || len(def.Agents[0].Days) != 30 || def.Agents[0].Hits != sum.Agents[0].Hits {
		t.Errorf("the default window: %s to %s, %d agents", def.FirstDay, def.LastDay, len(def.Agents))
	}
	for q, field := range map[string]string{"from=2026-13-01": "from", "to=yesterday": "to", "from=2026-11-02&to=2026-11-01": "from",
		"from=2025-01-01&to=2026-02-05": "from"} {
		r := s.do(t, req{method: "GET", path: traffic + "?" + q, header: bh})
		var env client.ErrorEnvelope
		r.decode(t, &env)
		if r.Status != 400 || env.Error.Code != "VALIDATION_ERROR" || len(env.Error.Details) == 0 || env.Error.Details[0].Field != field {
			t.Errorf("?%s: %d %s; want a VALIDATION_ERROR of %s", q, r.Status, r.Body, field)
		}
	}
	if r := s.do(t, req{method: "GET", path: traffic + "?from=2025-10-24&to=2026-11-27", header: bh}); r.Status != 200 {
		t.Errorf("400 days: %d %s", r.Status, r.Body)
	}

	// The pages, two at a time, joined with the scan's citations.
	var pages []client.TrafficPage
	next := ""
	for {
		var pg client.List[client.TrafficPage]
		r := s.do(t, req{method: "GET", path: traffic + "/pages?limit=2&from=" + tl.days[0] + "&cursor=" + url.QueryEscape(next), header: bh})
		if r.Status != 200 {
			t.Fatalf("pages: %d %s", r.Status, r.Body)
		}
		r.decode(t, &pg)
		pages = append(pages, pg.Items...)
		if !pg.HasMore {
			break
		}
		next = *pg.NextCursor
	}
	checkPages(t, pages, tl, cited)
	rows := pageCSV(t, s, traffic+"/pages?format=csv&from="+tl.days[0], bh)
	accept := pageCSV(t, s, traffic+"/pages?from="+tl.days[0], with(bh, "Accept", "text/csv"))
	if len(rows) != len(pages)+1 || !slices.Equal(rows[0], []string{"page", "crawler_hits", "crawler_errors", "crawled_by", "citing_answers",
		"cited_by", "referral_visits", "referred_by"}) || fmt.Sprint(rows) != fmt.Sprint(accept) {
		t.Fatalf("CSV: %q\nwith Accept: %q", rows, accept)
	}
	for i, p := range pages {
		var hits, visits int64
		for _, c := range p.Crawls {
			hits += c.Hits
		}
		for _, v := range p.Referrals {
			visits += v.Visits
		}
		row := rows[i+1]
		if row[0] != p.Page || row[1] != fmt.Sprint(hits) || row[6] != fmt.Sprint(visits) {
			t.Errorf("CSV row %q for %+v", row, p)
		}
	}

	// An agency client's key: its own domain only.
	for _, path := range []string{traffic, traffic + "/pages", "/v1/domains/" + dom.ID + "/ingest-tokens"} {
		if r := s.do(t, req{method: "GET", path: path, header: bearer(ck)}); r.Status != 404 || r.errorCode(t) != "NOT_FOUND" {
			t.Errorf("the client's key, GET %s: %d %s; want 404", path, r.Status, r.Body)
		}
	}
	if r := s.do(t, req{method: "POST", path: logs, header: with(bearer(ck), "Content-Type", "text/plain"), body: tl.log}); r.Status != 404 {
		t.Errorf("the client's key uploads to the account's domain: %d %s", r.Status, r.Body)
	}
	var own client.TrafficSummary
	if r := s.do(t, req{method: "GET", path: "/v1/domains/" + cdom.ID + "/traffic", header: bearer(ck)}); r.Status != 200 {
		t.Errorf("the client's own domain: %d %s", r.Status, r.Body)
	} else if r.decode(t, &own); len(own.Agents) != 0 || own.DomainID != cdom.ID {
		t.Errorf("the client's domain, nothing uploaded: %+v", own)
	}
	if r := s.do(t, req{method: "GET", path: "/v1/domains/" + cdom.ID + "/traffic/pages", header: bh}); r.Status != 200 {
		t.Errorf("the account's key reads its client's domain: %d %s", r.Status, r.Body)
	}

	// Scopes: visibility:read reads, and may not write.
	if r := s.do(t, req{method: "GET", path: traffic, header: bearer(ro)}); r.Status != 200 {
		t.Errorf("a read-only key reads: %d %s", r.Status, r.Body)
	}
	for _, w := range []req{
		{method: "POST", path: logs, header: with(bearer(ro), "Content-Type", "text/plain"), body: tl.log},
		{method: "POST", path: "/v1/domains/" + dom.ID + "/ingest-tokens", header: bearer(ro), body: `{"name":"x","source":"fastly"}`},
		{method: "DELETE", path: "/v1/domains/" + dom.ID + "/ingest-tokens/itok_x", header: bearer(ro)},
	} {
		if r := s.do(t, w); r.Status != 403 || r.errorCode(t) != "INSUFFICIENT_SCOPE" {
			t.Errorf("a read-only key, %s %s: %d %s", w.method, w.path, r.Status, r.Body)
		}
	}

	// Tokens through the API: made (the secret shown once), used, listed,
	// revoked.
	tokens := "/v1/domains/" + dom.ID + "/ingest-tokens"
	var tok client.IngestToken
	if r := s.do(t, req{method: "POST", path: tokens, header: bh, body: `{"name":"edge","source":"cloudflare"}`}); r.Status != 201 {
		t.Fatalf("POST ingest-tokens: %d %s", r.Status, r.Body)
	} else {
		r.decode(t, &tok)
	}
	if r := s.do(t, req{method: "POST", path: tokens, header: bh, body: `{"name":"drain","source":"vercel"}`}); r.Status != 400 ||
		!bytes.Contains(r.Body, []byte(`"signing_secret"`)) {
		t.Errorf("a vercel token without its secret: %d %s", r.Status, r.Body)
	}
	record := fmt.Sprintf(`{"ClientIP":"52.230.152.7","ClientRequestHost":"acme.invalid","ClientRequestMethod":"GET","ClientRequestPath":"/new","ClientRequestURI":"/new","ClientRequestUserAgent":%q,"EdgeResponseStatus":200,"EdgeResponseBytes":1,"EdgeStartTimestamp":%d}`+"\n",
		uaGPTBot, today.Add(time.Hour).UnixNano())
	cf := with(map[string]string{"Authorization": "Bearer " + tok.Token}, "Content-Type", "application/x-ndjson")
	if r := s.do(t, req{method: "POST", path: "/ingest/v1/cloudflare", header: cf, body: record}); r.Status != 200 {
		t.Errorf("a delivery with the token: %d %s", r.Status, r.Body)
	}
	var listed client.List[client.IngestToken]
	s.do(t, req{method: "GET", path: tokens, header: bh}).decode(t, &listed)
	if len(listed.Items) != 1 || listed.Items[0].ID != tok.ID || listed.Items[0].Token != "" || listed.Items[0].LastUsedAt == nil ||
		bytes.Contains(s.do(t, req{method: "GET", path: tokens, header: bh}).Body, []byte(tok.Token)) {
		t.Errorf("tokens listed: %+v", listed.Items)
	}
	if r := s.do(t, req{method: "DELETE", path: "/v1/domains/" + cdom.ID + "/ingest-tokens/" + tok.ID, header: bh}); r.Status != 404 {
		t.Errorf("the token revoked through another domain: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "DELETE", path: tokens + "/" + tok.ID, header: bh}); r.Status != 204 {
		t.Errorf("DELETE the token: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "POST", path: "/ingest/v1/cloudflare", header: cf, body: record}); r.Status != 401 {
		t.Errorf("a delivery with the revoked token: %d %s", r.Status, r.Body)
	}

	// The catalog.
	var crawlers client.List[client.Crawler]
	s.do(t, req{method: "GET", path: "/v1/crawlers", header: bearer(ro)}).decode(t, &crawlers)
	i := slices.IndexFunc(crawlers.Items, func(c client.Crawler) bool { return c.Token == "GPTBot" })
	if i < 0 || crawlers.Items[i].Operator != "OpenAI" || len(crawlers.Items[i].Lists) == 0 || !crawlers.Items[i].Lists[0].Loaded ||
		crawlers.Items[i].Lists[0].Prefixes == 0 {
		t.Errorf("crawlers: %+v", crawlers.Items)
	}
}

func checkSummary(t *testing.T, sum client.TrafficSummary, tl *trafficLog, domainID string) {
	t.Helper()
	if sum.DomainID != domainID || sum.FirstDay != tl.days[0] || sum.LastDay != tl.days[2] || sum.LastBatchAt == nil {
		t.Errorf("summary %s %s %s %v", sum.DomainID, sum.FirstDay, sum.LastDay, sum.LastBatchAt)
	}
	if len(sum.Agents) != len(tl.agents) {
		t.Fatalf("agents %+v", sum.Agents)
	}
	for _, a := range sum.Agents {
		w := tl.agents[a.Agent]
		if w == nil {
			t.Errorf("agent %+v, not sent", a)
			continue
		}
		w.Operator = a.Operator // the catalog's
		if fmt.Sprint(a) != fmt.Sprint(*w) || a.Operator == "" {
			t.Errorf("agent %+v\nwant %+v", a, w)
		}
	}
	if sum.Agents[0].Hits < sum.Agents[1].Hits {
		t.Errorf("agents not most first: %+v", sum.Agents)
	}
	var train int64
	for _, a := range tl.agents {
		train += a.Hits - a.ByVerification.Spoofed
	}
	if len(sum.Purposes) != 1 || sum.Purposes[0].Purpose != "train" || sum.Purposes[0].Hits != train {
		t.Errorf("purposes %+v, want train %d", sum.Purposes, train)
	}
	if len(sum.TopPages) != len(tl.top) {
		t.Errorf("top pages %+v, want %v", sum.TopPages, tl.top)
	}
	for i, p := range sum.TopPages {
		if p.Hits != tl.top[p.Page] || p.Agents != len(tl.crawled[p.Page]) || i > 0 && p.Hits > sum.TopPages[i-1].Hits {
			t.Errorf("top page %+v, want %d hits by %d agents", p, tl.top[p.Page], len(tl.crawled[p.Page]))
		}
	}
	if len(sum.Problems) != len(tl.problems) {
		t.Errorf("problems %+v, want %v", sum.Problems, tl.problems)
	}
	for _, p := range sum.Problems {
		if p.Hits != tl.problems[[3]string{p.Page, p.Agent, p.Status}] {
			t.Errorf("problem %+v, want %d", p, tl.problems[[3]string{p.Page, p.Agent, p.Status}])
		}
	}
	if len(sum.Referrals) != len(tl.refs) {
		t.Errorf("referrals %+v, want %v", sum.Referrals, tl.refs)
	}
	for _, r := range sum.Referrals {
		var total int64
		for i, d := range r.Days {
			if d.Day != tl.days[i] || d.Count != tl.refs[r.Assistant][i] {
				t.Errorf("%s's day %+v, want %d", r.Assistant, d, tl.refs[r.Assistant][i])
			}
			total += d.Count
		}
		if r.Visits != total || len(r.Days) != 3 {
			t.Errorf("referrals of %s: %+v", r.Assistant, r)
		}
	}
}

func checkPages(t *testing.T, pages []client.TrafficPage, tl *trafficLog, cited map[string]map[string]int) {
	t.Helper()
	want := map[string]bool{}
	for k := range tl.crawls {
		want[k[0]] = true
	}
	for k := range tl.visits {
		want[k[0]] = true
	}
	for p := range cited {
		want[p] = true
	}
	if len(pages) != len(want) || !slices.IsSortedFunc(pages, func(a, b client.TrafficPage) int { return strings.Compare(a.Page, b.Page) }) {
		t.Fatalf("%d pages %+v, want %v in order", len(pages), pages, want)
	}
	for _, p := range pages {
		for _, c := range p.Crawls {
			if w := tl.crawls[[2]string{p.Page, c.Agent}]; w == nil || *w != c {
				t.Errorf("%s crawled by %+v, want %+v", p.Page, c, w)
			}
		}
		for _, v := range p.Referrals {
			if v.Visits != tl.visits[[2]string{p.Page, v.Assistant}] {
				t.Errorf("%s referred by %+v, want %d", p.Page, v, tl.visits[[2]string{p.Page, v.Assistant}])
			}
		}
		if len(p.CitedBy) != len(cited[p.Page]) {
			t.Errorf("%s cited by %+v, want %v", p.Page, p.CitedBy, cited[p.Page])
		}
		for _, c := range p.CitedBy {
			if c.Answers != cited[p.Page][c.Engine] {
				t.Errorf("%s cited by %+v, want %v", p.Page, c, cited[p.Page])
			}
		}
	}
	skates := pages[slices.IndexFunc(pages, func(p client.TrafficPage) bool { return p.Page == "/skates" })]
	if len(skates.Crawls) != 2 || len(skates.CitedBy) != 1 || len(skates.Referrals) != 2 {
		t.Errorf("/skates, crawled, cited and referred: %+v", skates)
	}
}

func pageCSV(t *testing.T, s *server, path string, h map[string]string) [][]string {
	t.Helper()
	r := s.do(t, req{method: "GET", path: path, header: h})
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// goClientTraffic makes the traffic operations and the ingest endpoints'
// with the Go client, on the domain whose scan cites /skates.
func goClientTraffic(t *testing.T, c *client.Client, domainID string) {
	t.Helper()
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	cfTok, err := c.CreateIngestToken(ctx, domainID, client.CreateIngestToken{Name: "edge", Source: "cloudflare"}, client.IdempotencyKey("tok-1"))
	must("create cloudflare token", err)
	fsTok, err := c.CreateIngestToken(ctx, domainID, client.CreateIngestToken{Name: "fastly", Source: "fastly"})
	must("create fastly token", err)
	vcTok, err := c.CreateIngestToken(ctx, domainID, client.CreateIngestToken{Name: "drain", Source: "vercel", SigningSecret: "drain-secret"})
	must("create vercel token", err)
	ch, err := c.FastlyChallenge(ctx)
	must("fastly challenge", err)
	vv, code, err := c.VerifyVercelDrain(ctx, "code-1")
	must("vercel verification", err)
	if ch != "*" || !vv.Verified || code != "code-1" {
		t.Errorf("fastly challenge %q, vercel %+v %q", ch, vv, code)
	}
	now := time.Now().UTC()
	cf, err := c.IngestCloudflare(ctx, cfTok.Token, []byte(fmt.Sprintf(`{"ClientIP":"52.230.152.7","ClientRequestPath":"/skates","ClientRequestURI":"/skates","ClientRequestUserAgent":%q,"EdgeResponseStatus":200,"EdgeResponseBytes":10,"EdgeStartTimestamp":%d}`+"\n",
		uaGPTBot, now.UnixNano())))
	must("ingest cloudflare", err)
	fs, err := c.IngestFastly(ctx, fsTok.Token, []byte(fmt.Sprintf(`{"timestamp":%q,"client_ip":"198.51.100.4","method":"GET","url":"/skates","status":503,"bytes":0,"referer":"","user_agent":%q}`+"\n",
		now.Format(time.RFC3339), uaClaudeBot)))
	must("ingest fastly", err)
	body := []byte(fmt.Sprintf(`[{"id":"1","timestamp":%[1]d,"proxy":{"timestamp":%[1]d,"method":"GET","path":"/skates","userAgent":[%[2]q],"referer":"https://chatgpt.com/","statusCode":200,"clientIp":"192.0.2.1"}}]`,
		now.UnixMilli(), uaChrome))
	mac := hmac.New(sha1.New, []byte("drain-secret"))
	mac.Write(body)
	vc, err := c.IngestVercel(ctx, vcTok.Token, hex.EncodeToString(mac.Sum(nil)), body)
	must("ingest vercel", err)
	up, err := c.UploadTrafficLogs(ctx, domainID, []byte(gzipped(t, combinedLine(now, "52.230.152.8", "/docs", 404, 5, "-", uaGPTBot))))
	must("upload logs", err)
	if cf.Lines != 1 || fs.Lines != 1 || vc.Lines != 1 || up.Lines != 1 || up.Duplicate {
		t.Errorf("deliveries: %+v %+v %+v %+v", cf, fs, vc, up)
	}
	sum, err := c.GetTraffic(ctx, domainID, client.TrafficParams{})
	must("get traffic", err)
	if len(sum.Agents) != 2 || sum.Agents[0].Agent != "GPTBot" || sum.Agents[0].Hits != 2 || len(sum.Referrals) != 1 || len(sum.Problems) != 2 {
		t.Errorf("traffic %+v", sum)
	}
	first, err := c.ListTrafficPages(ctx, domainID, client.TrafficParams{Limit: 1})
	must("list traffic pages", err)
	var pages []client.TrafficPage
	for p, err := range c.TrafficPages(ctx, domainID, client.TrafficParams{Limit: 1}) {
		must("traffic pages", err)
		pages = append(pages, p)
	}
	if len(first.Items) != 1 || !first.HasMore || len(pages) != 2 || pages[0].Page != "/docs" || pages[1].Page != "/skates" ||
		len(pages[1].Crawls) != 2 || len(pages[1].CitedBy) != 1 || pages[1].CitedBy[0].Engine != "Fake" || len(pages[1].Referrals) != 1 {
		t.Errorf("pages %+v", pages)
	}
	toks, err := c.ListIngestTokens(ctx, domainID)
	must("list tokens", err)
	must("revoke token", c.RevokeIngestToken(ctx, domainID, cfTok.ID))
	if _, err := c.IngestCloudflare(ctx, cfTok.Token, []byte("{}\n")); !isStatus(err, 401) {
		t.Errorf("a revoked token: %v", err)
	}
	crawlers, err := c.ListCrawlers(ctx)
	must("crawlers", err)
	if len(toks.Items) != 3 || len(crawlers.Items) < 10 {
		t.Errorf("%d tokens, %d crawlers", len(toks.Items), len(crawlers.Items))
	}
}
