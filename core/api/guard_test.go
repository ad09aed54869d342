package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/dashboard"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/people"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/internal/testsvc"
)

// tlsApp is the API with the dashboard mounted, sharing one guard, as
// core/app builds them, behind a real TLS listener.
type tlsApp struct {
	*httptest.Server
	db *sqlite.DB
}

// newTLSApp builds it on newTestDB with the clock now, a guard of
// guardPerMinute, and keys go through keys (the database when nil), the
// counter and the guards in memory.
func newTLSApp(t *testing.T, now func() time.Time, guardPerMinute int, keys store.Keys) *tlsApp {
	return newTLSAppOn(t, now, guardPerMinute, keys, limits.NewMemory(nil, testLog), limits.MemoryGuards)
}

// newTLSAppOn is newTLSApp with the counter and guards given.
func newTLSAppOn(t *testing.T, now func() time.Time, guardPerMinute int, keys store.Keys, counter limits.Counter, guards limits.Guards) *tlsApp {
	t.Helper()
	db := newTestDB(t)
	if keys == nil {
		keys = db
	}
	as := &auth.Service{Keys: keys, Accounts: db, Now: now}
	cs := &content.Service{Store: db, Now: now}
	accts := &accounts.Service{Store: db, Now: now}
	guard := guards("auth", guardPerMinute, time.Minute)
	dash, err := dashboard.New(dashboard.Deps{Store: db, People: &people.Service{Store: db, Accounts: accts, Now: now},
		Auth: as, Accounts: accts, Counter: counter, Content: cs, Guard: guard, Guards: guards, Log: testLog, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Config{}, Deps{Store: db, Auth: as, Content: cs, Counter: counter, Guard: guard, Log: testLog, Now: now, Dashboard: dash})
	dash.ClientAddr = srv.ClientAddr
	ts := httptest.NewTLSServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &tlsApp{Server: ts, db: db}
}

type answer struct {
	status int
	header http.Header
	err    client.ErrorDetail
}

// call sends one request to the API and reads its error, if any.
func (a *tlsApp) call(t *testing.T, method, path string, header map[string]string, body string) answer {
	t.Helper()
	r, _ := http.NewRequest(method, a.URL+path, strings.NewReader(body))
	for k, v := range header {
		r.Header.Set(k, v)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	res, err := a.Client().Do(r)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	ans := answer{status: res.StatusCode, header: res.Header}
	if res.StatusCode >= 400 {
		var env client.ErrorEnvelope
		if err := json.Unmarshal(b, &env); err != nil || env.Error.Code == "" {
			t.Errorf("%s %s: %d with body %q", method, path, res.StatusCode, b)
		}
		ans.err = env.Error
	}
	return ans
}

func keyAndSecret(key, secret string) map[string]string {
	return map[string]string{"X-API-Key": key, "X-API-Secret": secret}
}

func bearerKey(key string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + key}
}

var namedWait = regexp.MustCompile(`; retry after (\d+) seconds$`)

// checkWait: a 429 carries retry_after (at least 1), the same Retry-After
// header, and a message that ends by naming the same wait.
func checkWait(t *testing.T, what string, status int, header http.Header, retryAfter *int, message string) {
	t.Helper()
	if status != http.StatusTooManyRequests {
		t.Errorf("%s: %d, want 429", what, status)
		return
	}
	if retryAfter == nil || *retryAfter < 1 {
		t.Errorf("%s: retry_after %v in %q", what, retryAfter, message)
		return
	}
	if h := header.Get("Retry-After"); h != strconv.Itoa(*retryAfter) {
		t.Errorf("%s: Retry-After %q, retry_after %d", what, h, *retryAfter)
	}
	if m := namedWait.FindStringSubmatch(message); m == nil || m[1] != strconv.Itoa(*retryAfter) {
		t.Errorf("%s: message %q does not name the wait of %d seconds", what, message, *retryAfter)
	}
}

// signIn signs in to the dashboard with a fresh browser and returns the
// status of the form's answer (303 when signed in).
func (a *tlsApp) signIn(t *testing.T, email, password string) int {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Transport: a.Client().Transport, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(a.URL + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("GET /signin: %d without a form", res.StatusCode)
	}
	res, err = c.PostForm(a.URL+"/signin", url.Values{"csrf": {string(m[1])}, "email": {email}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// gatedKeys holds every key lookup until n are waiting, so that n
// attempts are in flight at once whatever the scheduler does.
type gatedKeys struct {
	store.Keys
	mu   sync.Mutex
	n    int
	open chan struct{}
}

func (g *gatedKeys) PrincipalByKeyHash(ctx context.Context, hash []byte) (store.Principal, error) {
	g.mu.Lock()
	if g.n--; g.n == 0 {
		close(g.open)
	}
	g.mu.Unlock()
	select {
	case <-g.open:
	case <-ctx.Done():
	}
	return g.Keys.PrincipalByKeyHash(ctx, hash)
}

// TestGuessesAtOnceAnsweredUpToTheLimit: 64 wrong keys sent at once from
// one address, on both interfaces, all looked up at the same moment,
// against a limit of 10: exactly 10 are answered 401, the others 429, and
// the address is then refused, valid credentials included, counting
// nothing in the account's windows. On Redis, where each instance screens
// an address by the refusals it has seen, another instance that has seen
// none refuses the valid credentials in the step that would count them.
func TestGuessesAtOnceAnsweredUpToTheLimit(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		counter := limits.NewMemory(nil, testLog)
		guessesAtOnce(t, counter, limits.MemoryGuards)
	})
	t.Run("redis", func(t *testing.T) {
		url, prefix := testsvc.Redis(t)
		instance := func() *limits.Redis {
			rdb, err := limits.NewRedisClient(url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rdb.Close() })
			return limits.NewRedis(rdb, prefix, nil, testLog)
		}
		first := instance()
		guessesAtOnce(t, first, first.Guard)
		other := instance()
		b := newTLSAppOn(t, func() time.Time { return fuzzBase }, 10, nil, other, other.Guard)
		valid := keyAndSecret(fuzzKey, fuzzSecret)
		if ans := b.call(t, http.MethodGet, "/api/v1/ai/budget-status", valid, ""); ans.status != http.StatusTooManyRequests {
			t.Fatalf("valid credentials at another instance after the guesses: %d, want 429", ans.status)
		} else {
			checkWait(t, "valid credentials at another instance", ans.status, ans.header, ans.err.RetryAfter, ans.err.Message)
		}
		checkUncounted(t, other)
	})
}

// guessesAtOnce sends the guesses to an app on counter and guards.
func guessesAtOnce(t *testing.T, counter limits.Counter, guards limits.Guards) {
	const limit, n = 10, 64
	db := newTestDB(t)
	gate := &gatedKeys{Keys: db, n: n, open: make(chan struct{})}
	a := newTLSAppOn(t, func() time.Time { return fuzzBase }, limit, gate, counter, guards)
	var mu sync.Mutex
	got := map[int]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			guess := fixedKey(fmt.Sprintf("Guess%d", i))
			path, h := "/api/v1/ai/budget-status", keyAndSecret(guess, fuzzSecret)
			if i%2 == 1 {
				path, h = "/v1/visibility?domain=example.com", bearerKey(guess)
			}
			ans := a.call(t, http.MethodGet, path, h, "")
			if ans.status == http.StatusTooManyRequests {
				checkWait(t, "a guess past the limit", ans.status, ans.header, ans.err.RetryAfter, ans.err.Message)
			}
			mu.Lock()
			got[ans.status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if got[http.StatusUnauthorized] != limit || got[http.StatusTooManyRequests] != n-limit {
		t.Fatalf("answers %v to %d guesses at once; want %d 401 and %d 429", got, n, limit, n-limit)
	}
	if ans := a.call(t, http.MethodGet, "/api/v1/ai/budget-status", keyAndSecret(fuzzKey, fuzzSecret), ""); ans.status != http.StatusTooManyRequests {
		t.Fatalf("valid credentials after the guesses: %d, want 429", ans.status)
	}
	checkUncounted(t, counter)
}

// checkUncounted checks that no request of fuzzKey's account was counted.
func checkUncounted(t *testing.T, counter limits.Counter) {
	t.Helper()
	tier, _ := limits.TierByName("enterprise")
	d, err := counter.Peek(context.Background(), "acct_fuzz", tier.Limits(), fuzzBase)
	if err != nil {
		t.Fatal(err)
	}
	if d.Count != [3]int{} {
		t.Fatalf("the account's windows count %v after requests refused for their address, want none", d.Count)
	}
}

// TestRevokedKeyCountsAgainstItself: a client that goes on using its
// revoked or expired key, from an address others share, is limited per
// key and leaves the address alone: a valid key from the same address
// still works, on the API and in the dashboard.
func TestRevokedKeyCountsAgainstItself(t *testing.T) {
	const limit = 5
	a := newTLSApp(t, func() time.Time { return fuzzBase }, limit, nil)
	ctx := context.Background()
	ps := &people.Service{Store: a.db, Accounts: &accounts.Service{Store: a.db, Now: time.Now}, Now: time.Now}
	token, err := ps.Invite(ctx, store.User{ID: "usr_system", AccountID: "acct_fuzz", Role: store.RoleOwner}, "owner@example.com", store.RoleOwner)
	if err != nil {
		t.Fatal(err)
	}
	const pw = "correct horse battery"
	if _, err := ps.AcceptInvitation(ctx, people.Accept{Token: token, Email: "owner@example.com", Password: pw}); err != nil {
		t.Fatal(err)
	}
	bs := "/api/v1/ai/budget-status"
	for _, k := range []struct {
		key, secret string
		code        fault.Code
	}{{fuzzRevokedKey, fuzzRevokedSecret, fault.KeyRevoked}, {fuzzExpiredKey, fuzzExpiredSecret, fault.KeyExpired}} {
		for i := range limit {
			ans := a.call(t, http.MethodGet, bs, keyAndSecret(k.key, k.secret), "")
			if ans.status != http.StatusUnauthorized || ans.err.Code != string(k.code) {
				t.Fatalf("%s, request %d: %d %s, want 401 %s", k.code, i+1, ans.status, ans.err.Code, k.code)
			}
			if got, want := ans.header.Get("X-RateLimit-Remaining"), strconv.Itoa(limit-1-i); got != want ||
				ans.header.Get("RateLimit-Policy") != fmt.Sprintf(`"key-failures";q=%d;w=60`, limit) {
				t.Errorf("%s, request %d: X-RateLimit-Remaining %s (want %s), RateLimit-Policy %q", k.code, i+1, got, want, ans.header.Get("RateLimit-Policy"))
			}
		}
		// Past the limit the key is throttled, on both interfaces.
		for _, h := range []map[string]string{keyAndSecret(k.key, k.secret), bearerKey(k.key)} {
			path := bs
			if h["Authorization"] != "" {
				path = "/v1/visibility?domain=example.com"
			}
			ans := a.call(t, http.MethodGet, path, h, "")
			if ans.err.Code != string(fault.RateLimitExceeded) || !strings.Contains(ans.err.Message, "revoked or expired API key") {
				t.Errorf("%s past its limit on %s: %d %s %q", k.code, path, ans.status, ans.err.Code, ans.err.Message)
			}
			checkWait(t, string(k.code)+" past its limit", ans.status, ans.header, ans.err.RetryAfter, ans.err.Message)
		}
	}
	// The address has all its failures left.
	ans := a.call(t, http.MethodGet, bs, keyAndSecret(fuzzKey, fuzzSecret), "")
	if ans.status != http.StatusOK {
		t.Fatalf("a valid key from the same address: %d %s", ans.status, ans.err.Message)
	}
	if st := a.signIn(t, "owner@example.com", pw); st != http.StatusSeeOther {
		t.Fatalf("dashboard sign-in from the same address: %d, want 303", st)
	}
	ans = a.call(t, http.MethodGet, bs, keyAndSecret(fuzzKey, fuzzRevokedSecret), "")
	if ans.status != http.StatusUnauthorized || ans.header.Get("X-RateLimit-Remaining") != strconv.Itoa(limit-1) {
		t.Fatalf("a wrong secret from the same address: %d, X-RateLimit-Remaining %s; want 401 and %d",
			ans.status, ans.header.Get("X-RateLimit-Remaining"), limit-1)
	}
}

// TestEvery429CarriesItsWait: every code answered with 429 is sent, from
// every place that sends it, with retry_after, Retry-After and a message
// naming the same wait.
func TestEvery429CarriesItsWait(t *testing.T) {
	const limit = 3
	a := newTLSApp(t, func() time.Time { return fuzzBase }, limit, nil)
	ctx := context.Background()
	starter := func(id string) string {
		mustTB(t, a.db.CreateAccount(ctx, store.Account{ID: id, Name: id, Tier: "starter", Type: store.AccountStandard, CreatedAt: fuzzBase}))
		name := strings.ReplaceAll(id, "_", "")
		key, secret := fixedKey("K"+name), fixedSecret("S"+name)
		mustTB(t, a.db.CreateKey(ctx, store.Key{ID: "key_" + id, AccountID: id, Name: id, KeyHash: auth.Hash(key), SecretHash: auth.Hash(secret),
			Hint: auth.Hint(key), Scopes: auth.Scopes, CreatedAt: fuzzBase}))
		return key + " " + secret
	}
	creds := func(s string) map[string]string { k, sec, _ := strings.Cut(s, " "); return keyAndSecret(k, sec) }
	bs := "/api/v1/ai/budget-status"
	// Each sends requests until the last is the 429 of its code; the
	// address's failures come last, as they block the address (and so
	// would a revoked key's, were they counted against it).
	senders := []struct {
		code fault.Code
		what string
		send func() answer
	}{
		{fault.RateLimitExceeded, "the account's minute", func() answer {
			h := creds(starter("acct_windows"))
			for range 60 {
				if ans := a.call(t, http.MethodGet, bs, h, ""); ans.status != http.StatusOK {
					t.Fatalf("a request within the minute's 60: %d %s", ans.status, ans.err.Message)
				}
			}
			return a.call(t, http.MethodGet, bs, h, "")
		}},
		{fault.ActiveRequestLimit, "the tier's active requests", func() answer {
			h := creds(starter("acct_active"))
			for range 5 {
				if ans := a.call(t, http.MethodPost, "/api/v1/ai/content-requests", h, `{"domain":"example.com","budget":1}`); ans.status != http.StatusCreated {
					t.Fatalf("creating an active request: %d %s", ans.status, ans.err.Message)
				}
			}
			return a.call(t, http.MethodPost, "/api/v1/ai/content-requests", h, `{"domain":"example.com","budget":1}`)
		}},
		{fault.RateLimitExceeded, "a revoked key's refusals", func() answer {
			for range limit {
				if ans := a.call(t, http.MethodGet, bs, keyAndSecret(fuzzRevokedKey, fuzzRevokedSecret), ""); ans.err.Code != string(fault.KeyRevoked) {
					t.Fatalf("a revoked key within its limit: %d %s", ans.status, ans.err.Message)
				}
			}
			return a.call(t, http.MethodGet, bs, keyAndSecret(fuzzRevokedKey, fuzzRevokedSecret), "")
		}},
		{fault.RateLimitExceeded, "the address's failures", func() answer {
			for range limit {
				if ans := a.call(t, http.MethodGet, bs, keyAndSecret(fuzzKey, "wrong"), ""); ans.status != http.StatusUnauthorized {
					t.Fatalf("a failure within the address's limit: %d %s", ans.status, ans.err.Message)
				}
			}
			return a.call(t, http.MethodGet, bs, keyAndSecret(fuzzKey, fuzzSecret), "")
		}},
	}
	found := 0
	for _, code := range fault.Codes() {
		if code.Status() != http.StatusTooManyRequests {
			continue
		}
		found++
		if !slices.ContainsFunc(senders, func(s struct {
			code fault.Code
			what string
			send func() answer
		}) bool {
			return s.code == code
		}) {
			t.Errorf("%s is answered with 429, and this test sends none: add how", code)
		}
	}
	if found < 2 {
		t.Fatalf("fault.Codes() lists %d codes answered with 429", found)
	}
	for _, s := range senders {
		ans := s.send()
		if ans.err.Code != string(s.code) {
			t.Errorf("%s: %d %s, want %s", s.what, ans.status, ans.err.Code, s.code)
		}
		checkWait(t, s.what, ans.status, ans.header, ans.err.RetryAfter, ans.err.Message)
	}
}
