package webhook_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/webhook"
)

// fuzzNow is the receiver's clock in FuzzVerify.
var fuzzNow = time.Unix(1_700_000_000, 0)

// FuzzVerify: the Signer signs a delivery (an id, a time near the
// receiver's clock, a body) with the real secret; a receiver gets
// arbitrary webhook-id, webhook-timestamp and webhook-signature headers
// and an arbitrary body, in which "$ID", "$TS", "$SIG" and a body of
// "$BODY" stand for what was signed, so that the fuzzer reaches valid and
// nearly valid deliveries. Verify must answer as the oracle does: missing
// headers, a timestamp that is not Unix seconds, one out of tolerance,
// and otherwise acceptance exactly when one of the signatures is the
// signer's, word for word, and the signed content (id.timestamp.body) is
// the signer's; a verifier without the secret accepts nothing; its errors
// are its own five, never the secret; Handler answers as Verify says and
// hands next the body read.
func FuzzVerify(f *testing.F) {
	const secret = vectorSecret
	other := "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	signer, err := webhook.NewSigner(secret)
	if err != nil {
		f.Fatal(err)
	}
	v, err := webhook.NewVerifier(secret)
	if err != nil {
		f.Fatal(err)
	}
	rotating, err := webhook.NewVerifier(other, secret)
	if err != nil {
		f.Fatal(err)
	}
	stranger, err := webhook.NewVerifier(other)
	if err != nil {
		f.Fatal(err)
	}
	for _, v := range []*webhook.Verifier{v, rotating, stranger} {
		v.Now = func() time.Time { return fuzzNow }
	}
	key, _ := webhook.ParseSecret(secret)

	body := `{"id":"evt_1","event":"ai_visibility_change","timestamp":"2023-11-14T22:13:20Z","data":{"domain":"example.com"}}`
	for _, s := range []struct {
		signedID   string
		offset     int64
		signedBody string
		id, ts     string
		sig        string
		body       string
	}{
		{"msg_p5jXN8AQM9LWM0D4loKWxJek", 0, body, "$ID", "$TS", "$SIG", "$BODY"},
		{"msg_1", 300, body, "$ID", "$TS", "v2,abc $SIG v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=", "$BODY"},
		{"msg_1", -301, body, "$ID", "$TS", "$SIG", "$BODY"},
		{"msg_1", 301, body, "$ID", "$TS", "$SIG", "$BODY"},
		{"msg_1", 0, body, "$ID", "+$TS", "$SIG", "$BODY"},
		{"msg_1", 0, body, "$ID", "0$TS", "$SIG", "$BODY"},
		{"msg_1", 0, body, "$ID", " $TS", "$SIG", "$BODY"},
		{"msg_1", 0, body, "$ID", "$TS.5", "$SIG", "$BODY"},
		{"msg_1", 0, body, "$ID", "$TS", "$SIG", body + " "},
		{"msg_1", 0, body, "msg_2", "$TS", "$SIG", "$BODY"},
		{"msg_1", 0, body, "$ID", "$TS", "v1,$SIG", "$BODY"},
		{"msg_1", 0, body, "$ID", "$TS", "\t$SIG\n", "$BODY"},
		{"msg_1", 0, body, "$ID", "$TS", "$SIG\u00a0", "$BODY"},
		{"msg_1", 0, body, "$ID", "$TS", "", "$BODY"},
		{"", 0, "", "$ID", "$TS", "$SIG", "$BODY"},
		// The signed content is id.timestamp.body: an id with a dot and a
		// body that begins with digits and a dot may be cut elsewhere.
		{"msg.1700000000", 0, "7.{}", "msg", "1700000000", "$SIG", "1700000000.7.{}"},
		{"msg_1", 0, "\x00\xff", "$ID", "$TS", "$SIG", "$BODY"},
		{"msg_1", 0, body, "$ID", "$TS", "$SIG", "$BODY"},
	} {
		f.Add(s.signedID, s.offset, []byte(s.signedBody), s.id, s.ts, s.sig, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, signedID string, offset int64, signedBody []byte, id, tsText, sigs string, body []byte) {
		at := fuzzNow.Add(time.Duration(offset%1000) * time.Second)
		signature := signer.Sign(signedID, at, signedBody)
		stamp := strconv.FormatInt(at.Unix(), 10)
		id = strings.ReplaceAll(id, "$ID", signedID)
		tsText = strings.ReplaceAll(tsText, "$TS", stamp)
		sigs = strings.ReplaceAll(sigs, "$SIG", signature)
		if string(body) == "$BODY" {
			body = signedBody
		}
		h := http.Header{}
		h.Set(webhook.HeaderID, id)
		h.Set(webhook.HeaderTimestamp, tsText)
		h.Set(webhook.HeaderSignature, sigs)

		var want error
		ts, perr := strconv.ParseInt(tsText, 10, 64)
		switch {
		case id == "" || tsText == "" || sigs == "":
			want = webhook.ErrMissingHeaders
		case perr != nil:
			want = webhook.ErrInvalidHeaders
		case ts < fuzzNow.Unix()-300:
			want = webhook.ErrTimestampTooOld
		case ts > fuzzNow.Unix()+300:
			want = webhook.ErrTimestampTooNew
		case !slices.Contains(strings.Fields(sigs), signature) ||
			id+"."+strconv.FormatInt(ts, 10)+"."+string(body) != signedID+"."+stamp+"."+string(signedBody):
			want = webhook.ErrInvalidSignature
		}
		for _, c := range []struct {
			name string
			v    *webhook.Verifier
			want error
		}{{"verifier", v, want}, {"rotating verifier", rotating, want}, {"stranger", stranger, stranger0(want)}} {
			err := c.v.Verify(h, body)
			if err != c.want {
				t.Fatalf("%s: Verify(id %q, timestamp %q, signature %q, body %q) = %v, want %v (signed %q at %s: %q)",
					c.name, id, tsText, sigs, body, err, c.want, signedID, stamp, signedBody)
			}
			if err != nil && (strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), base64.StdEncoding.EncodeToString(key))) {
				t.Fatalf("%s: %q tells the secret", c.name, err)
			}
		}

		// Handler answers as Verify does and hands next the body.
		var got []byte
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got, _ = io.ReadAll(r.Body)
			w.WriteHeader(http.StatusNoContent)
		})
		r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
		r.Header = h
		w := httptest.NewRecorder()
		v.Handler(next).ServeHTTP(w, r)
		switch {
		case want == nil:
			if w.Code != http.StatusNoContent || !bytes.Equal(got, body) {
				t.Fatalf("Handler: %d, next read %q of %q", w.Code, got, body)
			}
		case errors.Is(want, webhook.ErrMissingHeaders) || errors.Is(want, webhook.ErrInvalidHeaders):
			if w.Code != http.StatusBadRequest || w.Body.String() != want.Error()+"\n" {
				t.Fatalf("Handler: %d %q, want 400 %q", w.Code, w.Body, want)
			}
		default:
			if w.Code != http.StatusUnauthorized || w.Body.String() != want.Error()+"\n" {
				t.Fatalf("Handler: %d %q, want 401 %q", w.Code, w.Body, want)
			}
		}
	})
}

// stranger0 is what a verifier without the signer's secret answers where
// one with it answers want: the same refusal, and no acceptance.
func stranger0(want error) error {
	if want == nil {
		return webhook.ErrInvalidSignature
	}
	return want
}

// secretErr is every error ParseSecret may give: neither repeats the
// secret.
var secretErr = regexp.MustCompile(`^webhook: (the secret is not whsec_ followed by base64|the secret's key is \d+ bytes; it must be 24 to 64)$`)

// FuzzParseSecret: a secret is read as its documented forms say or
// refused with one of two fixed errors; what is read signs as the same key
// written as NewSecret writes it.
func FuzzParseSecret(f *testing.F) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xa5}, n)) }
	for _, s := range []string{vectorSecret, strings.TrimPrefix(vectorSecret, "whsec_"), " " + vectorSecret + "\n", "whsec_", "",
		"whsec_!!!", "whsec_" + b64(23), "whsec_" + b64(64), "whsec_" + b64(65), "WHSEC_" + b64(32), "whsec_whsec_" + b64(32),
		"whsec_" + strings.TrimRight(b64(32), "="), "whsec_" + b64(32) + "\x00", "whsec_\xff" + b64(32)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, err := webhook.ParseSecret(s)
		if err != nil {
			if !secretErr.MatchString(err.Error()) {
				t.Fatalf("ParseSecret(%q): %q", s, err)
			}
			if _, err := webhook.NewSigner(s); err == nil {
				t.Fatalf("NewSigner takes %q, which ParseSecret refuses", s)
			}
			return
		}
		if len(key) < 24 || len(key) > 64 {
			t.Fatalf("ParseSecret(%q): a key of %d bytes", s, len(key))
		}
		canonical := webhook.SecretPrefix + base64.StdEncoding.EncodeToString(key)
		if again, err := webhook.ParseSecret(canonical); err != nil || !bytes.Equal(again, key) {
			t.Fatalf("ParseSecret(%q) = %x, %v; want %x", canonical, again, err, key)
		}
		s1, err1 := webhook.NewSigner(s)
		s2, err2 := webhook.NewSigner(canonical)
		if err1 != nil || err2 != nil {
			t.Fatalf("NewSigner: %v, %v", err1, err2)
		}
		if a, b := s1.Sign("msg_1", fuzzNow, []byte("{}")), s2.Sign("msg_1", fuzzNow, []byte("{}")); a != b {
			t.Fatalf("%q signs %q, %q signs %q", s, a, canonical, b)
		}
	})
}
