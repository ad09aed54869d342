package api

import (
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// CORS: the methods and headers the API takes, the headers of its answers
// a browser's page may read, and how long a browser may keep a preflight's
// answer.
const (
	corsMethods = "GET, POST, PUT, PATCH, DELETE"
	corsHeaders = "Authorization, Content-Type, Idempotency-Key, X-API-Key, X-API-Secret, X-Request-Id"
	corsExposed = "X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit, RateLimit-Policy, " +
		"Retry-After, WWW-Authenticate, Location, Idempotent-Replayed"
	corsMaxAge = 2 * 60 * 60 // seconds: the most Chromium keeps
)

// hstsValue is Strict-Transport-Security's: browsers go to HTTPS alone
// for a year.
const hstsValue = "max-age=31536000"

// isPreflight reports whether r is a browser's CORS preflight.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != ""
}

// apiPath reports whether path is the API's (not the dashboard's).
func apiPath(path string) bool {
	return path == "/v1" || strings.HasPrefix(path, "/v1/") || path == "/api/v1/ai" || strings.HasPrefix(path, "/api/v1/ai/") ||
		path == "/openapi.json"
}

// edges answers a preflight to the API before authentication, so that it
// is never counted as a failed one: 204, with the CORS headers when its
// origin is allowed (cors_allowed_origins), none otherwise. An allowed
// origin's requests get Access-Control-Allow-Origin on their answers, and
// the headers a page may read. Over a configured certificate (not the
// self-signed one), every answer carries Strict-Transport-Security.
func (s *Server) edges(hsts bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hsts {
			w.Header().Set("Strict-Transport-Security", hstsValue)
		}
		if !apiPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		origin := r.Header.Get("Origin")
		allowed := origin != "" && slices.Contains(s.cfg.CORSAllowedOrigins, origin)
		if len(s.cfg.CORSAllowedOrigins) > 0 {
			w.Header().Add("Vary", "Origin")
		}
		if isPreflight(r) {
			if allowed {
				h := w.Header()
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Allow-Methods", corsMethods)
				h.Set("Access-Control-Allow-Headers", corsHeaders)
				h.Set("Access-Control-Max-Age", strconv.Itoa(corsMaxAge))
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if allowed {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Access-Control-Expose-Headers", corsExposed)
		}
		next.ServeHTTP(w, r)
	})
}

// httpsURL is where a request to the plain-HTTP listener should have gone:
// the public URL, or the request's host on the HTTPS listener's port.
func (s *Server) httpsURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return strings.TrimSuffix(s.cfg.PublicURL, "/") + r.URL.Path
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if strings.Contains(host, ":") { // an IPv6 address
		host = "[" + host + "]"
	}
	if s.cfg.HTTPSPort != "" && s.cfg.HTTPSPort != "443" {
		host += ":" + s.cfg.HTTPSPort
	}
	return "https://" + host + r.URL.Path
}
