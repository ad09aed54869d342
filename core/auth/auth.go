// Package auth makes API keys and secrets, stores only their hashes, and
// authenticates requests with them.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
)

// KeyPrefix starts every API key.
const KeyPrefix = "svc_"

// Scopes a key may hold; a new key holds all unless restricted.
var Scopes = []string{
	"budget:read", "content:read", "content:write", "visibility:read", "visibility:write",
	"webhooks:read", "webhooks:write", "connectors:read", "connectors:write",
}

// Hash is the SHA-256 of a credential, the only form in which it is stored.
func Hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// Hint is what may be shown of a key: svc_ and its first and last four characters.
func Hint(key string) string {
	body := strings.TrimPrefix(key, KeyPrefix)
	if len(body) < 8 {
		return KeyPrefix + "…"
	}
	return KeyPrefix + body[:4] + "…" + body[len(body)-4:]
}

// alnum tells that s is n ASCII letters and digits. A table answers for
// each byte: the characters of a random secret take each branch of a
// range test at random, which costs more than the test.
func alnum(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !alnumByte[s[i]] {
			return false
		}
	}
	return true
}

var alnumByte = func() (t [256]bool) {
	for c := range t {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	return t
}()

// WellFormedKey reports whether s has the form of a key: svc_ + 40 [A-Za-z0-9].
func WellFormedKey(s string) bool {
	return strings.HasPrefix(s, KeyPrefix) && alnum(s[len(KeyPrefix):], 40)
}

// WellFormedSecret reports whether s has the form of a secret: 64 [A-Za-z0-9].
func WellFormedSecret(s string) bool { return alnum(s, 64) }

// ParseScopes reads a comma- or space-separated scope list; empty means all.
func ParseScopes(s string) ([]string, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
	if len(fields) == 0 {
		return slices.Clone(Scopes), nil
	}
	var out []string
	for _, f := range fields {
		if !slices.Contains(Scopes, f) {
			return nil, fmt.Errorf("unknown scope %q (scopes: %s)", f, strings.Join(Scopes, " "))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// Principal is who an authenticated request acts for.
type Principal struct {
	store.Principal
}

// AccountID of the key.
func (p Principal) AccountID() string { return p.Key.AccountID }

// ClientID of a client key, "" for an account-level key.
func (p Principal) ClientID() string { return p.Key.ClientID }

// Require fails with INSUFFICIENT_SCOPE unless the key holds scope.
func (p Principal) Require(scope string) error {
	if slices.Contains(p.Key.Scopes, scope) {
		return nil
	}
	return fault.New(fault.InsufficientScope, "this API key lacks the %s scope", scope)
}

// RequireOwner fails with INSUFFICIENT_SCOPE unless the key is an owner
// key: an account-level key (no client's) that holds every scope, as a
// key made without --scopes does. What only the account's owner may do
// through the API (export everything the account owns) asks for one.
func (p Principal) RequireOwner() error {
	if p.Key.ClientID == "" && !slices.ContainsFunc(Scopes, func(s string) bool { return !slices.Contains(p.Key.Scopes, s) }) {
		return nil
	}
	return fault.New(fault.InsufficientScope, "only an owner key (an account-level key that holds every scope) may do this")
}

// Service authenticates requests and manages keys.
type Service struct {
	Keys     store.Keys
	Accounts store.Accounts
	Now      func() time.Time
}

var errInvalid = fault.New(fault.InvalidCredentials, "the API key or secret is invalid")

// Authenticate checks a key, and its secret when withSecret is set. A key
// revoked or expired is refused from the next request on: nothing is cached.
func (s *Service) Authenticate(ctx context.Context, key, secret string, withSecret bool) (Principal, error) {
	if key == "" || (withSecret && secret == "") {
		what := "the X-API-Key and X-API-Secret headers are required"
		if !withSecret {
			what = "an Authorization: Bearer <API key> header is required"
		}
		return Principal{}, fault.New(fault.MissingCredentials, "%s", what)
	}
	if !WellFormedKey(key) || (withSecret && !WellFormedSecret(secret)) {
		return Principal{}, errInvalid
	}
	p, err := s.Keys.PrincipalByKeyHash(ctx, Hash(key))
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, errInvalid
	}
	if err != nil {
		return Principal{}, fmt.Errorf("auth: %w", err)
	}
	if withSecret && subtle.ConstantTimeCompare(Hash(secret), p.Key.SecretHash) != 1 {
		return Principal{}, errInvalid
	}
	now := s.Now()
	if !p.Key.RevokedAt.IsZero() && !now.Before(p.Key.RevokedAt) {
		return Principal{}, fault.New(fault.KeyRevoked, "this API key was revoked on %s; generate a new one in the dashboard",
			p.Key.RevokedAt.Format(time.RFC3339))
	}
	if !p.Key.ExpiresAt.IsZero() && !now.Before(p.Key.ExpiresAt) {
		return Principal{}, fault.New(fault.KeyExpired, "this API key expired on %s; generate a new one in the dashboard",
			p.Key.ExpiresAt.Format(time.RFC3339))
	}
	return Principal{p}, nil
}

// NewKey is what creating a key needs.
type NewKey struct {
	AccountID string
	ClientID  string
	Name      string
	ExpiresAt time.Time // zero: never
	Scopes    []string  // nil: all
}

// Created is a new key with its credentials, which are never seen again.
type Created struct {
	Key    store.Key
	APIKey string
	Secret string
}

// CreateKey makes and stores a key. The key and secret are returned once.
func (s *Service) CreateKey(ctx context.Context, n NewKey) (Created, error) {
	var f fault.Fields
	n.Name = strings.TrimSpace(n.Name)
	if n.Name == "" || utf8.RuneCountInString(n.Name) > 100 {
		f.Add("name", "must be 1 to 100 characters")
	}
	now := s.Now()
	if !n.ExpiresAt.IsZero() && !n.ExpiresAt.After(now) {
		f.Add("expires_at", "must be in the future")
	}
	for _, sc := range n.Scopes {
		if !slices.Contains(Scopes, sc) {
			f.Add("scopes", "unknown scope %q", sc)
		}
	}
	if err := f.Err(); err != nil {
		return Created{}, err
	}
	acct, err := s.Accounts.Account(ctx, n.AccountID)
	if errors.Is(err, store.ErrNotFound) {
		return Created{}, fault.New(fault.NotFound, "no account %s", n.AccountID)
	} else if err != nil {
		return Created{}, err
	}
	if n.ClientID != "" {
		if acct.Type != store.AccountAgency {
			return Created{}, fault.New(fault.PlanNotAllowed, "client keys need an agency account; %s is a standard account", acct.ID)
		}
		if _, err := s.Accounts.Client(ctx, acct.ID, n.ClientID); errors.Is(err, store.ErrNotFound) {
			return Created{}, fault.New(fault.NotFound, "no client %s in account %s", n.ClientID, acct.ID)
		} else if err != nil {
			return Created{}, err
		}
	}
	if n.Scopes == nil {
		n.Scopes = slices.Clone(Scopes)
	}
	apiKey, secret := KeyPrefix+randid.String(40), randid.String(64)
	k := store.Key{
		ID: randid.New("key"), AccountID: acct.ID, ClientID: n.ClientID, Name: n.Name,
		KeyHash: Hash(apiKey), SecretHash: Hash(secret), Hint: Hint(apiKey), Scopes: n.Scopes,
		ExpiresAt: n.ExpiresAt.UTC(), CreatedAt: now.UTC(),
	}
	if err := s.Keys.CreateKey(ctx, k); err != nil {
		return Created{}, fmt.Errorf("auth: create key: %w", err)
	}
	return Created{Key: k, APIKey: apiKey, Secret: secret}, nil
}

// Revoke revokes a key from now on.
func (s *Service) Revoke(ctx context.Context, keyID string) (store.Key, error) {
	k, err := s.Keys.RevokeKey(ctx, keyID, s.Now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		return k, fault.New(fault.NotFound, "no key %s", keyID)
	}
	return k, err
}

// owned reads a key of an account: another account's is NOT_FOUND.
func (s *Service) owned(ctx context.Context, accountID, keyID string) (store.Key, error) {
	k, err := s.Keys.Key(ctx, keyID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && k.AccountID != accountID) {
		return store.Key{}, fault.New(fault.NotFound, "no key %s", keyID)
	}
	return k, err
}

// RevokeOwned revokes an account's key from now on.
func (s *Service) RevokeOwned(ctx context.Context, accountID, keyID string) (store.Key, error) {
	if _, err := s.owned(ctx, accountID, keyID); err != nil {
		return store.Key{}, err
	}
	return s.Revoke(ctx, keyID)
}

// MaxRollGrace bounds how long a rolled key keeps working.
const MaxRollGrace = 30 * 24 * time.Hour

// Roll makes a new key like an account's key (name, client, scopes,
// expiry) and revokes the old one once grace has passed. A revoked or
// expired key is not rolled; an explicit revocation during the grace
// takes effect at once (the store keeps the earlier time).
func (s *Service) Roll(ctx context.Context, accountID, keyID string, grace time.Duration) (Created, error) {
	if grace < 0 || grace > MaxRollGrace {
		return Created{}, fault.Invalid(fault.FieldError{Field: "grace_period",
			Message: fmt.Sprintf("must be between 0 and %d days", int(MaxRollGrace.Hours()/24))})
	}
	old, err := s.owned(ctx, accountID, keyID)
	if err != nil {
		return Created{}, err
	}
	now := s.Now()
	if !old.RevokedAt.IsZero() && !now.Before(old.RevokedAt) {
		return Created{}, fault.New(fault.InvalidState, "key %s is revoked: generate a new key instead", keyID)
	}
	// A roll keeps the old key's expiry; an expired key would give a key
	// that expires at once (or, without its expiry, never).
	if !old.ExpiresAt.IsZero() && !now.Before(old.ExpiresAt) {
		return Created{}, fault.New(fault.InvalidState, "key %s expired at %s: generate a new key instead", keyID, old.ExpiresAt.Format(time.RFC3339))
	}
	c, err := s.CreateKey(ctx, NewKey{AccountID: old.AccountID, ClientID: old.ClientID, Name: old.Name, ExpiresAt: old.ExpiresAt, Scopes: old.Scopes})
	if err != nil {
		return c, err
	}
	if _, err := s.Keys.RevokeKey(ctx, keyID, now.Add(grace).UTC()); err != nil {
		return c, fmt.Errorf("auth: roll: %w", err)
	}
	return c, nil
}

// ParseExpiry reads an expiry as YYYY-MM-DD (the start of that day, UTC)
// or an RFC 3339 time.
func ParseExpiry(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, errors.New("give a date YYYY-MM-DD or an RFC 3339 time")
}
