package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/internal/testsvc"
)

// TestStoreAwayIsServiceUnavailable: an instance whose PostgreSQL cannot
// be reached (a relay the test cuts: the connections it held end in the
// middle, new ones are refused) answers every request of a burst on both
// interfaces, reads and writes, 503 SERVICE_UNAVAILABLE with retry_after
// and Retry-After, never 500, in a message that names nothing of the
// server; its dashboard shows a signed-in user a "try again shortly" page
// with 503. A write refused meanwhile was not made; once the database
// answers again, the same requests succeed.
func TestStoreAwayIsServiceUnavailable(t *testing.T) {
	c := newCluster(t)
	relay := testsvc.NewRelay(t, c.PostgresURL)
	t.Setenv("AIVIS_POSTGRES_URL", relay.URL())
	a := newAccount(t, c.dir, "starter", false)
	k := newKey(t, c.dir, a.ID)
	s := start(t, t.TempDir())
	user := dashboardUser(t, s, a.ID, "owner@example.com", "owner")
	reqs := []req{
		{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)},
		{method: "GET", path: "/api/v1/ai/content-requests", header: keyed(k)},
		{method: "GET", path: "/v1/domains", header: bearer(k)},
		{method: "GET", path: "/v1/webhooks", header: bearer(k)},
		{method: "GET", path: "/v1/visibility/history?domain=example.com", header: bearer(k)},
		{method: "POST", path: "/v1/domains", header: bearer(k), body: `{"domain":"example.com"}`},
	}
	for _, r := range reqs[:len(reqs)-1] {
		if got := s.do(t, r); got.Status != 200 {
			t.Fatalf("%s %s before the cut: %d %s", r.method, r.path, got.Status, got.Body)
		}
	}
	u, _ := url.Parse(relay.URL())
	named := []string{u.Host, u.Port(), "postgres", "aivistest_", "127.0.0.1", "connect"}

	relay.Cut()
	var wg sync.WaitGroup
	for range 4 {
		for _, r := range reqs {
			wg.Go(func() {
				got := s.do(t, r)
				var e struct {
					Error struct {
						Code       string `json:"code"`
						Message    string `json:"message"`
						RetryAfter int    `json:"retry_after"`
					} `json:"error"`
				}
				got.decode(t, &e)
				if got.Status != 503 || e.Error.Code != "SERVICE_UNAVAILABLE" || e.Error.RetryAfter != 5 || got.Header.Get("Retry-After") != "5" {
					t.Errorf("%s %s with the database away: %d %s, Retry-After %q; want 503 SERVICE_UNAVAILABLE, 5 s",
						r.method, r.path, got.Status, got.Body, got.Header.Get("Retry-After"))
				}
				for _, n := range named {
					if strings.Contains(e.Error.Message, n) {
						t.Errorf("%s %s: the message %q names %q", r.method, r.path, e.Error.Message, n)
					}
				}
			})
		}
	}
	wg.Wait()
	res, err := user.Get(s.URL + "/domains")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 503 || res.Header.Get("Retry-After") != "5" || !strings.Contains(string(page), "Try again shortly") {
		t.Errorf("the dashboard with the database away: %d, Retry-After %q\n%s", res.StatusCode, res.Header.Get("Retry-After"), page)
	}
	if !s.logged("request refused: the store cannot be reached", "reason=") {
		t.Errorf("no refusal logged:\n%s", s.Stderr)
	}

	relay.Mend(t)
	for _, r := range reqs {
		deadline := time.Now().Add(30 * time.Second)
		got := s.do(t, r)
		for ; got.Status == 503 && time.Now().Before(deadline); got = s.do(t, r) {
			if got.errorCode(t) != "SERVICE_UNAVAILABLE" {
				t.Fatalf("%s %s once the database is back: %d %s", r.method, r.path, got.Status, got.Body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got.Status != 200 && !(r.method == "POST" && got.Status == 201) {
			t.Fatalf("%s %s once the database is back: %d %s", r.method, r.path, got.Status, got.Body)
		}
	}
	// The POSTs refused while it was away made nothing: the one domain is
	// the one created now.
	if n := c.count(t, `SELECT count(*) FROM monitored_domains`); n != 1 {
		t.Errorf("%d monitored domains, want the 1 created once the database was back", n)
	}
	if res, err := user.Get(s.URL + "/domains"); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("the dashboard once the database is back: %v %v", res, err)
	} else {
		res.Body.Close()
	}
}
