package auth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/store/sqlite"
)

var ctx = context.Background()

var t0 = time.Date(2025, 6, 10, 12, 0, 0, 0, time.UTC)

// clock is a settable Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type env struct {
	db    *sqlite.DB
	dir   string
	clock *clock
	svc   *auth.Service
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := &clock{t: t0}
	e := &env{db: db, dir: dir, clock: c, svc: &auth.Service{Keys: db, Accounts: db, Now: c.Now}}
	for _, a := range []store.Account{
		{ID: "acct_std", Name: "Standard", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0},
		{ID: "acct_agency", Name: "Agency", Tier: "professional", Type: store.AccountAgency, CreatedAt: t0},
		{ID: "acct_other", Name: "Other agency", Tier: "professional", Type: store.AccountAgency, CreatedAt: t0},
	} {
		if err := db.CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []store.Client{
		{ID: "cli_1", AccountID: "acct_agency", Name: "One", CreatedAt: t0},
		{ID: "cli_other", AccountID: "acct_other", Name: "Other", CreatedAt: t0},
	} {
		if err := db.CreateClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// cli opens another handle on the database, as the command line does.
func (e *env) cli(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(ctx, filepath.Join(e.dir, "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func (e *env) key(t *testing.T, n auth.NewKey) auth.Created {
	t.Helper()
	c, err := e.svc.CreateKey(ctx, n)
	if err != nil {
		t.Fatalf("CreateKey(%+v): %v", n, err)
	}
	return c
}

func wantCode(t *testing.T, err error, code fault.Code, status int) *fault.Error {
	t.Helper()
	fe, ok := fault.As(err)
	if !ok {
		t.Fatalf("error %v (%T) is not a *fault.Error; want %s", err, err, code)
	}
	if fe.Code != code || fe.Code.Status() != status {
		t.Fatalf("got %s (%d): %s; want %s (%d)", fe.Code, fe.Code.Status(), fe.Message, code, status)
	}
	return fe
}

var (
	keyRE    = regexp.MustCompile(`^svc_[A-Za-z0-9]{40}$`)
	secretRE = regexp.MustCompile(`^[A-Za-z0-9]{64}$`)
)

func TestCreatedKeyFormat(t *testing.T) {
	e := newEnv(t)
	seenKeys, seenSecrets := map[string]bool{}, map[string]bool{}
	for range 50 {
		c := e.key(t, auth.NewKey{AccountID: "acct_std", Name: "  my key  "})
		if !keyRE.MatchString(c.APIKey) {
			t.Fatalf("key %q does not match %s", c.APIKey, keyRE)
		}
		if !secretRE.MatchString(c.Secret) {
			t.Fatalf("secret %q does not match %s", c.Secret, secretRE)
		}
		if seenKeys[c.APIKey] || seenSecrets[c.Secret] {
			t.Fatal("a key or secret repeated")
		}
		seenKeys[c.APIKey], seenSecrets[c.Secret] = true, true
		if !auth.WellFormedKey(c.APIKey) || !auth.WellFormedSecret(c.Secret) {
			t.Fatal("a created credential is not well formed")
		}
		k := c.Key
		h, s := sha256.Sum256([]byte(c.APIKey)), sha256.Sum256([]byte(c.Secret))
		if !bytes.Equal(k.KeyHash, h[:]) || !bytes.Equal(k.SecretHash, s[:]) {
			t.Fatal("stored hashes are not the SHA-256 of the credentials")
		}
		body := strings.TrimPrefix(c.APIKey, "svc_")
		if want := "svc_" + body[:4] + "…" + body[36:]; k.Hint != want {
			t.Fatalf("hint %q, want %q", k.Hint, want)
		}
		if k.Name != "my key" || k.AccountID != "acct_std" || k.ClientID != "" || !k.CreatedAt.Equal(t0) {
			t.Fatalf("key record %+v", k)
		}
		if !slices.Equal(k.Scopes, auth.Scopes) {
			t.Fatalf("a new key holds %v, want every scope", k.Scopes)
		}
		if !strings.HasPrefix(k.ID, "key_") {
			t.Fatalf("key id %q", k.ID)
		}
	}
}

func TestWellFormed(t *testing.T) {
	k40 := strings.Repeat("aB3", 13) + "z"
	s64 := strings.Repeat("Zz09", 16)
	for _, tc := range []struct {
		s    string
		key  bool
		secr bool
	}{
		{"svc_" + k40, true, false},
		{"SVC_" + k40, false, false},
		{"svc-" + k40, false, false},
		{"svc_" + k40[:39], false, false},
		{"svc_" + k40 + "a", false, false},
		{"svc_" + k40[:39] + "_", false, false},
		{"svc_" + k40[:39] + "é", false, false},
		{"svc_" + k40[:38] + "é", false, false}, // 40 bytes, 39 runes
		{" svc_" + k40, false, false},
		{"svc_" + k40 + "\n", false, false},
		{"svc_", false, false},
		{"", false, false},
		{s64, false, true},
		{s64[:63], false, false},
		{s64 + "0", false, false},
		{s64[:63] + "-", false, false},
		{s64[:63] + "\x00", false, false},
		{strings.Repeat("é", 32), false, false}, // 64 bytes
	} {
		if got := auth.WellFormedKey(tc.s); got != tc.key {
			t.Errorf("WellFormedKey(%q) = %v", tc.s, got)
		}
		if got := auth.WellFormedSecret(tc.s); got != tc.secr {
			t.Errorf("WellFormedSecret(%q) = %v", tc.s, got)
		}
	}
	for _, tc := range []struct{ key, want string }{
		{"svc_ABCDefghijklmnopqrstuvwxyz0123456789WXYZ", "svc_ABCD…WXYZ"},
		{"svc_short", "svc_…"},
		{"", "svc_…"},
	} {
		if got := auth.Hint(tc.key); got != tc.want {
			t.Errorf("Hint(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

// TestOnlyHashesStored: neither the key nor the secret is anywhere in the
// database files, in plain text; their SHA-256 hashes are.
func TestOnlyHashesStored(t *testing.T) {
	e := newEnv(t)
	var created []auth.Created
	for i := range 5 {
		n := auth.NewKey{AccountID: "acct_agency", Name: "k"}
		if i%2 == 1 {
			n.ClientID = "cli_1"
		}
		created = append(created, e.key(t, n))
	}
	// Use the keys too: authentication must not write them anywhere either.
	for _, c := range created {
		if _, err := e.svc.Authenticate(ctx, c.APIKey, c.Secret, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.svc.Revoke(ctx, created[0].Key.ID); err != nil {
		t.Fatal(err)
	}
	scan := func(when string) {
		files, _ := filepath.Glob(filepath.Join(e.dir, "*"))
		var all []byte
		for _, f := range files {
			if st, err := os.Stat(f); err == nil && st.IsDir() {
				continue // the holders' lock files: empty
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		if len(all) == 0 {
			t.Fatal("no database bytes read")
		}
		for _, c := range created {
			body := strings.TrimPrefix(c.APIKey, "svc_")
			for _, needle := range []string{c.APIKey, body, c.Secret, body[4:36], c.Secret[8:56]} {
				if bytes.Contains(all, []byte(needle)) {
					t.Fatalf("%s: credential text %q found in the database files", when, needle)
				}
			}
			if !bytes.Contains(all, c.Key.KeyHash) || !bytes.Contains(all, c.Key.SecretHash) {
				t.Fatalf("%s: the hashes are not in the database files", when)
			}
		}
	}
	scan("while open (WAL)")
	e.db.Close()
	scan("after close (checkpointed)")
}

func TestAuthenticate(t *testing.T) {
	e := newEnv(t)
	std := e.key(t, auth.NewKey{AccountID: "acct_std", Name: "std"})
	cli := e.key(t, auth.NewKey{AccountID: "acct_agency", ClientID: "cli_1", Name: "client"})
	expiring := e.key(t, auth.NewKey{AccountID: "acct_std", Name: "expiring", ExpiresAt: t0.Add(time.Hour)})
	revoked := e.key(t, auth.NewKey{AccountID: "acct_std", Name: "revoked"})
	if _, err := e.svc.Revoke(ctx, revoked.Key.ID); err != nil {
		t.Fatal(err)
	}
	other := e.key(t, auth.NewKey{AccountID: "acct_std", Name: "other"})
	unknownKey := "svc_" + strings.Repeat("Q", 40)
	unknownSecret := strings.Repeat("Q", 64)

	for _, tc := range []struct {
		name       string
		key        string
		secret     string
		withSecret bool
		at         time.Duration // after t0
		want       fault.Code    // "" for success
		account    string
		client     string
	}{
		{"valid", std.APIKey, std.Secret, true, 0, "", "acct_std", ""},
		{"valid client key", cli.APIKey, cli.Secret, true, 0, "", "acct_agency", "cli_1"},
		{"missing both", "", "", true, 0, fault.MissingCredentials, "", ""},
		{"missing secret", std.APIKey, "", true, 0, fault.MissingCredentials, "", ""},
		{"missing key", "", std.Secret, true, 0, fault.MissingCredentials, "", ""},
		{"malformed key", "svc_short", std.Secret, true, 0, fault.InvalidCredentials, "", ""},
		{"key without prefix", strings.TrimPrefix(std.APIKey, "svc_"), std.Secret, true, 0, fault.InvalidCredentials, "", ""},
		{"key with whitespace", " " + std.APIKey, std.Secret, true, 0, fault.InvalidCredentials, "", ""},
		{"malformed secret", std.APIKey, std.Secret[:63], true, 0, fault.InvalidCredentials, "", ""},
		{"unknown key", unknownKey, std.Secret, true, 0, fault.InvalidCredentials, "", ""},
		{"wrong secret", std.APIKey, unknownSecret, true, 0, fault.InvalidCredentials, "", ""},
		{"another key's secret", std.APIKey, other.Secret, true, 0, fault.InvalidCredentials, "", ""},
		{"secret as key", "svc_" + std.Secret[:40], std.Secret, true, 0, fault.InvalidCredentials, "", ""},
		{"revoked", revoked.APIKey, revoked.Secret, true, 0, fault.KeyRevoked, "", ""},
		{"revoked, later", revoked.APIKey, revoked.Secret, true, 24 * time.Hour, fault.KeyRevoked, "", ""},
		{"revoked, wrong secret stays invalid", revoked.APIKey, unknownSecret, true, 0, fault.InvalidCredentials, "", ""},
		{"not yet expired", expiring.APIKey, expiring.Secret, true, time.Hour - time.Nanosecond, "", "acct_std", ""},
		{"expired at the instant", expiring.APIKey, expiring.Secret, true, time.Hour, fault.KeyExpired, "", ""},
		{"expired", expiring.APIKey, expiring.Secret, true, 30 * 24 * time.Hour, fault.KeyExpired, "", ""},
		{"bearer: key alone", std.APIKey, "", false, 0, "", "acct_std", ""},
		{"bearer: secret ignored", std.APIKey, "garbage", false, 0, "", "acct_std", ""},
		{"bearer: missing", "", "", false, 0, fault.MissingCredentials, "", ""},
		{"bearer: malformed", "Bearer " + std.APIKey, "", false, 0, fault.InvalidCredentials, "", ""},
		{"bearer: unknown", unknownKey, "", false, 0, fault.InvalidCredentials, "", ""},
		{"bearer: revoked", revoked.APIKey, "", false, 0, fault.KeyRevoked, "", ""},
		{"bearer: expired", expiring.APIKey, "", false, 2 * time.Hour, fault.KeyExpired, "", ""},
		{"bearer: client key", cli.APIKey, "", false, 0, "", "acct_agency", "cli_1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.clock.Set(t0.Add(tc.at))
			defer e.clock.Set(t0)
			p, err := e.svc.Authenticate(ctx, tc.key, tc.secret, tc.withSecret)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Authenticate: %v", err)
				}
				if p.AccountID() != tc.account || p.ClientID() != tc.client || p.Account.ID != tc.account {
					t.Fatalf("principal %s/%s, want %s/%s", p.AccountID(), p.ClientID(), tc.account, tc.client)
				}
				return
			}
			fe := wantCode(t, err, tc.want, http.StatusUnauthorized)
			if p.Key.ID != "" {
				t.Fatalf("a refused authentication returned a principal %+v", p)
			}
			for _, cred := range []string{std.Secret, revoked.Secret, expiring.Secret} {
				if strings.Contains(fe.Message, cred) {
					t.Fatalf("message %q shows a secret", fe.Message)
				}
			}
		})
	}
}

// TestRevocationIsImmediate: a key authenticated (and so cached) before its
// revocation is refused on the very next request, also when the revocation
// comes from another handle on the same file (the CLI).
func TestRevocationIsImmediate(t *testing.T) {
	e := newEnv(t)
	c := e.key(t, auth.NewKey{AccountID: "acct_std", Name: "k"})
	for range 3 {
		if _, err := e.svc.Authenticate(ctx, c.APIKey, c.Secret, true); err != nil {
			t.Fatal(err)
		}
	}
	cliDB := e.cli(t)
	cliSvc := &auth.Service{Keys: cliDB, Accounts: cliDB, Now: e.clock.Now}
	k, err := cliSvc.Revoke(ctx, c.Key.ID)
	if err != nil || !k.RevokedAt.Equal(t0) {
		t.Fatalf("Revoke = %+v, %v", k, err)
	}
	_, err = e.svc.Authenticate(cache.AsOf(ctx, time.Now()), c.APIKey, c.Secret, true)
	fe := wantCode(t, err, fault.KeyRevoked, http.StatusUnauthorized)
	if !strings.Contains(fe.Message, t0.Format(time.RFC3339)) {
		t.Errorf("message %q does not give the revocation time", fe.Message)
	}
	_, err = e.svc.Authenticate(ctx, c.APIKey, "", false)
	wantCode(t, err, fault.KeyRevoked, http.StatusUnauthorized)

	// Revoking again keeps the first time; an unknown key is NOT_FOUND.
	e.clock.Add(time.Hour)
	if k, err := e.svc.Revoke(ctx, c.Key.ID); err != nil || !k.RevokedAt.Equal(t0) {
		t.Errorf("second Revoke = %v, %v; want the first time %v", k.RevokedAt, err, t0)
	}
	_, err = e.svc.Revoke(ctx, "key_none")
	wantCode(t, err, fault.NotFound, http.StatusNotFound)
}

func TestParseScopes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"", auth.Scopes, false},
		{"   ", auth.Scopes, false},
		{",", auth.Scopes, false},
		{"budget:read", []string{"budget:read"}, false},
		{"budget:read,content:read", []string{"budget:read", "content:read"}, false},
		{"budget:read content:read", []string{"budget:read", "content:read"}, false},
		{" content:write , ,budget:read ", []string{"content:write", "budget:read"}, false},
		{"content:read,content:read", []string{"content:read"}, false},
		{strings.Join(auth.Scopes, ","), auth.Scopes, false},
		{"content:delete", nil, true},
		{"budget:read,admin", nil, true},
		{"Budget:Read", nil, true},
		{"budget:read;content:read", nil, true},
		{"*", nil, true},
	} {
		got, err := auth.ParseScopes(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ParseScopes(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseScopes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	// The "all" list is a copy: changing it does not change auth.Scopes.
	all, _ := auth.ParseScopes("")
	all[0] = "changed"
	if auth.Scopes[0] == "changed" {
		t.Error("ParseScopes returned auth.Scopes itself")
	}
}

func TestRequireScope(t *testing.T) {
	e := newEnv(t)
	c := e.key(t, auth.NewKey{AccountID: "acct_std", Name: "read only", Scopes: []string{"budget:read", "content:read"}})
	p, err := e.svc.Authenticate(ctx, c.APIKey, c.Secret, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range auth.Scopes {
		err := p.Require(s)
		if s == "budget:read" || s == "content:read" {
			if err != nil {
				t.Errorf("Require(%s) = %v", s, err)
			}
			continue
		}
		fe := wantCode(t, err, fault.InsufficientScope, http.StatusForbidden)
		if !strings.Contains(fe.Message, s) {
			t.Errorf("message %q does not name %s", fe.Message, s)
		}
	}
	none := e.key(t, auth.NewKey{AccountID: "acct_std", Name: "no scopes", Scopes: []string{}})
	p, err = e.svc.Authenticate(ctx, none.APIKey, none.Secret, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range auth.Scopes {
		wantCode(t, p.Require(s), fault.InsufficientScope, http.StatusForbidden)
	}
	all := e.key(t, auth.NewKey{AccountID: "acct_std", Name: "all"})
	p, _ = e.svc.Authenticate(ctx, all.APIKey, all.Secret, true)
	for _, s := range auth.Scopes {
		if err := p.Require(s); err != nil {
			t.Errorf("a default key lacks %s", s)
		}
	}
	wantCode(t, p.Require("admin:everything"), fault.InsufficientScope, http.StatusForbidden)
}

func TestCreateKeyRules(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name   string
		n      auth.NewKey
		code   fault.Code
		status int
		field  string
	}{
		{"empty name", auth.NewKey{AccountID: "acct_std", Name: ""}, fault.ValidationError, 400, "name"},
		{"blank name", auth.NewKey{AccountID: "acct_std", Name: " \t "}, fault.ValidationError, 400, "name"},
		{"name too long", auth.NewKey{AccountID: "acct_std", Name: strings.Repeat("é", 101)}, fault.ValidationError, 400, "name"},
		{"expiry now", auth.NewKey{AccountID: "acct_std", Name: "k", ExpiresAt: t0}, fault.ValidationError, 400, "expires_at"},
		{"expiry past", auth.NewKey{AccountID: "acct_std", Name: "k", ExpiresAt: t0.Add(-time.Hour)}, fault.ValidationError, 400, "expires_at"},
		{"unknown scope", auth.NewKey{AccountID: "acct_std", Name: "k", Scopes: []string{"budget:read", "root"}}, fault.ValidationError, 400, "scopes"},
		{"unknown account", auth.NewKey{AccountID: "acct_none", Name: "k"}, fault.NotFound, 404, ""},
		{"client key on a standard account", auth.NewKey{AccountID: "acct_std", ClientID: "cli_1", Name: "k"}, fault.PlanNotAllowed, 403, ""},
		{"unknown client", auth.NewKey{AccountID: "acct_agency", ClientID: "cli_none", Name: "k"}, fault.NotFound, 404, ""},
		{"another agency's client", auth.NewKey{AccountID: "acct_agency", ClientID: "cli_other", Name: "k"}, fault.NotFound, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := e.db.ListKeys(ctx, tc.n.AccountID)
			c, err := e.svc.CreateKey(ctx, tc.n)
			fe := wantCode(t, err, tc.code, tc.status)
			if tc.field != "" && (len(fe.Details) == 0 || fe.Details[0].Field != tc.field) {
				t.Errorf("details %+v, want field %s", fe.Details, tc.field)
			}
			if c.APIKey != "" || c.Secret != "" {
				t.Error("credentials returned with an error")
			}
			if after, _ := e.db.ListKeys(ctx, tc.n.AccountID); len(after) != len(before) {
				t.Error("a key was stored despite the error")
			}
		})
	}
	// Several field errors are reported together.
	_, err := e.svc.CreateKey(ctx, auth.NewKey{AccountID: "acct_std", Name: "", ExpiresAt: t0.Add(-time.Hour), Scopes: []string{"x"}})
	if fe := wantCode(t, err, fault.ValidationError, 400); len(fe.Details) != 3 {
		t.Errorf("details %+v, want name, expires_at and scopes", fe.Details)
	}

	// The good cases.
	name100 := strings.Repeat("é", 100)
	c := e.key(t, auth.NewKey{AccountID: "acct_agency", ClientID: "cli_1", Name: name100,
		ExpiresAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.FixedZone("X", 3600)), Scopes: []string{"content:read"}})
	k, err := e.db.Key(ctx, c.Key.ID)
	if err != nil {
		t.Fatal(err)
	}
	if k.ClientID != "cli_1" || k.Name != name100 || !slices.Equal(k.Scopes, []string{"content:read"}) ||
		!k.ExpiresAt.Equal(time.Date(2029, 12, 31, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("stored key %+v", k)
	}
	p, err := e.svc.Authenticate(ctx, c.APIKey, c.Secret, true)
	if err != nil || p.ClientID() != "cli_1" || p.Account.Type != store.AccountAgency {
		t.Errorf("client principal %+v, %v", p, err)
	}
	// An agency's account-level key is allowed too.
	e.key(t, auth.NewKey{AccountID: "acct_agency", Name: "account level"})
}

// failingKeys makes the store fail, to check internal errors stay internal.
type failingKeys struct{ store.Keys }

func (failingKeys) PrincipalByKeyHash(context.Context, []byte) (store.Principal, error) {
	return store.Principal{}, errors.New("database is locked")
}

func TestAuthenticateStoreFailureIsNotACredentialError(t *testing.T) {
	e := newEnv(t)
	c := e.key(t, auth.NewKey{AccountID: "acct_std", Name: "k"})
	svc := &auth.Service{Keys: failingKeys{e.db}, Accounts: e.db, Now: e.clock.Now}
	_, err := svc.Authenticate(ctx, c.APIKey, c.Secret, true)
	if err == nil {
		t.Fatal("no error")
	}
	if _, ok := fault.As(err); ok {
		t.Fatalf("a store failure became a user-facing error %v (it must be an internal error, not a 401)", err)
	}
}
