package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
)

// fresh caches the reads on the hot path of every request (a key with its
// account, an account's budget) for as long as what they read is
// unchanged. cache_epoch, moved by triggers on those tables, tells (n for
// keys, accounts and clients; budgets for the budget ledger and the
// active content requests, which the content engine changes with every
// step, so that those leave the key cache warm): any
// connection's commit, in this process or another (the CLI), is seen by
// the next read, so a revoked key or a changed tier is never served from
// the cache. Reading the epoch costs one small statement instead of
// queries whose columns each cross cgo; with store.AsOf one reading
// serves every read of a request and of requests that began before it.
type fresh struct {
	mu      sync.Mutex // guards the connection, its statement and checked
	conn    *sql.Conn
	stmt    driver.Stmt
	dest    []driver.Value
	checked time.Time // when the last reading of the epoch began
	commits *commits  // nil where the -shm file cannot be mapped
	seen    uint32    // the commit counter before the last reading
	valid   bool      // seen is set
	cacheMu sync.Mutex
	version epoch
	keys    map[string]authKey // by key hash
	// The keys' accounts and scopes, each held once for all the keys
	// that share it; emptied with keys.
	accounts map[string]*store.Account
	scopes   map[string][]string // by the scopes column
	budgets  map[budgetKey]budgetEntry
	matches  map[matchKey][]store.Webhook
}

// authKey is what the cache holds of a key: what authentication reads of
// it, the columns whose changes move cache_epoch's keys counter (its
// name, hint and times of creation and last use are neither), and its
// account, shared with the account's other keys. A store.Principal is
// some 950 bytes of heap; this about 250.
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

// matchKey is an event's owner and domain, whose webhooks and connections
// MatchWebhooks finds.
type matchKey struct{ account, client, domain string }

// epoch is what cache_epoch read: the keys' counter, the budgets' and the
// webhooks'.
type epoch struct{ keys, budgets, webhooks int64 }

type budgetEntry struct {
	b      store.BudgetMonth
	active int
}

// maxEntries bounds each cache; past it the cache starts afresh.
const maxEntries = 50_000

func newFresh(ctx context.Context, db *sql.DB, path string) (*fresh, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	f := &fresh{conn: conn, dest: make([]driver.Value, 3), version: epoch{-1, -1, -1}}
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		f.stmt, err = c.Prepare("SELECT n, budgets, webhooks FROM cache_epoch")
		return err
	})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("sqlite: cache epoch: %w", err)
	}
	// The -shm file exists once a connection has read the database in WAL mode.
	if _, err := f.current(ctx); err != nil {
		f.close() // commits is not open yet
		return nil, err
	}
	f.commits = watchCommits(path)
	return f, nil
}

// close closes the connection and hands back the commit watcher, which the
// caller closes after every other connection (see commits).
func (f *fresh) close() *commits {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.commits
	f.commits = nil
	if f.stmt != nil {
		f.stmt.Close()
	}
	f.conn.Close()
	return c
}

// current returns the epoch, emptying each cache whose counter moved. The
// epoch is read before any query whose result is cached under it, so a
// commit that lands in between only costs a miss. A reading that began at or after
// the context's AsOf time is reused.
func (f *fresh) current(ctx context.Context) (epoch, error) {
	asOf, hasAsOf := cache.AsOfTime(ctx)
	f.mu.Lock()
	n, watched := f.commits.counter()
	if (watched && f.valid && n == f.seen) || (hasAsOf && !f.checked.IsZero() && !f.checked.Before(asOf)) {
		f.mu.Unlock()
		f.cacheMu.Lock()
		v := f.version
		f.cacheMu.Unlock()
		return v, nil
	}
	start := time.Now()
	rows, err := f.stmt.Query(nil)
	if err == nil {
		err = rows.Next(f.dest)
		rows.Close()
	}
	var v epoch
	v.keys, _ = f.dest[0].(int64)
	v.budgets, _ = f.dest[1].(int64)
	v.webhooks, _ = f.dest[2].(int64)
	if err == nil {
		f.checked = start
		f.seen, f.valid = n, watched
	}
	f.cacheMu.Lock()
	if err == nil && v.keys != f.version.keys {
		f.keys, f.accounts, f.scopes = make(map[string]authKey), make(map[string]*store.Account), make(map[string][]string)
	}
	if err == nil && v.budgets != f.version.budgets {
		f.budgets = make(map[budgetKey]budgetEntry)
	}
	if err == nil && v.webhooks != f.version.webhooks {
		f.matches = make(map[matchKey][]store.Webhook)
	}
	if err == nil {
		f.version = v
	}
	f.cacheMu.Unlock()
	f.mu.Unlock()
	if err != nil {
		return epoch{}, fmt.Errorf("sqlite: cache epoch: %w", err)
	}
	return v, nil
}

func (f *fresh) authKey(hash []byte) (authKey, bool) {
	f.cacheMu.Lock()
	k, ok := f.keys[string(hash)]
	f.cacheMu.Unlock()
	return k, ok
}

// putAuthKey caches k, whose scopes column is scopes, under hash if the
// keys' counter is still v's, sharing the account and scopes of the keys
// cached before it; it returns k as cached.
func (f *fresh) putAuthKey(v epoch, hash []byte, k authKey, scopes string) authKey {
	f.cacheMu.Lock()
	defer f.cacheMu.Unlock()
	if v.keys != f.version.keys {
		return k
	}
	if len(f.keys) >= maxEntries {
		clear(f.keys)
		clear(f.accounts)
		clear(f.scopes)
	}
	if a, ok := f.accounts[k.account.ID]; ok {
		k.account = a
	} else {
		f.accounts[k.account.ID] = k.account
	}
	if s, ok := f.scopes[scopes]; ok {
		k.scopes = s
	} else {
		f.scopes[scopes] = k.scopes
	}
	f.keys[string(hash)] = k
	return k
}

func (f *fresh) budget(k budgetKey) (budgetEntry, bool) {
	f.cacheMu.Lock()
	e, ok := f.budgets[k]
	f.cacheMu.Unlock()
	return e, ok
}

func (f *fresh) putBudget(v epoch, k budgetKey, e budgetEntry) {
	f.cacheMu.Lock()
	if v.budgets == f.version.budgets {
		if len(f.budgets) >= maxEntries {
			clear(f.budgets)
		}
		f.budgets[k] = e
	}
	f.cacheMu.Unlock()
}

func (f *fresh) match(k matchKey) ([]store.Webhook, bool) {
	f.cacheMu.Lock()
	ws, ok := f.matches[k]
	f.cacheMu.Unlock()
	return ws, ok
}

func (f *fresh) putMatch(v epoch, k matchKey, ws []store.Webhook) {
	f.cacheMu.Lock()
	if v.webhooks == f.version.webhooks {
		if len(f.matches) >= maxEntries {
			clear(f.matches)
		}
		f.matches[k] = ws
	}
	f.cacheMu.Unlock()
}
