package webhook_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/webhook"
)

// The test vector of the Standard Webhooks reference libraries.
const (
	vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTS     = 1614265330
	vectorBody   = `{"test": 2432232314}`
	vectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestKnownAnswer(t *testing.T) {
	s, err := webhook.NewSigner(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Sign(vectorID, time.Unix(vectorTS, 0), []byte(vectorBody)); got != vectorSig {
		t.Fatalf("Sign = %q, want %q", got, vectorSig)
	}
	v, _ := webhook.NewVerifier(vectorSecret)
	v.Now = func() time.Time { return time.Unix(vectorTS+10, 0) }
	h := http.Header{}
	h.Set(webhook.HeaderID, vectorID)
	h.Set(webhook.HeaderTimestamp, "1614265330")
	h.Set(webhook.HeaderSignature, vectorSig)
	if err := v.Verify(h, []byte(vectorBody)); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	// The bare base64 form of the secret is the same key.
	if _, err := webhook.NewVerifier(strings.TrimPrefix(vectorSecret, "whsec_")); err != nil {
		t.Fatal(err)
	}
}

func signed(t *testing.T, secrets []string, id string, ts time.Time, body string) http.Header {
	t.Helper()
	s, err := webhook.NewSigner(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	s.Headers(h, id, ts, []byte(body))
	return h
}

func TestVerify(t *testing.T) {
	old, _ := webhook.NewSecret()
	cur, _ := webhook.NewSecret()
	other, _ := webhook.NewSecret()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	body := `{"id":"evt_1","event":"webhook_test"}`
	verifier := func(secrets ...string) *webhook.Verifier {
		v, err := webhook.NewVerifier(secrets...)
		if err != nil {
			t.Fatal(err)
		}
		v.Now = func() time.Time { return now }
		return v
	}
	tamper := func(h http.Header, k, v string) http.Header { h = h.Clone(); h.Set(k, v); return h }
	good := signed(t, []string{cur}, "evt_1", now, body)
	for _, tc := range []struct {
		name string
		v    *webhook.Verifier
		h    http.Header
		body string
		want error
	}{
		{"valid", verifier(cur), good, body, nil},
		{"rotation: old receiver", verifier(old), signed(t, []string{cur, old}, "evt_1", now, body), body, nil},
		{"rotation: new receiver", verifier(cur), signed(t, []string{cur, old}, "evt_1", now, body), body, nil},
		{"receiver knows both", verifier(other, cur), good, body, nil},
		{"wrong secret", verifier(other), good, body, webhook.ErrInvalidSignature},
		{"tampered body", verifier(cur), good, body + " ", webhook.ErrInvalidSignature},
		{"tampered id", verifier(cur), tamper(good, webhook.HeaderID, "evt_2"), body, webhook.ErrInvalidSignature},
		{"tampered timestamp", verifier(cur), tamper(good, webhook.HeaderTimestamp, "1795341601"), body, webhook.ErrInvalidSignature},
		{"5 minutes old", verifier(cur), signed(t, []string{cur}, "evt_1", now.Add(-5*time.Minute), body), body, nil},
		{"too old", verifier(cur), signed(t, []string{cur}, "evt_1", now.Add(-5*time.Minute-time.Second), body), body, webhook.ErrTimestampTooOld},
		{"too new", verifier(cur), signed(t, []string{cur}, "evt_1", now.Add(5*time.Minute+time.Second), body), body, webhook.ErrTimestampTooNew},
		{"missing signature", verifier(cur), tamper(good, webhook.HeaderSignature, ""), body, webhook.ErrMissingHeaders},
		{"malformed timestamp", verifier(cur), tamper(good, webhook.HeaderTimestamp, "soon"), body, webhook.ErrInvalidHeaders},
		{"unknown versions ignored", verifier(cur), tamper(good, webhook.HeaderSignature, "v2,abc "+good.Get(webhook.HeaderSignature)), body, nil},
		{"only unknown versions", verifier(cur), tamper(good, webhook.HeaderSignature, "v2,"+strings.TrimPrefix(good.Get(webhook.HeaderSignature), "v1,")), body, webhook.ErrInvalidSignature},
		{"garbage signature", verifier(cur), tamper(good, webhook.HeaderSignature, "v1,!!!"), body, webhook.ErrInvalidSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.v.Verify(tc.h, []byte(tc.body)); !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestSecrets(t *testing.T) {
	s, err := webhook.NewSecret()
	if err != nil || !strings.HasPrefix(s, "whsec_") {
		t.Fatalf("NewSecret = %q, %v", s, err)
	}
	if k, err := webhook.ParseSecret(s); err != nil || len(k) != 32 {
		t.Fatalf("ParseSecret: %d bytes, %v", len(k), err)
	}
	if s2, _ := webhook.NewSecret(); s2 == s {
		t.Fatal("two secrets alike")
	}
	for _, bad := range []string{"", "whsec_", "whsec_!!!", "whsec_" + strings.Repeat("A", 20), "whsec_" + strings.Repeat("A", 100)} {
		if _, err := webhook.ParseSecret(bad); err == nil {
			t.Errorf("ParseSecret(%q) accepted", bad)
		}
	}
	if _, err := webhook.NewSigner(); err == nil {
		t.Error("a signer without a secret")
	}
}

func TestHandler(t *testing.T) {
	secret, _ := webhook.NewSecret()
	v, _ := webhook.NewVerifier(secret)
	var got string
	srv := httptest.NewServer(v.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
	})))
	defer srv.Close()
	body := `{"id":"evt_1"}`
	post := func(h http.Header) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		for k, vs := range h {
			req.Header[k] = vs
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(signed(t, []string{secret}, "evt_1", time.Now(), body)); code != 200 || got != body {
		t.Fatalf("valid delivery: %d, body seen %q", code, got)
	}
	other, _ := webhook.NewSecret()
	if code := post(signed(t, []string{other}, "evt_1", time.Now(), body)); code != http.StatusUnauthorized {
		t.Fatalf("invalid delivery: %d", code)
	}
}
