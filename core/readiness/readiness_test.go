package readiness

import (
	"context"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
)

// site is a fake site: path -> handler.
func site(t *testing.T, routes map[string]http.HandlerFunc) (*Auditor, string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := routes[r.URL.Path]; ok {
			h(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	a := &Auditor{Scheme: "http", Timeout: 2 * time.Second,
		Client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	return a, strings.TrimPrefix(srv.URL, "http://")
}

func text(ct, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ct)
		w.Write([]byte(body))
	}
}

var words = strings.Repeat("Acme makes rocket skates for coyotes who need speed. ", 20)

const goodLLMs = "# Acme\n\n> Rocket skates.\n\n## Docs\n\n- [Guide](https://acme.example/guide): how to skate\n"

func goodHome(extraHead string) string {
	return `<!doctype html><html lang="en"><head><title>Acme rocket skates</title>
<meta name="description" content="Rocket skates."><link rel="canonical" href="https://acme.example/">
<meta property="og:title" content="Acme"><meta property="og:description" content="Skates">
<script type="application/ld+json">{"@context":"https://schema.org","@graph":[{"@type":"Organization","name":"Acme","sameAs":["https://www.linkedin.com/company/acme"]},{"@type":"FAQPage"}]}</script>
` + extraHead + `</head><body><main><p>` + words + `</p><a href="/about">About</a></main></body></html>`
}

func perfect() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"/":            text("text/html; charset=utf-8", goodHome("")),
		"/about":       text("text/html", `<html><head><title>About Acme</title><meta name="description" content="Who we are."></head><body><p>About us</p></body></html>`),
		"/robots.txt":  text("text/plain", "User-agent: *\nAllow: /\nSitemap: /sitemap.xml\n"),
		"/llms.txt":    text("text/plain", goodLLMs),
		"/sitemap.xml": text("application/xml", `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://acme.example/</loc></url></urlset>`),
	}
}

func has(r Report, id string) *Finding {
	for i := range r.Findings {
		if r.Findings[i].ID == id {
			return &r.Findings[i]
		}
	}
	return nil
}

func TestPerfectSite(t *testing.T) {
	a, host := site(t, perfect())
	r, err := a.Audit(context.Background(), host)
	if err != nil || r.Score != 100 {
		t.Fatalf("score %d (%v), points %v, findings %+v", r.Score, err, r.Points, r.Findings)
	}
	want := map[string]float64{"crawlers": 35, "llms_txt": 10, "sitemap": 10, "metadata": 20, "structured_data": 15, "content": 10}
	if !maps.Equal(r.Points, want) {
		t.Errorf("points %v", r.Points)
	}
	if len(r.Findings) != 0 {
		t.Errorf("findings on a perfect site: %+v", r.Findings)
	}
	for _, c := range r.Crawlers {
		if !c.Allowed {
			t.Errorf("%+v", c)
		}
	}
	if len(r.Crawlers) != 8 || r.Robots.Status != 200 || !r.Robots.Present || !slices.Equal(r.Robots.Sitemaps, []string{"/sitemap.xml"}) {
		t.Errorf("robots %+v, crawlers %+v", r.Robots, r.Crawlers)
	}
	if len(r.Pages) != 2 || !r.Pages[0].OrganizationSameAs || r.Pages[0].Words != 181 || r.Pages[1].Title != "About Acme" ||
		!slices.Equal(r.Pages[0].JSONLDTypes, []string{"FAQPage", "Organization"}) {
		t.Errorf("pages %+v", r.Pages)
	}
	if l := r.LLMsTxt; !l.Present || !l.WellFormed || l.Sections != 1 || l.Links != 1 || len(l.Problems) != 0 {
		t.Errorf("llms.txt %+v", r.LLMsTxt)
	}
	if r.Sitemap != (Sitemap{URL: "http://" + host + "/sitemap.xml", Present: true, Valid: true, URLs: 1}) {
		t.Errorf("sitemap %+v", r.Sitemap)
	}
	if r.FetchedAt.IsZero() {
		t.Error("no fetched_at")
	}
}

// TestBlockedCrawlers: GPTBot and CCBot are blocked, nothing else is
// missing but the JSON-LD. By hand: crawlers 35×6/8 = 26.25, llms.txt 10,
// sitemap 10, metadata 20, structured data 0 (no JSON-LD), content 10:
// 76.25, which rounds to 76.
func TestBlockedCrawlers(t *testing.T) {
	routes := perfect()
	routes["/robots.txt"] = text("text/plain", "User-agent: GPTBot\nDisallow: /\n\nUser-agent: CCBot\nDisallow: /\n\nUser-agent: *\nAllow: /\n")
	routes["/"] = text("text/html", strings.Replace(goodHome(""), `<script type="application/ld+json">`, `<script type="text/plain">`, 1))
	a, host := site(t, routes)
	r, _ := a.Audit(context.Background(), host)
	for _, c := range r.Crawlers {
		if c.Allowed == (c.Agent == "GPTBot" || c.Agent == "CCBot") {
			t.Errorf("%+v", c)
		}
	}
	if r.Points["crawlers"] != 26.25 || r.Score != 76 {
		t.Errorf("score %d, points %v", r.Score, r.Points)
	}
	if f := has(r, "crawlers_blocked"); f == nil || f.Severity != client.SeverityWarning || !strings.Contains(f.Title, "GPTBot, CCBot") {
		t.Errorf("finding %+v", f)
	}
	if has(r, "organization_missing") == nil {
		t.Error("no finding for the missing Organization")
	}
}

func TestBrokenSites(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(map[string]http.HandlerFunc)
		auditor func(*Auditor)
		finding string
		sev     string
		score   int
		check   func(t *testing.T, r Report)
	}{
		{name: "JavaScript shell", finding: "content_needs_javascript", sev: client.SeverityCritical, score: 63, // 35+10+10, metadata 8 (title, lang)
			edit: func(m map[string]http.HandlerFunc) {
				m["/"] = text("text/html", `<html lang="en"><head><title>App</title></head><body><div id="root"></div><script src="/app.js"></script></body></html>`)
			}, check: func(t *testing.T, r Report) {
				if r.Points["content"] != 0 || r.Points["metadata"] != 8 || len(r.Pages) != 1 || r.Pages[0].Words != 0 || !r.Pages[0].AppShell {
					t.Errorf("points %v, pages %+v", r.Points, r.Pages)
				}
			}},
		{name: "Next.js shell with a loading text", finding: "content_needs_javascript", sev: client.SeverityCritical, score: 55, // 35+10+10, no metadata
			edit: func(m map[string]http.HandlerFunc) {
				m["/"] = text("text/html", `<!doctype html><div id="__next"> <p>Loading…</p> </div><script>window.__DATA__={}</script>`)
			}, check: func(t *testing.T, r Report) {
				if r.Pages[0].Words != 1 || !r.Pages[0].AppShell {
					t.Errorf("pages %+v", r.Pages)
				}
			}},
		{name: "at most Pages linked pages", score: 100, auditor: func(a *Auditor) { a.Pages = 2 }, edit: func(m map[string]http.HandlerFunc) {
			links := ""
			for _, p := range []string{"/a", "/b", "/c", "/a#x", "https://elsewhere.example/d"} {
				links += `<a href="` + p + `">x</a>`
				if !strings.Contains(p, "#") && !strings.HasPrefix(p, "https:") {
					m[p] = m["/about"]
				}
			}
			m["/"] = text("text/html", strings.Replace(goodHome(""), `<a href="/about">About</a>`, links, 1))
		}, check: func(t *testing.T, r Report) {
			if len(r.Pages) != 3 || !strings.HasSuffix(r.Pages[1].URL, "/a") || !strings.HasSuffix(r.Pages[2].URL, "/b") {
				t.Errorf("pages %+v", r.Pages)
			}
		}},
		{name: "redirect loop", finding: "home_redirect_loop", sev: client.SeverityCritical, score: 0, edit: func(m map[string]http.HandlerFunc) {
			m["/"] = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/a", http.StatusFound) }
			m["/a"] = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/", http.StatusMovedPermanently) }
		}, check: func(t *testing.T, r Report) {
			if has(r, "site_unreachable") == nil || len(r.Crawlers) != 8 || r.Crawlers[0].Allowed || len(r.Pages) != 0 {
				t.Errorf("an unreadable site: %+v", r)
			}
		}},
		{name: "too many redirects", finding: "home_too_many_redirects", sev: client.SeverityCritical, score: 0, edit: func(m map[string]http.HandlerFunc) {
			for i := range 7 {
				p := "/" + strings.Repeat("r", i)
				m[p] = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, p+"r", http.StatusFound) }
			}
		}},
		{name: "page that never answers", finding: "home_timeout", sev: client.SeverityCritical, score: 0, auditor: func(a *Auditor) { a.Timeout = 300 * time.Millisecond },
			edit: func(m map[string]http.HandlerFunc) {
				m["/"] = func(w http.ResponseWriter, r *http.Request) {
					select {
					case <-r.Context().Done():
					case <-time.After(5 * time.Second):
					}
				}
			}},
		{name: "huge page", finding: "page_too_large", sev: client.SeverityWarning, score: 100, auditor: func(a *Auditor) { a.MaxBytes = 1 << 20 },
			edit: func(m map[string]http.HandlerFunc) {
				m["/"] = text("text/html", goodHome("")+strings.Repeat("<p>filler</p>", 400_000))
			}, check: func(t *testing.T, r Report) {
				if r.Points["metadata"] != 20 || len(r.Findings) != 1 {
					t.Errorf("the head of a huge page was not read: %v %+v", r.Points, r.Findings)
				}
			}},
		{name: "not HTML", finding: "home_not_html", sev: client.SeverityCritical, score: 55, edit: func(m map[string]http.HandlerFunc) {
			m["/"] = text("application/pdf", "%PDF-1.7")
		}, check: func(t *testing.T, r Report) {
			if len(r.Pages) != 0 || r.Points["metadata"] != 0 || r.Points["content"] != 0 {
				t.Errorf("points %v, pages %+v", r.Points, r.Pages)
			}
		}},
		{name: "malformed llms.txt", finding: "llms_txt_malformed", sev: client.SeverityWarning, score: 95, edit: func(m map[string]http.HandlerFunc) {
			m["/llms.txt"] = text("text/plain", "Acme\n## Docs\n- Guide at https://acme.example/guide\n")
		}, check: func(t *testing.T, r Report) {
			want := []string{"the first line must be an H1 with the site's name (# Name)",
				"line 3: a list item of a section must be a link: - [title](url): notes"}
			if !r.LLMsTxt.Present || r.LLMsTxt.WellFormed || !slices.Equal(r.LLMsTxt.Problems, want) || r.Points["llms_txt"] != 5 {
				t.Errorf("%+v %v", r.LLMsTxt, r.Points)
			}
		}},
		{name: "llms.txt served by an app's fallback", finding: "llms_txt_missing", sev: client.SeverityWarning, score: 90, edit: func(m map[string]http.HandlerFunc) {
			m["/llms.txt"] = text("text/html", "<!doctype html><html><body>app</body></html>")
		}},
		{name: "robots.txt 503", finding: "robots_txt_server_error", sev: client.SeverityCritical, score: 65, edit: func(m map[string]http.HandlerFunc) {
			m["/robots.txt"] = func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }
		}, check: func(t *testing.T, r Report) {
			for _, c := range r.Crawlers {
				if c.Allowed {
					t.Errorf("%s allowed while robots.txt answers 503", c.Agent)
				}
			}
			if r.Points["crawlers"] != 0 || r.Robots.Status != 503 || r.Robots.Present {
				t.Errorf("score %d, points %v", r.Score, r.Points)
			}
		}},
		{name: "robots.txt in a redirect loop", finding: "robots_txt_redirect_loop", sev: client.SeverityCritical, score: 65, // 100 - 35: crawlers forbidden
			edit: func(m map[string]http.HandlerFunc) {
				m["/robots.txt"] = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/robots.txt", http.StatusFound) }
			}, check: func(t *testing.T, r Report) {
				if r.Points["crawlers"] != 0 || r.Crawlers[3].Allowed || r.Robots.Status != 0 {
					t.Errorf("points %v, robots %+v", r.Points, r.Robots)
				}
			}},
		{name: "sitemap named in robots.txt", score: 100, edit: func(m map[string]http.HandlerFunc) {
			m["/robots.txt"] = text("text/plain", "User-agent: *\nDisallow: /private/\nSitemap: /maps/index.xml\n")
			m["/maps/index.xml"] = text("application/xml", `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>/a.xml</loc></sitemap><sitemap><loc>/b.xml</loc></sitemap></sitemapindex>`)
			delete(m, "/sitemap.xml")
		}, check: func(t *testing.T, r Report) {
			if !strings.HasSuffix(r.Sitemap.URL, "/maps/index.xml") || r.Sitemap.URLs != 2 || !r.Sitemap.Valid || len(r.Findings) != 0 {
				t.Errorf("sitemap %+v, findings %+v", r.Sitemap, r.Findings)
			}
		}},
		{name: "sitemap that is not XML", finding: "sitemap_invalid", sev: client.SeverityWarning, score: 90, edit: func(m map[string]http.HandlerFunc) {
			m["/sitemap.xml"] = text("application/xml", "https://acme.example/\n")
		}},
		{name: "linked page not HTML", finding: "page_not_html", sev: client.SeverityInfo, score: 100, edit: func(m map[string]http.HandlerFunc) {
			m["/"] = text("text/html", strings.Replace(goodHome(""), `href="/about"`, `href="/brochure.pdf"`, 1))
			m["/brochure.pdf"] = text("application/pdf", "%PDF-1.7")
		}, check: func(t *testing.T, r Report) {
			if len(r.Pages) != 1 || len(r.Findings) != 1 || !strings.HasSuffix(r.Findings[0].URL, "/brochure.pdf") {
				t.Errorf("pages %+v, findings %+v", r.Pages, r.Findings)
			}
		}},
		{name: "JSON-LD array on a linked page", finding: "", score: 100, edit: func(m map[string]http.HandlerFunc) {
			m["/"] = text("text/html", strings.Replace(goodHome(""), `<script type="application/ld+json">`, `<script type="text/plain">`, 1))
			m["/about"] = text("text/html", `<html><head><title>About</title><meta name="description" content="Us">
<script type="application/ld+json">[{"@type":"https://schema.org/Organization","sameAs":"https://github.com/acme"},{"@type":["Product","Thing"]}]</script></head></html>`)
		}, check: func(t *testing.T, r Report) {
			if len(r.Pages) != 2 || !slices.Equal(r.Pages[1].JSONLDTypes, []string{"Organization", "Product", "Thing"}) || len(r.Findings) != 0 {
				t.Errorf("pages %+v, findings %+v", r.Pages, r.Findings)
			}
		}},
		{name: "no robots.txt", finding: "", score: 100, edit: func(m map[string]http.HandlerFunc) { delete(m, "/robots.txt") },
			check: func(t *testing.T, r Report) {
				// A 404 allows all; /sitemap.xml is found without a Sitemap: line.
				if r.Points["crawlers"] != 35 || has(r, "sitemap_invalid") != nil {
					t.Errorf("a 404 robots.txt allows all: %v", r.Points)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			routes := perfect()
			tc.edit(routes)
			a, host := site(t, routes)
			if tc.auditor != nil {
				tc.auditor(a)
			}
			start := time.Now()
			r, err := a.Audit(context.Background(), host)
			if err != nil {
				t.Fatal(err)
			}
			if r.Score != tc.score {
				t.Errorf("score %d, want %d; points %v, findings %+v", r.Score, tc.score, r.Points, r.Findings)
			}
			if time.Since(start) > 2*time.Second {
				t.Errorf("the audit took %v", time.Since(start))
			}
			if tc.finding != "" {
				f := has(r, tc.finding)
				if f == nil || f.Severity != tc.sev || f.Fix == "" {
					t.Errorf("finding %s: %+v in %+v", tc.finding, f, r.Findings)
				}
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestCancelled(t *testing.T) {
	a, host := site(t, perfect())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Audit(ctx, host); err == nil {
		t.Error("a cancelled audit returned a report")
	}
}

// A host that does not resolve is a finding that says so, without the
// address of the server's own resolver.
func TestUnresolvedHostFindingHidesTheResolver(t *testing.T) {
	a := &Auditor{Scheme: "https", Timeout: 2 * time.Second, Client: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: "acme.invalid",
				Server: "10.255.255.53:53", IsNotFound: true}}
		}}}}
	rep, err := a.Audit(context.Background(), "acme.invalid")
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, f := range rep.Findings {
		titles = append(titles, f.Title)
		if strings.Contains(f.Title, "10.255.255.53") {
			t.Errorf("finding %s names the resolver: %q", f.ID, f.Title)
		}
	}
	if !strings.Contains(strings.Join(titles, "\n"), "the host name acme.invalid does not resolve") {
		t.Errorf("findings %q do not say the name does not resolve", titles)
	}
}
