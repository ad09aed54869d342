package kittest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/connectors/internal/fakekit"
	"github.com/aivis/aivis/core/text"
	"github.com/aivis/aivis/plugins/sdk"
)

// Call is one way a fuzz target calls a connector: Do makes a Deliver or
// a Test that sends the fake destination at least one request, the first
// of which gets the fuzzed answer; Want is every outcome the connector's
// documented rules allow for an answer of status with body.
type Call struct {
	Name string
	Do   func(ctx context.Context) sdk.Result
	Want func(status int, body []byte) []sdk.Outcome
}

// Answer is a seed of FuzzAnswers: a status, a Retry-After, and a body
// that holds Before, then a secret in an echo form (Echo: see echoes),
// then After.
type Answer struct {
	Status        int
	RetryAfter    string
	Before, After string
	Echo          uint8
}

// echoes are the forms in which a destination's answer may repeat a
// secret: not at all, as written, in a JSON string (as Go, or as PHP with
// its slashes escaped, writes it), URL-encoded.
var echoes = []func(string) string{
	func(string) string { return "" },
	func(s string) string { return s },
	func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) },
	func(s string) string {
		b, _ := json.Marshal(s)
		return strings.ReplaceAll(string(b[1:len(b)-1]), "/", `\/`)
	},
	url.QueryEscape,
	url.PathEscape,
}

// MaxReason bounds a connector's reason: a line or two that says what
// the destination answered, not the answer.
const MaxReason = 1024

// FuzzAnswers fuzzes what a connector makes of its destination's answers.
// fake, the connector's fake destination, answers the first request of
// each call with a fuzzed status, Retry-After and body; the body may repeat
// one of secrets, the values of the connection's secret settings (as the
// connection's settings hold them), between two parts the fuzzer writes.
// The result must be an outcome the call allows for that status and body;
// its reason text (valid UTF-8 without NUL) of at most MaxReason bytes;
// and, redacted as the server redacts every reason (sdk.Redact with the
// secret settings), it holds no 8 bytes of a secret (of a secret URL,
// its path and query) that the fuzzer's parts do not hold: the secret
// whole or cut. Seeds: the usual answers of every status class, with and
// without the secret, and those given.
func FuzzAnswers(f *testing.F, fake interface {
	Script(...fakekit.Answer)
	Requests() []fakekit.Request
}, secrets []string, calls []Call, seeds ...Answer) {
	long := strings.Repeat("The destination refused it. ", 7)
	for _, status := range []int{200, 201, 202, 204, 301, 400, 401, 403, 404, 408, 410, 413, 422, 429, 500, 502, 503, 504} {
		seeds = append(seeds, Answer{Status: status}, Answer{Status: status, Before: `{"error":"bad`, After: `"}`, Echo: 1},
			Answer{Status: status, RetryAfter: "30", Before: long[:190], Echo: 1})
	}
	for e := range echoes {
		seeds = append(seeds, Answer{Status: 400, Before: `{"message":"no hook `, After: `"}`, Echo: uint8(e)})
	}
	for n := 150; n < 200; n += 10 {
		// The secret where a reason's snippet of the answer is cut.
		seeds = append(seeds, Answer{Status: 400, Before: long[:n], Echo: 1})
	}
	seeds = append(seeds, Answer{Status: 400, Before: "bad\x00request \xff\xfe"}, Answer{Status: 429, RetryAfter: "Wed, 21 Oct 2015 07:28:00 GMT"},
		Answer{Status: 503, RetryAfter: "-5"}, Answer{Status: 429, RetryAfter: "99999999999999999999"}, Answer{Status: 200, Before: "<html>"})
	for i := range calls {
		for _, s := range seeds {
			f.Add(uint8(i), s.Status, s.RetryAfter, s.Before, s.Echo, s.After)
		}
	}
	f.Fuzz(func(t *testing.T, call uint8, status int, retryAfter, before string, echo uint8, after string) {
		c := calls[int(call)%len(calls)]
		if status < 200 || status > 599 {
			status = 200 + int(uint(status)%400) // what net/http answers, informational answers aside
		}
		// What net/http sends as a header's value.
		retryAfter = strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return -1
			}
			return r
		}, retryAfter)
		secret := secrets[int(echo)/len(echoes)%len(secrets)]
		body := before + echoes[int(echo)%len(echoes)](secret) + after
		a := fakekit.Answer{Status: status, Body: body}
		if retryAfter != "" {
			a.Header = map[string]string{"Retry-After": retryAfter}
		}
		n := len(fake.Requests())
		fake.Script(a)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res := c.Do(ctx)
		if len(fake.Requests()) == n {
			t.Fatalf("%s: no request was sent", c.Name)
		}
		if want := c.Want(status, []byte(body)); !slices.Contains(want, res.Outcome) {
			t.Fatalf("%s: an answer of %d %q is %v (%q), want one of %v", c.Name, status, body, res.Outcome, res.Reason, want)
		}
		if !text.Valid(res.Reason) || len(res.Reason) > MaxReason {
			t.Fatalf("%s: the reason %q (%d bytes)", c.Name, res.Reason, len(res.Reason))
		}
		reason := sdk.Redact(res.Reason, secrets...)
		written := []string{before, after, said(before), said(after)}
		for _, s := range secrets {
			if u, err := url.Parse(s); err == nil && u.Host != "" {
				s = u.EscapedPath() + u.RawQuery
			}
			for i := 0; i+8 <= len(s); i++ {
				if w := s[i : i+8]; strings.Contains(reason, w) && !slices.ContainsFunc(written, func(p string) bool { return strings.Contains(p, w) }) {
					t.Fatalf("%s: the answer %d %q gives the reason %q, redacted %q: it holds %q of a secret", c.Name, status, body, res.Reason, reason, w)
				}
			}
		}
	})
}

// said is what a connector may say of a part of an answer: as text, on
// one line.
func said(s string) string { return strings.Join(strings.Fields(text.Clean(s, 0)), " ") }

// ByStatus is the outcome of the usual reading of an HTTP destination's
// answer (docs/connectors.md): 2xx delivered, 410 gone, 408, 429 and 5xx
// retried, any other failed.
func ByStatus(status int) sdk.Outcome {
	switch {
	case status >= 200 && status < 300:
		return sdk.Delivered
	case status == http.StatusGone:
		return sdk.Gone
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		return sdk.Retry
	}
	return sdk.PermanentFailure
}
