package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/aivis/aivis/core/store"
)

const accountColumns = `a.id, a.name, a.tier, a.type, a.created_at, a.market`

type scanner interface{ Scan(...any) error }

func scanAccount(s scanner, extra ...any) (store.Account, error) {
	var a store.Account
	var created sql.NullInt64
	err := s.Scan(append([]any{&a.ID, &a.Name, &a.Tier, &a.Type, &created, &a.Market}, extra...)...)
	a.CreatedAt = fromNS(created)
	return a, err
}

// CreateAccount inserts a new account.
func (db *DB) CreateAccount(ctx context.Context, a store.Account) error {
	_, err := db.w.ExecContext(ctx, `INSERT INTO accounts (id, name, tier, type, created_at, market) VALUES (?, ?, ?, ?, ?, ?)`,
		a.ID, a.Name, a.Tier, a.Type, stamp(a.CreatedAt), a.Market)
	if err != nil {
		return fmt.Errorf("sqlite: create account: %w", conflict(err))
	}
	return nil
}

// Account reads one account.
func (db *DB) Account(ctx context.Context, id string) (store.Account, error) {
	a, err := scanAccount(db.r.QueryRowContext(ctx, `SELECT `+accountColumns+` FROM accounts a WHERE a.id = ?`, id))
	if err != nil {
		return a, fmt.Errorf("sqlite: account %s: %w", id, notFound(err))
	}
	return a, nil
}

// ListAccounts lists every account, oldest first.
func (db *DB) ListAccounts(ctx context.Context) ([]store.Account, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+accountColumns+` FROM accounts a ORDER BY a.created_at, a.id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list accounts: %w", err)
	}
	defer rows.Close()
	var out []store.Account
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// SetTier changes an account's tier.
func (db *DB) SetTier(ctx context.Context, id, tier string) error {
	res, err := db.w.ExecContext(ctx, `UPDATE accounts SET tier = ? WHERE id = ?`, tier, id)
	if err != nil {
		return fmt.Errorf("sqlite: set tier: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: account %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// SetMarket sets an account's default market.
func (db *DB) SetMarket(ctx context.Context, id, market string) error {
	res, err := db.w.ExecContext(ctx, `UPDATE accounts SET market = ? WHERE id = ?`, market, id)
	if err != nil {
		return fmt.Errorf("sqlite: set market: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: account %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// CreateClient inserts an agency client.
func (db *DB) CreateClient(ctx context.Context, c store.Client) error {
	_, err := db.w.ExecContext(ctx, `INSERT INTO clients (id, account_id, name, created_at) VALUES (?, ?, ?, ?)`,
		c.ID, c.AccountID, c.Name, stamp(c.CreatedAt))
	if err != nil {
		return fmt.Errorf("sqlite: create client: %w", conflict(err))
	}
	return nil
}

// Client reads one client of an account.
func (db *DB) Client(ctx context.Context, accountID, id string) (store.Client, error) {
	var c store.Client
	var created sql.NullInt64
	err := db.r.QueryRowContext(ctx, `SELECT id, account_id, name, created_at FROM clients WHERE id = ? AND account_id = ?`,
		id, accountID).Scan(&c.ID, &c.AccountID, &c.Name, &created)
	if err != nil {
		return c, fmt.Errorf("sqlite: client %s: %w", id, notFound(err))
	}
	c.CreatedAt = fromNS(created)
	return c, nil
}

// ListClients lists an account's clients, oldest first.
func (db *DB) ListClients(ctx context.Context, accountID string) ([]store.Client, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, account_id, name, created_at FROM clients WHERE account_id = ? ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list clients: %w", err)
	}
	defer rows.Close()
	var out []store.Client
	for rows.Next() {
		var c store.Client
		var created sql.NullInt64
		if err := rows.Scan(&c.ID, &c.AccountID, &c.Name, &created); err != nil {
			return nil, err
		}
		c.CreatedAt = fromNS(created)
		out = append(out, c)
	}
	return out, rows.Err()
}

const keyColumns = `k.id, k.account_id, k.client_id, k.name, k.key_hash, k.secret_hash, k.hint, k.scopes,
	k.expires_at, k.revoked_at, k.created_at, k.last_used_at`

func scanKey(s scanner, extra ...any) (store.Key, error) {
	var k store.Key
	var client sql.NullString
	var scopes string
	var exp, rev, created, used sql.NullInt64
	dest := append([]any{&k.ID, &k.AccountID, &client, &k.Name, &k.KeyHash, &k.SecretHash, &k.Hint, &scopes,
		&exp, &rev, &created, &used}, extra...)
	if err := s.Scan(dest...); err != nil {
		return k, err
	}
	k.ClientID = client.String
	k.Scopes = strings.Fields(scopes)
	k.ExpiresAt, k.RevokedAt, k.CreatedAt, k.LastUsedAt = fromNS(exp), fromNS(rev), fromNS(created), fromNS(used)
	return k, nil
}

// CreateKey inserts a key record.
func (db *DB) CreateKey(ctx context.Context, k store.Key) error {
	_, err := db.w.ExecContext(ctx, `INSERT INTO api_keys (id, account_id, client_id, name, key_hash, secret_hash, hint, scopes,
		expires_at, revoked_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.AccountID, nullStr(k.ClientID), k.Name, k.KeyHash, k.SecretHash, k.Hint, strings.Join(k.Scopes, " "),
		ns(k.ExpiresAt), ns(k.RevokedAt), stamp(k.CreatedAt))
	if err != nil {
		return fmt.Errorf("sqlite: create key: %w", conflict(err))
	}
	return nil
}

// PrincipalByKeyHash finds a key, with what authentication reads of it,
// and its account.
func (db *DB) PrincipalByKeyHash(ctx context.Context, hash []byte) (store.Principal, error) {
	var p store.Principal
	var client sql.NullString
	var scopes string
	var exp, rev sql.NullInt64
	a, err := scanAccount(db.keyByHash.QueryRowContext(ctx, hash), &p.Key.ID, &client, &p.Key.SecretHash, &scopes, &exp, &rev)
	if err != nil {
		return p, fmt.Errorf("sqlite: key by hash: %w", notFound(err))
	}
	p.Account = a
	p.Key.AccountID, p.Key.ClientID, p.Key.Scopes = a.ID, client.String, strings.Fields(scopes)
	p.Key.ExpiresAt, p.Key.RevokedAt = fromNS(exp), fromNS(rev)
	return p, nil
}

// principalQuery reads what PrincipalByKeyHash returns.
const principalQuery = `SELECT ` + accountColumns + `, k.id, k.client_id, k.secret_hash, k.scopes, k.expires_at, k.revoked_at
	FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = ?`

// Key reads one key record.
func (db *DB) Key(ctx context.Context, id string) (store.Key, error) {
	k, err := scanKey(db.r.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys k WHERE k.id = ?`, id))
	if err != nil {
		return k, fmt.Errorf("sqlite: key %s: %w", id, notFound(err))
	}
	return k, nil
}

// ListKeys lists an account's keys, oldest first.
func (db *DB) ListKeys(ctx context.Context, accountID string) ([]store.Key, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys k WHERE k.account_id = ? ORDER BY k.created_at, k.id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list keys: %w", err)
	}
	defer rows.Close()
	var out []store.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeKey revokes a key at the earlier of at and the time it already
// had: revoking a revoked key keeps the first time, and revoking a key
// whose roll set a revocation in the future revokes it at at.
func (db *DB) RevokeKey(ctx context.Context, id string, at time.Time) (store.Key, error) {
	res, err := db.w.ExecContext(ctx, `UPDATE api_keys SET revoked_at = min(coalesce(revoked_at, ?1), ?1) WHERE id = ?2`, stamp(at), id)
	if err != nil {
		return store.Key{}, fmt.Errorf("sqlite: revoke key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.Key{}, fmt.Errorf("sqlite: key %s: %w", id, store.ErrNotFound)
	}
	k, err := scanKey(db.w.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys k WHERE k.id = ?`, id))
	if err != nil {
		return k, fmt.Errorf("sqlite: key %s: %w", id, notFound(err))
	}
	return k, nil
}
