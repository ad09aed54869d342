package readiness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
		"/about":       text("text/html", `<html><body><p>About us</p></body></html>`),
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
	for _, f := range r.Findings {
		if f.Severity != Info {
			t.Errorf("finding on a perfect site: %+v", f)
		}
	}
	if len(r.Pages) != 2 || !r.Pages[0].OrganizationSameAs || r.Pages[0].Words != 181 || !r.LLMsTxt.WellFormed || r.Sitemap.URLs != 1 {
		t.Errorf("%+v", r)
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
	if f := has(r, "crawlers_blocked"); f == nil || f.Severity != Warning || !strings.Contains(f.Title, "GPTBot, CCBot") {
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
		check   func(t *testing.T, r Report)
	}{
		{name: "JavaScript shell", finding: "content_needs_javascript", sev: Critical, edit: func(m map[string]http.HandlerFunc) {
			m["/"] = text("text/html", `<html lang="en"><head><title>App</title></head><body><div id="root"></div><script src="/app.js"></script></body></html>`)
		}, check: func(t *testing.T, r Report) {
			if r.Points["content"] != 0 {
				t.Errorf("points %v", r.Points)
			}
		}},
		{name: "redirect loop", finding: "home_redirect_loop", sev: Critical, edit: func(m map[string]http.HandlerFunc) {
			m["/"] = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/a", http.StatusFound) }
			m["/a"] = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/", http.StatusMovedPermanently) }
		}, check: func(t *testing.T, r Report) {
			if r.Score != 0 || has(r, "site_unreachable") == nil {
				t.Errorf("an unreadable site: score %d", r.Score)
			}
		}},
		{name: "too many redirects", finding: "home_too_many_redirects", sev: Critical, edit: func(m map[string]http.HandlerFunc) {
			for i := range 7 {
				p := "/" + strings.Repeat("r", i)
				m[p] = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, p+"r", http.StatusFound) }
			}
		}},
		{name: "page that never answers", finding: "home_timeout", sev: Critical, auditor: func(a *Auditor) { a.Timeout = 200 * time.Millisecond },
			edit: func(m map[string]http.HandlerFunc) {
				m["/"] = func(w http.ResponseWriter, r *http.Request) {
					select {
					case <-r.Context().Done():
					case <-time.After(5 * time.Second):
					}
				}
			}},
		{name: "huge page", finding: "page_too_large", sev: Warning, auditor: func(a *Auditor) { a.MaxBytes = 1 << 20 },
			edit: func(m map[string]http.HandlerFunc) {
				m["/"] = text("text/html", goodHome("")+strings.Repeat("<p>filler</p>", 400_000))
			}, check: func(t *testing.T, r Report) {
				if r.Points["metadata"] != 20 {
					t.Errorf("the head of a huge page was not read: %v", r.Points)
				}
			}},
		{name: "not HTML", finding: "home_not_html", sev: Critical, edit: func(m map[string]http.HandlerFunc) {
			m["/"] = text("application/pdf", "%PDF-1.7")
		}},
		{name: "malformed llms.txt", finding: "llms_txt_malformed", sev: Warning, edit: func(m map[string]http.HandlerFunc) {
			m["/llms.txt"] = text("text/plain", "Acme\n## Docs\n- Guide at https://acme.example/guide\n")
		}, check: func(t *testing.T, r Report) {
			if r.LLMsTxt.WellFormed || len(r.LLMsTxt.Problems) != 2 || r.Points["llms_txt"] != 5 {
				t.Errorf("%+v %v", r.LLMsTxt, r.Points)
			}
		}},
		{name: "llms.txt served by an app's fallback", finding: "llms_txt_missing", sev: Warning, edit: func(m map[string]http.HandlerFunc) {
			m["/llms.txt"] = text("text/html", "<!doctype html><html><body>app</body></html>")
		}},
		{name: "robots.txt 503", finding: "robots_txt_server_error", sev: Critical, edit: func(m map[string]http.HandlerFunc) {
			m["/robots.txt"] = func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }
		}, check: func(t *testing.T, r Report) {
			for _, c := range r.Crawlers {
				if c.Allowed {
					t.Errorf("%s allowed while robots.txt answers 503", c.Agent)
				}
			}
			if r.Points["crawlers"] != 0 || r.Score != 65 {
				t.Errorf("score %d, points %v", r.Score, r.Points)
			}
		}},
		{name: "no robots.txt", finding: "", edit: func(m map[string]http.HandlerFunc) { delete(m, "/robots.txt") },
			check: func(t *testing.T, r Report) {
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
			if time.Since(start) > 4*time.Second {
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
