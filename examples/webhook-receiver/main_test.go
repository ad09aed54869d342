package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/webhook"
)

const (
	setupTest = `{"id":"evt_1","event":"webhook_test","timestamp":"2026-11-22T10:00:00Z","data":{"webhook_id":"wh_1"}}`
	change    = `{"id":"evt_2","event":"ai_visibility_change","timestamp":"2026-11-22T10:00:00Z","data":{"domain":"example.com","visibility_score":72}}`
)

func newSecret(t *testing.T) string {
	t.Helper()
	s, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// post sends body to url with the given headers and returns the status.
func post(t *testing.T, c *http.Client, url string, h http.Header, body string) int {
	t.Helper()
	code, err := send(c, url, h, body)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func send(c *http.Client, url string, h http.Header, body string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// headers signs a delivery as aivis does, with secrets (the current first).
func headers(t *testing.T, id, body string, secrets ...string) http.Header {
	t.Helper()
	s, err := webhook.NewSigner(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	s.Headers(h, id, time.Now(), []byte(body))
	return h
}

// recorder collects the events a receiver handles and its log.
type recorder struct {
	mu   sync.Mutex
	ids  []string
	fail int // fail the next fail events
	log  bytes.Buffer
}

func (rc *recorder) act(ev webhook.Event) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.fail > 0 {
		rc.fail--
		return errors.New("database unavailable")
	}
	rc.ids = append(rc.ids, ev.ID)
	return nil
}

func (rc *recorder) Write(p []byte) (int, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.log.Write(p)
}

func (rc *recorder) handled() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.ids)
}

func (rc *recorder) logged() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.log.String()
}

func newReceiver(t *testing.T, secret string) (*recorder, *httptest.Server) {
	t.Helper()
	rc := &recorder{}
	h, err := newHandler(secret, slog.New(slog.NewTextHandler(rc, nil)), rc.act)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return rc, srv
}

func TestReceiver(t *testing.T) {
	secret := newSecret(t)
	rc, srv := newReceiver(t, secret)
	c := srv.Client()

	if code := post(t, c, srv.URL, headers(t, "evt_1", setupTest, secret), setupTest); code != http.StatusOK {
		t.Fatalf("the webhook_test setup payload: %d", code)
	}
	if code := post(t, c, srv.URL+"/any/path", headers(t, "evt_2", change, secret), change); code != http.StatusOK {
		t.Fatalf("an event: %d", code)
	}
	// A retry: same webhook-id, a new timestamp and signature.
	if code := post(t, c, srv.URL, headers(t, "evt_2", change, secret), change); code != http.StatusOK {
		t.Fatalf("a repeated delivery must still get 200: %d", code)
	}
	if got := rc.handled(); !slices.Equal(got, []string{"evt_1", "evt_2"}) {
		t.Fatalf("handled %v, want each event once", got)
	}
	log := rc.logged()
	for _, want := range []string{"setup test received", "event=ai_visibility_change", "id=evt_2", "duplicate delivery ignored"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}

	other := newSecret(t)
	tampered := headers(t, "evt_3", change, secret)
	stale := http.Header{}
	s, _ := webhook.NewSigner(secret)
	s.Headers(stale, "evt_3", time.Now().Add(-10*time.Minute), []byte(change))
	for _, tc := range []struct {
		name string
		h    http.Header
		body string
		want int
	}{
		{"another secret", headers(t, "evt_3", change, other), change, http.StatusUnauthorized},
		{"tampered body", tampered, strings.Replace(change, "72", "99", 1), http.StatusUnauthorized},
		{"tampered id", func() http.Header { h := tampered.Clone(); h.Set(webhook.HeaderID, "evt_4"); return h }(), change, http.StatusUnauthorized},
		{"ten minutes old", stale, change, http.StatusUnauthorized},
		{"unsigned", http.Header{}, change, http.StatusBadRequest},
		{"signed, not JSON", headers(t, "evt_5", "hello", secret), "hello", http.StatusBadRequest},
	} {
		if code := post(t, c, srv.URL, tc.h, tc.body); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
	if got := rc.handled(); len(got) != 2 {
		t.Fatalf("refused deliveries were handled: %v", got)
	}

	// During a secret rotation aivis signs with both secrets.
	next := newSecret(t)
	rotated := strings.Replace(change, "evt_2", "evt_6", 1)
	if code := post(t, c, srv.URL, headers(t, "evt_6", rotated, next, secret), rotated); code != http.StatusOK {
		t.Fatalf("a delivery signed with the new and the old secret: %d", code)
	}
}

// A delivery whose handling fails gets 500 and is handled when retried.
func TestReceiverRetryAfterFailure(t *testing.T) {
	secret := newSecret(t)
	rc, srv := newReceiver(t, secret)
	rc.fail = 1
	if code := post(t, srv.Client(), srv.URL, headers(t, "evt_2", change, secret), change); code != http.StatusInternalServerError {
		t.Fatalf("failed handling: %d", code)
	}
	if code := post(t, srv.Client(), srv.URL, headers(t, "evt_2", change, secret), change); code != http.StatusOK {
		t.Fatalf("the retry: %d", code)
	}
	if code := post(t, srv.Client(), srv.URL, headers(t, "evt_2", change, secret), change); code != http.StatusOK {
		t.Fatalf("a repeat: %d", code)
	}
	if got := rc.handled(); !slices.Equal(got, []string{"evt_2"}) {
		t.Fatalf("handled %v", got)
	}
}

// Concurrent copies of one delivery are handled once.
func TestReceiverConcurrentDuplicates(t *testing.T) {
	secret := newSecret(t)
	rc, srv := newReceiver(t, secret)
	h := headers(t, "evt_2", change, secret)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if code, err := send(srv.Client(), srv.URL, h.Clone(), change); err != nil || code != http.StatusOK {
				t.Errorf("status %d, %v", code, err)
			}
		})
	}
	wg.Wait()
	if got := rc.handled(); len(got) != 1 {
		t.Fatalf("handled %v, want once", got)
	}
}

func TestSeenIsBounded(t *testing.T) {
	s := newSeen(2)
	for _, id := range []string{"a", "b", "c"} {
		if !s.add(id) {
			t.Fatalf("%s not new", id)
		}
	}
	if s.add("b") || s.add("c") {
		t.Fatal("the newest ids should be remembered")
	}
	if !s.add("a") {
		t.Fatal("the oldest id should be forgotten")
	}
	if len(s.ids) != 2 || len(s.ring) != 2 {
		t.Fatalf("%d ids in %d slots, want 2", len(s.ids), len(s.ring))
	}
	// Forgetting and adding again keeps the bound and the order.
	s.forget("c")
	if !s.add("c") || s.add("a") {
		t.Fatal("forget")
	}
	if len(s.ids) != 2 {
		t.Fatalf("%d ids, want 2", len(s.ids))
	}
	for i := range 1000 {
		s.add(string(rune('A' + i)))
	}
	if len(s.ids) != 2 || len(s.ring) != 2 {
		t.Fatalf("%d ids in %d slots, want 2", len(s.ids), len(s.ring))
	}
}

// startRun runs the program in-process and returns its address.
func startRun(t *testing.T, args []string, secret string) (addr string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, secret, pw); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("run: %v (%v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	return strings.TrimSpace(strings.TrimPrefix(line, "listening on ")), func() error { cancel(); return <-done }
}

func TestRun(t *testing.T) {
	secret := newSecret(t)
	for _, tc := range []struct {
		args   []string
		secret string
	}{
		{nil, ""},
		{nil, "whsec_short"},
		{[]string{"-no-such-flag"}, secret},
		{[]string{"-tls-cert", "cert.pem"}, secret},
		{[]string{"-addr", "no-such-host.invalid:0"}, secret},
	} {
		if err := run(context.Background(), tc.args, tc.secret, io.Discard); err == nil {
			t.Errorf("run(%q, %q) started", tc.args, tc.secret)
		}
	}

	if err := run(context.Background(), []string{"-h"}, "", io.Discard); err != nil {
		t.Errorf("-h: %v", err)
	}

	addr, stop := startRun(t, []string{"-addr", "127.0.0.1:0"}, secret)
	if code := post(t, http.DefaultClient, "http://"+addr+"/", headers(t, "evt_1", setupTest, secret), setupTest); code != http.StatusOK {
		t.Fatalf("the setup test to the running receiver: %d", code)
	}
	if code := post(t, http.DefaultClient, "http://"+addr+"/", headers(t, "evt_2", change, newSecret(t)), change); code != http.StatusUnauthorized {
		t.Fatalf("a bad signature to the running receiver: %d", code)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRunTLS(t *testing.T) {
	secret := newSecret(t)
	certFile, keyFile, pool := selfSigned(t)
	addr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-tls-cert", certFile, "-tls-key", keyFile}, secret)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if code := post(t, c, "https://"+addr+"/", headers(t, "evt_1", setupTest, secret), setupTest); code != http.StatusOK {
		t.Fatalf("the setup test over HTTPS: %d", code)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "webhook-receiver test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, pool
}
