// Package trafficfake is a fake of the operators' IP list servers
// (openai.com/gptbot.json, Google's ipranges, ...) for tests: an httptest
// server answering each list's path by a script, in the shapes sources.md
// 4a saw in the field (creationTime without a time zone, mixed v4 and v6,
// Common Crawl's extra keys and Z, /32 host routes) and as they fail (404,
// 5xx, an HTML error page, an empty list). It checks the requests it gets
// by its own rules, the ones a well-behaved list client keeps.
package trafficfake

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// The shapes of lists seen in the field.
const (
	// TimezonelessList: Google's and OpenAI's creationTime, microseconds
	// and no zone; v6 and v4 mixed; a /32.
	TimezonelessList = `{"creationTime":"2026-01-14T15:45:48.000000",
 "prefixes":[{"ipv6Prefix":"2001:4860:4801:10::/64"},{"ipv4Prefix":"66.249.64.0/27"},{"ipv4Prefix":"44.208.221.197/32"}]}`
	// CommonCrawlList: extra keys, a Z time, a v6 /60 and host routes.
	CommonCrawlList = `{"synctoken":"20260804124020","creationTime":"2026-08-04T12:40:20Z","notes":"CCBot egress",
 "prefixes":[{"ipv6Prefix":"2600:1f28:365:80b0::/60"},{"ipv4Prefix":"18.97.9.168/29"},{"ipv4Prefix":"98.85.178.216/32"}]}`
	// OpenAIList: IPv4 only, as OpenAI's files are.
	OpenAIList = `{
  "creationTime": "2025-05-22T11:51:00.000000",
  "prefixes": [
    {"ipv4Prefix": "52.230.152.0/24"},
    {"ipv4Prefix": "20.171.206.0/24"}
  ]
}`
	// ReplacementList: a later OpenAI list, other ranges.
	ReplacementList = `{"creationTime":"2026-11-20T08:00:00.000000","prefixes":[{"ipv4Prefix":"198.51.100.0/24"}]}`
	// EmptyList: a list with no prefixes.
	EmptyList = `{"creationTime":"2026-01-14T15:45:48.000000","prefixes":[]}`
	// HTMLErrorPage: what a CDN or a login wall serves instead.
	HTMLErrorPage = `<!DOCTYPE html><html><head><title>Error</title></head><body><h1>Something went wrong</h1></body></html>`
)

// Response is one scripted answer.
type Response struct {
	Status      int
	ContentType string
	Body        string
}

// List answers 200 with body as JSON.
func List(body string) Response {
	return Response{Status: http.StatusOK, ContentType: "application/json", Body: body}
}

// Status answers code with a short plain-text body.
func Status(code int) Response {
	return Response{Status: code, ContentType: "text/plain; charset=utf-8", Body: http.StatusText(code) + "\n"}
}

// HTML answers code with HTMLErrorPage, served as text/html.
func HTML(code int) Response {
	return Response{Status: code, ContentType: "text/html; charset=utf-8", Body: HTMLErrorPage}
}

// HTMLAsJSON answers 200 with HTMLErrorPage, served as application/json.
func HTMLAsJSON() Response {
	return Response{Status: http.StatusOK, ContentType: "application/json", Body: HTMLErrorPage}
}

// Server serves scripted lists. Each path has a sequence of responses:
// its n-th request gets the n-th, and the last repeats. A path not in the
// script answers 404 and is a violation.
type Server struct {
	*httptest.Server

	mu         sync.Mutex
	script     map[string][]Response
	served     map[string]int
	violations []string
}

// New starts a server answering script (path -> responses). Close it.
func New(script map[string][]Response) *Server {
	s := &Server{script: make(map[string][]Response), served: make(map[string]int)}
	for p, rs := range script {
		s.script[p] = rs
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Script replaces path's responses and restarts its count.
func (s *Server) Script(path string, rs ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script[path] = rs
	s.served[path] = 0
}

// ListURL is the URL of path on the server.
func (s *Server) ListURL(path string) string { return s.URL + path }

// Requests is how many requests path got.
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served[path]
}

// Violations are the requests that broke the rules: a method other than
// GET, a body, credentials (Authorization or Cookie headers), an Accept
// header that does not take JSON, a path not in the script.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	for _, v := range check(r, body) {
		s.violations = append(s.violations, r.URL.Path+": "+v)
	}
	rs, ok := s.script[r.URL.Path]
	n := s.served[r.URL.Path]
	s.served[r.URL.Path] = n + 1
	if !ok {
		s.violations = append(s.violations, r.URL.Path+": not a list of the script")
	}
	s.mu.Unlock()

	resp := Status(http.StatusNotFound)
	if len(rs) > 0 {
		resp = rs[min(n, len(rs)-1)]
	}
	w.Header().Set("Content-Type", resp.ContentType)
	w.WriteHeader(resp.Status)
	io.WriteString(w, resp.Body)
}

// check applies the rules to one request.
func check(r *http.Request, body []byte) []string {
	var v []string
	if r.Method != http.MethodGet {
		v = append(v, fmt.Sprintf("method %s, not GET", r.Method))
	}
	if len(body) > 0 {
		v = append(v, "a request body")
	}
	for _, h := range []string{"Authorization", "Cookie"} {
		if r.Header.Get(h) != "" {
			v = append(v, "credentials sent ("+h+")")
		}
	}
	if !acceptsJSON(r.Header.Get("Accept")) {
		v = append(v, fmt.Sprintf("Accept %q does not take JSON", r.Header.Get("Accept")))
	}
	return v
}

func acceptsJSON(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && (mt == "application/json" || mt == "*/*" || mt == "application/*") {
			return true
		}
	}
	return false
}
