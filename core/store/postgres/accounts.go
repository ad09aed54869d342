package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/aivis/aivis/core/store"
)

// Accounts, clients and keys are each written by one statement; a key's
// revocation and last use move only one way in the statement itself
// (LEAST, GREATEST of the stored value), whatever writes race. Unique ids
// and key hashes are primary keys and unique indexes.

const accountColumns = `a.id, a.name, a.tier, a.type, a.created_at, a.created_at_ns, a.market`

func scanAccount(s scanner, extra ...any) (store.Account, error) {
	var a store.Account
	var created tcol
	err := s.Scan(append([]any{&a.ID, &a.Name, &a.Tier, &a.Type, &created.t, &created.ns, &a.Market}, extra...)...)
	a.CreatedAt = created.time()
	return a, err
}

// CreateAccount inserts a new account.
func (db *DB) CreateAccount(ctx context.Context, a store.Account) error {
	return createAccount(ctx, db.pool, a)
}

func createAccount(ctx context.Context, q querier, a store.Account) error {
	_, err := q.Exec(ctx, `INSERT INTO accounts (id, name, tier, type, created_at, created_at_ns, market) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		a.ID, a.Name, a.Tier, a.Type, ts(a.CreatedAt), ns(a.CreatedAt), a.Market)
	if err != nil {
		return fmt.Errorf("postgres: create account: %w", conflict(err))
	}
	return nil
}

// Account reads one account.
func (db *DB) Account(ctx context.Context, id string) (store.Account, error) {
	a, err := scanAccount(db.pool.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts a WHERE a.id = $1`, id))
	if err != nil {
		return a, fmt.Errorf("postgres: account %s: %w", id, notFound(err))
	}
	return a, nil
}

// ListAccounts lists every account, oldest first.
func (db *DB) ListAccounts(ctx context.Context) ([]store.Account, error) {
	out, err := collect(ctx, db.pool, func(s scanner) (store.Account, error) { return scanAccount(s) },
		`SELECT `+accountColumns+` FROM accounts a ORDER BY a.created_at, a.created_at_ns, a.id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list accounts: %w", err)
	}
	return out, nil
}

// SetTier changes an account's tier.
func (db *DB) SetTier(ctx context.Context, id, tier string) error {
	tag, err := db.pool.Exec(ctx, `UPDATE accounts SET tier = $1 WHERE id = $2`, tier, id)
	if err != nil {
		return fmt.Errorf("postgres: set tier: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: account %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// SetMarket sets an account's default market.
func (db *DB) SetMarket(ctx context.Context, id, market string) error {
	tag, err := db.pool.Exec(ctx, `UPDATE accounts SET market = $1 WHERE id = $2`, market, id)
	if err != nil {
		return fmt.Errorf("postgres: set market: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: account %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// CreateClient inserts an agency client.
func (db *DB) CreateClient(ctx context.Context, c store.Client) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO clients (id, account_id, name, created_at, created_at_ns) VALUES ($1, $2, $3, $4, $5)`,
		c.ID, c.AccountID, c.Name, ts(c.CreatedAt), ns(c.CreatedAt))
	if err != nil {
		return fmt.Errorf("postgres: create client: %w", conflict(err))
	}
	return nil
}

func scanClient(s scanner) (store.Client, error) {
	var c store.Client
	var created tcol
	err := s.Scan(&c.ID, &c.AccountID, &c.Name, &created.t, &created.ns)
	c.CreatedAt = created.time()
	return c, err
}

const clientColumns = `id, account_id, name, created_at, created_at_ns`

// Client reads one client of an account.
func (db *DB) Client(ctx context.Context, accountID, id string) (store.Client, error) {
	c, err := scanClient(db.pool.QueryRow(ctx, `SELECT `+clientColumns+` FROM clients WHERE id = $1 AND account_id = $2`, id, accountID))
	if err != nil {
		return c, fmt.Errorf("postgres: client %s: %w", id, notFound(err))
	}
	return c, nil
}

// ListClients lists an account's clients, oldest first.
func (db *DB) ListClients(ctx context.Context, accountID string) ([]store.Client, error) {
	out, err := collect(ctx, db.pool, scanClient, `SELECT `+clientColumns+` FROM clients WHERE account_id = $1
		ORDER BY created_at, created_at_ns, id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("postgres: list clients: %w", err)
	}
	return out, nil
}

const keyColumns = `k.id, k.account_id, k.client_id, k.name, k.key_hash, k.secret_hash, k.hint, k.scopes,
	k.expires_at, k.expires_at_ns, k.revoked_at, k.revoked_at_ns, k.created_at, k.created_at_ns, k.last_used_at, k.last_used_at_ns`

func scanKey(s scanner) (store.Key, error) {
	var k store.Key
	var client *string
	var exp, rev, created, used tcol
	err := s.Scan(&k.ID, &k.AccountID, &client, &k.Name, &k.KeyHash, &k.SecretHash, &k.Hint, &k.Scopes,
		&exp.t, &exp.ns, &rev.t, &rev.ns, &created.t, &created.ns, &used.t, &used.ns)
	if client != nil {
		k.ClientID = *client
	}
	k.ExpiresAt, k.RevokedAt, k.CreatedAt, k.LastUsedAt = exp.time(), rev.time(), created.time(), used.time()
	return k, err
}

// CreateKey inserts a key record.
func (db *DB) CreateKey(ctx context.Context, k store.Key) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO api_keys (id, account_id, client_id, name, key_hash, secret_hash, hint, scopes,
		expires_at, expires_at_ns, revoked_at, revoked_at_ns, created_at, created_at_ns)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		k.ID, k.AccountID, null(k.ClientID), k.Name, k.KeyHash, k.SecretHash, k.Hint, nonNil(k.Scopes),
		tsz(k.ExpiresAt), nsz(k.ExpiresAt), tsz(k.RevokedAt), nsz(k.RevokedAt), ts(k.CreatedAt), ns(k.CreatedAt))
	if err != nil {
		return fmt.Errorf("postgres: create key: %w", conflict(err))
	}
	return nil
}

// PrincipalByKeyHash finds a key, with what authentication reads of it,
// and its account.
func (db *DB) PrincipalByKeyHash(ctx context.Context, hash []byte) (store.Principal, error) {
	var p store.Principal
	var client *string
	var exp, rev tcol
	a, err := scanAccount(db.pool.QueryRow(ctx, `SELECT `+accountColumns+`, k.id, k.client_id, k.secret_hash, k.scopes,
		k.expires_at, k.expires_at_ns, k.revoked_at, k.revoked_at_ns
		FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = $1`, hash),
		&p.Key.ID, &client, &p.Key.SecretHash, &p.Key.Scopes, &exp.t, &exp.ns, &rev.t, &rev.ns)
	if err != nil {
		return p, fmt.Errorf("postgres: key by hash: %w", notFound(err))
	}
	p.Account = a
	p.Key.AccountID = a.ID
	if client != nil {
		p.Key.ClientID = *client
	}
	p.Key.ExpiresAt, p.Key.RevokedAt = exp.time(), rev.time()
	return p, nil
}

// Key reads one key record.
func (db *DB) Key(ctx context.Context, id string) (store.Key, error) {
	k, err := scanKey(db.pool.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys k WHERE k.id = $1`, id))
	if err != nil {
		return k, fmt.Errorf("postgres: key %s: %w", id, notFound(err))
	}
	return k, nil
}

// ListKeys lists an account's keys, oldest first.
func (db *DB) ListKeys(ctx context.Context, accountID string) ([]store.Key, error) {
	out, err := collect(ctx, db.pool, scanKey, `SELECT `+keyColumns+` FROM api_keys k WHERE k.account_id = $1
		ORDER BY k.created_at, k.created_at_ns, k.id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("postgres: list keys: %w", err)
	}
	return out, nil
}

// RevokeKey revokes a key at the earlier of at and the time it already
// had, in the UPDATE itself: a revocation is never postponed, however
// revocations race.
func (db *DB) RevokeKey(ctx context.Context, id string, at time.Time) (store.Key, error) {
	k, err := scanKey(db.pool.QueryRow(ctx, `UPDATE api_keys k SET (revoked_at, revoked_at_ns) = (
			SELECT t, n FROM (VALUES (k.revoked_at, k.revoked_at_ns), ($2::timestamptz, $3::smallint)) AS v (t, n)
			WHERE t IS NOT NULL ORDER BY t, n LIMIT 1)
		WHERE k.id = $1 RETURNING `+keyColumns, id, ts(at), ns(at)))
	if err != nil {
		return k, fmt.Errorf("postgres: revoke key %s: %w", id, notFound(err))
	}
	return k, nil
}
