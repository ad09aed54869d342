package trafficfake

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// The senders below deliver logs to an endpoint as the CDNs do
// (sources.md 4c), and hold the endpoint to what each CDN requires of it:
// a sender that would refuse to go on (a job Cloudflare would not create,
// a drain Vercel would not verify, an endpoint Fastly would not trust)
// returns an error saying so.

// Cloudflare is a Logpush job with an HTTP destination.
type Cloudflare struct {
	// DestinationConf is the job's destination_conf: the endpoint's URL
	// whose header_<Name>=<value> parameters become request headers.
	DestinationConf string
	Client          *http.Client
}

// request is a POST of body, gzip-compressed, to the destination, with
// its header_ parameters as headers (and left out of the URL).
func (c *Cloudflare) request(ctx context.Context, body []byte) (int, []byte, error) {
	u, err := url.Parse(c.DestinationConf)
	if err != nil || u.Scheme != "https" {
		return 0, nil, fmt.Errorf("cloudflare: destination_conf must be an https URL")
	}
	q, headers := url.Values{}, http.Header{}
	for k, vs := range u.Query() {
		if name, ok := strings.CutPrefix(k, "header_"); ok {
			headers[http.CanonicalHeaderKey(name)] = vs
		} else {
			q[k] = vs
		}
	}
	u.RawQuery = q.Encode()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(body)
	zw.Close()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), &gz)
	if err != nil {
		return 0, nil, err
	}
	r.Header = headers
	return do(c.Client, r)
}

// Validate uploads the validation object a job's creation sends
// (test.txt.gz, {"content":"tests"}): an error, as Cloudflare's "error
// validating destination", unless the endpoint answers 2xx.
func (c *Cloudflare) Validate(ctx context.Context) error {
	status, body, err := c.request(ctx, []byte(`{"content":"tests"}`))
	if err != nil {
		return err
	}
	if status/100 != 2 {
		return fmt.Errorf("cloudflare: error validating destination: %d %s", status, body)
	}
	return nil
}

// Push delivers records, each one NDJSON line (its fields in the job's
// field_names order), as one gzip batch; it returns the answer's status
// and body.
func (c *Cloudflare) Push(ctx context.Context, records []string) (int, []byte, error) {
	var b strings.Builder
	for _, r := range records {
		b.WriteString(r)
		b.WriteByte('\n')
	}
	return c.request(ctx, []byte(b.String()))
}

// Vercel is a log drain.
type Vercel struct {
	URL    string // the drain's endpoint
	Secret string // its signature secret
	// Code is the verification code Vercel's dashboard shows, which the
	// endpoint must echo in x-vercel-verify.
	Code    string
	Headers map[string]string // the drain's custom headers
	Client  *http.Client
}

// Verify makes the endpoint verification request: an error, as Vercel's
// refusal to save the drain, unless the answer is 200 with
// x-vercel-verify: Code.
func (v *Vercel) Verify(ctx context.Context) error {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, v.URL, nil)
	if err != nil {
		return err
	}
	resp, err := v.Client.Do(r)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := resp.Header.Get("x-vercel-verify"); resp.StatusCode != http.StatusOK || got != v.Code {
		return fmt.Errorf("vercel: endpoint verification failed: %d, x-vercel-verify %q", resp.StatusCode, got)
	}
	return nil
}

// Deliver posts body (a JSON array of entries, or NDJSON) signed with
// x-vercel-signature, hex HMAC-SHA1 of the bytes under Secret, with the
// drain's headers.
func (v *Vercel) Deliver(ctx context.Context, body []byte) (int, []byte, error) {
	mac := hmac.New(sha1.New, []byte(v.Secret))
	mac.Write(body)
	return v.deliver(ctx, body, hex.EncodeToString(mac.Sum(nil)))
}

// DeliverSigned posts body with the signature given (a wrong one, for
// tests of the endpoint's check).
func (v *Vercel) DeliverSigned(ctx context.Context, body []byte, signature string) (int, []byte, error) {
	return v.deliver(ctx, body, signature)
}

func (v *Vercel) deliver(ctx context.Context, body []byte, signature string) (int, []byte, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, v.URL, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("x-vercel-signature", signature)
	for k, val := range v.Headers {
		r.Header.Set(k, val)
	}
	return do(v.Client, r)
}

// Fastly is an HTTPS logging endpoint of a service.
type Fastly struct {
	URL                     string // the endpoint's url
	ServiceID               string
	HeaderName, HeaderValue string // its one custom header
	Client                  *http.Client
	challenged              bool
}

// ErrNotChallenged is Deliver's error before a challenge passed: Fastly
// sends nothing to an endpoint it has not checked.
var ErrNotChallenged = errors.New("fastly: the endpoint's challenge has not passed")

// Challenge fetches /.well-known/fastly/logging/challenge of the
// endpoint's host: it passes when a line of the answer is "*" or the hex
// SHA-256 of ServiceID.
func (f *Fastly) Challenge(ctx context.Context) error {
	u, err := url.Parse(f.URL)
	if err != nil {
		return err
	}
	u.Path, u.RawQuery = "/.well-known/fastly/logging/challenge", ""
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	status, body, err := do(f.Client, r)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(f.ServiceID))
	for _, line := range strings.Split(string(body), "\n") {
		if line = strings.TrimSpace(line); status == http.StatusOK && (line == "*" || line == hex.EncodeToString(sum[:])) {
			f.challenged = true
			return nil
		}
	}
	return fmt.Errorf("fastly: the challenge did not allow service %s: %d %q", f.ServiceID, status, body)
}

// Deliver posts one batch as the endpoint is set to send it (content type
// and the custom header), after a challenge passed.
func (f *Fastly) Deliver(ctx context.Context, contentType string, body []byte) (int, []byte, error) {
	if !f.challenged {
		return 0, nil, ErrNotChallenged
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	r.Header.Set("Content-Type", contentType)
	if f.HeaderName != "" {
		r.Header.Set(f.HeaderName, f.HeaderValue)
	}
	return do(f.Client, r)
}

func do(c *http.Client, r *http.Request) (int, []byte, error) {
	resp, err := c.Do(r)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
