package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

func newKey(id, accountID, clientID string, created time.Time) store.Key {
	return store.Key{ID: id, AccountID: accountID, ClientID: clientID, Name: "name " + id,
		KeyHash: []byte("kh-" + id), SecretHash: []byte("sh-" + id), Hint: "svc_abcd…wxyz",
		Scopes: []string{"budget:read", "content:read"}, CreatedAt: created}
}

// An account keeps every field; ids are unique (ErrConflict); an unknown
// id is ErrNotFound; accounts list oldest first, ties by id; SetTier
// changes the tier only, SetMarket the market only.
func testAccounts(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	a := store.Account{ID: "acct_b", Name: `Agentur "Grüße" & Co`, Tier: "professional", Type: store.AccountAgency, Market: "de-DE",
		CreatedAt: t0.In(elsewhere)}
	must(t, s.CreateAccount(ctx, a), "CreateAccount")
	newAccount(t, s, "acct_a", store.AccountStandard)
	newAccount(t, s, "acct_0", store.AccountStandard)
	must(t, s.CreateAccount(ctx, store.Account{ID: "acct_old", Name: "Old", Tier: "starter", Type: store.AccountStandard,
		CreatedAt: t0.Add(-time.Nanosecond)}), "CreateAccount")

	want := a
	want.CreatedAt = t0
	if got, err := s.Account(ctx, "acct_b"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Account round trip (every field, the time in UTC):\n got  %+v, %v\n want %+v", got, err, want)
	}
	if _, err := s.Account(ctx, "acct_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Account of an unknown id: %v, want ErrNotFound", err)
	}
	dup := a
	dup.Name = "Another"
	if err := s.CreateAccount(ctx, dup); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateAccount of a taken id: %v, want ErrConflict", err)
	}
	if got, _ := s.Account(ctx, "acct_b"); got.Name != a.Name {
		t.Errorf("a refused CreateAccount renamed the account to %q", got.Name)
	}
	if err := s.CreateAccount(ctx, store.Account{ID: "acct_x", Name: "x", Tier: "starter", Type: "premium", CreatedAt: t0}); err == nil {
		t.Error("CreateAccount of an unknown type succeeded")
	}

	as, err := s.ListAccounts(ctx)
	must(t, err, "ListAccounts")
	var ids []string
	for _, a := range as {
		ids = append(ids, a.ID)
	}
	if !reflect.DeepEqual(ids, []string{"acct_old", "acct_0", "acct_a", "acct_b"}) {
		t.Errorf("ListAccounts = %v, want oldest first and, at the same time, by id", ids)
	}

	must(t, s.SetTier(ctx, "acct_b", "enterprise"), "SetTier")
	want.Tier = "enterprise"
	if got, err := s.Account(ctx, "acct_b"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after SetTier: %+v, %v; want %+v", got, err, want)
	}
	if err := s.SetTier(ctx, "acct_none", "starter"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetTier of an unknown account: %v, want ErrNotFound", err)
	}
	for _, m := range []string{"zh-Hant-TW", ""} {
		must(t, s.SetMarket(ctx, "acct_b", m), "SetMarket")
		want.Market = m
		if got, err := s.Account(ctx, "acct_b"); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("after SetMarket(%q): %+v, %v; want %+v", m, got, err, want)
		}
	}
	if err := s.SetMarket(ctx, "acct_none", "de-DE"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetMarket of an unknown account: %v, want ErrNotFound", err)
	}
}

// A client belongs to one account: Client of another account's client is
// ErrNotFound, ListClients lists only the account's, oldest first; ids are
// unique and a client needs an existing account.
func testClients(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_b", store.AccountAgency)
	newAccount(t, s, "acct_a", store.AccountAgency)
	c1 := store.Client{ID: "cli_1", AccountID: "acct_b", Name: "Ünï \"One\"", CreatedAt: t0.In(elsewhere)}
	c2 := store.Client{ID: "cli_2", AccountID: "acct_b", Name: "Two", CreatedAt: t0.Add(time.Second)}
	c0 := store.Client{ID: "cli_0", AccountID: "acct_b", Name: "Zero", CreatedAt: t0}
	for _, c := range []store.Client{c2, c1, c0} {
		must(t, s.CreateClient(ctx, c), "CreateClient(%s)", c.ID)
	}
	newClient(t, s, "acct_a", "cli_a")
	if err := s.CreateClient(ctx, store.Client{ID: "cli_1", AccountID: "acct_a", Name: "x", CreatedAt: t0}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateClient of a taken id (under another account): %v, want ErrConflict", err)
	}
	if err := s.CreateClient(ctx, store.Client{ID: "cli_3", AccountID: "acct_none", Name: "x", CreatedAt: t0}); err == nil {
		t.Error("CreateClient under an unknown account succeeded")
	}
	want := c1
	want.CreatedAt = t0
	if got, err := s.Client(ctx, "acct_b", "cli_1"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Client round trip:\n got  %+v, %v\n want %+v", got, err, want)
	}
	if _, err := s.Client(ctx, "acct_a", "cli_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Client of another account's client: %v, want ErrNotFound", err)
	}
	cs, err := s.ListClients(ctx, "acct_b")
	must(t, err, "ListClients")
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	if !reflect.DeepEqual(ids, []string{"cli_0", "cli_1", "cli_2"}) {
		t.Errorf("ListClients = %v, want the account's only, oldest first and by id", ids)
	}
	if cs, err := s.ListClients(ctx, "acct_none"); err != nil || len(cs) != 0 {
		t.Errorf("ListClients of an unknown account: %+v, %v", cs, err)
	}
}

// A key keeps every field but its last use (which SaveCounts moves); its
// hash and its id are unique (ErrConflict); a client key needs its
// client; PrincipalByKeyHash gives what authentication reads, with the
// account, for a revoked key too.
func testKeys(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	acct := owners(t, s)

	k1 := newKey("key_1", "acct_1", "", t0.In(elsewhere))
	k1.ExpiresAt = t0.Add(48 * time.Hour)
	k1.RevokedAt = t0.Add(72 * time.Hour) // a key rolled: revoked from a later time
	k2 := newKey("key_2", "acct_1", "cli_1", t0.Add(time.Second))
	k2.Scopes = nil
	k3 := newKey("key_3", "acct_2", "", t0)
	for _, k := range []store.Key{k2, k1, k3} {
		must(t, s.CreateKey(ctx, k), "CreateKey(%s)", k.ID)
	}
	dup := newKey("key_4", "acct_1", "", t0)
	dup.KeyHash = k1.KeyHash
	if err := s.CreateKey(ctx, dup); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateKey with a taken hash: %v, want ErrConflict", err)
	}
	if err := s.CreateKey(ctx, newKey("key_1", "acct_1", "", t0)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateKey with a taken id: %v, want ErrConflict", err)
	}
	if err := s.CreateKey(ctx, newKey("key_5", "acct_1", "cli_none", t0)); err == nil {
		t.Error("CreateKey of an unknown client succeeded")
	}

	want := k1
	want.CreatedAt = t0
	if got, err := s.Key(ctx, "key_1"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Key round trip:\n got  %+v, %v\n want %+v", got, err, want)
	}
	if got, err := s.Key(ctx, "key_2"); err != nil || got.ClientID != "cli_1" || len(got.Scopes) != 0 || !got.ExpiresAt.IsZero() ||
		!got.RevokedAt.IsZero() || !got.LastUsedAt.IsZero() {
		t.Errorf("Key of a client key without scopes, expiry or revocation: %+v, %v", got, err)
	}
	if _, err := s.Key(ctx, "key_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Key of an unknown id: %v, want ErrNotFound", err)
	}
	ks, err := s.ListKeys(ctx, "acct_1")
	must(t, err, "ListKeys")
	if len(ks) != 2 || ks[0].ID != "key_1" || ks[1].ID != "key_2" {
		t.Errorf("ListKeys = %+v, want the account's keys oldest first", ks)
	}

	p, err := s.PrincipalByKeyHash(ctx, k1.KeyHash)
	must(t, err, "PrincipalByKeyHash")
	auth := store.Key{ID: k1.ID, AccountID: k1.AccountID, SecretHash: k1.SecretHash, Scopes: k1.Scopes, ExpiresAt: k1.ExpiresAt, RevokedAt: k1.RevokedAt}
	if !reflect.DeepEqual(p.Key, auth) || !reflect.DeepEqual(p.Account, acct) {
		t.Errorf("PrincipalByKeyHash (what authentication reads, and the account):\n got  %+v\n want %+v / %+v", p, auth, acct)
	}
	if p, err := s.PrincipalByKeyHash(ctx, k2.KeyHash); err != nil || p.Key.ClientID != "cli_1" || p.Account.ID != "acct_1" {
		t.Errorf("PrincipalByKeyHash of a client key: %+v, %v", p, err)
	}
	for _, h := range [][]byte{[]byte("kh-none"), nil, {}} {
		if _, err := s.PrincipalByKeyHash(ctx, h); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("PrincipalByKeyHash(%q): %v, want ErrNotFound", h, err)
		}
	}
}

// RevokeKey keeps the earlier of the time given and the one the key has:
// a revocation is never postponed, and one in the future (a roll) is
// brought forward; the revoked key is still found, with its time.
func testRevokeKey(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	k := newKey("key_1", "acct_1", "", t0)
	must(t, s.CreateKey(ctx, k), "CreateKey")
	rolled := newKey("key_2", "acct_1", "", t0)
	rolled.RevokedAt = t0.Add(24 * time.Hour)
	must(t, s.CreateKey(ctx, rolled), "CreateKey")

	first := t0.Add(time.Hour)
	for _, at := range []time.Time{first, first.Add(time.Hour), first.Add(time.Nanosecond)} {
		got, err := s.RevokeKey(ctx, "key_1", at)
		if err != nil || !got.RevokedAt.Equal(first) || got.ID != "key_1" || got.Name != k.Name {
			t.Errorf("RevokeKey at %v: %+v, %v; want the key, revoked at %v", at, got, err, first)
		}
	}
	if p, err := s.PrincipalByKeyHash(ctx, k.KeyHash); err != nil || !p.Key.RevokedAt.Equal(first) {
		t.Errorf("PrincipalByKeyHash of a revoked key: RevokedAt %v, %v; want %v", p.Key.RevokedAt, err, first)
	}
	if got, err := s.RevokeKey(ctx, "key_2", first); err != nil || !got.RevokedAt.Equal(first) {
		t.Errorf("RevokeKey of a key revoked from later: %v, %v; want brought forward to %v", got.RevokedAt, err, first)
	}
	if _, err := s.RevokeKey(ctx, "key_none", first); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeKey of an unknown key: %v, want ErrNotFound", err)
	}
}
