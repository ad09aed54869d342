// Package accounts creates accounts and agency clients and changes tiers.
package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
)

// Service manages accounts and clients.
type Service struct {
	Store store.Accounts
	Now   func() time.Time
}

func checkName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > 200 {
		return "", fault.Invalid(fault.FieldError{Field: "name", Message: "must be 1 to 200 characters"})
	}
	return name, nil
}

func tier(name string) (limits.Tier, error) {
	t, ok := limits.TierByName(name)
	if !ok {
		return t, fault.Invalid(fault.FieldError{Field: "tier", Message: "must be one of " + strings.Join(limits.TierNames(), ", ")})
	}
	return t, nil
}

// New validates and makes an account record without storing it, for a
// caller that stores it with more in one transaction.
func (s *Service) New(name, tierName string, agency bool) (store.Account, error) {
	name, err := checkName(name)
	if err != nil {
		return store.Account{}, err
	}
	t, err := tier(tierName)
	if err != nil {
		return store.Account{}, err
	}
	a := store.Account{ID: randid.New("acct"), Name: name, Tier: t.Name, Type: store.AccountStandard, CreatedAt: s.Now().UTC()}
	if agency {
		a.Type = store.AccountAgency
	}
	return a, nil
}

// Create makes an account of a tier, an agency account when agency is set.
func (s *Service) Create(ctx context.Context, name, tierName string, agency bool) (store.Account, error) {
	a, err := s.New(name, tierName, agency)
	if err != nil {
		return a, err
	}
	if err := s.Store.CreateAccount(ctx, a); err != nil {
		return a, fmt.Errorf("accounts: %w", err)
	}
	return a, nil
}

// SetTier changes an account's tier; it applies from the next request on.
func (s *Service) SetTier(ctx context.Context, id, tierName string) (store.Account, error) {
	t, err := tier(tierName)
	if err != nil {
		return store.Account{}, err
	}
	if err := s.Store.SetTier(ctx, id, t.Name); errors.Is(err, store.ErrNotFound) {
		return store.Account{}, fault.New(fault.NotFound, "no account %s", id)
	} else if err != nil {
		return store.Account{}, err
	}
	return s.Store.Account(ctx, id)
}

// SetMarket sets an account's default market, its language and country
// ("de-DE"): that of its domains that name none; "" clears it.
func (s *Service) SetMarket(ctx context.Context, id, tag string) (store.Account, error) {
	if tag != "" {
		m, err := probe.ParseMarketTag(tag)
		if err != nil {
			return store.Account{}, fault.Invalid(fault.FieldError{Field: "market", Message: err.Error()})
		}
		tag = m.String()
	}
	if err := s.Store.SetMarket(ctx, id, tag); errors.Is(err, store.ErrNotFound) {
		return store.Account{}, fault.New(fault.NotFound, "no account %s", id)
	} else if err != nil {
		return store.Account{}, err
	}
	return s.Store.Account(ctx, id)
}

// CreateClient adds a client to an agency account.
func (s *Service) CreateClient(ctx context.Context, accountID, name string) (store.Client, error) {
	name, err := checkName(name)
	if err != nil {
		return store.Client{}, err
	}
	a, err := s.Store.Account(ctx, accountID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Client{}, fault.New(fault.NotFound, "no account %s", accountID)
	} else if err != nil {
		return store.Client{}, err
	}
	if a.Type != store.AccountAgency {
		return store.Client{}, fault.New(fault.PlanNotAllowed, "clients need an agency account; %s is a standard account", a.ID)
	}
	c := store.Client{ID: randid.New("cli"), AccountID: a.ID, Name: name, CreatedAt: s.Now().UTC()}
	if err := s.Store.CreateClient(ctx, c); err != nil {
		return c, fmt.Errorf("accounts: %w", err)
	}
	return c, nil
}

// Clients reads an account's client, what Owner checks.
type Clients interface {
	Client(ctx context.Context, accountID, id string) (store.Client, error)
}

// Owner resolves the client a request acts for: a client key's own, or the
// one an agency's account key names (which must exist).
func Owner(ctx context.Context, st Clients, p auth.Principal, clientID string) (string, error) {
	if p.ClientID() != "" {
		if clientID != "" && clientID != p.ClientID() {
			return "", fault.New(fault.NotFound, "no client %s", clientID)
		}
		return p.ClientID(), nil
	}
	if clientID == "" {
		return "", nil
	}
	if p.Account.Type != store.AccountAgency {
		return "", fault.New(fault.PlanNotAllowed, "client_id is for agency accounts")
	}
	if _, err := st.Client(ctx, p.AccountID(), clientID); errors.Is(err, store.ErrNotFound) {
		return "", fault.New(fault.NotFound, "no client %s", clientID)
	} else if err != nil {
		return "", err
	}
	return clientID, nil
}

// ListScope is whose resources a list shows a principal, given the
// client_id it asked for: a client key its client's; an account key the
// account's and every client's (all), or one client's (clientID; "*" is
// all, as no client_id is). ok is false when the key may see none of them.
func ListScope(p auth.Principal, clientID string) (owner string, all, ok bool) {
	switch {
	case p.ClientID() == "" && (clientID == "" || clientID == "*"):
		return "", true, true
	case p.ClientID() == "":
		return clientID, false, true
	case clientID != "" && clientID != p.ClientID():
		return "", false, false
	}
	return p.ClientID(), false, true
}

// CursorError turns a store's malformed cursor into the user's error.
func CursorError(err error) error {
	if errors.Is(err, store.ErrMalformed) {
		return fault.Invalid(fault.FieldError{Field: "cursor", Message: "is not a cursor this list returned"})
	}
	return err
}
