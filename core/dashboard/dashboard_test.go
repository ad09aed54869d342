package dashboard_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/dashboard"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/people"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/core/traffic"
	"github.com/aivis/aivis/core/visibility"
)

// env is a dashboard over a real SQLite file behind a real TLS listener.
type env struct {
	t      *testing.T
	db     *sqlite.DB
	people *people.Service
	auth   *auth.Service
	accts  *accounts.Service
	// traffic is the service the dashboard reads traffic through; tests
	// import logs with it.
	traffic *traffic.Service
	// changes is the service the dashboard keeps changes through; tests
	// compare its lift with the page's.
	changes *changes.Service
	srv     *httptest.Server
	// frozen, when set, is the dashboard's clock.
	frozen atomic.Pointer[time.Time]
}

// newEnv serves the dashboard; wrap, if given, is what the dashboard
// reads the store through.
func newEnv(t *testing.T, wrap ...func(*sqlite.DB) dashboard.Store) *env {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	box, _, err := secrets.Load(filepath.Join(t.TempDir(), secrets.KeyFile), true)
	if err != nil {
		t.Fatal(err)
	}
	db.SetSecrets(box)
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	accts := &accounts.Service{Store: db, Now: time.Now}
	e := &env{t: t, db: db, accts: accts, auth: &auth.Service{Keys: db, Accounts: db, Now: time.Now},
		people:  &people.Service{Store: db, Accounts: accts, Now: time.Now},
		traffic: &traffic.Service{Store: db, Catalog: traffic.NewCatalog(traffic.Snapshot()), Box: box, Now: time.Now},
		changes: &changes.Service{Store: db, Now: time.Now}}
	webhooks := &delivery.Service{Store: db, Client: http.DefaultClient, AllowHTTP: true, CheckURL: func(raw string, allowHTTP bool) error {
		if u, err := url.Parse(raw); err != nil || u.Host == "" || (u.Scheme != "https" && !(allowHTTP && u.Scheme == "http")) {
			return errors.New("must be an https URL")
		}
		return nil
	}}
	var reads dashboard.Store = db
	for _, w := range wrap {
		reads = w(db)
	}
	d, err := dashboard.New(dashboard.Deps{Store: reads, People: e.people, Auth: e.auth, Accounts: accts,
		Counter: limits.NewMemory(nil, log), Webhooks: webhooks, Domains: &visibility.Domains{Store: db, Now: time.Now},
		Content: &content.Service{Store: db, Now: time.Now}, Traffic: e.traffic, Changes: e.changes, Guard: limits.NewAuthGuard(5, time.Minute), Log: log,
		// Tests name the client's address in a header to sign in from many.
		ClientAddr: func(r *http.Request) netip.Addr {
			if a, err := netip.ParseAddr(r.Header.Get("X-Test-Client")); err == nil {
				return a
			}
			ap, _ := netip.ParseAddrPort(r.RemoteAddr)
			return ap.Addr()
		},
		Now: func() time.Time {
			if t := e.frozen.Load(); t != nil {
				return *t
			}
			return time.Now()
		}})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewTLSServer(d)
	t.Cleanup(e.srv.Close)
	return e
}

// browser is a client with its own cookies that does not follow redirects.
func (e *env) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	c := e.srv.Client()
	return &http.Client{Transport: c.Transport, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type page struct {
	status     int
	body       string
	loc        string
	retryAfter string
}

func (e *env) get(c *http.Client, path string) page {
	e.t.Helper()
	res, err := c.Get(e.srv.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return page{res.StatusCode, string(b), res.Header.Get("Location"), res.Header.Get("Retry-After")}
}

func (e *env) post(c *http.Client, path string, form url.Values, header ...string) page {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return page{res.StatusCode, string(b), res.Header.Get("Location"), res.Header.Get("Retry-After")}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrf(t *testing.T, p page) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no csrf field in the page (%d):\n%s", p.status, p.body)
	}
	return m[1]
}

const password = "correct horse battery"

// owner creates an account through the bootstrap link and returns the
// owner's signed-in browser.
func (e *env) owner(email string, agency bool) (*http.Client, store.User) {
	e.t.Helper()
	token, err := e.people.Bootstrap(context.Background())
	if err != nil || token == "" {
		// Users exist: make the account by hand, as the bootstrap would.
		a, err := e.accts.Create(context.Background(), "Acme "+email, "starter", agency)
		if err != nil {
			e.t.Fatal(err)
		}
		return e.member(a.ID, email, store.RoleOwner)
	}
	c := e.browser()
	p := e.get(c, "/join?token="+token)
	form := url.Values{"csrf": {csrf(e.t, p)}, "token": {token}, "email": {email}, "password": {password},
		"password_again": {password}, "account_name": {"Acme " + email}, "tier": {"starter"}}
	if agency {
		form.Set("agency", "on")
	}
	p = e.post(c, "/join", form)
	if p.status != http.StatusSeeOther {
		e.t.Fatalf("join: %d\n%s", p.status, p.body)
	}
	u, err := e.db.UserByEmail(context.Background(), email)
	if err != nil {
		e.t.Fatal(err)
	}
	return c, u
}

// member adds a user with a role to an account through an invitation
// made by the service, and signs them in.
func (e *env) member(accountID, email, role string) (*http.Client, store.User) {
	e.t.Helper()
	ctx := context.Background()
	inviter := store.User{ID: "usr_system", AccountID: accountID, Role: store.RoleOwner}
	token, err := e.people.Invite(ctx, inviter, email, role)
	if err != nil {
		e.t.Fatal(err)
	}
	u, err := e.people.AcceptInvitation(ctx, people.Accept{Token: token, Email: email, Password: password})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.signIn(email), u
}

func (e *env) signIn(email string) *http.Client {
	e.t.Helper()
	c := e.browser()
	p := e.get(c, "/signin")
	p = e.post(c, "/signin", url.Values{"csrf": {csrf(e.t, p)}, "email": {email}, "password": {password}, "next": {"/"}})
	if p.status != http.StatusSeeOther || p.loc != "/" {
		e.t.Fatalf("sign in: %d %q\n%s", p.status, p.loc, p.body)
	}
	return c
}

func sessionCookie(c *http.Client, u string) string {
	pu, _ := url.Parse(u)
	for _, ck := range c.Jar.Cookies(pu) {
		if ck.Name == dashboard.SessionCookie {
			return ck.Value
		}
	}
	return ""
}

func TestEveryPageRendersForTheOwner(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", true)
	if _, err := e.accts.CreateClient(context.Background(), u.AccountID, "Client One"); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/keys", "/usage", "/webhooks", "/connectors", "/clients", "/domains", "/content", "/members", "/account"} {
		p := e.get(c, path)
		if p.status != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", path, p.status, p.body)
		}
		if !strings.Contains(p.body, "owner@example.com") {
			t.Errorf("GET %s does not show who is signed in", path)
		}
	}
	if p := e.get(c, "/usage"); !strings.Contains(p.body, "<svg class=\"chart\"") {
		t.Errorf("the usage page draws no chart")
	}
	if p := e.get(e.browser(), "/keys"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.loc, "/signin") {
		t.Errorf("GET /keys signed out: %d %q, want a redirect to /signin", p.status, p.loc)
	}
}

func TestSessionCookieIsSecureHttpOnlySameSite(t *testing.T) {
	e := newEnv(t)
	e.owner("owner@example.com", false)
	c := e.browser()
	p := e.get(c, "/signin")
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/signin", strings.NewReader(url.Values{"csrf": {csrf(t, p)},
		"email": {"owner@example.com"}, "password": {password}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var found bool
	for _, ck := range res.Cookies() {
		if ck.Name == dashboard.SessionCookie {
			found = true
			if !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/" {
				t.Errorf("session cookie %+v: want Secure, HttpOnly, SameSite=Lax, Path=/", ck)
			}
		}
	}
	if !found {
		t.Fatal("no session cookie set on sign-in")
	}
	for h, want := range map[string]string{"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"} {
		if got := res.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
		strings.Contains(csp, "unsafe-inline") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	// Only a hash of the token is stored.
	if _, _, err := e.db.SessionByHash(context.Background(), []byte(sessionCookie(c, e.srv.URL)), time.Now()); err == nil {
		t.Error("the session token itself finds a session: it must be stored hashed")
	}
}

func TestWrongPasswordRefused(t *testing.T) {
	e := newEnv(t)
	e.owner("owner@example.com", false)
	for _, email := range []string{"owner@example.com", "nobody@example.com"} {
		c := e.browser()
		p := e.get(c, "/signin")
		p = e.post(c, "/signin", url.Values{"csrf": {csrf(t, p)}, "email": {email}, "password": {"wrong password!!"}})
		if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "The email or password is wrong.") {
			t.Errorf("%s with a wrong password: %d, want 401 and the one message", email, p.status)
		}
		if sessionCookie(c, e.srv.URL) != "" {
			t.Errorf("%s: a session cookie was set", email)
		}
	}
}

func keyCount(t *testing.T, e *env, accountID string) int {
	ks, err := e.db.ListKeys(context.Background(), accountID)
	if err != nil {
		t.Fatal(err)
	}
	return len(ks)
}

func TestCSRFRefused(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	good := csrf(t, e.get(c, "/keys"))
	cases := []struct {
		name   string
		form   url.Values
		header []string
	}{
		{"no token", url.Values{"name": {"k"}}, nil},
		{"wrong token", url.Values{"name": {"k"}, "csrf": {strings.Repeat("x", 43)}}, nil},
		{"another origin", url.Values{"name": {"k"}, "csrf": {good}}, []string{"Origin", "https://evil.example"}},
	}
	for _, tc := range cases {
		p := e.post(c, "/keys", tc.form, tc.header...)
		if p.status != http.StatusForbidden {
			t.Errorf("%s: POST /keys answered %d, want 403", tc.name, p.status)
		}
	}
	// Sign-out, too, needs the token: a forged form cannot end a session.
	if p := e.post(c, "/signout", url.Values{}); p.status != http.StatusForbidden {
		t.Errorf("sign-out without a token: %d, want 403", p.status)
	}
	if n := keyCount(t, e, u.AccountID); n != 0 {
		t.Fatalf("%d keys were made by refused forms", n)
	}
	// Another session's token is not this session's.
	other := e.signIn("owner@example.com")
	otherToken := csrf(t, e.get(other, "/keys"))
	if p := e.post(c, "/keys", url.Values{"name": {"k"}, "csrf": {otherToken}}); p.status != http.StatusForbidden {
		t.Errorf("another session's token: %d, want 403", p.status)
	}
	// The session's own token works.
	if p := e.post(c, "/keys", url.Values{"name": {"k"}, "csrf": {good}}); p.status != http.StatusCreated {
		t.Fatalf("with the token: %d\n%s", p.status, p.body)
	}
	if n := keyCount(t, e, u.AccountID); n != 1 {
		t.Fatalf("%d keys, want 1", n)
	}
}

func TestViewerCannotCreateKeys(t *testing.T) {
	e := newEnv(t)
	owner, u := e.owner("owner@example.com", false)
	viewer, _ := e.member(u.AccountID, "viewer@example.com", store.RoleViewer)
	p := e.get(viewer, "/keys")
	if p.status != http.StatusOK {
		t.Fatalf("viewer GET /keys: %d", p.status)
	}
	if strings.Contains(p.body, `action="/keys"`) || strings.Contains(p.body, "Generate key") {
		t.Error("the viewer's keys page offers the form to generate a key")
	}
	if p := e.post(viewer, "/keys", url.Values{"name": {"sneaky"}, "csrf": {csrf(t, p)}}); p.status != http.StatusForbidden {
		t.Errorf("viewer POST /keys: %d, want 403", p.status)
	}
	if n := keyCount(t, e, u.AccountID); n != 0 {
		t.Fatalf("the viewer made %d keys", n)
	}
	// Nor revoke the owner's key.
	p = e.post(owner, "/keys", url.Values{"name": {"owned"}, "csrf": {csrf(t, e.get(owner, "/keys"))}})
	if p.status != http.StatusCreated {
		t.Fatalf("owner POST /keys: %d", p.status)
	}
	ks, _ := e.db.ListKeys(context.Background(), u.AccountID)
	vp := e.get(viewer, "/keys")
	if p := e.post(viewer, "/keys/"+ks[0].ID+"/revoke", url.Values{"csrf": {csrf(t, vp)}}); p.status != http.StatusForbidden {
		t.Errorf("viewer revoke: %d, want 403", p.status)
	}
	if k, _ := e.db.Key(context.Background(), ks[0].ID); !k.RevokedAt.IsZero() {
		t.Error("the viewer revoked a key")
	}
	// A developer may.
	dev, _ := e.member(u.AccountID, "dev@example.com", store.RoleDeveloper)
	if p := e.post(dev, "/keys", url.Values{"name": {"dev key"}, "csrf": {csrf(t, e.get(dev, "/keys"))}}); p.status != http.StatusCreated {
		t.Errorf("developer POST /keys: %d, want 201", p.status)
	}
	// But not invite members.
	if p := e.post(dev, "/members/invite", url.Values{"email": {"x@example.com"}, "role": {"viewer"}, "csrf": {csrf(t, e.get(dev, "/members"))}}); p.status != http.StatusForbidden {
		t.Errorf("developer invites: %d, want 403", p.status)
	}
}

func TestAnAccountNeverSeesAnothers(t *testing.T) {
	e := newEnv(t)
	a, ua := e.owner("a@example.com", true)
	b, ub := e.owner("b@example.com", true)
	if ua.AccountID == ub.AccountID {
		t.Fatal("one account for both")
	}
	ctx := context.Background()
	cl, err := e.accts.CreateClient(ctx, ua.AccountID, "A's secret client")
	if err != nil {
		t.Fatal(err)
	}
	p := e.post(a, "/keys", url.Values{"name": {"A's private key"}, "csrf": {csrf(t, e.get(a, "/keys"))}})
	if p.status != http.StatusCreated {
		t.Fatalf("A POST /keys: %d", p.status)
	}
	ks, _ := e.db.ListKeys(ctx, ua.AccountID)
	if _, err := e.db.AddReading(ctx, store.Reading{AccountID: ua.AccountID, Domain: "a-only.example", VisibilityScore: 50,
		Sentiment: "neutral", Source: "api", MeasuredAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/keys", "/clients", "/usage", "/", "/members"} {
		p := e.get(b, path)
		for _, leak := range []string{"A's private key", ks[0].Hint, "A's secret client", "a@example.com"} {
			if strings.Contains(p.body, leak) {
				t.Errorf("B's %s shows %q", path, leak)
			}
		}
	}
	if p := e.get(b, "/clients/"+cl.ID); p.status != http.StatusNotFound {
		t.Errorf("B GET A's client: %d, want 404", p.status)
	}
	if p := e.get(b, "/domains/a-only.example"); p.status != http.StatusNotFound {
		t.Errorf("B GET A's domain: %d, want 404", p.status)
	}
	tok := csrf(t, e.get(b, "/keys"))
	for _, path := range []string{"/keys/" + ks[0].ID + "/revoke", "/keys/" + ks[0].ID + "/roll"} {
		if p := e.post(b, path, url.Values{"csrf": {tok}, "grace": {"1h"}}); p.status != http.StatusNotFound {
			t.Errorf("B POST %s: %d, want 404", path, p.status)
		}
	}
	if k, _ := e.db.Key(ctx, ks[0].ID); !k.RevokedAt.IsZero() {
		t.Error("B revoked A's key")
	}
	// Nor make a key for A's client.
	if p := e.post(b, "/keys", url.Values{"name": {"x"}, "client_id": {cl.ID}, "csrf": {tok}}); p.status != http.StatusNotFound {
		t.Errorf("B makes a key for A's client: %d, want 404", p.status)
	}
}

func TestSessionFixationPrevented(t *testing.T) {
	e := newEnv(t)
	e.owner("owner@example.com", false)
	c := e.browser()
	u, _ := url.Parse(e.srv.URL)
	planted := strings.Repeat("A", 43)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: dashboard.SessionCookie, Value: planted, Path: "/", Secure: true}})
	p := e.get(c, "/signin")
	p = e.post(c, "/signin", url.Values{"csrf": {csrf(t, p)}, "email": {"owner@example.com"}, "password": {password}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", p.status)
	}
	got := sessionCookie(c, e.srv.URL)
	if got == "" || got == planted {
		t.Fatalf("session cookie after sign-in is %q: want a new token", got)
	}
	// A signed-in session, signing in again, gets a new token too, and
	// the old one stops working.
	old := got
	p = e.get(c, "/account")
	// /signin redirects a signed-in browser; post the form directly.
	p = e.post(c, "/signin", url.Values{"csrf": {csrf(t, p)}, "email": {"owner@example.com"}, "password": {password}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("second sign in: %d", p.status)
	}
	if now := sessionCookie(c, e.srv.URL); now == old {
		t.Fatal("signing in again kept the session token")
	}
	stale := e.browser()
	stale.Jar.SetCookies(u, []*http.Cookie{{Name: dashboard.SessionCookie, Value: old, Path: "/", Secure: true}})
	if p := e.get(stale, "/keys"); p.status != http.StatusSeeOther {
		t.Errorf("the replaced session still works: %d", p.status)
	}
}

func TestSignOutInvalidatesTheSession(t *testing.T) {
	e := newEnv(t)
	c, _ := e.owner("owner@example.com", false)
	token := sessionCookie(c, e.srv.URL)
	p := e.post(c, "/signout", url.Values{"csrf": {csrf(t, e.get(c, "/"))}})
	if p.status != http.StatusSeeOther || p.loc != "/signin" {
		t.Fatalf("sign out: %d %q", p.status, p.loc)
	}
	// A copy of the cookie kept from before no longer works.
	replay := e.browser()
	u, _ := url.Parse(e.srv.URL)
	replay.Jar.SetCookies(u, []*http.Cookie{{Name: dashboard.SessionCookie, Value: token, Path: "/", Secure: true}})
	if p := e.get(replay, "/keys"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.loc, "/signin") {
		t.Errorf("the signed-out session still opens /keys: %d %q", p.status, p.loc)
	}
	if _, _, err := e.people.Session(context.Background(), token); err == nil {
		t.Error("the session record survived sign-out")
	}
}

func TestPasswordChangeEndsOtherSessions(t *testing.T) {
	e := newEnv(t)
	c, _ := e.owner("owner@example.com", false)
	other := e.signIn("owner@example.com")
	next := "a much better passphrase"
	p := e.post(c, "/account/password", url.Values{"csrf": {csrf(t, e.get(c, "/account"))}, "current_password": {password},
		"new_password": {next}, "new_password_again": {next}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("change password: %d\n%s", p.status, p.body)
	}
	if p := e.get(c, "/keys"); p.status != http.StatusOK {
		t.Errorf("the session that changed the password ended: %d", p.status)
	}
	if p := e.get(other, "/keys"); p.status != http.StatusSeeOther {
		t.Errorf("another session survived the password change: %d", p.status)
	}
	if _, err := e.people.SignIn(context.Background(), "owner@example.com", password); err == nil {
		t.Error("the old password still signs in")
	}
	if _, err := e.people.SignIn(context.Background(), "owner@example.com", next); err != nil {
		t.Errorf("the new password does not sign in: %v", err)
	}
}

func TestBootstrapLinkWorksOnce(t *testing.T) {
	e := newEnv(t)
	token, err := e.people.Bootstrap(context.Background())
	if err != nil || token == "" {
		t.Fatalf("bootstrap: %q %v", token, err)
	}
	c := e.browser()
	p := e.get(c, "/join?token="+token)
	form := url.Values{"csrf": {csrf(t, p)}, "token": {token}, "email": {"first@example.com"}, "password": {password},
		"password_again": {password}, "account_name": {"First"}, "tier": {"starter"}}
	if p := e.post(c, "/join", form); p.status != http.StatusSeeOther {
		t.Fatalf("join: %d\n%s", p.status, p.body)
	}
	c2 := e.browser()
	p = e.get(c2, "/join?token="+token)
	if p.status != http.StatusNotFound {
		t.Errorf("the used link opens again: %d", p.status)
	}
	if again, _ := e.people.Bootstrap(context.Background()); again != "" {
		t.Error("a new bootstrap link is made although a user exists")
	}
}

// testWriter sends the dashboard's log to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// Static files are served before the session is read: no cookie comes
// back with them, the security headers do, and a folder is not listed.
func TestStaticFilesWithoutSession(t *testing.T) {
	e := newEnv(t)
	c := e.srv.Client()
	res, err := c.Get(e.srv.URL + "/static/app.css")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || len(res.Cookies()) != 0 || res.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("app.css: %d, cookies %v, CSP %q", res.StatusCode, res.Cookies(), res.Header.Get("Content-Security-Policy"))
	}
	if p := e.get(c, "/static/"); p.status != http.StatusNotFound || strings.Contains(p.body, "app.js") {
		t.Errorf("/static/: %d, %q", p.status, p.body)
	}
	if p := e.get(e.browser(), "/no/such/page"); p.status != http.StatusNotFound || !strings.Contains(p.body, "There is no such page.") {
		t.Errorf("an unknown page: %d", p.status)
	}
}
