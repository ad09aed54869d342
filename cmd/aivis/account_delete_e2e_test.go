package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aivis/aivis/internal/browsertest"
)

// TestDashboardDeletesTheAccountInBrowser: in headless Chromium, the
// bootstrap owner makes the account "Doomed Skates"; its account page asks
// for the account's name to delete it: a wrong name deletes nothing (the
// key still works), the name deletes the account, signs the browser out
// and the account's key is refused from the next request on. An admin has
// no such form, and the server refuses the admin's post.
func TestDashboardDeletesTheAccountInBrowser(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	s := start(t, dir)
	run, text := ownerBrowser(t, browser, s, "Doomed Skates", "owner@doomed.example")
	var accounts []account
	cli(t, dir, &accounts, "account", "list")
	if len(accounts) != 1 {
		t.Fatalf("accounts after the join: %+v", accounts)
	}
	k := newKey(t, dir, accounts[0].ID)
	budget := req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)}
	if r := s.do(t, budget); r.Status != 200 {
		t.Fatalf("the account's key: %d %s", r.Status, r.Body)
	}

	run("account page", chromedp.Navigate(s.URL+"/account"), chromedp.WaitVisible(`#confirm_name`, chromedp.ByQuery))
	if h := text(`#delete-account`); h != "Delete this account" {
		t.Errorf("the account page's heading %q", h)
	}
	run("a wrong name", chromedp.SendKeys(`#confirm_name`, "Doomed", chromedp.ByQuery), browsertest.Leaving(chromedp.Submit(`#confirm_name`, chromedp.ByQuery)),
		chromedp.WaitVisible(`.problem`, chromedp.ByQuery))
	if p := text(`.problem`); !strings.Contains(p, "nothing is deleted") {
		t.Errorf("a wrong name: %q", p)
	}
	if r := s.do(t, budget); r.Status != 200 {
		t.Fatalf("the key after a wrong name: %d %s", r.Status, r.Body)
	}
	run("the name", chromedp.SendKeys(`#confirm_name`, "Doomed Skates", chromedp.ByQuery),
		browsertest.Leaving(chromedp.Submit(`#confirm_name`, chromedp.ByQuery)), chromedp.WaitVisible(`.notice`, chromedp.ByQuery))
	if n := text(`.notice`); !strings.Contains(n, "account is deleted") {
		t.Errorf("after the delete: %q", n)
	}
	var loc string
	run("location", chromedp.Location(&loc))
	if !strings.Contains(loc, "/signin") {
		t.Errorf("after the delete the browser is at %s, want the sign-in page", loc)
	}
	if r := s.do(t, budget); r.Status != 401 || r.errorCode(t) != "INVALID_CREDENTIALS" {
		t.Errorf("the deleted account's key: %d %s; want 401 INVALID_CREDENTIALS", r.Status, r.Body)
	}
	run("signed out", chromedp.Navigate(s.URL+"/account"), chromedp.WaitVisible(`#email`, chromedp.ByQuery))

	// An admin of another account has no delete form and is refused.
	other := newAccount(t, dir, "starter", false)
	admin := dashboardUser(t, s, other.ID, "admin@other.example", "admin")
	page := dashGet(t, admin, s.URL+"/account")
	if strings.Contains(page, "confirm_name") {
		t.Error("an admin's account page has the delete form")
	}
	if code, body := dashPost(t, admin, s.URL+"/account/delete", url.Values{"csrf": {csrfOf(t, page)}, "confirm_name": {"Acme starter"}}); code != 403 {
		t.Errorf("an admin's delete: %d %s; want 403", code, body)
	}
	var left []account
	cli(t, dir, &left, "account", "list")
	if len(left) != 1 || left[0].ID != other.ID {
		t.Errorf("accounts left: %+v; want %s", left, other.ID)
	}
}

// browserRun runs a browser's actions, stopping the test with the page
// and the server's log when one fails.
func browserRun(t *testing.T, ctx context.Context, s *server) func(what string, actions ...chromedp.Action) {
	return func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			var html string
			_ = chromedp.Run(ctx, chromedp.OuterHTML("main", &html, chromedp.ByQuery))
			t.Fatalf("%s: %v\npage:\n%s\nserver:\n%s", what, err, html, s.Stderr)
		}
	}
}

// ownerBrowser is a headless browser that joined s through its banner's
// one-time link, as the owner (email) of a new account (name): its run
// (browserRun) and text, which reads an element's text.
func ownerBrowser(t *testing.T, browser string, s *server, name, email string) (run func(string, ...chromedp.Action), text func(string) string) {
	t.Helper()
	m := bootstrapLink.FindStringSubmatch(s.Stdout.String())
	if m == nil {
		t.Fatalf("the banner prints no one-time sign-in link:\n%s", s.Stdout)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("ignore-certificate-errors", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelTimeout)
	run = browserRun(t, ctx, s)
	text = func(sel string) string {
		t.Helper()
		var v string
		run("read "+sel, chromedp.Text(sel, &v, chromedp.ByQuery))
		return v
	}
	run("join", chromedp.Navigate(m[1]), chromedp.WaitVisible(`#account_name`, chromedp.ByQuery),
		chromedp.SendKeys(`#account_name`, name, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "a long owner password", chromedp.ByQuery),
		chromedp.SendKeys(`#password_again`, "a long owner password", chromedp.ByQuery),
		browsertest.Leaving(chromedp.Submit(`#password_again`, chromedp.ByQuery)), chromedp.WaitVisible(`nav`, chromedp.ByQuery))
	return run, text
}

// attemptCounter is an endpoint that counts the events each path gets
// (not webhook_test) and answers 500 to the first fail of them.
type attemptCounter struct {
	*httptest.Server
	mu   sync.Mutex
	n    map[string]int
	fail map[string]int
}

func newAttemptCounter(t *testing.T, fail map[string]int) *attemptCounter {
	a := &attemptCounter{n: map[string]int{}, fail: fail}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"webhook_test"`) {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		a.n[r.URL.Path]++
		if a.n[r.URL.Path] <= a.fail[r.URL.Path] {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *attemptCounter) count(path string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[path]
}

// TestClusterAccountDelete: two instances on one PostgreSQL, NATS and
// Redis. An account whose webhook failed a first attempt (its retry due
// 5 s later) is deleted on instance A's dashboard: instance B, which had
// just served its key, refuses it from the next request on, and the retry
// is never attempted: another account's event, first attempted after the
// delete and retried on the same schedule, arrives at its retry first
// (the fence). No row of the account is left in the database.
func TestClusterAccountDelete(t *testing.T) {
	c := newCluster(t)
	gone := newAccount(t, c.dir, "starter", false)
	kept := newAccount(t, c.dir, "starter", false)
	kg, kk := newKey(t, c.dir, gone.ID), newKey(t, c.dir, kept.ID)
	hooks := newAttemptCounter(t, map[string]int{"/gone": 100, "/kept": 1})
	args := []string{"--allowed-targets", "127.0.0.1/32", "--allow-http-targets"}
	a, b := c.start(t, args...), c.start(t, args...)
	for _, w := range []struct {
		k    key
		path string
	}{{kg, "/gone"}, {kk, "/kept"}} {
		r := a.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(w.k),
			body: `{"domain":"example.com","events":["ai_visibility_change"],"url":"` + hooks.URL + w.path + `"}`})
		if r.Status != 201 {
			t.Fatalf("webhook %s: %d %s", w.path, r.Status, r.Body)
		}
	}
	recordEvent(t, a.server, kg, `{"domain":"example.com","visibility_score":40,"sentiment":"neutral"}`)
	waitFor(t, "the first attempt of the account's event", func() bool { return hooks.count("/gone") == 1 })
	first := time.Now()
	budget := func(k key) req { return req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)} }
	for _, s := range []instance{a, b} {
		if r := s.do(t, budget(kg)); r.Status != 200 {
			t.Fatalf("the key before the delete: %d %s", r.Status, r.Body)
		}
	}

	owner := dashboardUser(t, a.server, gone.ID, "owner@gone.example", "owner")
	form := url.Values{"csrf": {csrfOf(t, dashGet(t, owner, a.URL+"/account"))}, "confirm_name": {"Acme starter"}}
	if code, body := dashPost(t, owner, a.URL+"/account/delete", form); code != 303 {
		t.Fatalf("the delete on instance A's dashboard: %d %s", code, body)
	}
	for name, s := range map[string]instance{"B": b, "A": a} {
		if r := s.do(t, budget(kg)); r.Status != 401 || r.errorCode(t) != "INVALID_CREDENTIALS" {
			t.Errorf("instance %s, the deleted account's key: %d %s; want 401 INVALID_CREDENTIALS", name, r.Status, r.Body)
		}
	}

	// The other account's first attempt comes 2 s or more after the
	// deleted one's, so its retry (5 s ± 10% later) comes a second or more
	// after the deleted one's would have.
	time.Sleep(time.Until(first.Add(2 * time.Second)))
	recordEvent(t, b.server, kk, `{"domain":"example.com","visibility_score":70,"sentiment":"positive"}`)
	waitFor(t, "the other account's retry", func() bool { return hooks.count("/kept") == 2 })
	if n := hooks.count("/gone"); n != 1 {
		t.Errorf("the deleted account's endpoint got %d attempts, want the 1 before the delete", n)
	}
	for _, q := range []string{`SELECT count(*) FROM accounts WHERE id = $1`, `SELECT count(*) FROM webhooks WHERE account_id = $1`,
		`SELECT count(*) FROM webhook_deliveries WHERE account_id = $1`, `SELECT count(*) FROM event_log WHERE account_id = $1`,
		`SELECT count(*) FROM visibility_readings WHERE account_id = $1`, `SELECT count(*) FROM users WHERE account_id = $1`} {
		if n := c.count(t, q, gone.ID); n != 0 {
			t.Errorf("%s: %d", q, n)
		}
	}
}
