package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/domains"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// Fixed credentials, so that seeds mean the same in every fuzz worker
// (each worker builds its own database).
var (
	fuzzKey           = fixedKey("FuzzValidKey")
	fuzzSecret        = fixedSecret("FuzzValidSecret")
	fuzzRevokedKey    = fixedKey("FuzzRevokedKey")
	fuzzRevokedSecret = fixedSecret("FuzzRevokedSecret")
	fuzzExpiredKey    = fixedKey("FuzzExpiredKey")
	fuzzExpiredSecret = fixedSecret("FuzzExpiredSecret")
	fuzzClientKey     = fixedKey("FuzzClientKey")
	fuzzClientSecret  = fixedSecret("FuzzClientSecret")
)

func fixedKey(name string) string    { return auth.KeyPrefix + name + strings.Repeat("0", 40-len(name)) }
func fixedSecret(name string) string { return name + strings.Repeat("0", 64-len(name)) }

// fuzzBase is the moment the test accounts and keys are made.
var fuzzBase = time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)

// stepClock moves forward by step on every reading, so that rate windows
// and the brute-force guard roll over while a fuzzer hammers one key.
type stepClock struct {
	base time.Time
	step time.Duration
	n    atomic.Int64
}

func (c *stepClock) Now() time.Time {
	return c.base.Add(time.Duration(c.n.Add(1)) * c.step)
}

type testServer struct {
	srv     *Server
	handler http.Handler
	db      *sqlite.DB
	content *content.Service
	// account is the principal of fuzzKey.
	account auth.Principal
}

// testLog discards everything.
var testLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// newTestDB opens a real SQLite database in a temporary directory with an
// enterprise agency account, a client of it, the keys above (valid,
// revoked, expired, and a client key) and a visibility reading of
// example.com for the account and for the client.
func newTestDB(tb testing.TB) *sqlite.DB {
	tb.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "aivis.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	mustTB(tb, db.CreateAccount(ctx, store.Account{ID: "acct_fuzz", Name: "Fuzz", Tier: "enterprise", Type: store.AccountAgency, CreatedAt: fuzzBase}))
	mustTB(tb, db.CreateClient(ctx, store.Client{ID: "cli_fuzz", AccountID: "acct_fuzz", Name: "Client", CreatedAt: fuzzBase}))
	// Revoked and expired at fuzzBase, or earlier should this machine's
	// clock be behind it: past for test clocks and for the real one.
	past := fuzzBase
	if now := time.Now().Add(-time.Hour); now.Before(past) {
		past = now
	}
	for _, k := range []struct {
		id, key, secret, client string
		expires, revoked        time.Time
	}{
		{"key_valid", fuzzKey, fuzzSecret, "", time.Time{}, time.Time{}},
		{"key_revoked", fuzzRevokedKey, fuzzRevokedSecret, "", time.Time{}, past},
		{"key_expired", fuzzExpiredKey, fuzzExpiredSecret, "", past, time.Time{}},
		{"key_client", fuzzClientKey, fuzzClientSecret, "cli_fuzz", time.Time{}, time.Time{}},
	} {
		mustTB(tb, db.CreateKey(ctx, store.Key{ID: k.id, AccountID: "acct_fuzz", ClientID: k.client, Name: k.id,
			KeyHash: auth.Hash(k.key), SecretHash: auth.Hash(k.secret), Hint: auth.Hint(k.key), Scopes: auth.Scopes,
			ExpiresAt: k.expires, RevokedAt: k.revoked, CreatedAt: past.Add(-time.Hour)}))
	}
	for _, client := range []string{"", "cli_fuzz"} {
		if _, err := db.AddReading(ctx, store.Reading{AccountID: "acct_fuzz", ClientID: client, Domain: "example.com", VisibilityScore: 72,
			Sentiment: "positive", SentimentScore: 0.4, Source: "test", MeasuredAt: fuzzBase}); err != nil {
			tb.Fatal(err)
		}
	}
	return db
}

func wrap(tb testing.TB, db *sqlite.DB, srv *Server, as *auth.Service, cs *content.Service) *testServer {
	tb.Helper()
	p, err := as.Authenticate(context.Background(), fuzzKey, fuzzSecret, true)
	if err != nil {
		tb.Fatal(err)
	}
	return &testServer{srv: srv, handler: srv.Handler(), db: db, content: cs, account: p}
}

// newTestServer builds the API on newTestDB with a test clock (now, for the
// server and its services) and a brute-force guard of guardPerMinute.
// Counts are kept in memory only.
func newTestServer(tb testing.TB, now func() time.Time, guardPerMinute int) *testServer {
	tb.Helper()
	db := newTestDB(tb)
	as := &auth.Service{Keys: db, Accounts: db, Now: now}
	cs := &content.Service{Store: db, Now: now}
	srv := New(Config{}, Deps{Store: db, Auth: as, Content: cs, Counter: limits.NewMemory(nil, testLog),
		Guard: limits.NewAuthGuard(guardPerMinute, time.Minute), Log: testLog, Now: now})
	return wrap(tb, db, srv, as, cs)
}

// newAppServer builds the API on newTestDB as core/app does: real clock,
// request counts persisted to the same database, default Config; the
// brute-force guard is out of reach (1<<30 failures a minute), so that
// every refusal of bad credentials is a 401 and never the guard's 429.
func newAppServer(tb testing.TB) *testServer {
	tb.Helper()
	db := newTestDB(tb)
	as := &auth.Service{Keys: db, Accounts: db, Now: time.Now}
	cs := &content.Service{Store: db, Now: time.Now}
	srv := New(Config{}, Deps{Store: db, Auth: as, Content: cs, Counter: limits.NewMemory(db, testLog),
		Guard: limits.NewAuthGuard(1<<30, time.Minute), Log: testLog})
	return wrap(tb, db, srv, as, cs)
}

func mustTB(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// serve runs one request through the full handler.
func (s *testServer) serve(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, r)
	return w
}

// checkEnvelope checks what every response must be: JSON, a request id, no
// header with a line break; on failure the error envelope with the same id.
func checkEnvelope(t *testing.T, w *httptest.ResponseRecorder) client.ErrorEnvelope {
	t.Helper()
	id := w.Header().Get("X-Request-Id")
	if !incomingID.MatchString(id) {
		t.Fatalf("X-Request-Id %q", id)
	}
	for name, vs := range w.Header() {
		for _, v := range vs {
			if strings.ContainsAny(name+v, "\r\n\x00") {
				t.Fatalf("response header %q: %q carries a line break", name, v)
			}
		}
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var env client.ErrorEnvelope
	if !json.Valid(w.Body.Bytes()) {
		t.Fatalf("body is not JSON: %q", w.Body.String())
	}
	if w.Code >= 400 {
		if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
			t.Fatalf("error body %q: %v", w.Body.String(), err)
		}
		if env.Success || env.Error.Code == "" || env.Error.Message == "" || env.Error.RequestID != id {
			t.Fatalf("error envelope %+v (request id %s)", env, id)
		}
		if fault.Code(env.Error.Code).Status() != w.Code {
			t.Fatalf("code %s answered with %d", env.Error.Code, w.Code)
		}
		if w.Code == http.StatusTooManyRequests && (env.Error.RetryAfter == nil || *env.Error.RetryAfter < 1 ||
			w.Header().Get("Retry-After") == "") {
			t.Fatalf("429 without retry_after: %+v", env)
		}
	}
	return env
}

// Outcomes of authentication, as the oracle of FuzzAuthHeaders expects them.
const authOK fault.Code = ""

// pairs maps the stored credentials to what authenticating with them gives.
var pairs = map[[2]string]fault.Code{
	{fuzzKey, fuzzSecret}:               authOK,
	{fuzzClientKey, fuzzClientSecret}:   authOK,
	{fuzzRevokedKey, fuzzRevokedSecret}: fault.KeyRevoked,
	{fuzzExpiredKey, fuzzExpiredSecret}: fault.KeyExpired,
}

// wantKeyAndSecret is what the key-and-secret interface must answer to
// these header values (decisions.md section 2): a missing value is
// MISSING_CREDENTIALS; a stored pair is accepted, or refused as revoked or
// expired; anything else is INVALID_CREDENTIALS.
func wantKeyAndSecret(key, secret string) fault.Code {
	if key == "" || secret == "" {
		return fault.MissingCredentials
	}
	if c, ok := pairs[[2]string{key, secret}]; ok {
		return c
	}
	return fault.InvalidCredentials
}

// wantBearer is the same for an Authorization header: the Bearer scheme in
// any case, then the key alone; another scheme is INVALID_CREDENTIALS, no
// header or no token is MISSING_CREDENTIALS.
func wantBearer(authz string) fault.Code {
	if authz == "" {
		return fault.MissingCredentials
	}
	scheme, token, _ := strings.Cut(authz, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return fault.InvalidCredentials
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return fault.MissingCredentials
	}
	for pair, c := range pairs {
		if pair[0] == token {
			return c
		}
	}
	return fault.InvalidCredentials
}

// checkAuth is the property of FuzzAuthHeaders for one response. With the
// brute-force guard out of reach: an accepted credential gives 200, or 429
// RATE_LIMIT_EXCEEDED once the account's windows are used up; a refused one
// gives 401 with exactly the code of the oracle. Never a 5xx, never another
// status; the rate-limit headers are on every response; no credential is
// echoed.
func checkAuth(t *testing.T, w *httptest.ResponseRecorder, want fault.Code, what string) {
	t.Helper()
	env := checkEnvelope(t, w)
	switch {
	case w.Code >= 500:
		t.Fatalf("%s: %d %s: %s", what, w.Code, env.Error.Code, env.Error.Message)
	case want == authOK:
		if w.Code != http.StatusOK && !(w.Code == http.StatusTooManyRequests && env.Error.Code == string(fault.RateLimitExceeded)) {
			t.Fatalf("%s: valid credentials answered %d %s (%s)", what, w.Code, env.Error.Code, env.Error.Message)
		}
	default:
		if w.Code != http.StatusUnauthorized || env.Error.Code != string(want) {
			t.Fatalf("%s: %d %s (%s), want 401 %s", what, w.Code, env.Error.Code, env.Error.Message, want)
		}
	}
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if w.Header().Get(h) == "" {
			t.Fatalf("%s: %d without %s", what, w.Code, h)
		}
	}
	for _, cred := range []string{fuzzSecret, fuzzKey, fuzzClientSecret, fuzzClientKey} {
		if strings.Contains(w.Body.String(), cred) {
			t.Fatalf("%s: the response shows a credential: %s", what, w.Body.String())
		}
	}
}

// authRequests sends the headers to both interfaces, setting the values
// as they are, even those the net/http client would refuse to send.
func authRequests(s *testServer, key, secret, authz string) (*httptest.ResponseRecorder, *httptest.ResponseRecorder) {
	r := httptest.NewRequest(http.MethodGet, "https://aivis.test/api/v1/ai/budget-status", nil)
	r.Header["X-Api-Key"] = []string{key}
	r.Header["X-Api-Secret"] = []string{secret}
	r.Header["Authorization"] = []string{authz} // ignored here
	w1 := s.serve(r)

	r = httptest.NewRequest(http.MethodGet, "https://aivis.test/v1/visibility?domain=example.com", nil)
	r.Header["Authorization"] = []string{authz}
	r.Header["X-Api-Key"] = []string{key} // ignored here
	r.Header["X-Api-Secret"] = []string{secret}
	w2 := s.serve(r)
	return w1, w2
}

func addAuthSeeds(f *testing.F) {
	long := strings.Repeat("A", 70_000)
	for _, s := range [][3]string{
		{fuzzKey, fuzzSecret, "Bearer " + fuzzKey},
		{fuzzClientKey, fuzzClientSecret, "bearer " + fuzzClientKey},
		{fuzzKey, fuzzSecret, "BEARER   " + fuzzKey + "  "},
		{fuzzRevokedKey, fuzzRevokedSecret, "Bearer " + fuzzRevokedKey},
		{fuzzExpiredKey, fuzzExpiredSecret, "Bearer " + fuzzExpiredKey},
		{fuzzRevokedKey, fuzzSecret, "Bearer " + fuzzExpiredKey + " "},
		{fuzzKey, fuzzClientSecret, "Bearer " + fuzzClientKey + "	"},
		{fuzzKey, fuzzRevokedSecret, "Basic " + fuzzKey},
		{"", "", ""},
		{fuzzKey, "", "Bearer"},
		{"", fuzzSecret, "Bearer "},
		{"", "", "Bearer 	 "},
		{"svc_", "x", "Token " + fuzzKey},
		{fuzzKey + "\r\nX-Injected: 1", fuzzSecret + "\r\n", "Bearer " + fuzzKey + "\r\nX-Injected: 1"},
		{fuzzKey + "\n", fuzzSecret, "Bearer\t" + fuzzKey},
		{fuzzKey + "\x00", "\x00" + fuzzSecret, "Bearer " + fuzzKey + "\x00"},
		{" " + fuzzKey, fuzzSecret + " ", " Bearer " + fuzzKey},
		{"\r\n", "\r\n", "\r\n"},
		{strings.ToUpper(fuzzKey), strings.ToLower(fuzzSecret), "Bearer " + strings.ToLower(fuzzKey)},
		{fuzzKey[:len(fuzzKey)-1] + "é", fuzzSecret, "Bearer " + strings.Replace(fuzzKey, "F", "Ｆ", 1)},
		{"svc_😀😀😀😀😀😀😀😀😀😀", strings.Repeat("😀", 16), "Bearer 😀"},
		{"svc_" + strings.Repeat("é", 20), strings.Repeat("é", 32), "Bearer svc_" + strings.Repeat("é", 20)},
		{long, long, "Bearer " + long},
		{"svc_" + strings.Repeat("a", 40), strings.Repeat("a", 64), "Bearer svc_" + strings.Repeat("a", 40)},
		{"' OR 1=1 --", "\"; DROP TABLE api_keys; --", "Bearer ' OR '1'='1"},
		{"\xff\xfe", "\xc3\x28", "Bearer \xff"},
		{"%00", "%0d%0a", "Bearer%20" + fuzzKey},
		{fuzzKey, fuzzSecret, "Bearer " + fuzzKey + " " + fuzzKey},
		{fuzzKey, fuzzSecret, "Bearer\u00a0" + fuzzKey},
		{fuzzKey, fuzzSecret, "Bearer \u00a0" + fuzzKey + "\u2003"},
	} {
		f.Add(s[0], s[1], s[2])
	}
}

// FuzzAuthHeaders sends arbitrary X-API-Key, X-API-Secret and Authorization
// values to a real server (built as core/app builds it, on a real SQLite
// database) through httptest, so that values a net/http client would refuse
// to send (line breaks, NUL, invalid UTF-8, 70 kB) reach the handler.
// Neither interface may panic or answer 5xx; 200 comes only with valid
// credentials, and every refusal is the 401 the oracle expects.
func FuzzAuthHeaders(f *testing.F) {
	s := newAppServer(f)
	addAuthSeeds(f)
	f.Fuzz(func(t *testing.T, key, secret, authz string) {
		w1, w2 := authRequests(s, key, secret, authz)
		checkAuth(t, w1, wantKeyAndSecret(key, secret), "key and secret")
		checkAuth(t, w2, wantBearer(authz), "bearer")
		if w1.Code == http.StatusOK {
			var env client.Envelope[client.BudgetStatus]
			if err := json.Unmarshal(w1.Body.Bytes(), &env); err != nil || !env.Success || env.Data.QuotaTier != "Enterprise" ||
				env.Data.AccountID != "acct_fuzz" || env.Data.RateLimits.PerMinute != 300 {
				t.Fatalf("budget status %s: %v", w1.Body.String(), err)
			}
			wantClient := key == fuzzClientKey
			if (env.Data.ClientID != nil) != wantClient || (wantClient && *env.Data.ClientID != "cli_fuzz") {
				t.Fatalf("budget status of %q shows client %v", key, env.Data.ClientID)
			}
		}
		if w2.Code == http.StatusOK {
			var v client.VisibilityReading
			if err := json.Unmarshal(w2.Body.Bytes(), &v); err != nil || v.VisibilityScore != 72 || v.Domain != "example.com" {
				t.Fatalf("visibility %s: %v", w2.Body.String(), err)
			}
		}
		for _, w := range []*httptest.ResponseRecorder{w1, w2} {
			if w.Code == http.StatusUnauthorized && w.Header().Get("X-RateLimit-Limit") != strconv.Itoa(1<<30) {
				t.Fatalf("a 401 reports X-RateLimit-Limit %q, want the guard's %d", w.Header().Get("X-RateLimit-Limit"), 1<<30)
			}
		}
	})
}

// TestAuthOracle pins the oracle of FuzzAuthHeaders to named cases, so
// that a wrong oracle cannot hide a wrong server.
func TestAuthOracle(t *testing.T) {
	for _, tc := range []struct {
		key, secret string
		want        fault.Code
	}{
		{fuzzKey, fuzzSecret, authOK},
		{fuzzClientKey, fuzzClientSecret, authOK},
		{fuzzRevokedKey, fuzzRevokedSecret, fault.KeyRevoked},
		{fuzzExpiredKey, fuzzExpiredSecret, fault.KeyExpired},
		{fuzzRevokedKey, fuzzSecret, fault.InvalidCredentials},
		{fuzzKey, fuzzClientSecret, fault.InvalidCredentials},
		{fuzzKey, "", fault.MissingCredentials},
		{"", fuzzSecret, fault.MissingCredentials},
		{fuzzKey + " ", fuzzSecret, fault.InvalidCredentials},
	} {
		if got := wantKeyAndSecret(tc.key, tc.secret); got != tc.want {
			t.Errorf("wantKeyAndSecret(%q, %q) = %q, want %q", tc.key, tc.secret, got, tc.want)
		}
	}
	for _, tc := range []struct {
		authz string
		want  fault.Code
	}{
		{"Bearer " + fuzzKey, authOK},
		{"bEaReR   " + fuzzClientKey + " \t", authOK},
		{"Bearer " + fuzzRevokedKey, fault.KeyRevoked},
		{"Bearer " + fuzzExpiredKey, fault.KeyExpired},
		{"", fault.MissingCredentials},
		{"Bearer", fault.MissingCredentials},
		{"Bearer  ", fault.MissingCredentials},
		{"Basic " + fuzzKey, fault.InvalidCredentials},
		{"Bearer\t" + fuzzKey, fault.InvalidCredentials},
		{fuzzKey, fault.InvalidCredentials},
		{"Bearer " + fuzzKey + " x", fault.InvalidCredentials},
	} {
		if got := wantBearer(tc.authz); got != tc.want {
			t.Errorf("wantBearer(%q) = %q, want %q", tc.authz, got, tc.want)
		}
	}
}

// TestAppServerRateLimitsValidCredentials: on the server built as core/app
// builds it, valid credentials get 200 with the account's windows in the
// headers until the minute's 300 are used, then 429 RATE_LIMIT_EXCEEDED
// with retry_after; bad credentials are still 401, not 429, and do not
// count in the account's windows.
func TestAppServerRateLimitsValidCredentials(t *testing.T) {
	s := newAppServer(t)
	// Stay clear of a minute boundary, where the count would start afresh.
	if left := time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)); left < 5*time.Second {
		time.Sleep(left + 10*time.Millisecond)
	}
	for i := range 300 {
		w1, _ := authRequests(s, fuzzKey, fuzzSecret, "")
		if w1.Code != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, w1.Code, w1.Body.String())
		}
		if i%50 == 0 {
			// Refused credentials in between count nowhere.
			w, _ := authRequests(s, fuzzKey, fuzzClientSecret, "")
			checkAuth(t, w, fault.InvalidCredentials, "wrong secret")
		}
		if got := w1.Header().Get("X-RateLimit-Remaining"); got != strconv.Itoa(299-i) {
			t.Fatalf("request %d: X-RateLimit-Remaining %s, want %d", i+1, got, 299-i)
		}
	}
	w1, w2 := authRequests(s, fuzzClientKey, fuzzClientSecret, "Bearer "+fuzzKey)
	for _, w := range []*httptest.ResponseRecorder{w1, w2} {
		env := checkEnvelope(t, w)
		if w.Code != http.StatusTooManyRequests || env.Error.Code != string(fault.RateLimitExceeded) || w.Header().Get("X-RateLimit-Remaining") != "0" {
			t.Fatalf("request 301 of the account: %d %s, remaining %q", w.Code, env.Error.Code, w.Header().Get("X-RateLimit-Remaining"))
		}
	}
	w, _ := authRequests(s, fuzzKey, "bad", "")
	checkAuth(t, w, fault.InvalidCredentials, "bad secret after the limit")
}

// TestUnauthorizedCarriesAChallenge: RFC 9110 section 15.5.2 says a 401
// MUST carry WWW-Authenticate with a challenge for the resource (RFC 6750
// gives the bearer interface's: Bearer); no 401 of the API carries one.
func TestUnauthorizedCarriesAChallenge(t *testing.T) {
	s := newAppServer(t)
	w1, w2 := authRequests(s, fuzzKey, "wrong", "Bearer svc_wrong")
	for i, w := range []*httptest.ResponseRecorder{w1, w2} {
		if w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("interface %d: %d without WWW-Authenticate (headers %v)", i+1, w.Code, w.Header())
		}
	}
	if c := w2.Header().Get("WWW-Authenticate"); c != `Bearer realm="aivis", error="invalid_token"` {
		t.Errorf("bearer interface challenge %q, want a Bearer challenge with invalid_token", c)
	}
	// Without a token, RFC 6750 section 3.1: no error code.
	r := httptest.NewRequest(http.MethodGet, "/v1/visibility?domain=example.com", nil)
	if c := s.serve(r).Header().Get("WWW-Authenticate"); c != `Bearer realm="aivis"` {
		t.Errorf("challenge without credentials %q", c)
	}
}

// TestHeadServedByGet: HEAD on a GET operation answers as GET would,
// without a body.
func TestHeadServedByGet(t *testing.T) {
	s := newAppServer(t)
	r := httptest.NewRequest(http.MethodHead, "/api/v1/ai/budget-status", nil)
	r.Header.Set("X-API-Key", fuzzKey)
	r.Header.Set("X-API-Secret", fuzzSecret)
	w := s.serve(r)
	if w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Limit") == "" {
		t.Fatalf("HEAD budget-status: %d %v", w.Code, w.Header())
	}
}

// TestMethodNotAllowedCarriesAllow: RFC 9110 section 15.5.6 says a 405
// MUST carry Allow with the methods the resource supports; the router's
// custom MethodNotAllowed handler answers without it.
func TestMethodNotAllowedCarriesAllow(t *testing.T) {
	s := newAppServer(t)
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodDelete, "/api/v1/ai/budget-status", "GET, HEAD"},
		{http.MethodPut, "/api/v1/ai/content-requests", "GET, HEAD, POST"},
		{http.MethodGet, "/api/v1/ai/content-requests/cr_1/cancel", "POST"},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		r.Header.Set("X-API-Key", fuzzKey)
		r.Header.Set("X-API-Secret", fuzzSecret)
		w := s.serve(r)
		checkEnvelope(t, w)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d, Allow %q; want 405 with Allow: %s", tc.method, tc.path, w.Code, w.Header().Get("Allow"), tc.allow)
		}
	}
}

// TestAuthHeadersTable runs named cases through the same checks, with the
// outcome of each spelled out, including the brute-force guard.
func TestAuthHeadersTable(t *testing.T) {
	clock := &stepClock{base: fuzzBase, step: time.Millisecond}
	s := newTestServer(t, clock.Now, 3)
	for _, tc := range []struct {
		name               string
		key, secret, authz string
		wantKS, wantBearer int
		codeKS, codeBearer fault.Code
		remote             string
	}{
		{"valid", fuzzKey, fuzzSecret, "Bearer " + fuzzKey, 200, 200, "", "", "198.51.100.1:1"},
		{"valid client key", fuzzClientKey, fuzzClientSecret, "bearer " + fuzzClientKey, 200, 200, "", "", "198.51.100.1:1"},
		{"missing", "", "", "", 401, 401, fault.MissingCredentials, fault.MissingCredentials, "198.51.100.2:1"},
		{"revoked", fuzzRevokedKey, fuzzRevokedSecret, "Bearer " + fuzzRevokedKey, 401, 401, fault.KeyRevoked, fault.KeyRevoked, "198.51.100.3:1"},
		{"expired", fuzzExpiredKey, fuzzExpiredSecret, "Bearer " + fuzzExpiredKey, 401, 401, fault.KeyExpired, fault.KeyExpired, "198.51.100.4:1"},
		{"other scheme", fuzzKey, fuzzClientSecret, "Basic " + fuzzKey, 401, 401, fault.InvalidCredentials, fault.InvalidCredentials, "198.51.100.5:1"},
		{"header injection", fuzzKey + "\r\nX: y", fuzzSecret, "Bearer " + fuzzKey + "\r\nX: y", 401, 401, fault.InvalidCredentials, fault.InvalidCredentials, "198.51.100.6:1"},
		{"bare Bearer", "", fuzzSecret, "Bearer", 401, 401, fault.MissingCredentials, fault.MissingCredentials, "198.51.100.7:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/api/v1/ai/budget-status", nil)
			r.RemoteAddr = tc.remote
			r.Header["X-Api-Key"], r.Header["X-Api-Secret"] = []string{tc.key}, []string{tc.secret}
			w := s.serve(r)
			env := checkEnvelope(t, w)
			if w.Code != tc.wantKS || (tc.codeKS != "" && env.Error.Code != string(tc.codeKS)) {
				t.Fatalf("key and secret: %d %s, want %d %s", w.Code, env.Error.Code, tc.wantKS, tc.codeKS)
			}
			r = httptest.NewRequest(http.MethodGet, "/v1/visibility?domain=example.com", nil)
			r.RemoteAddr = tc.remote
			r.Header["Authorization"] = []string{tc.authz}
			w = s.serve(r)
			env = checkEnvelope(t, w)
			if w.Code != tc.wantBearer || (tc.codeBearer != "" && env.Error.Code != string(tc.codeBearer)) {
				t.Fatalf("bearer: %d %s, want %d %s", w.Code, env.Error.Code, tc.wantBearer, tc.codeBearer)
			}
		})
	}

	// The guard: 3 failures per minute per address, then 429 even for a valid key.
	remote := "203.0.113.9:4444"
	send := func(key, secret string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/ai/budget-status", nil)
		r.RemoteAddr = remote
		r.Header["X-Api-Key"], r.Header["X-Api-Secret"] = []string{key}, []string{secret}
		return s.serve(r)
	}
	for i := range 3 {
		if w := send(fuzzKey, "wrong"); w.Code != 401 || w.Header().Get("X-RateLimit-Remaining") != string(rune('2'-i)) {
			t.Fatalf("failure %d: %d, remaining %q", i+1, w.Code, w.Header().Get("X-RateLimit-Remaining"))
		}
	}
	w := send(fuzzKey, fuzzSecret)
	env := checkEnvelope(t, w)
	if w.Code != 429 || env.Error.Code != string(fault.RateLimitExceeded) {
		t.Fatalf("after 3 failures: %d %s", w.Code, env.Error.Code)
	}
	// Another address is not blocked.
	remote = "203.0.113.10:4444"
	if w := send(fuzzKey, fuzzSecret); w.Code != 200 {
		t.Fatalf("another address: %d", w.Code)
	}
}

// addBodySeeds seeds FuzzDecodeContentRequest with realistic and hostile bodies.
func addBodySeeds(f *testing.F) {
	const ct = "application/json"
	for _, b := range []string{
		`{"domain":"example.com","budget":25}`,
		`{"domain":"example.com","budget":12.5,"url":"https://example.com/page","content":"Hello","target_queries":["best crm","crm for agencies"],"type":"analyze","metadata":{"campaign":"q3"}}`,
		`{"domain":"bücher.de","budget":0.000001,"client_id":"cli_fuzz"}`,
		`{"domain":"EXAMPLE.com.","budget":20000}`,
		`{"domain":"example.com","budget":20000.000001}`,
		`{"domain":"example.com","budget":"12.5"}`,
		`{"domain":"example.com","budget":1.0000001}`,
		`{"domain":"example.com","budget":-1}`,
		`{"domain":"example.com","budget":1e400}`,
		`{"domain":"example.com","budget":-1e-400}`,
		`{"domain":"example.com","budget":1e999999}`,
		`{"domain":"example.com","budget":NaN}`,
		`{"domain":"example.com","budget":"NaN"}`,
		`{"domain":"example.com","budget":Infinity}`,
		`{"domain":"example.com","budget":null}`,
		`{"domain":"example.com","budget":{}}`,
		`{"domain":"example.com","budget":[1]}`,
		`{"domain":"example.com","budget":true}`,
		`{"domain":"example.com","budget":0}`,
		`{"domain":"example.com","budget":-0}`,
		`{"domain":"example.com","budget":1E+3}`,
		`{"domain":5,"budget":1}`,
		`{"domain":"example.com","budget":1,"extra":true}`,
		`{"domain":"example.com","budget":1,"target_queries":"one"}`,
		`{"domain":"example.com","budget":1,"target_queries":[1,2]}`,
		`{"domain":"example.com","budget":1,"metadata":[]}`,
		`{"domain":"example.com","budget":1,"metadata":{"a":1}}`,
		`{"domain":"example.com","budget":1,"metadata":{"":"x","\u0000":"y"}}`,
		`{"domain":"example.com","budget":1,"url":"javascript:alert(1)"}`,
		`{"domain":"example.com","budget":1,"url":"https://user:pw@example.com/"}`,
		`{"domain":"example.com","budget":1,"url":"https://bücher.de/"}`,
		`{"domain":"example.com","budget":1,"client_id":"cli_other"}`,
		`{"domain":"example.com","budget":1} trailing`,
		`{"domain":"example.com","budget":1}{}`,
		`{"domain":"example.com","budget":1}]`,
		`[{"domain":"example.com","budget":1}]`,
		`[]`, `null`, `"string"`, `42`, `{}`, ``, ` `, `{`, `}`, `{"domain":`,
		`{"domain":"ex\u0000ample.com","budget":1}`,
		"{\"domain\":\"ex\xffample.com\",\"budget\":1}",
		`{"domain":"example.com","budget":1,"target_queries":["\u202e\u0000", "  ok  "]}`,
		`{"domain":"example.com","budget":1,"content":"` + strings.Repeat("x", 300) + `"}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{"domain":"example.com"}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"DOMAIN":"example.com","Budget":1}`,
		`{"domain":"example.com","domain":"evil..com","budget":1}`,
	} {
		f.Add([]byte(b), ct, false)
	}
	f.Add([]byte(`{"domain":"example.com","budget":25}`), "application/json; charset=utf-8", true)
	f.Add([]byte(`{"domain":"example.com","budget":25}`), "", false)
	f.Add([]byte(`{"domain":"example.com","budget":25}`), "text/plain", false)
	f.Add([]byte(`{"domain":"example.com","budget":25}`), "application/json\r\nX-Injected: 1", false)
	f.Add([]byte(`{"domain":"example.com","budget":25}`), "multipart/form-data; boundary=x", false)
	f.Add([]byte(`{"domain":"example.com","budget":25}`), "APPLICATION/JSON; Charset=\"utf-8\"", false)
	// Large bodies (near MaxBody, nesting past encoding/json's depth limit)
	// are left to TestReadBody, TestDecodeStrict and TestCreateThroughHandler:
	// as seeds they make the fuzzer spend its time minimizing them.
}

// bodyRequest is a create request with the body as the fuzzer gave it:
// any Content-Type value, and chunked (no Content-Length) or not.
func bodyRequest(body []byte, contentType string, chunked bool) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/ai/content-requests", bytes.NewReader(body))
	r.Header["Content-Type"] = []string{contentType}
	if chunked {
		r.ContentLength = -1
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return r
}

// FuzzDecodeContentRequest puts arbitrary bytes through readBody,
// decodeStrict and content validation (content.Service.Create on a real
// database, with a principal from a real key). Nothing may panic; every
// failure is a *fault.Error with a 4xx status; every success is a valid,
// normalized request. The same body sent to POST
// /api/v1/ai/content-requests of a second real server must get the same
// outcome: the status and code of that error, or 201.
func FuzzDecodeContentRequest(f *testing.F) {
	s := newTestServer(f, func() time.Time { return fuzzBase }, 20)
	// Its clock moves a minute and a second per reading: no rate window
	// ever fills however fast the fuzzer goes.
	h := newTestServer(f, (&stepClock{base: fuzzBase, step: 61 * time.Second}).Now, 20)
	addBodySeeds(f)
	ent, _ := limits.TierByName("enterprise")
	f.Fuzz(func(t *testing.T, body []byte, contentType string, chunked bool) {
		userError := func(stage string, err error) fault.Code {
			t.Helper()
			fe, ok := fault.As(err)
			if !ok {
				t.Fatalf("%s: %v (%T) is not a *fault.Error", stage, err, err)
			}
			if st := fe.Code.Status(); st < 400 || st > 499 {
				t.Fatalf("%s: %s has status %d", stage, fe.Code, st)
			}
			if fe.Message == "" || !utf8.ValidString(fe.Message) {
				t.Fatalf("%s: message %q", stage, fe.Message)
			}
			for _, d := range fe.Details {
				// The field may be "": {"": 0} names an unknown field "".
				if d.Message == "" {
					t.Fatalf("%s: detail %+v", stage, d)
				}
			}
			return fe.Code
		}
		direct := func() fault.Code {
			b, err := readBody(bodyRequest(body, contentType, chunked), false)
			if err != nil {
				code := userError("readBody", err)
				if len(body) <= MaxBody && code == fault.PayloadTooLarge {
					t.Fatalf("a body of %d bytes refused as too large", len(body))
				}
				return code
			}
			if len(b) > MaxBody || !bytes.Equal(b, body) {
				t.Fatalf("readBody returned %d bytes of %d", len(b), len(body))
			}
			var in client.CreateContentRequest
			if err := decodeStrict(b, &in); err != nil {
				return userError("decodeStrict", err)
			}
			cr, _, err := s.content.Create(context.Background(), s.account, in, nil)
			if err != nil {
				return userError("Create", err)
			}
			checkCreated(t, cr, ent)
			got, err := s.content.Get(context.Background(), s.account, cr.ID)
			if err != nil || got.Domain != cr.Domain || got.Budget != cr.Budget || got.Content != cr.Content {
				t.Fatalf("read back %+v, %v", got, err)
			}
			// Cancel, so the active-request and monthly limits stay out of the way.
			if _, _, err := s.content.Cancel(context.Background(), s.account, cr.ID, nil); err != nil {
				t.Fatalf("cancel: %v", err)
			}
			return ""
		}
		want := direct()

		r := bodyRequest(body, contentType, chunked)
		r.Header.Set("X-API-Key", fuzzKey)
		r.Header.Set("X-API-Secret", fuzzSecret)
		w := h.serve(r)
		env := checkEnvelope(t, w)
		if want != "" {
			if w.Code != want.Status() || env.Error.Code != string(want) {
				t.Fatalf("through the handler: %d %s (%s); directly: %s", w.Code, env.Error.Code, env.Error.Message, want)
			}
			return
		}
		var got client.Envelope[client.ContentRequest]
		if w.Code != http.StatusCreated || json.Unmarshal(w.Body.Bytes(), &got) != nil || !got.Success ||
			got.Data.Status != client.StatusQueued || w.Header().Get("Location") != "/api/v1/ai/content-requests/"+got.Data.ID {
			t.Fatalf("through the handler: %d %s; directly: created", w.Code, w.Body.String())
		}
		if _, _, err := h.content.Cancel(context.Background(), h.account, got.Data.ID, nil); err != nil {
			t.Fatalf("cancel of %s: %v", got.Data.ID, err)
		}
	})
}

// checkCreated: a created request is valid and normalized.
func checkCreated(t *testing.T, cr store.ContentRequest, tier limits.Tier) {
	t.Helper()
	if d, err := domains.Normalize(cr.Domain); err != nil || d != cr.Domain {
		t.Fatalf("stored domain %q is not normalized (%q, %v)", cr.Domain, d, err)
	}
	if cr.Budget <= 0 || cr.Budget > tier.MaxBudgetPerRequest || cr.Status != client.StatusQueued || !strings.HasPrefix(cr.ID, "cr_") {
		t.Fatalf("stored %s: budget %d, status %s", cr.ID, cr.Budget, cr.Status)
	}
	if cr.Type != client.TypeOptimize && cr.Type != client.TypeAnalyze {
		t.Fatalf("stored type %q", cr.Type)
	}
	if len(cr.TargetQueries) > content.MaxQueries || len(cr.Metadata) > content.MaxMetadata || len(cr.Content) > content.MaxContentBytes {
		t.Fatalf("stored %d queries, %d metadata, %d bytes of content", len(cr.TargetQueries), len(cr.Metadata), len(cr.Content))
	}
	for _, q := range cr.TargetQueries {
		if q == "" || q != strings.TrimSpace(q) || utf8.RuneCountInString(q) > content.MaxQueryRunes {
			t.Fatalf("stored query %q", q)
		}
	}
	for k, v := range cr.Metadata {
		if k == "" || utf8.RuneCountInString(k) > content.MaxMetaKeyRunes || utf8.RuneCountInString(v) > content.MaxMetaValRunes {
			t.Fatalf("stored metadata %q: %q", k, v)
		}
	}
	if cr.URL != "" {
		u, err := url.Parse(cr.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			len(cr.URL) > content.MaxURLLength {
			t.Fatalf("stored url %q on %s", cr.URL, cr.Domain)
		}
		if h, err := domains.Normalize(u.Hostname()); err != nil || !domains.Covers(cr.Domain, h) {
			t.Fatalf("stored url %q is not on %s", cr.URL, cr.Domain)
		}
	}
	if cr.ClientID != "" && cr.ClientID != "cli_fuzz" {
		t.Fatalf("stored client %q", cr.ClientID)
	}
}

func fe(err error) *fault.Error {
	e, _ := fault.As(err)
	return e
}
