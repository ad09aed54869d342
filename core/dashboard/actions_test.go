package dashboard_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
)

func TestSignInFailuresLimitedPerAddress(t *testing.T) {
	e := newEnv(t)
	// The guard's windows are whole minutes: one clock reading for all
	// six attempts keeps them in one window.
	now := time.Now()
	e.frozen.Store(&now)
	e.owner("owner@example.com", false)
	c := e.browser()
	tok := csrf(t, e.get(c, "/signin"))
	for i := range 5 {
		p := e.post(c, "/signin", url.Values{"csrf": {tok}, "email": {"owner@example.com"}, "password": {"not the password"}})
		if p.status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, p.status)
		}
	}
	p := e.post(c, "/signin", url.Values{"csrf": {tok}, "email": {"owner@example.com"}, "password": {password}})
	if p.status != http.StatusTooManyRequests || sessionCookie(c, e.srv.URL) != "" {
		t.Fatalf("after 5 failures the right password: %d, want 429 and no session", p.status)
	}
	checkWait(t, p, 60-int(now.Unix()%60))
}

// checkWait: a 429 page carries Retry-After, and its message names the
// same wait.
func checkWait(t *testing.T, p page, want int) {
	t.Helper()
	if p.status != http.StatusTooManyRequests || p.retryAfter != strconv.Itoa(want) ||
		!strings.Contains(p.body, fmt.Sprintf("retry after %d seconds", want)) {
		t.Errorf("%d, Retry-After %q; want 429 and a wait of %d seconds, named by the page:\n%s", p.status, p.retryAfter, want, p.body)
	}
}

// Failures from many client addresses against one email address are
// limited too, whether the address signs in or not; others are not held up.
func TestSignInFailuresLimitedPerEmail(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.frozen.Store(&now)
	e.owner("owner@example.com", false)
	signIn := func(i int, email, pw string) (page, *http.Client) {
		c := e.browser()
		tok := csrf(t, e.get(c, "/signin"))
		return e.post(c, "/signin", url.Values{"csrf": {tok}, "email": {email}, "password": {pw}}, "X-Test-Client", fmt.Sprintf("10.0.0.%d", i)), c
	}
	for _, email := range []string{"Owner@example.com", "nobody@example.com"} {
		for i := range 10 {
			if p, _ := signIn(i, email, "not the password"); p.status != http.StatusUnauthorized {
				t.Fatalf("%s failure %d: %d", email, i+1, p.status)
			}
		}
	}
	p, c := signIn(50, "owner@example.com", password)
	if p.status != http.StatusTooManyRequests || sessionCookie(c, e.srv.URL) != "" {
		t.Fatalf("after 10 failures from 10 addresses the right password: %d, want 429 and no session", p.status)
	}
	checkWait(t, p, 900-int(now.Unix()%900))
	// An unknown address answers the same: the limit tells nothing.
	if p, _ := signIn(51, "nobody@example.com", "anything at all"); p.status != http.StatusTooManyRequests {
		t.Errorf("an unknown address after 10 failures: %d, want 429", p.status)
	}
	// Another user signs in from the same client addresses.
	e.member(mustUser(t, e, "owner@example.com").AccountID, "dev@example.com", store.RoleDeveloper)
	if p, _ := signIn(1, "dev@example.com", password); p.status != http.StatusSeeOther {
		t.Errorf("another user from an address that failed once: %d, want 303", p.status)
	}
	later := now.Add(15 * time.Minute)
	e.frozen.Store(&later)
	if p, _ := signIn(52, "owner@example.com", password); p.status != http.StatusSeeOther {
		t.Errorf("the right password after the window: %d, want 303", p.status)
	}
}

// TestSignInGuessesAtOnceAnsweredUpToTheLimit: 64 wrong sign-ins sent at
// once are checked only up to the limit of each guard, the others refused
// with 429 before their password is hashed, and the right password is
// refused afterwards: from one address (5 a minute), and for one email
// address from 64 client addresses (10 a quarter hour).
func TestSignInGuessesAtOnceAnsweredUpToTheLimit(t *testing.T) {
	const n = 64
	for _, tc := range []struct {
		name  string
		limit int
		from  func(i int) (email, client string)
	}{
		{"one address", 5, func(i int) (string, string) { return fmt.Sprintf("guess%d@example.com", i), "10.1.0.1" }},
		{"one email address", 10, func(i int) (string, string) { return "owner@example.com", fmt.Sprintf("10.2.0.%d", i) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			now := time.Now()
			e.frozen.Store(&now)
			e.owner("owner@example.com", false)
			var mu sync.Mutex
			got := map[int]int{}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				c := e.browser()
				tok := csrf(t, e.get(c, "/signin"))
				wg.Go(func() {
					email, client := tc.from(i)
					<-start
					p := e.post(c, "/signin", url.Values{"csrf": {tok}, "email": {email}, "password": {"not the password"}}, "X-Test-Client", client)
					mu.Lock()
					got[p.status]++
					mu.Unlock()
				})
			}
			close(start)
			wg.Wait()
			if got[http.StatusUnauthorized] != tc.limit || got[http.StatusTooManyRequests] != n-tc.limit {
				t.Fatalf("answers %v to %d wrong sign-ins at once; want %d 401 and %d 429", got, n, tc.limit, n-tc.limit)
			}
			_, client := tc.from(0)
			c := e.browser()
			p := e.post(c, "/signin", url.Values{"csrf": {csrf(t, e.get(c, "/signin"))}, "email": {"owner@example.com"}, "password": {password}},
				"X-Test-Client", client)
			if p.status != http.StatusTooManyRequests || sessionCookie(c, e.srv.URL) != "" {
				t.Fatalf("the right password after them: %d, want 429 and no session", p.status)
			}
		})
	}
}

// TestEmailGuardKeepsNoEmail: the guard per email address keeps a fixed
// size per address, however long the address typed: failed sign-ins with
// addresses of 60 KB each leave no trace of that size in memory.
func TestEmailGuardKeepsNoEmail(t *testing.T) {
	const n, size = 16, 60 << 10
	e := newEnv(t)
	fail := func(i int) {
		c := e.browser()
		email := fmt.Sprintf("%d%s@example.com", i, strings.Repeat("a", size))
		p := e.post(c, "/signin", url.Values{"csrf": {csrf(t, e.get(c, "/signin"))}, "email": {email}, "password": {"not the password"}},
			"X-Test-Client", fmt.Sprintf("10.3.%d.%d", i/200, i%200))
		if p.status != http.StatusUnauthorized {
			t.Fatalf("sign-in %d: %d, want 401", i, p.status)
		}
	}
	fail(-1) // the first sign-in makes what every later one shares
	before := liveHeap()
	for i := range n {
		fail(i)
	}
	if grown := liveHeap() - before; grown > n*size/2 {
		t.Fatalf("%d failed sign-ins with %d-byte addresses left %d bytes more in use; the addresses themselves are %d", n, size, grown, n*size)
	}
}

// liveHeap is the heap in use after a collection (two: what finalizers
// of the first release goes in the second).
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func mustUser(t *testing.T, e *env, email string) store.User {
	t.Helper()
	u, err := e.db.UserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Every state-changing page handler refuses a role below the one it
// needs, whatever the page shows.
func TestRolesLimitTheHandlers(t *testing.T) {
	e := newEnv(t)
	_, u := e.owner("owner@example.com", true)
	viewer, _ := e.member(u.AccountID, "viewer@example.com", store.RoleViewer)
	dev, _ := e.member(u.AccountID, "dev@example.com", store.RoleDeveloper)
	admin, _ := e.member(u.AccountID, "admin@example.com", store.RoleAdmin)
	build := []string{"/keys", "/keys/key_x/revoke", "/keys/key_x/roll", "/webhooks", "/webhooks/wh_x/enabled", "/webhooks/wh_x/rotate",
		"/webhooks/wh_x/test", "/webhooks/wh_x/replay", "/webhooks/wh_x/delete", "/connections/con_x/delete", "/connections/con_x", "/webhooks/wh_x/deliveries/dlv_x/redeliver", "/connectors/slack",
		"/connections/con_x/test", "/connections/con_x/enabled", "/connections/con_x/replay", "/domains", "/domains/a.example/scan"}
	manage := []string{"/members/invite", "/members/usr_x/role", "/members/usr_x/remove", "/clients", "/webhooks/default"}
	check := func(who string, c *http.Client, paths []string) {
		tok := csrf(t, e.get(c, "/account"))
		for _, path := range paths {
			if p := e.post(c, path, url.Values{"csrf": {tok}, "name": {"x"}}); p.status != http.StatusForbidden {
				t.Errorf("%s POST %s: %d, want 403", who, path, p.status)
			}
		}
	}
	check("viewer", viewer, append(build, manage...))
	check("developer", dev, manage)
	// The admin passes the role check (then the service answers: not found).
	tok := csrf(t, e.get(admin, "/account"))
	for _, path := range append(build, manage...) {
		if p := e.post(admin, path, url.Values{"csrf": {tok}}); p.status == http.StatusForbidden {
			t.Errorf("admin POST %s: 403", path)
		}
	}
	// An admin cannot make an owner.
	if p := e.post(admin, "/members/invite", url.Values{"csrf": {tok}, "email": {"boss@example.com"}, "role": {"owner"}}); p.status != http.StatusForbidden {
		t.Errorf("admin invites an owner: %d, want 403", p.status)
	}
}

func TestInviteJoinAndChangeRole(t *testing.T) {
	e := newEnv(t)
	owner, u := e.owner("owner@example.com", false)
	p := e.post(owner, "/members/invite", url.Values{"csrf": {csrf(t, e.get(owner, "/members"))}, "email": {"new@example.com"}, "role": {"developer"}})
	if p.status != http.StatusOK {
		t.Fatalf("invite: %d\n%s", p.status, p.body)
	}
	m := regexp.MustCompile(`value="https://[^"]+(/join\?token=[A-Za-z0-9]+)"`).FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no invitation link shown:\n%s", p.body)
	}
	c := e.browser()
	jp := e.get(c, m[1])
	if jp.status != http.StatusOK || !strings.Contains(jp.body, "developer") {
		t.Fatalf("the invitation page: %d", jp.status)
	}
	token := strings.TrimPrefix(m[1], "/join?token=")
	// Another address than the invited one is refused.
	bad := e.post(c, "/join", url.Values{"csrf": {csrf(t, jp)}, "token": {token}, "email": {"other@example.com"}, "password": {password}, "password_again": {password}})
	if bad.status != http.StatusBadRequest {
		t.Fatalf("join with another email: %d", bad.status)
	}
	ok := e.post(c, "/join", url.Values{"csrf": {csrf(t, jp)}, "token": {token}, "email": {"new@example.com"}, "password": {password}, "password_again": {password}})
	if ok.status != http.StatusSeeOther {
		t.Fatalf("join: %d\n%s", ok.status, ok.body)
	}
	nu, err := e.db.UserByEmail(context.Background(), "new@example.com")
	if err != nil || nu.Role != store.RoleDeveloper || nu.AccountID != u.AccountID {
		t.Fatalf("the new member: %+v %v", nu, err)
	}
	// Demoted to viewer: their session ends, and they may no longer build.
	if p := e.post(owner, "/members/"+nu.ID+"/role", url.Values{"csrf": {csrf(t, e.get(owner, "/members"))}, "role": {"viewer"}}); p.status != http.StatusSeeOther {
		t.Fatalf("set role: %d\n%s", p.status, p.body)
	}
	if p := e.get(c, "/keys"); p.status != http.StatusSeeOther {
		t.Errorf("the demoted member's session survived: %d", p.status)
	}
	c = e.signIn("new@example.com")
	if p := e.post(c, "/keys", url.Values{"csrf": {csrf(t, e.get(c, "/keys"))}, "name": {"k"}}); p.status != http.StatusForbidden {
		t.Errorf("the demoted member makes a key: %d", p.status)
	}
	// Removed: gone.
	if p := e.post(owner, "/members/"+nu.ID+"/remove", url.Values{"csrf": {csrf(t, e.get(owner, "/members"))}}); p.status != http.StatusSeeOther {
		t.Fatalf("remove: %d", p.status)
	}
	if p := e.get(c, "/keys"); p.status != http.StatusSeeOther {
		t.Errorf("the removed member still signs in: %d", p.status)
	}
}

func TestKeysRollAndClientKeys(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", true)
	p := e.post(c, "/clients", url.Values{"csrf": {csrf(t, e.get(c, "/clients"))}, "name": {"Client One"}})
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.loc, "/clients/cli_") {
		t.Fatalf("create client: %d %q\n%s", p.status, p.loc, p.body)
	}
	clientID := strings.TrimSuffix(strings.TrimPrefix(p.loc, "/clients/"), "?done=client")
	tok := csrf(t, e.get(c, "/keys"))
	p = e.post(c, "/keys", url.Values{"csrf": {tok}, "name": {"client key"}, "client_id": {clientID}, "expires": {"2099-01-01"},
		"scopes": {"budget:read", "visibility:read"}})
	if p.status != http.StatusCreated {
		t.Fatalf("create key: %d\n%s", p.status, p.body)
	}
	ks, _ := e.db.ListKeys(context.Background(), u.AccountID)
	if len(ks) != 1 || ks[0].ClientID != clientID || len(ks[0].Scopes) != 2 || ks[0].ExpiresAt.Year() != 2099 {
		t.Fatalf("the key made: %+v", ks)
	}
	// The same rules as the CLI and API: an unknown scope, a past expiry.
	for _, bad := range []url.Values{{"scopes": {"root"}}, {"expires": {"2001-01-01"}}, {"name": {""}}} {
		f := url.Values{"csrf": {tok}, "name": {"x"}}
		for k, v := range bad {
			f[k] = v
		}
		if p := e.post(c, "/keys", f); p.status != http.StatusUnprocessableEntity && p.status != http.StatusBadRequest {
			t.Errorf("POST /keys %v: %d, want a refusal", bad, p.status)
		}
	}
	if cp := e.get(c, "/clients/"+clientID); cp.status != http.StatusOK || !strings.Contains(cp.body, "client key") {
		t.Errorf("the client's page does not list its key (%d)", cp.status)
	}
	// Roll: a new key like the old, which expires after the grace period.
	p = e.post(c, "/keys/"+ks[0].ID+"/roll", url.Values{"csrf": {tok}, "grace": {"1h"}})
	if p.status != http.StatusCreated {
		t.Fatalf("roll: %d\n%s", p.status, p.body)
	}
	rolledKey, rolledSecret := shownCredentials(t, p.body)
	ks, _ = e.db.ListKeys(context.Background(), u.AccountID)
	if len(ks) != 2 || ks[0].RevokedAt.IsZero() || ks[1].ClientID != clientID || len(ks[1].Scopes) != 2 || ks[1].Name != "client key" {
		t.Fatalf("after the roll: %+v", ks)
	}
	if d := ks[0].RevokedAt.Sub(ks[1].CreatedAt); d < 59*60e9 || d > 61*60e9 {
		t.Errorf("the old key ends %v after the roll, want 1h", d)
	}
	if !strings.Contains(e.get(c, "/keys").body, "expiring") {
		t.Error("the keys page does not show the old key as expiring")
	}
	// Revoke during the grace: the longest grace a roll allows does not
	// postpone an explicit revocation.
	p = e.post(c, "/keys/"+ks[1].ID+"/roll", url.Values{"csrf": {tok}, "grace": {"720h"}})
	if p.status != http.StatusCreated {
		t.Fatalf("roll with 720h: %d\n%s", p.status, p.body)
	}
	before := time.Now()
	if p = e.post(c, "/keys/"+ks[1].ID+"/revoke", url.Values{"csrf": {tok}}); p.status != http.StatusSeeOther {
		t.Fatalf("revoke during the grace: %d\n%s", p.status, p.body)
	}
	k, err := e.db.Key(context.Background(), ks[1].ID)
	if err != nil || k.RevokedAt.After(time.Now()) || k.RevokedAt.Before(before.Add(-time.Second)) {
		t.Fatalf("revoked during the grace: revoked_at %v (%v), want now", k.RevokedAt, err)
	}
	if _, err := e.auth.Authenticate(context.Background(), rolledKey, rolledSecret, true); err == nil {
		t.Fatal("the revoked key authenticates")
	} else if fe, ok := fault.As(err); !ok || fe.Code != fault.KeyRevoked {
		t.Fatalf("the revoked key: %v; want KEY_REVOKED", err)
	}
	if !strings.Contains(e.get(c, "/keys").body, `<span class="state revoked">revoked</span>`) {
		t.Error("the keys page does not show the key as revoked")
	}
}

// shownCredentials reads the key and secret a page shows once.
func shownCredentials(t *testing.T, body string) (key, secret string) {
	t.Helper()
	m := regexp.MustCompile(`id="new-key" readonly value="(svc_[A-Za-z0-9]{40})"[\s\S]*id="new-secret" readonly value="([A-Za-z0-9]{64})"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the page shows no new credentials:\n%s", body)
	}
	return m[1], m[2]
}

func TestWebhookPages(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	var hits atomic.Int32
	var status atomic.Int32
	status.Store(200)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		hits.Add(1)
		w.WriteHeader(int(status.Load()))
	}))
	defer recv.Close()
	tok := csrf(t, e.get(c, "/webhooks"))
	// The default endpoint is checked like any endpoint, then used.
	if p := e.post(c, "/webhooks/default", url.Values{"csrf": {tok}, "url": {"ftp://nope"}}); p.status != http.StatusBadRequest && p.status != http.StatusUnprocessableEntity {
		t.Errorf("a bad default URL: %d", p.status)
	}
	if p := e.post(c, "/webhooks/default", url.Values{"csrf": {tok}, "url": {recv.URL + "/default"}}); p.status != http.StatusSeeOther {
		t.Fatalf("set default: %d\n%s", p.status, p.body)
	}
	if got, _ := e.db.DefaultWebhookURL(context.Background(), u.AccountID, ""); got != recv.URL+"/default" {
		t.Fatalf("default URL stored %q", got)
	}
	p := e.post(c, "/webhooks", url.Values{"csrf": {tok}, "domain": {"acme.example"}, "events": {"ai_visibility_change"}})
	if p.status != http.StatusCreated || !strings.Contains(p.body, "whsec_") || !strings.Contains(p.body, `id="test-outcome"`) {
		t.Fatalf("create with the default URL: %d\n%s", p.status, p.body)
	}
	ws, _, _ := e.db.ListWebhooks(context.Background(), store.WebhookFilter{AccountID: u.AccountID})
	if len(ws) != 1 || ws[0].URL != recv.URL+"/default" {
		t.Fatalf("webhooks: %+v", ws)
	}
	id := ws[0].ID
	// Verification failing keeps nothing and says why.
	status.Store(500)
	p = e.post(c, "/webhooks", url.Values{"csrf": {tok}, "domain": {"other.example"}, "url": {recv.URL}, "events": {"ai_visibility_change"}})
	if p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "500") {
		t.Fatalf("a failing endpoint: %d", p.status)
	}
	status.Store(200)
	page := e.get(c, "/webhooks/"+id)
	if !strings.Contains(page.body, "webhook_test") || !strings.Contains(page.body, "succeeded") {
		t.Fatalf("the webhook page shows no test delivery:\n%s", page.body)
	}
	// Rotate: a new secret, shown once, the old one signing for the grace.
	p = e.post(c, "/webhooks/"+id+"/rotate", url.Values{"csrf": {tok}, "grace": {"1h"}})
	w2, _ := e.db.Webhook(context.Background(), u.AccountID, id)
	if p.status != http.StatusOK || !strings.Contains(html.UnescapeString(p.body), w2.Secret) || w2.PrevSecret != ws[0].Secret {
		t.Fatalf("rotate: %d", p.status)
	}
	// Disable and enable.
	if p := e.post(c, "/webhooks/"+id+"/enabled", url.Values{"csrf": {tok}, "enabled": {"false"}}); p.status != http.StatusSeeOther {
		t.Fatalf("disable: %d", p.status)
	}
	if w, _ := e.db.Webhook(context.Background(), u.AccountID, id); w.Enabled {
		t.Fatal("still enabled")
	}
	if p := e.post(c, "/webhooks/"+id+"/enabled", url.Values{"csrf": {tok}, "enabled": {"true"}}); p.status != http.StatusSeeOther {
		t.Fatalf("enable: %d", p.status)
	}
	// Redeliver the test delivery: pending again.
	ds, _, _ := e.db.ListDeliveries(context.Background(), store.DeliveryFilter{WebhookID: id, Limit: 10})
	if len(ds) != 1 {
		t.Fatalf("deliveries: %d", len(ds))
	}
	if p := e.post(c, "/webhooks/"+id+"/deliveries/"+ds[0].ID+"/redeliver", url.Values{"csrf": {tok}}); p.status != http.StatusSeeOther {
		t.Fatalf("redeliver: %d\n%s", p.status, p.body)
	}
	if d, _, _ := e.db.Delivery(context.Background(), id, ds[0].ID); d.Status != store.DeliveryPending {
		t.Errorf("after redeliver the delivery is %s", d.Status)
	}
	// Replay a range: the service answers how many.
	p = e.post(c, "/webhooks/"+id+"/replay", url.Values{"csrf": {tok}, "since": {"2000-01-01T00:00"}, "until": {"2099-01-01T00:00"}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "failed deliveries are scheduled again") {
		t.Errorf("replay: %d", p.status)
	}
	p = e.post(c, "/webhooks/"+id+"/replay", url.Values{"csrf": {tok}, "since": {"2099-01-01T00:00"}, "until": {"2000-01-01T00:00"}})
	if p.status != http.StatusBadRequest && p.status != http.StatusUnprocessableEntity {
		t.Errorf("replay of an empty range: %d", p.status)
	}
	// Delete: no longer listed nor changed, but its page, reached from the
	// list of deleted webhooks, shows its deliveries until they age out.
	if p := e.post(c, "/webhooks/"+id+"/delete", url.Values{"csrf": {tok}}); p.status != http.StatusSeeOther {
		t.Fatalf("delete: %d", p.status)
	}
	list := e.get(c, "/webhooks")
	deleted := list.body[strings.Index(list.body, `id="deleted-webhooks"`)+1:]
	if strings.Contains(list.body[:len(list.body)-len(deleted)], "/webhooks/"+id) || !strings.Contains(deleted, `href="/webhooks/`+id+`"`) {
		t.Errorf("the list does not show it among the deleted only:\n%s", list.body)
	}
	page = e.get(c, "/webhooks/"+id)
	if page.status != http.StatusOK || !strings.Contains(page.body, "deleted by the account") || !strings.Contains(page.body, "webhook_test") ||
		strings.Contains(page.body, "/rotate") || strings.Contains(page.body, "/redeliver") || strings.Contains(page.body, "/replay") {
		t.Errorf("the deleted webhook's page: %d\n%s", page.status, page.body)
	}
	if p := e.post(c, "/webhooks/"+id+"/enabled", url.Values{"csrf": {tok}, "enabled": {"true"}}); p.status != http.StatusNotFound {
		t.Errorf("enabling a deleted webhook: %d", p.status)
	}
}

func TestInvitingDoesNotRevealOtherAccountsUsers(t *testing.T) {
	e := newEnv(t)
	a, _ := e.owner("a@example.com", false)
	e.owner("b@example.com", false)
	tok := csrf(t, e.get(a, "/members"))
	// b@example.com signs in to another account: the invitation is made
	// as for anyone (accepting it would then fail for the address).
	if p := e.post(a, "/members/invite", url.Values{"csrf": {tok}, "email": {"b@example.com"}, "role": {"viewer"}}); p.status != http.StatusOK {
		t.Errorf("inviting another account's user: %d", p.status)
	}
	// A member of this account is refused.
	if p := e.post(a, "/members/invite", url.Values{"csrf": {tok}, "email": {"a@example.com"}, "role": {"viewer"}}); p.status != http.StatusBadRequest {
		t.Errorf("inviting a member: %d, want 400", p.status)
	}
}

// An open invitation can be withdrawn: its link stops working. Only by a
// manager of its own account.
func TestWithdrawInvitation(t *testing.T) {
	e := newEnv(t)
	owner, u := e.owner("owner@example.com", false)
	other, _ := e.owner("other@example.com", false)
	viewer, _ := e.member(u.AccountID, "viewer@example.com", store.RoleViewer)
	p := e.post(owner, "/members/invite", url.Values{"csrf": {csrf(t, e.get(owner, "/members"))}, "email": {"wrong@example.com"}, "role": {"admin"}})
	m := regexp.MustCompile(`/join\?token=([A-Za-z0-9]+)`).FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil {
		t.Fatalf("invite: %d", p.status)
	}
	members := e.get(owner, "/members")
	a := regexp.MustCompile(`action="(/members/invitations/[0-9a-f]{64}/withdraw)"`).FindStringSubmatch(members.body)
	if a == nil {
		t.Fatalf("the members page offers no Withdraw:\n%s", members.body)
	}
	if strings.Contains(members.body, m[1]) {
		t.Error("the members page shows the invitation's token")
	}
	if vp := e.get(viewer, "/members"); strings.Contains(vp.body, "/withdraw") {
		t.Error("the viewer's members page offers Withdraw")
	}
	for who, c := range map[string]*http.Client{"viewer": viewer, "another account's owner": other} {
		want := http.StatusForbidden
		if c == other {
			want = http.StatusNotFound
		}
		if p := e.post(c, a[1], url.Values{"csrf": {csrf(t, e.get(c, "/members"))}}); p.status != want {
			t.Errorf("%s withdraws: %d, want %d", who, p.status, want)
		}
	}
	if p := e.get(e.browser(), "/join?token="+m[1]); p.status != http.StatusOK {
		t.Fatalf("the link before withdrawal: %d", p.status)
	}
	if p := e.post(owner, a[1], url.Values{"csrf": {csrf(t, members)}}); p.status != http.StatusSeeOther || p.loc != "/members?done=withdrawn" {
		t.Fatalf("withdraw: %d %q", p.status, p.loc)
	}
	if p := e.get(e.browser(), "/join?token="+m[1]); p.status != http.StatusNotFound {
		t.Errorf("the withdrawn link: %d, want 404", p.status)
	}
	if p := e.post(owner, a[1], url.Values{"csrf": {csrf(t, members)}}); p.status != http.StatusNotFound {
		t.Errorf("withdrawing again: %d, want 404", p.status)
	}
	if p := e.post(owner, "/members/invitations/zz/withdraw", url.Values{"csrf": {csrf(t, members)}}); p.status != http.StatusNotFound {
		t.Errorf("a malformed id: %d, want 404", p.status)
	}
}

// Wrong current passwords on the Account page count with failed sign-ins.
func TestPasswordChangeGuessesLimited(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.frozen.Store(&now)
	c, _ := e.owner("owner@example.com", false)
	tok := csrf(t, e.get(c, "/account"))
	change := func(current string) int {
		return e.post(c, "/account/password", url.Values{"csrf": {tok}, "current_password": {current},
			"new_password": {"a brand new passphrase"}, "new_password_again": {"a brand new passphrase"}}).status
	}
	for i := range 10 {
		if st := change(fmt.Sprintf("guess number %d", i)); st != http.StatusBadRequest {
			t.Fatalf("guess %d: %d, want 400", i+1, st)
		}
	}
	if st := change(password); st != http.StatusTooManyRequests {
		t.Fatalf("the right password after 10 wrong ones: %d, want 429", st)
	}
	checkWait(t, e.post(c, "/account/password", url.Values{"csrf": {tok}, "current_password": {password},
		"new_password": {"a brand new passphrase"}, "new_password_again": {"a brand new passphrase"}}), 900-int(now.Unix()%900))
	if _, err := e.people.SignIn(context.Background(), "owner@example.com", password); err != nil {
		t.Fatalf("the password changed although refused: %v", err)
	}
	b := e.browser()
	p := e.get(b, "/signin")
	if p = e.post(b, "/signin", url.Values{"csrf": {csrf(t, p)}, "email": {"owner@example.com"}, "password": {password}}); p.status != http.StatusTooManyRequests {
		t.Errorf("sign-in after 10 wrong current passwords: %d, want 429", p.status)
	}
}

// TestWebhookThresholds: the webhook form sets the least score change and
// citation rate change its events wait for; one that is not a whole number
// or out of range is refused, named, with nothing created and the form as
// typed; the webhook's page shows them.
func TestWebhookThresholds(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer recv.Close()
	tok := csrf(t, e.get(c, "/webhooks"))
	form := func(score, citation, errors string) url.Values {
		return url.Values{"csrf": {tok}, "domain": {"acme.example"}, "url": {recv.URL}, "events": {"ai_visibility_change", "citation_change"},
			"min_score_change": {score}, "min_citation_change": {citation}, "min_crawler_errors": {errors}}
	}
	for _, bad := range [][4]string{{"five", "", "", "min_score_change"}, {"", "2.5", "", "min_citation_change"}, {"101", "", "", "min_score_change"},
		{"", "-1", "", "min_citation_change"}, {"", "", "1e3", "min_crawler_errors"}, {"", "", "1000001", "min_crawler_errors"}} {
		p := e.post(c, "/webhooks", form(bad[0], bad[1], bad[2]))
		if p.status != http.StatusBadRequest && p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, bad[3]) ||
			!strings.Contains(p.body, `value="`+bad[0]+`"`) || !strings.Contains(p.body, `value="`+bad[1]+`"`) ||
			!strings.Contains(p.body, `value="`+bad[2]+`"`) {
			t.Errorf("thresholds %q, %q and %q: %d\n%s", bad[0], bad[1], bad[2], p.status, p.body)
		}
	}
	if ws, _, _ := e.db.ListWebhooks(context.Background(), store.WebhookFilter{AccountID: u.AccountID}); len(ws) != 0 {
		t.Fatalf("refused forms made webhooks: %+v", ws)
	}
	if p := e.post(c, "/webhooks", form(" 5 ", "25", "40")); p.status != http.StatusCreated {
		t.Fatalf("create: %d\n%s", p.status, p.body)
	}
	if p := e.post(c, "/webhooks", url.Values{"csrf": {tok}, "domain": {"other.example"}, "url": {recv.URL}, "events": {"ai_visibility_change"}}); p.status != http.StatusCreated {
		t.Fatalf("create without thresholds: %d\n%s", p.status, p.body)
	}
	ws, _, _ := e.db.ListWebhooks(context.Background(), store.WebhookFilter{AccountID: u.AccountID})
	got := map[string][3]int{}
	for _, w := range ws {
		got[w.Domain] = [3]int{w.MinScoreChange, w.MinCitationChange, w.MinCrawlerErrors}
	}
	if got["acme.example"] != [3]int{5, 25, 40} || got["other.example"] != [3]int{0, 10, 1} {
		t.Fatalf("thresholds stored: %v; want 5, 25 and 40, and the defaults 0, 10 and 1", got)
	}
	for _, w := range ws {
		want := fmt.Sprintf("score change %d points, citation rate change %d percentage points, crawler errors %d error hits",
			w.MinScoreChange, w.MinCitationChange, w.MinCrawlerErrors)
		if page := e.get(c, "/webhooks/"+w.ID); !strings.Contains(page.body, want) {
			t.Errorf("%s's page does not say %q", w.Domain, want)
		}
	}
}
