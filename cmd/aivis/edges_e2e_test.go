package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// preflight sends a browser's CORS preflight for method on path.
func (s *server) preflight(t *testing.T, origin, method, path, headers string) *http.Response {
	t.Helper()
	r, err := http.NewRequest(http.MethodOptions, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Origin", origin)
	r.Header.Set("Access-Control-Request-Method", method)
	r.Header.Set("Access-Control-Request-Headers", headers)
	res, err := s.HTTP.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// TestCORS: with cors_allowed_origins, a preflight from an allowed origin
// is answered 204 with the methods and headers the API takes, before
// authentication: 30 of them (the guard locks an address out after 20
// failed authentications a minute) leave a real request from the same
// address served, with Access-Control-Allow-Origin and the headers a page
// may read. A disallowed origin gets no CORS header, preflight or not.
func TestCORS(t *testing.T) {
	dir := t.TempDir()
	const app, evil = "https://app.example", "https://evil.example"
	s := start(t, dir, "--cors-allowed-origins", app+",http://localhost:3000")
	a := newAccount(t, dir, "starter", false)
	k := newKey(t, dir, a.ID)

	for i := range 30 {
		res := s.preflight(t, app, "POST", "/v1/visibility", "authorization,content-type")
		h := res.Header
		if res.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != app || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
			!strings.Contains(h.Get("Access-Control-Allow-Methods"), "PATCH") || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Content-Type") || h.Get("Access-Control-Max-Age") != "7200" {
			t.Fatalf("preflight %d: %d %v", i+1, res.StatusCode, h)
		}
	}
	res := s.preflight(t, app, "GET", "/api/v1/ai/budget-status", "x-api-key,x-api-secret")
	if res.StatusCode != 204 || res.Header.Get("Access-Control-Allow-Origin") != app || !strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "X-API-Secret") {
		t.Errorf("preflight of the key-and-secret interface: %d %v", res.StatusCode, res.Header)
	}

	r := s.do(t, req{method: "GET", path: "/v1/webhooks", header: with(bearer(k), "Origin", app)})
	if r.Status != 200 || r.Header.Get("Access-Control-Allow-Origin") != app {
		t.Fatalf("the request after 31 preflights: %d, Access-Control-Allow-Origin %q: %s", r.Status, r.Header.Get("Access-Control-Allow-Origin"), r.Body)
	}
	exposed := r.Header.Get("Access-Control-Expose-Headers")
	for _, h := range []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit", "RateLimit-Policy", "Retry-After"} {
		if !strings.Contains(exposed, h) {
			t.Errorf("Access-Control-Expose-Headers %q lacks %s", exposed, h)
		}
	}
	if !strings.Contains(strings.Join(r.Header.Values("Vary"), ","), "Origin") {
		t.Errorf("an answer that depends on Origin has Vary %q", r.Header.Values("Vary"))
	}
	// An error's answer is readable by the page too.
	if r := s.do(t, req{method: "GET", path: "/v1/webhooks", header: map[string]string{"Origin": app}}); r.Status != 401 ||
		r.Header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("unauthenticated from an allowed origin: %d, Access-Control-Allow-Origin %q", r.Status, r.Header.Get("Access-Control-Allow-Origin"))
	}

	res = s.preflight(t, evil, "POST", "/v1/visibility", "authorization")
	for h := range res.Header {
		if strings.HasPrefix(h, "Access-Control-") {
			t.Errorf("a preflight from %s got %s: %v", evil, h, res.Header)
		}
	}
	r = s.do(t, req{method: "GET", path: "/v1/webhooks", header: with(bearer(k), "Origin", evil)})
	for h := range r.Header {
		if r.Status != 200 || strings.HasPrefix(h, "Access-Control-") {
			t.Errorf("a request from %s: %d, %s: %v", evil, r.Status, h, r.Header)
		}
	}
	// The dashboard is no one else's to call.
	dres := s.preflight(t, app, "POST", "/keys", "content-type")
	if dres.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a preflight to the dashboard got Access-Control-Allow-Origin %q", dres.Header.Get("Access-Control-Allow-Origin"))
	}
}

// TestCORSOffByDefault: without cors_allowed_origins no origin gets a CORS
// header, and preflights are still never failed authentications.
func TestCORSOffByDefault(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir)
	a := newAccount(t, dir, "starter", false)
	k := newKey(t, dir, a.ID)
	for i := range 25 {
		res := s.preflight(t, "https://app.example", "GET", "/v1/webhooks", "authorization")
		if res.StatusCode != 204 || res.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight %d without cors_allowed_origins: %d %v", i+1, res.StatusCode, res.Header)
		}
	}
	if r := s.do(t, req{method: "GET", path: "/v1/webhooks", header: with(bearer(k), "Origin", "https://app.example")}); r.Status != 200 ||
		r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("after 25 preflights: %d, Access-Control-Allow-Origin %q", r.Status, r.Header.Get("Access-Control-Allow-Origin"))
	}
}

// plainHint asks the plain-HTTP listener for path and returns its 403's
// message.
func plainHint(t *testing.T, s *server, path string) string {
	t.Helper()
	res, err := http.Get(s.HTTPURL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := resp{Status: res.StatusCode, Header: res.Header, Body: b}
	if r.Status != 403 || r.errorCode(t) != "HTTPS_REQUIRED" {
		t.Fatalf("plain HTTP %s: %d %s", path, r.Status, b)
	}
	if h := res.Header.Get("Strict-Transport-Security"); h != "" {
		t.Errorf("plain HTTP answered Strict-Transport-Security %q", h)
	}
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	r.decode(t, &e)
	return e.Error.Message
}

// TestPlainHTTPNamesTheHTTPSPort: the plain-HTTP listener's 403 names the
// address that serves HTTPS (its port, not the plain listener's), or the
// public URL when one is set.
func TestPlainHTTPNamesTheHTTPSPort(t *testing.T) {
	s := start(t, t.TempDir(), "--http-addr", "127.0.0.1:0")
	u, _ := url.Parse(s.URL)
	_, port, _ := net.SplitHostPort(u.Host)
	hu, _ := url.Parse(s.HTTPURL)
	if want := "https://127.0.0.1:" + port + "/v1/webhooks"; !strings.HasSuffix(plainHint(t, s, "/v1/webhooks"), "send this request to "+want) {
		t.Errorf("the hint %q does not name %s (plain HTTP is %s)", plainHint(t, s, "/v1/webhooks"), want, hu.Host)
	}
	// The URL it names serves.
	if r := s.do(t, req{method: "GET", path: "/healthz"}); r.Status != 200 {
		t.Errorf("healthz over HTTPS: %d", r.Status)
	}

	p := start(t, t.TempDir(), "--http-addr", "127.0.0.1:0", "--public-url", "https://api.example.com/")
	if msg := plainHint(t, p, "/v1/webhooks"); !strings.HasSuffix(msg, "send this request to https://api.example.com/v1/webhooks") {
		t.Errorf("with a public URL the hint is %q", msg)
	}
}

// realCertificate writes a certificate and key for localhost and
// 127.0.0.1, as an operator's would be, where the test client trusts it
// (the data directory's tls/cert.pem), and returns their paths.
func realCertificate(t *testing.T, dataDir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	tdir := filepath.Join(dataDir, "tls")
	if err := os.MkdirAll(tdir, 0o700); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(tdir, "cert.pem"), filepath.Join(tdir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestHSTS: over a configured certificate every HTTPS answer (the API's,
// an error's, the dashboard's, a preflight's) carries
// Strict-Transport-Security for a year, and the plain-HTTP listener's
// none; over the self-signed development certificate, none does.
func TestHSTS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := realCertificate(t, dir)
	s := start(t, dir, "--tls-cert", certFile, "--tls-key", keyFile, "--http-addr", "127.0.0.1:0")
	if !strings.Contains(s.Stdout.String(), "TLS: certificate "+certFile) {
		t.Fatalf("the server does not serve the configured certificate:\n%s", s.Stdout)
	}
	for _, path := range []string{"/healthz", "/v1/webhooks", "/signin"} {
		if r := s.do(t, req{method: "GET", path: path}); r.Header.Get("Strict-Transport-Security") != "max-age=31536000" {
			t.Errorf("GET %s (%d) over a configured certificate: Strict-Transport-Security %q", path, r.Status, r.Header.Get("Strict-Transport-Security"))
		}
	}
	if res := s.preflight(t, "https://app.example", "GET", "/v1/webhooks", ""); res.Header.Get("Strict-Transport-Security") != "max-age=31536000" {
		t.Errorf("a preflight over a configured certificate: Strict-Transport-Security %q", res.Header.Get("Strict-Transport-Security"))
	}
	plainHint(t, s, "/v1/webhooks") // no HSTS over plain HTTP

	d := start(t, t.TempDir())
	for _, path := range []string{"/healthz", "/v1/webhooks"} {
		if r := d.do(t, req{method: "GET", path: path}); r.Header.Get("Strict-Transport-Security") != "" {
			t.Errorf("GET %s over the self-signed certificate: Strict-Transport-Security %q", path, r.Header.Get("Strict-Transport-Security"))
		}
	}
}
