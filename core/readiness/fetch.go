package readiness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxRedirects is how many redirects a fetch follows.
const MaxRedirects = 5

// fetched is one fetched file.
type fetched struct {
	URL         string // after redirects
	Status      int
	ContentType string
	Body        []byte
	Truncated   bool
}

// fetchError says why a fetch got no answer worth reading.
type fetchError struct {
	kind string // "timeout", "redirect_loop", "too_many_redirects", "unreachable"
	err  error
}

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

// fetch GETs a URL, following at most MaxRedirects redirects by hand (the
// client follows none, so each hop goes through the outbound guard), and
// reads at most MaxBytes of the body.
func (a *Auditor) fetch(ctx context.Context, raw string) (fetched, error) {
	seen := map[string]bool{}
	for hop := 0; ; hop++ {
		if seen[raw] {
			return fetched{}, &fetchError{"redirect_loop", fmt.Errorf("redirect loop at %s", raw)}
		}
		if hop > MaxRedirects {
			return fetched{}, &fetchError{"too_many_redirects", fmt.Errorf("more than %d redirects from %s", MaxRedirects, raw)}
		}
		seen[raw] = true
		f, next, err := a.once(ctx, raw)
		if err != nil || next == "" {
			return f, err
		}
		raw = next
	}
}

func (a *Auditor) once(ctx context.Context, raw string) (fetched, string, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return fetched{}, "", &fetchError{"unreachable", err}
	}
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("Accept", "text/html,text/plain,application/xml;q=0.9,*/*;q=0.8")
	resp, err := a.Client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fetched{}, "", &fetchError{"timeout", fmt.Errorf("%s did not answer within %s", raw, a.timeout())}
		}
		return fetched{}, "", &fetchError{"unreachable", err}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
		base, _ := url.Parse(raw)
		loc, err := base.Parse(resp.Header.Get("Location"))
		if err != nil || (loc.Scheme != "http" && loc.Scheme != "https") {
			return fetched{}, "", &fetchError{"unreachable", fmt.Errorf("%s redirects to %q", raw, resp.Header.Get("Location"))}
		}
		return fetched{}, loc.String(), nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, a.maxBytes()+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fetched{}, "", &fetchError{"timeout", fmt.Errorf("%s did not finish within %s", raw, a.timeout())}
		}
		return fetched{}, "", &fetchError{"unreachable", err}
	}
	f := fetched{URL: raw, Status: resp.StatusCode, ContentType: strings.ToLower(resp.Header.Get("Content-Type")), Body: body}
	if int64(len(body)) > a.maxBytes() {
		f.Body, f.Truncated = body[:a.maxBytes()], true
	}
	return f, "", nil
}

func (a *Auditor) timeout() time.Duration {
	if a.Timeout > 0 {
		return a.Timeout
	}
	return 10 * time.Second
}

func (a *Auditor) maxBytes() int64 {
	if a.MaxBytes > 0 {
		return a.MaxBytes
	}
	return 2 << 20
}

// isHTML says whether a fetched file is an HTML page (what a single-page
// app serves for every path, llms.txt and sitemap.xml included).
func (f fetched) isHTML() bool {
	if strings.Contains(f.ContentType, "html") {
		return true
	}
	head := strings.ToLower(strings.TrimSpace(string(f.Body[:min(len(f.Body), 512)])))
	return strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html")
}

// Page is a page fetched as the audit fetches: through the Auditor's
// client, redirects followed by hand, the body cut at MaxBytes.
type Page struct {
	URL         string // after redirects
	Status      int
	ContentType string
	Body        []byte
	Truncated   bool
	HTML        bool
}

// Fetch GETs one page the way the audit does.
func (a *Auditor) Fetch(ctx context.Context, raw string) (Page, error) {
	f, err := a.fetch(ctx, raw)
	if err != nil {
		return Page{}, err
	}
	return Page{URL: f.URL, Status: f.Status, ContentType: f.ContentType, Body: f.Body, Truncated: f.Truncated, HTML: f.isHTML()}, nil
}
