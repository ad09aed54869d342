package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aivis/aivis/core/store"
)

// The lists are JSON arrays of strings; the prompts' texts and intents
// two of them.
const domainColumns = `id, account_id, client_id, domain, brands, aliases, competitors, topics, prompts, prompt_intents, markets,
	next_scan_at, last_scan_at, created_at, updated_at`

func scanDomain(s scanner) (store.MonitoredDomain, error) {
	var d store.MonitoredDomain
	var client sql.NullString
	var lists [7]string
	var prompts, intents []string
	var next, last, created, updated sql.NullInt64
	err := s.Scan(&d.ID, &d.AccountID, &client, &d.Domain, &lists[0], &lists[1], &lists[2], &lists[3], &lists[4], &lists[5],
		&lists[6], &next, &last, &created, &updated)
	if err != nil {
		return d, err
	}
	d.ClientID = client.String
	for i, dst := range []*[]string{&d.Brands, &d.Aliases, &d.Competitors, &d.Topics, &prompts, &intents, &d.Markets} {
		if err := json.Unmarshal([]byte(lists[i]), dst); err != nil {
			return d, fmt.Errorf("domain %s: %w", d.ID, err)
		}
	}
	if d.Prompts, err = store.JoinPrompts(prompts, intents); err != nil {
		return d, fmt.Errorf("domain %s: %w", d.ID, err)
	}
	d.NextScanAt, d.LastScanAt, d.CreatedAt, d.UpdatedAt = fromNS(next), fromNS(last), fromNS(created), fromNS(updated)
	return d, nil
}

func domainArgs(d store.MonitoredDomain) ([]any, error) {
	args := []any{d.ID, d.AccountID, nullStr(d.ClientID), d.Domain}
	prompts, intents := store.SplitPrompts(d.Prompts)
	for _, l := range [][]string{d.Brands, d.Aliases, d.Competitors, d.Topics, prompts, intents, d.Markets} {
		b, err := listJSON(l)
		if err != nil {
			return nil, err
		}
		args = append(args, b)
	}
	return append(args, ns(d.NextScanAt), ns(d.LastScanAt), stamp(d.CreatedAt), stamp(d.UpdatedAt)), nil
}

func (t *txn) InsertDomain(d store.MonitoredDomain) error {
	args, err := domainArgs(d)
	if err != nil {
		return err
	}
	if _, err := t.tx.Exec(`INSERT INTO monitored_domains (`+domainColumns+`) VALUES (`+placeholders(len(args))+`)`, args...); err != nil {
		return fmt.Errorf("sqlite: insert domain: %w", conflict(err))
	}
	return nil
}

func (t *txn) MonitoredDomain(accountID, id string) (store.MonitoredDomain, error) {
	d, err := scanDomain(t.tx.QueryRow(`SELECT `+domainColumns+` FROM monitored_domains WHERE account_id = ? AND id = ?`, accountID, id))
	if err != nil {
		return d, fmt.Errorf("sqlite: domain %s: %w", id, notFound(err))
	}
	return d, nil
}

func (t *txn) UpdateDomain(d store.MonitoredDomain) error {
	args, err := domainArgs(d)
	if err != nil {
		return err
	}
	// brands .. markets, next and last scan, updated_at; then the key.
	set := append(args[4:13:13], args[14], d.ID, d.AccountID)
	res, err := t.tx.Exec(`UPDATE monitored_domains SET brands = ?, aliases = ?, competitors = ?, topics = ?, prompts = ?,
		prompt_intents = ?, markets = ?, next_scan_at = ?, last_scan_at = ?, updated_at = ? WHERE id = ? AND account_id = ?`, set...)
	if err != nil {
		return fmt.Errorf("sqlite: update domain: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: domain %s: %w", d.ID, store.ErrNotFound)
	}
	return nil
}

func (t *txn) DeleteDomain(accountID, id string) error {
	res, err := t.tx.Exec(`DELETE FROM monitored_domains WHERE account_id = ? AND id = ?`, accountID, id)
	if err != nil {
		return fmt.Errorf("sqlite: delete domain: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: domain %s: %w", id, store.ErrNotFound)
	}
	return nil
}

func (t *txn) CountDomains(accountID string) (int, error) {
	var n int
	if err := t.tx.QueryRow(`SELECT count(*) FROM monitored_domains WHERE account_id = ?`, accountID).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count domains: %w", err)
	}
	return n, nil
}

// MonitoredDomain reads a monitored domain of an account.
func (db *DB) MonitoredDomain(ctx context.Context, accountID, id string) (store.MonitoredDomain, error) {
	d, err := scanDomain(db.r.QueryRowContext(ctx, `SELECT `+domainColumns+` FROM monitored_domains WHERE account_id = ? AND id = ?`,
		accountID, id))
	if err != nil {
		return d, fmt.Errorf("sqlite: domain %s: %w", id, notFound(err))
	}
	return d, nil
}

// ListDomains returns one page of an owner's monitored domains, newest first.
func (db *DB) ListDomains(ctx context.Context, f store.DomainFilter) ([]store.MonitoredDomain, string, error) {
	q := `SELECT ` + domainColumns + ` FROM monitored_domains WHERE account_id = ?`
	args := []any{f.AccountID}
	if !f.AllClients {
		q += ` AND client_id IS ?`
		args = append(args, nullStr(f.ClientID))
	}
	return listPage(ctx, db.r, "domains", q, args, f.Cursor, f.Limit, scanDomain,
		func(d store.MonitoredDomain) (time.Time, string) { return d.CreatedAt, d.ID })
}
