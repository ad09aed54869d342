package webhook_test

import (
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/webhook"
)

// The test vector of the Standard Webhooks reference libraries
// (github.com/standard-webhooks/standard-webhooks, libraries/*: e.g. Go's
// TestWebhookSign, PHP's testSignFunctionWorks). The expected signature is
// also what `openssl dgst -sha256 -mac HMAC` computes over
// "msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}" with the
// 24-byte key the secret's base64 decodes to.
const (
	vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTS     = 1614265330
	vectorBody   = `{"test": 2432232314}`
	vectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func vectorHeader(sig string) http.Header {
	h := http.Header{}
	h.Set(webhook.HeaderID, vectorID)
	h.Set(webhook.HeaderTimestamp, strconv.Itoa(vectorTS))
	h.Set(webhook.HeaderSignature, sig)
	return h
}

func TestKnownAnswer(t *testing.T) {
	for _, secret := range []string{vectorSecret, strings.TrimPrefix(vectorSecret, webhook.SecretPrefix), vectorSecret + "\n"} {
		s, err := webhook.NewSigner(secret)
		if err != nil {
			t.Fatalf("NewSigner(%q): %v", secret, err)
		}
		if got := s.Sign(vectorID, time.Unix(vectorTS, 0), []byte(vectorBody)); got != vectorSig {
			t.Fatalf("Sign with %q = %q, want %q", secret, got, vectorSig)
		}
		// Sub-second parts of the time are not signed.
		if got := s.Sign(vectorID, time.Unix(vectorTS, 999_999_999), []byte(vectorBody)); got != vectorSig {
			t.Fatalf("Sign at a fraction of a second = %q, want %q", got, vectorSig)
		}
		h := http.Header{}
		s.Headers(h, vectorID, time.Unix(vectorTS, 0), []byte(vectorBody))
		if h.Get("Webhook-Id") != vectorID || h.Get("Webhook-Timestamp") != "1614265330" || h.Get("Webhook-Signature") != vectorSig {
			t.Fatalf("Headers = %v", h)
		}
	}
	v, err := webhook.NewVerifier(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	v.Now = func() time.Time { return time.Unix(vectorTS+10, 0) }
	for _, sig := range []string{
		vectorSig,
		"v2,xxx " + vectorSig,
		"v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= " + vectorSig + " v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
	} {
		if err := v.Verify(vectorHeader(sig), []byte(vectorBody)); err != nil {
			t.Errorf("Verify(%q): %v", sig, err)
		}
	}
	// The reference libraries' "invalid signature" case.
	if err := v.Verify(vectorHeader("v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="), []byte(vectorBody)); !errors.Is(err, webhook.ErrInvalidSignature) {
		t.Errorf("a wrong signature: %v", err)
	}
	// The right signature under another version is not a v1 signature.
	if err := v.Verify(vectorHeader("v2,"+strings.TrimPrefix(vectorSig, "v1,")), []byte(vectorBody)); !errors.Is(err, webhook.ErrInvalidSignature) {
		t.Errorf("v2 accepted: %v", err)
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

func newSecret(t *testing.T) string {
	t.Helper()
	s, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerify(t *testing.T) {
	old, cur, other := newSecret(t), newSecret(t), newSecret(t)
	// now is a little past a whole second, as real clocks are.
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	now := at.Add(900 * time.Millisecond)
	body := `{"id":"evt_1","event":"webhook_test","timestamp":"2026-11-22T10:00:00Z","data":{}}`
	verifier := func(secrets ...string) *webhook.Verifier {
		v, err := webhook.NewVerifier(secrets...)
		if err != nil {
			t.Fatal(err)
		}
		v.Now = func() time.Time { return now }
		return v
	}
	set := func(h http.Header, k, v string) http.Header { h = h.Clone(); h.Set(k, v); return h }
	del := func(h http.Header, k string) http.Header { h = h.Clone(); h.Del(k); return h }
	good := signed(t, []string{cur}, "evt_1", at, body)
	goodSig := good.Get(webhook.HeaderSignature)
	// The signature with its first character changed (one in 64 begins
	// with A already).
	tampered := "v1,A" + goodSig[4:]
	if goodSig[3] == 'A' {
		tampered = "v1,B" + goodSig[4:]
	}
	rotating := signed(t, []string{cur, old}, "evt_1", at, body)
	short := verifier(cur)
	short.Tolerance = time.Minute
	for _, tc := range []struct {
		name string
		v    *webhook.Verifier
		h    http.Header
		body string
		want error
	}{
		{"valid", verifier(cur), good, body, nil},

		{"rotation: two signatures", verifier(cur), rotating, body, nil},
		{"rotation: receiver still on the old secret", verifier(old), rotating, body, nil},
		{"rotation: receiver knows both, delivery signed with the new", verifier(cur, old), good, body, nil},
		{"rotation: receiver knows both, delivery signed with the old", verifier(cur, old), signed(t, []string{old}, "evt_1", at, body), body, nil},
		{"rotation: neither secret", verifier(other), rotating, body, webhook.ErrInvalidSignature},
		{"wrong secret", verifier(other), good, body, webhook.ErrInvalidSignature},

		{"tampered body", verifier(cur), good, body + " ", webhook.ErrInvalidSignature},
		{"empty body", verifier(cur), good, "", webhook.ErrInvalidSignature},
		{"tampered id", verifier(cur), set(good, webhook.HeaderID, "evt_2"), body, webhook.ErrInvalidSignature},
		{"tampered timestamp", verifier(cur), set(good, webhook.HeaderTimestamp, strconv.FormatInt(at.Unix()+1, 10)), body, webhook.ErrInvalidSignature},
		{"tampered signature", verifier(cur), set(good, webhook.HeaderSignature, tampered), body, webhook.ErrInvalidSignature},

		{"exactly 5 minutes old", verifier(cur), signed(t, []string{cur}, "evt_1", at.Add(-5*time.Minute), body), body, nil},
		{"5 minutes 1 second old", verifier(cur), signed(t, []string{cur}, "evt_1", at.Add(-5*time.Minute-time.Second), body), body, webhook.ErrTimestampTooOld},
		{"exactly 5 minutes ahead", verifier(cur), signed(t, []string{cur}, "evt_1", at.Add(5*time.Minute), body), body, nil},
		{"5 minutes 1 second ahead", verifier(cur), signed(t, []string{cur}, "evt_1", at.Add(5*time.Minute+time.Second), body), body, webhook.ErrTimestampTooNew},
		{"a day old", verifier(cur), signed(t, []string{cur}, "evt_1", at.Add(-24*time.Hour), body), body, webhook.ErrTimestampTooOld},
		{"the epoch", verifier(cur), set(good, webhook.HeaderTimestamp, "0"), body, webhook.ErrTimestampTooOld},
		{"own tolerance: within", short, signed(t, []string{cur}, "evt_1", at.Add(-time.Minute), body), body, nil},
		{"own tolerance: beyond", short, signed(t, []string{cur}, "evt_1", at.Add(-2*time.Minute), body), body, webhook.ErrTimestampTooOld},

		{"no id", verifier(cur), del(good, webhook.HeaderID), body, webhook.ErrMissingHeaders},
		{"no timestamp", verifier(cur), del(good, webhook.HeaderTimestamp), body, webhook.ErrMissingHeaders},
		{"no signature", verifier(cur), del(good, webhook.HeaderSignature), body, webhook.ErrMissingHeaders},
		{"empty signature", verifier(cur), set(good, webhook.HeaderSignature, ""), body, webhook.ErrMissingHeaders},
		{"no headers", verifier(cur), http.Header{}, body, webhook.ErrMissingHeaders},
		{"timestamp in words", verifier(cur), set(good, webhook.HeaderTimestamp, "soon"), body, webhook.ErrInvalidHeaders},
		{"timestamp with a fraction", verifier(cur), set(good, webhook.HeaderTimestamp, strconv.FormatInt(at.Unix(), 10)+".5"), body, webhook.ErrInvalidHeaders},
		{"timestamp in milliseconds", verifier(cur), set(good, webhook.HeaderTimestamp, strconv.FormatInt(at.UnixMilli(), 10)), body, webhook.ErrTimestampTooNew},
		{"timestamp as a date", verifier(cur), set(good, webhook.HeaderTimestamp, at.Format(time.RFC3339)), body, webhook.ErrInvalidHeaders},
		{"timestamp beyond int64", verifier(cur), set(good, webhook.HeaderTimestamp, "99999999999999999999"), body, webhook.ErrInvalidHeaders},

		{"unknown version first", verifier(cur), set(good, webhook.HeaderSignature, "v2,xxx "+goodSig), body, nil},
		{"unknown versions around", verifier(cur), set(good, webhook.HeaderSignature, "v1a,xxx "+goodSig+" v2,yyy"), body, nil},
		{"extra spaces", verifier(cur), set(good, webhook.HeaderSignature, "  v2,xxx   "+goodSig+"  "), body, nil},
		{"only other versions", verifier(cur), set(good, webhook.HeaderSignature, "v2,"+goodSig[3:]+" v1a,"+goodSig[3:]), body, webhook.ErrInvalidSignature},
		{"no version", verifier(cur), set(good, webhook.HeaderSignature, goodSig[3:]), body, webhook.ErrInvalidSignature},
		{"version only", verifier(cur), set(good, webhook.HeaderSignature, "v1"), body, webhook.ErrInvalidSignature},
		{"empty v1", verifier(cur), set(good, webhook.HeaderSignature, "v1,"), body, webhook.ErrInvalidSignature},
		{"v1 not base64", verifier(cur), set(good, webhook.HeaderSignature, "v1,!!!"), body, webhook.ErrInvalidSignature},
		{"v1 truncated", verifier(cur), set(good, webhook.HeaderSignature, goodSig[:len(goodSig)-4]), body, webhook.ErrInvalidSignature},
		{"v1 url-safe base64", verifier(cur), set(good, webhook.HeaderSignature, "v1,"+strings.NewReplacer("+", "-", "/", "_").Replace(goodSig[3:])), body, errIfURLUnsafe(goodSig)},
		{"comma separated", verifier(cur), set(good, webhook.HeaderSignature, "v2,xxx,"+goodSig), body, webhook.ErrInvalidSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.v.Verify(tc.h, []byte(tc.body)); !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

// errIfURLUnsafe: a signature in the URL-safe alphabet is refused when it
// differs from the standard one.
func errIfURLUnsafe(sig string) error {
	if strings.ContainsAny(sig[3:], "+/") {
		return webhook.ErrInvalidSignature
	}
	return nil
}

func TestSecrets(t *testing.T) {
	s := newSecret(t)
	if !strings.HasPrefix(s, webhook.SecretPrefix) {
		t.Fatalf("NewSecret = %q", s)
	}
	if k, err := webhook.ParseSecret(s); err != nil || len(k) != 32 {
		t.Fatalf("ParseSecret: %d bytes, %v", len(k), err)
	}
	if newSecret(t) == s {
		t.Fatal("two secrets alike")
	}
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(make([]byte, n)) }
	for _, ok := range []string{"whsec_" + b64(24), "whsec_" + b64(64), b64(32), " whsec_" + b64(32) + "\n"} {
		if _, err := webhook.ParseSecret(ok); err != nil {
			t.Errorf("ParseSecret(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "whsec_", "whsec_!!!", "whsec_" + b64(23), "whsec_" + b64(65), "whsec_" + strings.TrimRight(b64(32), "="), "whsec_" + strings.NewReplacer("+", "-", "/", "_").Replace(b64(32)) + "-_", "WHSEC_" + b64(32)} {
		if _, err := webhook.ParseSecret(bad); err == nil {
			t.Errorf("ParseSecret(%q) accepted", bad)
		}
	}
	if _, err := webhook.NewSigner(); err == nil {
		t.Error("a signer without a secret")
	}
	if _, err := webhook.NewVerifier(); err == nil {
		t.Error("a verifier without a secret")
	}
	if _, err := webhook.NewSigner(s, "whsec_!!!"); err == nil {
		t.Error("a signer with a bad second secret")
	}
}

func TestHandler(t *testing.T) {
	secret := newSecret(t)
	v, err := webhook.NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		got []string
	)
	seen := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(got) }
	srv := httptest.NewServer(v.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
	})))
	defer srv.Close()
	body := `{"id":"evt_1","event":"webhook_test","timestamp":"2026-11-22T10:00:00Z","data":{}}`
	post := func(h http.Header, body string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
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
	if code := post(signed(t, []string{secret}, "evt_1", time.Now(), body), body); code != http.StatusOK || !slices.Equal(seen(), []string{body}) {
		t.Fatalf("valid delivery: %d, next saw %q", code, seen())
	}
	big := `{"pad":"` + strings.Repeat("x", webhook.DefaultMaxBody) + `"}`
	other := newSecret(t)
	for _, tc := range []struct {
		name string
		h    http.Header
		body string
		want int
	}{
		{"another secret", signed(t, []string{other}, "evt_1", time.Now(), body), body, http.StatusUnauthorized},
		{"tampered body", signed(t, []string{secret}, "evt_1", time.Now(), body), body + " ", http.StatusUnauthorized},
		{"stale", signed(t, []string{secret}, "evt_1", time.Now().Add(-time.Hour), body), body, http.StatusUnauthorized},
		{"no headers", http.Header{}, body, http.StatusBadRequest},
		{"malformed timestamp", func() http.Header {
			h := signed(t, []string{secret}, "evt_1", time.Now(), body)
			h.Set(webhook.HeaderTimestamp, "x")
			return h
		}(), body, http.StatusBadRequest},
		{"over 1 MiB", signed(t, []string{secret}, "evt_1", time.Now(), big), big, http.StatusBadRequest},
	} {
		if code := post(tc.h, tc.body); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
	if n := len(seen()); n != 1 {
		t.Fatalf("next called for refused deliveries: %d calls", n)
	}

	// MaxBody raises the limit.
	v.MaxBody = 2 << 20
	if code := post(signed(t, []string{secret}, "evt_1", time.Now(), big), big); code != http.StatusOK || !slices.Equal(seen(), []string{body, big}) {
		t.Fatalf("a 1 MiB body under a 2 MiB limit: %d", code)
	}
}

func ExampleVerifier_Handler() {
	v, err := webhook.NewVerifier("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		panic(err)
	}
	http.Handle("/aivis", v.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The delivery is verified; r.Body is its body.
		w.WriteHeader(http.StatusOK)
	})))
}
