package kit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aivis/aivis/core/retryafter"
	"github.com/aivis/aivis/core/text"
	"github.com/aivis/aivis/plugins/sdk"
)

// MaxResponse bounds how much of an answer is read.
const MaxResponse = 64 << 10

// Response is a destination's answer, its body read (up to MaxResponse).
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends one request with a JSON (or other) body and reads the answer.
// A transport error (refused, timed out, blocked by the outbound policy)
// is returned as is: the caller retries.
func Do(ctx context.Context, c *http.Client, method, url string, header http.Header, body []byte) (Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return Response{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "aivis-connector/1")
	resp, err := c.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse))
	if err != nil {
		return Response{}, fmt.Errorf("reading the answer: %w", err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// OK says whether the status is 2xx.
func (r Response) OK() bool { return r.Status >= 200 && r.Status < 300 }

// Snippet is the start of the body, for a reason (Quote, 200
// characters).
func (r Response) Snippet() string { return Quote(string(r.Body), 200) }

// Quote is what a reason quotes of a destination's words: as text (a NUL
// gone, bytes that are not UTF-8 replaced), on one line, at most n
// characters (Truncate), so that a reason stays a line or two whatever
// the destination answers.
func Quote(s string, n int) string {
	return Truncate(strings.Join(strings.Fields(text.Clean(s, 0)), " "), n)
}

// Retryable says whether a status is worth another attempt: timeouts,
// throttling and server errors.
func Retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// RetryAfter reads Retry-After, in seconds or as an HTTP date; 0 when
// absent or unreadable.
func RetryAfter(h http.Header) time.Duration { return retryafter.Header(h, time.Now()) }

// ByStatus is the usual reading of an HTTP destination's answer: 2xx
// delivered; 410 gone; 408, 429 and 5xx retried after Retry-After; 3xx
// and other 4xx permanent failures. who names the destination in reasons.
func ByStatus(r Response, who string) sdk.Result {
	switch {
	case r.OK():
		return sdk.DeliveredResult()
	case r.Status == http.StatusGone:
		return sdk.GoneResult(fmt.Sprintf("%s answered 410 Gone: %s", who, r.Snippet()))
	case Retryable(r.Status):
		return sdk.RetryResult(RetryAfter(r.Header), fmt.Sprintf("%s answered %d: %s", who, r.Status, r.Snippet()))
	default:
		return sdk.FailedResult(fmt.Sprintf("%s answered %d: %s", who, r.Status, r.Snippet()))
	}
}

// Unreachable is the result of a request that got no answer; its reason
// keeps the request's URL to its host (sdk.ErrorText).
func Unreachable(who string, err error) sdk.Result {
	return sdk.RetryResult(0, who+": "+sdk.ErrorText(err))
}
