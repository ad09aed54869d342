package cache

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aivis/aivis/core/store"
)

// Versions are the topics a Signal tells of, each a number that changes
// whenever a commit may have changed what a cache of the topic holds.
type Versions struct {
	Keys    int64 // keys, accounts and clients: what authentication reads
	Budgets int64 // budget ledgers and the states of content requests
	Targets int64 // what the fan-out matches of webhooks and connections
}

// Signal is an engine's word on what changed: SQLite reads counters that
// triggers move (and first the WAL index's commit counter, shared by every
// process, so that reading them costs a statement only after a commit);
// PostgreSQL reads counters that triggers move, at each call; Redis would
// keep the counters.
type Signal interface {
	// Versions reads the topics' versions now: every commit that ended
	// before the call, by any process on the store, is reflected in them.
	Versions(ctx context.Context) (Versions, error)
}

// Store is an engine whose hot reads are cached: PrincipalByKeyHash (every
// request), Budget (budget-status) and MatchWebhooks (every event). Each
// read checks the signal first (or reuses a check made since the
// request's AsOf time), so a revoked key, a changed tier or an edited
// webhook is seen by the next read, whoever made the change. The rest of
// the engine is used as it is.
type Store struct {
	store.Store
	signal Signal

	checkMu sync.Mutex // one check of the signal at a time
	mu      sync.Mutex // guards what follows
	checked time.Time  // when the last check began
	valid   bool
	version Versions
	keys    map[string]authKey // by key hash
	// The keys' accounts and scopes, each held once for all the keys
	// that share it; emptied with keys.
	accounts map[string]*store.Account
	scopes   map[string][]string // by the scopes joined
	budgets  map[budgetKey]budgetEntry
	targets  map[targetKey][]store.Webhook
}

// maxEntries bounds each cache; past it the cache starts afresh.
const maxEntries = 50_000

// Wrap caches st's hot reads under signal.
func Wrap(st store.Store, signal Signal) *Store {
	return &Store{Store: st, signal: signal}
}

// authKey is what the cache holds of a key: what authentication reads of
// it (the contract of PrincipalByKeyHash) and its account, shared with
// the account's other keys. A store.Principal is some 950 bytes of heap;
// this about 250.
type authKey struct {
	id, client       string
	account          *store.Account
	secret           []byte
	scopes           []string
	expires, revoked time.Time
}

func (k *authKey) principal() store.Principal {
	return store.Principal{Key: store.Key{ID: k.id, AccountID: k.account.ID, ClientID: k.client, SecretHash: k.secret,
		Scopes: k.scopes, ExpiresAt: k.expires, RevokedAt: k.revoked}, Account: *k.account}
}

type budgetKey struct{ account, month string }

type budgetEntry struct {
	b      store.BudgetMonth
	active int
}

// targetKey is an event's owner and domain.
type targetKey struct{ account, client, domain string }

// current returns the versions, emptying each cache whose version moved.
// They are read before any read whose result is cached under them, so a
// commit that lands in between only costs a miss. A check that began at or
// after the context's AsOf time is reused.
func (c *Store) current(ctx context.Context) (Versions, error) {
	asOf, ok := asOfTime(ctx)
	if v, done := c.checkedSince(asOf, ok); done {
		return v, nil
	}
	c.checkMu.Lock()
	defer c.checkMu.Unlock()
	// The check made while this call waited for its turn, if it began
	// after asOf, serves it too: the calls that queue behind one check
	// share the next.
	if v, done := c.checkedSince(asOf, ok); done {
		return v, nil
	}
	start := time.Now()
	v, err := c.signal.Versions(ctx)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || v.Keys != c.version.Keys {
		c.keys, c.accounts, c.scopes = make(map[string]authKey), make(map[string]*store.Account), make(map[string][]string)
	}
	if !c.valid || v.Budgets != c.version.Budgets {
		c.budgets = make(map[budgetKey]budgetEntry)
	}
	if !c.valid || v.Targets != c.version.Targets {
		c.targets = make(map[targetKey][]store.Webhook)
	}
	c.version, c.checked, c.valid = v, start, true
	return v, nil
}

// checkedSince returns the versions of the last check if it began at or
// after asOf (when the caller has an AsOf time).
func (c *Store) checkedSince(asOf time.Time, ok bool) (Versions, bool) {
	if !ok {
		return Versions{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version, c.valid && !c.checked.Before(asOf)
}

// PrincipalByKeyHash finds a key and its account, from the cache while
// keys, accounts and clients are unchanged.
func (c *Store) PrincipalByKeyHash(ctx context.Context, hash []byte) (store.Principal, error) {
	v, err := c.current(ctx)
	if err != nil {
		return store.Principal{}, err
	}
	c.mu.Lock()
	k, ok := c.keys[string(hash)]
	c.mu.Unlock()
	if ok {
		return k.principal(), nil
	}
	p, err := c.Store.PrincipalByKeyHash(ctx, hash)
	if err != nil {
		return p, err
	}
	k = authKey{id: p.Key.ID, client: p.Key.ClientID, account: &p.Account, secret: p.Key.SecretHash, scopes: p.Key.Scopes,
		expires: p.Key.ExpiresAt, revoked: p.Key.RevokedAt}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v.Keys != c.version.Keys {
		return p, nil
	}
	if len(c.keys) >= maxEntries {
		clear(c.keys)
		clear(c.accounts)
		clear(c.scopes)
	}
	if a, ok := c.accounts[k.account.ID]; ok && *a == *k.account {
		k.account = a
	} else {
		c.accounts[k.account.ID] = k.account
	}
	joined := strings.Join(k.scopes, " ")
	if s, ok := c.scopes[joined]; ok {
		k.scopes = s
	} else {
		c.scopes[joined] = k.scopes
	}
	c.keys[string(hash)] = k
	return k.principal(), nil
}

// Budget reads an account's ledger for a month and its active requests,
// from the cache while budgets and requests' states are unchanged.
func (c *Store) Budget(ctx context.Context, accountID, month string) (store.BudgetMonth, int, error) {
	v, err := c.current(ctx)
	if err != nil {
		return store.BudgetMonth{}, 0, err
	}
	k := budgetKey{accountID, month}
	c.mu.Lock()
	e, ok := c.budgets[k]
	c.mu.Unlock()
	if ok {
		return e.b, e.active, nil
	}
	b, active, err := c.Store.Budget(ctx, accountID, month)
	if err != nil {
		return b, active, err
	}
	c.mu.Lock()
	if v.Budgets == c.version.Budgets {
		if len(c.budgets) >= maxEntries {
			clear(c.budgets)
		}
		c.budgets[k] = budgetEntry{b, active}
	}
	c.mu.Unlock()
	return b, active, nil
}

// MatchWebhooks finds an owner's targets of a domain, from the cache while
// webhooks and connections are unchanged. The records' slices are shared
// with the cache (records are not changed in place, see package store);
// the list itself is the caller's.
func (c *Store) MatchWebhooks(ctx context.Context, accountID, clientID, domain string) ([]store.Webhook, error) {
	v, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	k := targetKey{accountID, clientID, domain}
	c.mu.Lock()
	ws, ok := c.targets[k]
	c.mu.Unlock()
	if ok {
		return slices.Clone(ws), nil
	}
	ws, err = c.Store.MatchWebhooks(ctx, accountID, clientID, domain)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if v.Targets == c.version.Targets {
		if len(c.targets) >= maxEntries {
			clear(c.targets)
		}
		c.targets[k] = slices.Clip(ws)
	}
	c.mu.Unlock()
	return slices.Clone(ws), nil
}
