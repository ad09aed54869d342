package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/aivis/aivis/core/store"
)

// Monitored domains. An owner monitors a name once: a unique index of
// (account, client or '', name), which refuses a second (ErrConflict,
// the transaction left usable). The cap of an account's domains is
// CountDomains then InsertDomain in one SERIALIZABLE Update.

const domainColumns = `id, account_id, client_id, domain, brands, aliases, competitors, topics, prompts, prompt_intents, markets,
	next_scan_at, next_scan_at_ns, last_scan_at, last_scan_at_ns, created_at, created_at_ns, updated_at, updated_at_ns`

func scanDomain(s scanner, first ...any) (store.MonitoredDomain, error) {
	var d store.MonitoredDomain
	var client *string
	var prompts, intents []string
	var next, last, created, updated tcol
	err := s.Scan(append(first, &d.ID, &d.AccountID, &client, &d.Domain, &d.Brands, &d.Aliases, &d.Competitors, &d.Topics, &prompts,
		&intents, &d.Markets, &next.t, &next.ns, &last.t, &last.ns, &created.t, &created.ns, &updated.t, &updated.ns)...)
	if err != nil {
		return d, err
	}
	d.ClientID = str(client)
	d.NextScanAt, d.LastScanAt, d.CreatedAt, d.UpdatedAt = next.time(), last.time(), created.time(), updated.time()
	if d.Prompts, err = store.JoinPrompts(prompts, intents); err != nil {
		return d, fmt.Errorf("domain %s: %w", d.ID, err)
	}
	return d, nil
}

func (t *txn) InsertDomain(d store.MonitoredDomain) error {
	prompts, intents := store.SplitPrompts(d.Prompts)
	tag, err := t.tx.Exec(t.ctx, `INSERT INTO monitored_domains (`+domainColumns+`) VALUES (`+params(1, 19)+`) ON CONFLICT DO NOTHING`,
		d.ID, d.AccountID, null(d.ClientID), d.Domain, nonNil(d.Brands), nonNil(d.Aliases), nonNil(d.Competitors), nonNil(d.Topics),
		prompts, intents, nonNil(d.Markets), tsz(d.NextScanAt), nsz(d.NextScanAt), tsz(d.LastScanAt), nsz(d.LastScanAt),
		ts(d.CreatedAt), ns(d.CreatedAt), ts(d.UpdatedAt), ns(d.UpdatedAt))
	if err != nil {
		return fmt.Errorf("postgres: insert domain: %w", conflict(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: domain %s (%s) is taken: %w", d.ID, d.Domain, store.ErrConflict)
	}
	return nil
}

func getDomain(ctx context.Context, q querier, accountID, id string) (store.MonitoredDomain, error) {
	d, err := scanDomain(q.QueryRow(ctx, `SELECT `+domainColumns+` FROM monitored_domains WHERE account_id = $1 AND id = $2`, accountID, id))
	if err != nil {
		return d, fmt.Errorf("postgres: domain %s: %w", id, notFound(err))
	}
	return d, nil
}

func (t *txn) MonitoredDomain(accountID, id string) (store.MonitoredDomain, error) {
	return getDomain(t.ctx, t.tx, accountID, id)
}

func (t *txn) UpdateDomain(d store.MonitoredDomain) error {
	prompts, intents := store.SplitPrompts(d.Prompts)
	tag, err := t.tx.Exec(t.ctx, `UPDATE monitored_domains SET brands = $3, aliases = $4, competitors = $5, topics = $6, prompts = $7,
		prompt_intents = $8, markets = $15, next_scan_at = $9, next_scan_at_ns = $10, last_scan_at = $11, last_scan_at_ns = $12, updated_at = $13,
		updated_at_ns = $14 WHERE id = $1 AND account_id = $2`, d.ID, d.AccountID, nonNil(d.Brands), nonNil(d.Aliases),
		nonNil(d.Competitors), nonNil(d.Topics), prompts, intents, tsz(d.NextScanAt), nsz(d.NextScanAt), tsz(d.LastScanAt),
		nsz(d.LastScanAt), ts(d.UpdatedAt), ns(d.UpdatedAt), nonNil(d.Markets))
	if err != nil {
		return fmt.Errorf("postgres: update domain: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: domain %s: %w", d.ID, store.ErrNotFound)
	}
	return nil
}

func (t *txn) DeleteDomain(accountID, id string) error {
	tag, err := t.tx.Exec(t.ctx, `DELETE FROM monitored_domains WHERE account_id = $1 AND id = $2`, accountID, id)
	if err != nil {
		return fmt.Errorf("postgres: delete domain: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: domain %s: %w", id, store.ErrNotFound)
	}
	return nil
}

func (t *txn) CountDomains(accountID string) (int, error) {
	var n int
	if err := t.tx.QueryRow(t.ctx, `SELECT count(*) FROM monitored_domains WHERE account_id = $1`, accountID).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count domains: %w", err)
	}
	return n, nil
}

// MonitoredDomain reads a monitored domain of an account.
func (db *DB) MonitoredDomain(ctx context.Context, accountID, id string) (store.MonitoredDomain, error) {
	return getDomain(ctx, db.pool, accountID, id)
}

// ListDomains returns one page of an owner's monitored domains, newest first.
func (db *DB) ListDomains(ctx context.Context, f store.DomainFilter) ([]store.MonitoredDomain, string, error) {
	var w where
	w.and("account_id = ?", f.AccountID)
	if !f.AllClients {
		w.owner("client_id", f.ClientID)
	}
	return listPage(ctx, db, "domains", `SELECT `+domainColumns+` FROM monitored_domains`, w, "created_at", f.Cursor, f.Limit,
		func(s scanner) (store.MonitoredDomain, error) { return scanDomain(s) },
		func(d store.MonitoredDomain) (time.Time, string) { return d.CreatedAt, d.ID })
}
