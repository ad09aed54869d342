package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aivis/aivis/core/store"
)

const scanColumns = `id, account_id, client_id, domain_id, domain, trigger, status, attempts, lease_until, result, error,
	created_at, started_at, finished_at, holder, handbacks`

func scanScan(s scanner) (store.Scan, error) {
	var sc store.Scan
	var client, result, errText, holder sql.NullString
	var lease, created, started, finished sql.NullInt64
	err := s.Scan(&sc.ID, &sc.AccountID, &client, &sc.DomainID, &sc.Domain, &sc.Trigger, &sc.Status, &sc.Attempts, &lease,
		&result, &errText, &created, &started, &finished, &holder, &sc.HandBacks)
	sc.ClientID, sc.Error, sc.Holder = client.String, errText.String, holder.String
	if result.Valid {
		sc.Result = []byte(result.String)
	}
	sc.LeaseUntil, sc.CreatedAt, sc.StartedAt, sc.FinishedAt = fromNS(lease), fromNS(created), fromNS(started), fromNS(finished)
	return sc, err
}

func scanArgs(s store.Scan) []any {
	var result any
	if s.Result != nil {
		result = string(s.Result)
	}
	return []any{s.ID, s.AccountID, nullStr(s.ClientID), s.DomainID, s.Domain, s.Trigger, s.Status, s.Attempts, ns(s.LeaseUntil),
		result, nullStr(s.Error), stamp(s.CreatedAt), ns(s.StartedAt), ns(s.FinishedAt), nullStr(s.Holder), s.HandBacks}
}

func (t *txn) InsertScan(s store.Scan) error {
	if _, err := t.tx.Exec(`INSERT INTO scans (`+scanColumns+`) VALUES (`+placeholders(16)+`)`, scanArgs(s)...); err != nil {
		return fmt.Errorf("sqlite: insert scan: %w", conflict(err))
	}
	return nil
}

func (t *txn) UpdateScan(s store.Scan) error {
	a := scanArgs(s)
	res, err := t.tx.Exec(`UPDATE scans SET status = ?, lease_until = ?, result = ?, error = ?, started_at = ?, finished_at = ?,
		holder = ?, handbacks = ? WHERE id = ? AND status = 'running' AND attempts = ?`, a[6], a[8], a[9], a[10], a[12], a[13], a[14], a[15],
		s.ID, s.Attempts)
	if err != nil {
		return fmt.Errorf("sqlite: update scan: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := t.scan(s.AccountID, s.ID); err == nil {
			return fmt.Errorf("sqlite: scan %s is not running under claim %d: %w", s.ID, s.Attempts, store.ErrLost)
		}
		return fmt.Errorf("sqlite: scan %s: %w", s.ID, store.ErrNotFound)
	}
	return nil
}

func (t *txn) ActiveScan(domainID string) (store.Scan, error) {
	s, err := scanScan(t.tx.QueryRow(`SELECT `+scanColumns+` FROM scans WHERE domain_id = ? AND status IN ('queued', 'running')
		ORDER BY created_at LIMIT 1`, domainID))
	if err != nil {
		return s, fmt.Errorf("sqlite: active scan: %w", notFound(err))
	}
	return s, nil
}

func (t *txn) ClaimScan(holder string, now, leaseEnd time.Time) (store.Scan, error) {
	// The oldest queued scan, else the oldest running one whose lease ended.
	s, err := scanScan(t.tx.QueryRow(`SELECT ` + scanColumns + ` FROM scans WHERE status = 'queued' ORDER BY created_at LIMIT 1`))
	if errors.Is(err, sql.ErrNoRows) {
		s, err = scanScan(t.tx.QueryRow(`SELECT `+scanColumns+` FROM scans WHERE status = 'running' AND lease_until < ?
			ORDER BY created_at LIMIT 1`, bound(now)))
	}
	if err != nil {
		return s, fmt.Errorf("sqlite: claim scan: %w", notFound(err))
	}
	if s.StartedAt.IsZero() {
		s.StartedAt = now
	}
	res, err := t.tx.Exec(`UPDATE scans SET status = 'running', attempts = attempts + 1, holder = ?, lease_until = ?, started_at = ?
		WHERE id = ? AND attempts = ?`, holder, ns(leaseEnd), stamp(s.StartedAt), s.ID, s.Attempts)
	if err != nil {
		return s, fmt.Errorf("sqlite: claim scan: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s, fmt.Errorf("sqlite: claim scan %s: taken meanwhile: %w", s.ID, store.ErrNotFound)
	}
	s.Status, s.LeaseUntil, s.Holder = store.ScanRunning, leaseEnd, holder
	s.Attempts++
	return s, nil
}

// scan reads a scan in the transaction.
func (t *txn) scan(accountID, id string) (store.Scan, error) {
	return scanScan(t.tx.QueryRow(`SELECT `+scanColumns+` FROM scans WHERE id = ? AND account_id = ?`, id, accountID))
}

func (t *txn) DueDomains(now time.Time, limit int) ([]store.DueDomain, error) {
	rows, err := t.tx.Query(`SELECT a.tier, `+prefixed("d.", domainColumns)+` FROM monitored_domains d JOIN accounts a ON a.id = d.account_id
		WHERE d.next_scan_at <= ? ORDER BY d.next_scan_at LIMIT ?`, bound(now), limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: due domains: %w", err)
	}
	defer rows.Close()
	var out []store.DueDomain
	for rows.Next() {
		var tier string
		d, err := scanDomain(prefixScanner{rows, &tier})
		if err != nil {
			return nil, fmt.Errorf("sqlite: due domains: %w", err)
		}
		out = append(out, store.DueDomain{MonitoredDomain: d, Tier: tier})
	}
	return out, rows.Err()
}

// prefixScanner scans one leading column into first, the rest as given.
type prefixScanner struct {
	s     scanner
	first any
}

func (p prefixScanner) Scan(dest ...any) error { return p.s.Scan(append([]any{p.first}, dest...)...) }

// Scan reads a scan of an account.
func (db *DB) Scan(ctx context.Context, accountID, id string) (store.Scan, error) {
	s, err := scanScan(db.r.QueryRowContext(ctx, `SELECT `+scanColumns+` FROM scans WHERE account_id = ? AND id = ?`, accountID, id))
	if err != nil {
		return s, fmt.Errorf("sqlite: scan %s: %w", id, notFound(err))
	}
	return s, nil
}

// LatestScan reads the last completed scan of an owner's domain.
func (db *DB) LatestScan(ctx context.Context, accountID, clientID, domain string) (store.Scan, error) {
	return latestScan(db.r.QueryRowContext(ctx, latestScanQuery, accountID, domain, nullStr(clientID)), domain)
}

func (t *txn) LatestScan(accountID, clientID, domain string) (store.Scan, error) {
	return latestScan(t.tx.QueryRow(latestScanQuery, accountID, domain, nullStr(clientID)), domain)
}

// ListScans reads a page of one owner's domain's completed scans, the
// last finished first.
func (db *DB) ListScans(ctx context.Context, f store.ScanFilter) ([]store.Scan, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 20
	}
	q := `SELECT ` + scanColumns + ` FROM scans WHERE account_id = ? AND domain = ? AND client_id IS ? AND status = 'completed'`
	args := []any{f.AccountID, f.Domain, nullStr(f.ClientID)}
	if f.Cursor != "" {
		ts, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (finished_at, id) < (?, ?)`
		args = append(args, ts, id)
	}
	return queryPage(ctx, db.r, "scans", q+` ORDER BY finished_at DESC, id DESC LIMIT ?`, append(args, limit+1), limit, scanScan,
		func(s store.Scan) string { return pageCursor(s.FinishedAt, s.ID) })
}

func latestScan(row scanner, domain string) (store.Scan, error) {
	s, err := scanScan(row)
	if err != nil {
		return s, fmt.Errorf("sqlite: latest scan of %s: %w", domain, notFound(err))
	}
	return s, nil
}

// LatestScans finds, in one query, the last completed scan of each of an
// account's monitored domains, each of the domain's own owner.
func (db *DB) LatestScans(ctx context.Context, accountID string, domainIDs []string) (map[string]store.Scan, error) {
	found, err := byDomain(ctx, db.r, scanScan, latestScansQuery, accountID, domainIDs)
	if err != nil {
		return nil, fmt.Errorf("sqlite: latest scans: %w", err)
	}
	out := make(map[string]store.Scan, len(found))
	for id, ss := range found {
		out[id] = ss[0]
	}
	return out, nil
}

// latestScanQuery selects the last completed scan of an owner's domain
// (arguments: the account, the domain, the client or null), a search of
// the scans_completed index.
const latestScanQuery = `SELECT ` + scanColumns + ` FROM scans
	WHERE account_id = ? AND domain = ? AND client_id IS ? AND status = 'completed'
	ORDER BY finished_at DESC, id DESC LIMIT 1`

// latestScansQuery selects the last completed scan of each of an
// account's monitored domains (arguments: the account, the ids).
func latestScansQuery(ids int) string {
	return `SELECT ` + prefixed("s.", scanColumns) + `, d.id FROM monitored_domains d JOIN scans s ON s.id = (
			SELECT id FROM scans WHERE account_id = d.account_id AND domain = d.domain AND client_id IS d.client_id AND status = 'completed'
			ORDER BY finished_at DESC, id DESC LIMIT 1)
		WHERE d.account_id = ? AND d.id IN (` + placeholders(ids) + `)`
}

// prefixed qualifies each of a comma-separated column list with p.
func prefixed(p, columns string) string {
	fields := strings.Split(columns, ",")
	for i, f := range fields {
		fields[i] = p + strings.TrimSpace(f)
	}
	return strings.Join(fields, ", ")
}
