package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

type recorded struct {
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func (r *recorded) add(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	if req.Body != nil {
		buf := make([]byte, 4096)
		n, _ := req.Body.Read(buf)
		b.Write(buf[:n])
	}
	r.reqs = append(r.reqs, req)
	r.body = append(r.body, b.String())
}

func newServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *recorded) {
	rec := &recorded{}
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		w.Header().Set("X-Request-Id", "req_test")
		w.Header().Set("X-RateLimit-Limit", "60")
		w.Header().Set("X-RateLimit-Remaining", "59")
		w.Header().Set("X-RateLimit-Reset", "1800000000")
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s, rec
}

func newClient(t *testing.T, s *httptest.Server, waits *[]time.Duration, opts ...Option) *Client {
	t.Helper()
	opts = append([]Option{WithKey("svc_key", "secret"), WithHTTPClient(s.Client()),
		WithSleep(func(ctx context.Context, d time.Duration) error {
			*waits = append(*waits, d)
			return ctx.Err()
		})}, opts...)
	c, err := New(s.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writeJSON(w http.ResponseWriter, status int, v string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprint(w, v)
}

func TestHeadersAndDecoding(t *testing.T) {
	s, rec := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/ai/budget-status":
			writeJSON(w, 200, `{"success":true,"data":{"quota_tier":"Starter","rate_limits":{"per_minute":60,"per_hour":1000,"per_day":10000},"budget":{"monthly_limit":5000,"spent":12.5}}}`)
		case "/api/v1/ai/content-requests":
			writeJSON(w, 201, `{"success":true,"data":{"id":"cr_1","status":"queued","budget":10,"future_field":true}}`)
		case "/v1/visibility":
			writeJSON(w, 200, `{"domain":"example.com","visibility_score":72,"sentiment":"positive"}`)
		}
	})
	var waits []time.Duration
	var seen []RateLimit
	c := newClient(t, s, &waits, WithRateLimitHook(func(rl RateLimit) { seen = append(seen, rl) }))
	ctx := context.Background()
	bs, err := c.BudgetStatus(ctx)
	if err != nil || bs.QuotaTier != "Starter" || bs.RateLimits.PerMinute != 60 || bs.Budget.Spent != Dollars(12.5) {
		t.Fatalf("budget status %+v %v", bs, err)
	}
	cr, err := c.CreateContentRequest(ctx, CreateContentRequest{Domain: "example.com", Budget: Dollars(10)}, IdempotencyKey("k1"))
	if err != nil || cr.ID != "cr_1" || cr.Budget != Dollars(10) {
		t.Fatalf("create %+v %v", cr, err)
	}
	v, err := c.Visibility(ctx, "example.com")
	if err != nil || v.VisibilityScore != 72 {
		t.Fatalf("visibility %+v %v", v, err)
	}
	r0, r1, r2 := rec.reqs[0], rec.reqs[1], rec.reqs[2]
	if r0.Header.Get("X-API-Key") != "svc_key" || r0.Header.Get("X-API-Secret") != "secret" || r0.Header.Get("Authorization") != "" {
		t.Errorf("key-and-secret headers: %v", r0.Header)
	}
	if r1.Method != "POST" || r1.Header.Get("Content-Type") != "application/json" || r1.Header.Get("Idempotency-Key") != "k1" ||
		!strings.Contains(rec.body[1], `"budget":10`) || !strings.Contains(rec.body[1], `"domain":"example.com"`) {
		t.Errorf("create request: %v %s", r1.Header, rec.body[1])
	}
	if r2.Header.Get("Authorization") != "Bearer svc_key" || r2.Header.Get("X-API-Secret") != "" || r2.URL.Query().Get("domain") != "example.com" {
		t.Errorf("bearer request: %v %v", r2.Header, r2.URL)
	}
	if len(seen) != 3 || seen[0].Limit != 60 || seen[0].Remaining != 59 || seen[0].Reset.Unix() != 1800000000 {
		t.Errorf("rate-limit hook: %+v", seen)
	}
}

func TestErrors(t *testing.T) {
	s, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/visibility" {
			w.WriteHeader(502)
			fmt.Fprint(w, "<html>bad gateway</html>")
			return
		}
		writeJSON(w, 400, `{"success":false,"error":{"code":"VALIDATION_ERROR","message":"budget: must be > 0","request_id":"req_x","details":[{"field":"budget","message":"must be > 0"}]}}`)
	})
	var waits []time.Duration
	c := newClient(t, s, &waits)
	_, err := c.CreateContentRequest(context.Background(), CreateContentRequest{Domain: "example.com"})
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != 400 || e.Code != "VALIDATION_ERROR" || e.RequestID != "req_x" ||
		len(e.Details) != 1 || e.Details[0].Field != "budget" || !IsCode(err, "VALIDATION_ERROR") {
		t.Fatalf("error %#v", err)
	}
	_, err = c.Visibility(context.Background(), "example.com")
	if !errors.As(err, &e) || e.StatusCode != 502 || e.Code != "HTTP_502" || !strings.Contains(e.Message, "bad gateway") || e.RequestID != "req_test" {
		t.Fatalf("non-JSON error %#v", err)
	}
	if len(waits) != 0 {
		t.Errorf("retried a non-429: %v", waits)
	}
}

func TestRetryOn429(t *testing.T) {
	cases := []struct {
		name      string
		answers   []string // "429:<retry_after or ->:<Retry-After header or ->" or "200"
		wantWaits []time.Duration
		wantErr   bool
	}{
		{"retry_after honoured, then success", []string{"429:2:-", "200"}, []time.Duration{2 * time.Second}, false},
		{"gives up after three attempts", []string{"429:2:-", "429:3:-", "429:4:-", "200"}, []time.Duration{2 * time.Second, 3 * time.Second}, true},
		{"60 s when absent", []string{"429:-:-", "200"}, []time.Duration{60 * time.Second}, false},
		{"Retry-After header when the field is absent", []string{"429:-:7", "200"}, []time.Duration{7 * time.Second}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			s, rec := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				a := tc.answers[n]
				n++
				mu.Unlock()
				if a == "200" {
					writeJSON(w, 201, `{"success":true,"data":{"id":"cr_1"}}`)
					return
				}
				parts := strings.Split(a, ":")
				if parts[2] != "-" {
					w.Header().Set("Retry-After", parts[2])
				}
				ra := ""
				if parts[1] != "-" {
					ra = `,"retry_after":` + parts[1]
				}
				writeJSON(w, 429, `{"success":false,"error":{"code":"RATE_LIMIT_EXCEEDED","message":"slow down","request_id":"r"`+ra+`}}`)
			})
			var waits []time.Duration
			c := newClient(t, s, &waits)
			_, err := c.CreateContentRequest(context.Background(), CreateContentRequest{Domain: "example.com", Budget: 1}, IdempotencyKey("same"))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && !IsCode(err, "RATE_LIMIT_EXCEEDED") {
				t.Errorf("the last 429 is not returned: %v", err)
			}
			if fmt.Sprint(waits) != fmt.Sprint(tc.wantWaits) {
				t.Errorf("waits %v, want %v", waits, tc.wantWaits)
			}
			for i, r := range rec.reqs {
				if r.Header.Get("Idempotency-Key") != "same" || rec.body[i] != rec.body[0] {
					t.Errorf("attempt %d changed the request", i+1)
				}
			}
			if want := len(tc.wantWaits) + 1; len(rec.reqs) != want {
				t.Errorf("%d attempts, want %d", len(rec.reqs), want)
			}
		})
	}
}

func TestRetryWaitHonoursContext(t *testing.T) {
	s, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 429, `{"success":false,"error":{"code":"RATE_LIMIT_EXCEEDED","message":"m","request_id":"r","retry_after":30}}`)
	})
	c, err := New(s.URL, WithKey("k", "s"), WithHTTPClient(s.Client()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.BudgetStatus(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

func TestPagination(t *testing.T) {
	pages := map[string]string{
		"":   `{"items":[{"id":"cr_5"},{"id":"cr_4"}],"has_more":true,"next_cursor":"c2"}`,
		"c2": `{"items":[{"id":"cr_3"},{"id":"cr_2"}],"has_more":true,"next_cursor":"c3"}`,
		"c3": `{"items":[{"id":"cr_1"}],"has_more":false,"next_cursor":null}`,
	}
	s, rec := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"success":true,"data":`+pages[r.URL.Query().Get("cursor")]+`}`)
	})
	var waits []time.Duration
	c := newClient(t, s, &waits)
	var ids []string
	for cr, err := range c.ContentRequests(context.Background(), ListParams{Limit: 2, Status: "queued"}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cr.ID)
	}
	if strings.Join(ids, ",") != "cr_5,cr_4,cr_3,cr_2,cr_1" {
		t.Errorf("ids %v", ids)
	}
	if q := rec.reqs[0].URL.Query(); q.Get("limit") != "2" || q.Get("status") != "queued" {
		t.Errorf("query %v", q)
	}
	// Breaking out of the loop stops fetching.
	n := len(rec.reqs)
	for range c.ContentRequests(context.Background(), ListParams{}) {
		break
	}
	if len(rec.reqs) != n+1 {
		t.Errorf("fetched %d pages after a break", len(rec.reqs)-n)
	}
}

func TestNewRefusesPlainHTTP(t *testing.T) {
	if _, err := New("http://localhost:8443"); err == nil {
		t.Error("plain http accepted")
	}
	if _, err := New("http://localhost:8443", WithAllowHTTP()); err != nil {
		t.Errorf("WithAllowHTTP: %v", err)
	}
	if _, err := New("localhost:8443"); err == nil {
		t.Error("a URL without scheme accepted")
	}
	if _, err := New("https://x", WithCAFile("/does/not/exist")); err == nil {
		t.Error("a missing CA file accepted")
	}
}

func TestUSD(t *testing.T) {
	cases := []struct {
		in   string
		want USD
		err  error
	}{
		{"12.5", 12_500_000, nil}, {"0.000001", 1, nil}, {"1e3", 1_000_000_000, nil}, {"-1", -1_000_000, nil},
		{"1000000000", MaxUSD, nil}, {"1.0000001", 0, ErrUSDPrecision}, {"abc", 0, ErrUSDSyntax},
		{"NaN", 0, ErrUSDSyntax}, {"Infinity", 0, ErrUSDSyntax}, {"1e400", 0, ErrUSDRange}, {"", 0, ErrUSDSyntax},
		{`"12.5"`, 0, ErrUSDSyntax}, {"+1", 0, ErrUSDSyntax}, {"1000000000.000001", 0, ErrUSDRange},
		{"1e999999999999", 0, ErrUSDRange}, {"1e-999999999999", 0, ErrUSDPrecision}, {"0e999999999999", 0, nil},
		{"-0", 0, nil}, {"0.0", 0, nil}, {"1E+2", 100_000_000, nil}, {"2.5e-6", 0, ErrUSDPrecision}, {"2.5e-5", 25, nil},
		{"1." + strings.Repeat("0", 200), 1_000_000, nil}, {"12.500000", 12_500_000, nil}, {"0.1e7", MaxUSD / 1000, nil},
		{"1.", 0, ErrUSDSyntax}, {".5", 0, ErrUSDSyntax}, {"01", 0, ErrUSDSyntax}, {"1e", 0, ErrUSDSyntax},
		{"1/2", 0, ErrUSDSyntax}, {"0x10", 0, ErrUSDSyntax}, {"-", 0, ErrUSDSyntax}, {"1 ", 0, ErrUSDSyntax},
		{"-1000000000", -MaxUSD, nil}, {"9999999999", 0, ErrUSDRange}, {"1e15", 0, ErrUSDRange}, {"1e9", MaxUSD, nil},
	}
	for _, c := range cases {
		got, err := ParseUSD(c.in)
		if !errors.Is(err, c.err) || (c.err == nil && got != c.want) {
			t.Errorf("ParseUSD(%q) = %d, %v; want %d, %v", c.in, got, err, c.want, c.err)
		}
	}
	for _, u := range []USD{0, 1, 12_500_000, 1_000_000, MaxUSD, -2_500_000} {
		b, _ := json.Marshal(u)
		var back USD
		if err := json.Unmarshal(b, &back); err != nil || back != u {
			t.Errorf("round trip %d via %s: %d %v", u, b, back, err)
		}
	}
	if Dollars(0.1) != 100_000 || Cents(1250) != 12_500_000 {
		t.Errorf("Dollars/Cents")
	}
	for u, want := range map[USD]string{0: "0", 1: "0.000001", 10: "0.00001", 12_500_000: "12.5", 1_230_000: "1.23",
		-2_500_000: "-2.5", -1: "-0.000001", MaxUSD: "1000000000", 100_000_007: "100.000007", math.MinInt64: "-9223372036854.775808"} {
		if got := u.String(); got != want {
			t.Errorf("USD(%d).String() = %q, want %q", int64(u), got, want)
		}
		if got := string(u.Append([]byte("x"))); got != "x"+want {
			t.Errorf("USD(%d).Append(x) = %q, want %q", int64(u), got, "x"+want)
		}
	}
}
