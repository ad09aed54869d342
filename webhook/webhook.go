// Package webhook signs and verifies webhook deliveries per Standard
// Webhooks (https://www.standardwebhooks.com/): the headers webhook-id,
// webhook-timestamp and webhook-signature, the last a space-separated list
// of "v1,<base64 HMAC-SHA256 of id.timestamp.body>". aivis signs its
// deliveries with it; receivers written in Go verify them with it.
package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a delivery.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every secret.
const SecretPrefix = "whsec_"

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock.
const DefaultTolerance = 5 * time.Minute

// DefaultMaxBody is the largest body Handler reads unless Verifier.MaxBody
// says otherwise.
const DefaultMaxBody = 1 << 20

// Event is the body of every aivis delivery.
type Event struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Errors of Verify.
var (
	ErrMissingHeaders   = errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature")
	ErrInvalidHeaders   = errors.New("webhook: webhook-timestamp is not Unix seconds")
	ErrTimestampTooOld  = errors.New("webhook: timestamp too old")
	ErrTimestampTooNew  = errors.New("webhook: timestamp too far in the future")
	ErrInvalidSignature = errors.New("webhook: no valid signature")
)

// NewSecret returns a new secret: "whsec_" and the base64 of 32 random bytes.
func NewSecret() (string, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// ParseSecret decodes a secret to its key: "whsec_" and standard base64,
// or the base64 alone (as the Standard Webhooks libraries accept it).
// Surrounding white space, such as the newline of a secret kept in a file,
// is ignored. The key must be 24 to 64 bytes; NewSecret's are 32.
func ParseSecret(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(strings.TrimSpace(s), SecretPrefix))
	if err != nil {
		return nil, errors.New("webhook: the secret is not whsec_ followed by base64")
	}
	if len(key) < 24 || len(key) > 64 {
		return nil, fmt.Errorf("webhook: the secret's key is %d bytes; it must be 24 to 64", len(key))
	}
	return key, nil
}

func parseSecrets(secrets []string) ([][]byte, error) {
	if len(secrets) == 0 {
		return nil, errors.New("webhook: no secret")
	}
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		k, err := ParseSecret(s)
		if err != nil {
			return nil, err
		}
		keys[i] = k
	}
	return keys, nil
}

func sign(key []byte, id string, ts int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Signer signs with one or more secrets, the current one first: during a
// rotation both the new and the old secret sign.
type Signer struct{ keys [][]byte }

// NewSigner makes a signer of the given secrets.
func NewSigner(secrets ...string) (*Signer, error) {
	keys, err := parseSecrets(secrets)
	if err != nil {
		return nil, err
	}
	return &Signer{keys: keys}, nil
}

// Sign returns the webhook-signature value for id, ts (whole seconds) and
// body: one "v1,<signature>" per secret, separated by spaces.
func (s *Signer) Sign(id string, ts time.Time, body []byte) string {
	var b strings.Builder
	for i, k := range s.keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(sign(k, id, ts.Unix(), body)))
	}
	return b.String()
}

// Headers sets the three headers of a delivery on h.
func (s *Signer) Headers(h http.Header, id string, ts time.Time, body []byte) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, s.Sign(id, ts, body))
}

// Verifier checks deliveries against one or more secrets.
type Verifier struct {
	Tolerance time.Duration    // default DefaultTolerance
	Now       func() time.Time // default time.Now
	// MaxBody bounds the body Handler reads (default DefaultMaxBody, 1 MiB).
	MaxBody int64
	keys    [][]byte
}

// NewVerifier makes a verifier of the given secrets; a delivery is valid
// if signed by any of them.
func NewVerifier(secrets ...string) (*Verifier, error) {
	keys, err := parseSecrets(secrets)
	if err != nil {
		return nil, err
	}
	return &Verifier{keys: keys}, nil
}

// Verify checks the headers and the raw body of a delivery: the three
// headers are present, the timestamp is within Tolerance of Now (compared
// in whole seconds, inclusive, as the Standard Webhooks libraries do), and
// at least one "v1," signature in webhook-signature is the HMAC of the
// delivery under one of the verifier's keys, compared in constant time,
// in the one base64 a signer writes of it (strict: the bits of its last
// character that carry no data are zeros, as the Standard Webhooks
// libraries, which compare the base64 text, require).
// Entries of other versions, and malformed entries, are ignored. The
// errors are ErrMissingHeaders, ErrInvalidHeaders, ErrTimestampTooOld,
// ErrTimestampTooNew and ErrInvalidSignature.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	id, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return ErrInvalidHeaders
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	tol := v.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	n, secs := now().Unix(), int64(tol/time.Second)
	switch {
	case ts < n-secs:
		return ErrTimestampTooOld
	case ts > n+secs:
		return ErrTimestampTooNew
	}
	for _, k := range v.keys {
		want := sign(k, id, ts, body)
		for _, sig := range strings.Fields(sigs) {
			version, value, ok := strings.Cut(sig, ",")
			if !ok || version != "v1" {
				continue
			}
			got, err := base64.StdEncoding.Strict().DecodeString(value)
			if err == nil && hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return ErrInvalidSignature
}

// Handler verifies each request before next sees it. It reads the body
// (at most MaxBody bytes), answers 400 to an unreadable or oversized body
// and to missing or malformed headers, 401 to a stale timestamp or a
// signature that does not verify, and otherwise calls next with r.Body
// replaced by the same bytes, so next reads the body again.
func (v *Verifier) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := v.MaxBody
		if limit <= 0 {
			limit = DefaultMaxBody
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			http.Error(w, "webhook: unreadable or oversized body", http.StatusBadRequest)
			return
		}
		if err := v.Verify(r.Header, body); err != nil {
			code := http.StatusUnauthorized
			if errors.Is(err, ErrMissingHeaders) || errors.Is(err, ErrInvalidHeaders) {
				code = http.StatusBadRequest
			}
			http.Error(w, err.Error(), code)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}
