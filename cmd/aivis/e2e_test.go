package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
)

func budgetStatus(t *testing.T, s *server, k key) client.BudgetStatus {
	t.Helper()
	r := s.do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)})
	if r.Status != 200 {
		t.Fatalf("budget-status: %d %s\n%s", r.Status, r.Body, s.Stderr)
	}
	var env client.Envelope[client.BudgetStatus]
	r.decode(t, &env)
	if !env.Success {
		t.Fatalf("budget-status: success is false: %s", r.Body)
	}
	return env.Data
}

func TestTransport(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir, "--http-addr", "127.0.0.1:0")

	// The self-signed certificate was made in the data directory and its
	// printed fingerprint is the certificate's.
	pemBytes, err := os.ReadFile(filepath.Join(dir, "tls", "cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemBytes)
	sum := sha256.Sum256(block.Bytes)
	var hexed []string
	for _, b := range sum {
		hexed = append(hexed, fmt.Sprintf("%02X", b))
	}
	if !strings.Contains(s.Stdout.String(), strings.Join(hexed, ":")) {
		t.Errorf("the banner does not print the certificate's SHA-256 fingerprint:\n%s", s.Stdout)
	}
	cert, _ := x509.ParseCertificate(block.Bytes)
	if cert.VerifyHostname("localhost") != nil || cert.VerifyHostname("127.0.0.1") != nil {
		t.Errorf("certificate does not cover localhost and 127.0.0.1: %v %v", cert.DNSNames, cert.IPAddresses)
	}

	// TLS 1.1 is refused; 1.2 and 1.3 work.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	for _, c := range []struct {
		version uint16
		ok      bool
	}{{tls.VersionTLS11, false}, {tls.VersionTLS12, true}, {tls.VersionTLS13, true}} {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: c.version, MaxVersion: c.version}}}
		res, err := hc.Get(s.URL + "/healthz")
		if res != nil {
			res.Body.Close()
		}
		if (err == nil) != c.ok {
			t.Errorf("TLS version %x: err=%v, want ok=%v", c.version, err, c.ok)
		}
	}

	// Plain HTTP is answered 403 HTTPS_REQUIRED in the envelope.
	if s.HTTPURL == "" {
		t.Fatalf("no plain-HTTP listener in the banner:\n%s", s.Stdout)
	}
	res, err := http.Get(s.HTTPURL + "/api/v1/ai/budget-status")
	if err != nil {
		t.Fatal(err)
	}
	var body [512]byte
	n, _ := res.Body.Read(body[:])
	res.Body.Close()
	if res.StatusCode != 403 || !strings.Contains(string(body[:n]), `"HTTPS_REQUIRED"`) {
		t.Errorf("plain HTTP: %d %s", res.StatusCode, body[:n])
	}

	// Restarting keeps the certificate.
	s.stop()
	s2 := start(t, dir)
	if strings.Contains(s2.Stdout.String(), "made now") {
		t.Errorf("the certificate was made again on restart")
	}
	if r := s2.do(t, req{method: "GET", path: "/healthz"}); r.Status != 200 {
		t.Errorf("healthz: %d", r.Status)
	}
	doc, err := os.ReadFile("../../core/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if r := s2.do(t, req{method: "GET", path: "/openapi.json"}); r.Status != 200 || !bytes.Equal(r.Body, doc) {
		t.Errorf("GET /openapi.json: %d, %d bytes; want the checked-in document (%d bytes)", r.Status, len(r.Body), len(doc))
	}
}

func TestTrustedProxy(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir, "--http-addr", "127.0.0.1:0", "--trusted-proxies", "127.0.0.0/8")
	r, _ := http.NewRequest("GET", s.HTTPURL+"/api/v1/ai/budget-status", nil)
	r.Header.Set("X-Forwarded-Proto", "https")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	// Forwarded by a trusted proxy as HTTPS: it reaches authentication.
	if res.StatusCode != 401 {
		t.Errorf("forwarded https from a trusted proxy: %d, want 401", res.StatusCode)
	}
	r.Header.Set("X-Forwarded-Proto", "http")
	res, err = http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Errorf("forwarded http: %d, want 403", res.StatusCode)
	}
}

func TestAuthentication(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "starter", false)
	k := newKey(t, dir, a.ID)
	if !strings.HasPrefix(k.Key, "svc_") || len(k.Key) != 44 || len(k.Secret) != 64 {
		t.Fatalf("key %q secret %q: wrong form", k.Key, k.Secret)
	}
	s := start(t, dir)
	bs := "/api/v1/ai/budget-status"
	cases := []struct {
		name   string
		header map[string]string
		path   string
		status int
		code   string
	}{
		{"no credentials", nil, bs, 401, "MISSING_CREDENTIALS"},
		{"key without secret", map[string]string{"X-API-Key": k.Key}, bs, 401, "MISSING_CREDENTIALS"},
		{"wrong secret", with(keyed(k), "X-API-Secret", strings.Repeat("a", 64)), bs, 401, "INVALID_CREDENTIALS"},
		{"malformed key", with(keyed(k), "X-API-Key", "svc_short"), bs, 401, "INVALID_CREDENTIALS"},
		{"unknown key", with(keyed(k), "X-API-Key", "svc_"+strings.Repeat("Z", 40)), bs, 401, "INVALID_CREDENTIALS"},
		{"valid", keyed(k), bs, 200, ""},
		{"bearer missing", nil, "/v1/visibility?domain=example.com", 401, "MISSING_CREDENTIALS"},
		{"bearer wrong scheme", map[string]string{"Authorization": "Basic " + k.Key}, "/v1/visibility?domain=example.com", 401, "INVALID_CREDENTIALS"},
		{"bearer valid", bearer(k), "/v1/visibility?domain=example.com", 404, "NOT_FOUND"},
		{"bearer on key-and-secret interface", bearer(k), bs, 401, "MISSING_CREDENTIALS"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.do(t, req{method: "GET", path: c.path, header: c.header})
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Body)
			}
			if c.code != "" {
				if got := r.errorCode(t); got != c.code {
					t.Errorf("code %s, want %s", got, c.code)
				}
			}
		})
	}

	// Revoked from the CLI while the server runs: refused from the next request on.
	cli(t, dir, nil, "key", "revoke", k.ID)
	r := s.do(t, req{method: "GET", path: bs, header: keyed(k)})
	if r.Status != 401 || r.errorCode(t) != "KEY_REVOKED" {
		t.Errorf("revoked key: %d %s", r.Status, r.Body)
	}
	r = s.do(t, req{method: "GET", path: "/v1/visibility?domain=example.com", header: bearer(k)})
	if r.Status != 401 || r.errorCode(t) != "KEY_REVOKED" {
		t.Errorf("revoked key on the bearer interface: %d %s", r.Status, r.Body)
	}

	// A key that expires: valid before, KEY_EXPIRED after.
	exp := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339)
	ek := newKey(t, dir, a.ID, "--expires", exp)
	if ek.ExpiresAt == nil || *ek.ExpiresAt != exp {
		t.Errorf("expires_at %v, want %s", ek.ExpiresAt, exp)
	}
	if r := s.do(t, req{method: "GET", path: bs, header: keyed(ek)}); r.Status != 200 {
		t.Errorf("key before expiry: %d %s", r.Status, r.Body)
	}
	time.Sleep(time.Until(time.Now().Add(2*time.Second).Truncate(time.Second)) + 1100*time.Millisecond)
	if r := s.do(t, req{method: "GET", path: bs, header: keyed(ek)}); r.Status != 401 || r.errorCode(t) != "KEY_EXPIRED" {
		t.Errorf("expired key: %d %s", r.Status, r.Body)
	}

	// Scopes: a budget-only key cannot create content requests.
	sk := newKey(t, dir, a.ID, "--scopes", "budget:read")
	r = s.do(t, req{method: "POST", path: "/api/v1/ai/content-requests", header: keyed(sk), body: `{"domain":"example.com","budget":1}`})
	if r.Status != 403 || r.errorCode(t) != "INSUFFICIENT_SCOPE" {
		t.Errorf("missing scope: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "GET", path: "/v1/visibility?domain=example.com", header: bearer(sk)}); r.Status != 403 {
		t.Errorf("missing visibility:read: %d %s", r.Status, r.Body)
	}
	if msg := cliFails(t, dir, "key", "create", "--account", a.ID, "--name", "x", "--scopes", "everything"); !strings.Contains(msg, "unknown scope") {
		t.Errorf("unknown scope: %s", msg)
	}
	if msg := cliFails(t, dir, "key", "create", "--account", a.ID, "--name", "x", "--expires", "2001-01-01"); !strings.Contains(msg, "future") {
		t.Errorf("past expiry: %s", msg)
	}
}

func TestFailedAuthenticationIsLimitedPerAddress(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "starter", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--auth-failures-per-minute", "5")
	awayFromMinuteEnd(10 * time.Second)
	bad := with(keyed(k), "X-API-Secret", strings.Repeat("b", 64))
	for i := range 5 {
		r := s.do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: bad})
		if r.Status != 401 {
			t.Fatalf("attempt %d: %d", i+1, r.Status)
		}
		if got := r.Header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(4-i) {
			t.Errorf("attempt %d: X-RateLimit-Remaining %s, want %d", i+1, got, 4-i)
		}
	}
	// Now even the right credentials are refused from this address.
	r := s.do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)})
	if r.Status != 429 || r.errorCode(t) != "RATE_LIMIT_EXCEEDED" || r.Header.Get("Retry-After") == "" {
		t.Errorf("after 5 failures: %d %s", r.Status, r.Body)
	}
}

func TestRateLimits(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "starter", false)
	k1 := newKey(t, dir, a.ID)
	k2 := newKey(t, dir, a.ID)
	s := start(t, dir)
	awayFromMinuteEnd(25 * time.Second)

	// 200 concurrent requests over both interfaces and two keys of one
	// account: exactly 60 (the Starter per-minute limit) pass.
	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			var r resp
			if i%2 == 0 {
				r = s.do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed([]key{k1, k2}[i%4/2])})
			} else {
				r = s.do(t, req{method: "GET", path: "/v1/visibility?domain=example.com", header: bearer(k2)})
			}
			switch r.Status {
			case 200, 404:
				ok.Add(1)
			case 429:
				limited.Add(1)
			default:
				t.Errorf("status %d: %s", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 60 || limited.Load() != 140 {
		t.Fatalf("passed %d, limited %d; want 60 and 140", ok.Load(), limited.Load())
	}

	// The 429: code, retry_after and Retry-After agree with the message.
	r := s.do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k1)})
	var e client.ErrorEnvelope
	r.decode(t, &e)
	if r.Status != 429 || e.Error.Code != "RATE_LIMIT_EXCEEDED" || e.Error.RetryAfter == nil {
		t.Fatalf("429: %d %s", r.Status, r.Body)
	}
	ra := *e.Error.RetryAfter
	reset, _ := strconv.ParseInt(r.Header.Get("X-RateLimit-Reset"), 10, 64)
	if ra < 1 || ra > 60 || r.Header.Get("Retry-After") != strconv.Itoa(ra) ||
		!strings.Contains(e.Error.Message, fmt.Sprintf("retry after %d seconds", ra)) || r.Header.Get("X-RateLimit-Remaining") != "0" ||
		reset%60 != 0 {
		t.Errorf("429 details disagree: retry_after %d, Retry-After %s, reset %d, message %q", ra,
			r.Header.Get("Retry-After"), reset, e.Error.Message)
	}

	// A tier change from the CLI applies at once: Professional allows 120.
	cli(t, dir, nil, "account", "set-tier", a.ID, "professional")
	st := budgetStatus(t, s, k1)
	if st.QuotaTier != "Professional" || st.RateLimits.PerMinute != 120 || st.Usage.RequestsThisMinute != 61 || st.Remaining.ThisMinute != 59 {
		t.Errorf("after set-tier: %+v", st)
	}
	// Refused requests counted in no window.
	if st.Usage.RequestsThisHour != 61 || st.Usage.RequestsToday != 61 {
		t.Errorf("refused requests were counted: hour %d, day %d, want 61", st.Usage.RequestsThisHour, st.Usage.RequestsToday)
	}

	// Counts survive a restart.
	s.stop()
	s = start(t, dir)
	st = budgetStatus(t, s, k1)
	if st.Usage.RequestsToday != 62 || st.Usage.RequestsThisHour != 62 {
		t.Errorf("after restart: today %d, hour %d; want 62", st.Usage.RequestsToday, st.Usage.RequestsThisHour)
	}
}

func TestBudgetStatus(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, queueOnly...) // the request stays queued, its budget reserved
	awayFromMinuteEnd(5 * time.Second)
	s.do(t, req{method: "GET", path: "/v1/visibility?domain=example.com", header: bearer(k)})
	st := budgetStatus(t, s, k)
	want := client.RateLimits{PerMinute: 300, PerHour: 15000, PerDay: 150000}
	if st.QuotaTier != "Enterprise" || st.RateLimits != want {
		t.Errorf("tier %s limits %+v", st.QuotaTier, st.RateLimits)
	}
	if st.Usage.RequestsThisMinute != 2 || st.Remaining.ThisMinute != 298 || st.Remaining.ThisHour != 15000-st.Usage.RequestsThisHour ||
		st.Remaining.Today != 150000-st.Usage.RequestsToday {
		t.Errorf("usage %+v remaining %+v", st.Usage, st.Remaining)
	}
	if st.Budget.MonthlyLimit != client.Dollars(100000) || st.Budget.MaxPerRequest != client.Dollars(20000) ||
		st.Budget.Remaining != client.Dollars(100000) || st.ActiveRequests.Limit != 100 || st.Budget.Month != time.Now().UTC().Format("2006-01") {
		t.Errorf("budget %+v active %+v", st.Budget, st.ActiveRequests)
	}
	r := s.do(t, req{method: "POST", path: "/api/v1/ai/content-requests", header: keyed(k), body: `{"domain":"example.com","budget":250.75}`})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	st = budgetStatus(t, s, k)
	if st.Budget.Reserved != client.Dollars(250.75) || st.Budget.Committed != client.Dollars(250.75) ||
		st.Budget.Remaining != client.Dollars(100000-250.75) || st.ActiveRequests.Current != 1 {
		t.Errorf("after a request: budget %+v active %+v", st.Budget, st.ActiveRequests)
	}
}
