package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/store"
)

// Scans. One active scan per domain is a unique partial index (ErrConflict,
// the transaction left usable). A claim takes the row FOR UPDATE SKIP
// LOCKED and leases it in the same statement; the claim's number
// (attempts) fences UpdateScan.

const scanColumns = `id, account_id, client_id, domain_id, domain, trigger, status, attempts, holder, lease_until, lease_until_ns,
	result, error, created_at, created_at_ns, started_at, started_at_ns, finished_at, finished_at_ns, handbacks`

func scanScan(s scanner, extra ...any) (store.Scan, error) {
	var sc store.Scan
	var client, holder, errText *string
	var lease, created, started, finished tcol
	err := s.Scan(append([]any{&sc.ID, &sc.AccountID, &client, &sc.DomainID, &sc.Domain, &sc.Trigger, &sc.Status, &sc.Attempts, &holder,
		&lease.t, &lease.ns, &sc.Result, &errText, &created.t, &created.ns, &started.t, &started.ns, &finished.t, &finished.ns, &sc.HandBacks},
		extra...)...)
	sc.ClientID, sc.Holder, sc.Error = str(client), str(holder), str(errText)
	sc.LeaseUntil, sc.CreatedAt, sc.StartedAt, sc.FinishedAt = lease.time(), created.time(), started.time(), finished.time()
	return sc, err
}

func (t *txn) InsertScan(s store.Scan) error {
	result := []byte(s.Result)
	tag, err := t.tx.Exec(t.ctx, `INSERT INTO scans (`+scanColumns+`) VALUES (`+params(1, 20)+`) ON CONFLICT DO NOTHING`,
		s.ID, s.AccountID, null(s.ClientID), s.DomainID, s.Domain, s.Trigger, s.Status, s.Attempts, null(s.Holder),
		tsz(s.LeaseUntil), nsz(s.LeaseUntil), result, null(s.Error), ts(s.CreatedAt), ns(s.CreatedAt),
		tsz(s.StartedAt), nsz(s.StartedAt), tsz(s.FinishedAt), nsz(s.FinishedAt), s.HandBacks)
	if err != nil {
		return fmt.Errorf("postgres: insert scan: %w", conflict(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: scan %s, or an active scan of domain %s, exists: %w", s.ID, s.DomainID, store.ErrConflict)
	}
	return nil
}

// UpdateScan writes a running scan as the claim that made s.Attempts.
func (t *txn) UpdateScan(s store.Scan) error {
	tag, err := t.tx.Exec(t.ctx, `UPDATE scans SET status = $3, holder = $4, lease_until = $5, lease_until_ns = $6, result = $7,
		error = $8, started_at = $9, started_at_ns = $10, finished_at = $11, finished_at_ns = $12, handbacks = $13
		WHERE id = $1 AND status = 'running' AND attempts = $2`, s.ID, s.Attempts, s.Status, null(s.Holder),
		tsz(s.LeaseUntil), nsz(s.LeaseUntil), []byte(s.Result), null(s.Error), tsz(s.StartedAt), nsz(s.StartedAt),
		tsz(s.FinishedAt), nsz(s.FinishedAt), s.HandBacks)
	if err != nil {
		return fmt.Errorf("postgres: update scan: %w", conflict(err))
	}
	if tag.RowsAffected() == 0 {
		if _, err := getScan(t.ctx, t.tx, s.AccountID, s.ID); err == nil {
			return fmt.Errorf("postgres: scan %s is not running under claim %d: %w", s.ID, s.Attempts, store.ErrLost)
		}
		return fmt.Errorf("postgres: scan %s: %w", s.ID, store.ErrNotFound)
	}
	return nil
}

func (t *txn) ActiveScan(domainID string) (store.Scan, error) {
	s, err := scanScan(t.tx.QueryRow(t.ctx, `SELECT `+scanColumns+` FROM scans WHERE domain_id = $1 AND status IN ('queued', 'running')`,
		domainID))
	if err != nil {
		return s, fmt.Errorf("postgres: active scan: %w", notFound(err))
	}
	return s, nil
}

// ClaimScan takes the oldest queued scan, else the running one whose lease
// ended longest ago, passing over those another claim holds.
func (t *txn) ClaimScan(holder string, now, leaseEnd time.Time) (store.Scan, error) {
	args := []any{holder, ts(leaseEnd), ns(leaseEnd), ts(now), ns(now)}
	s, err := scanScan(t.tx.QueryRow(t.ctx, fmt.Sprintf(claimScan, claimQueuedScan), args...))
	if errors.Is(err, pgx.ErrNoRows) {
		at, n := bound(now)
		s, err = scanScan(t.tx.QueryRow(t.ctx, fmt.Sprintf(claimScan, claimExpiredScan), append(args, at, n)...))
	}
	if err != nil {
		return s, fmt.Errorf("postgres: claim scan: %w", notFound(err))
	}
	return s, nil
}

// A scan's claim: the UPDATE that leases the scan the query in it finds.
const (
	claimScan = `UPDATE scans SET status = 'running', attempts = attempts + 1, holder = $1, lease_until = $2, lease_until_ns = $3,
			started_at = coalesce(started_at, $4), started_at_ns = coalesce(started_at_ns, $5)
		WHERE id = (%s) RETURNING ` + scanColumns
	claimQueuedScan = `SELECT id FROM scans WHERE status = 'queued'
		ORDER BY created_at, created_at_ns, id LIMIT 1 FOR UPDATE SKIP LOCKED`
	claimExpiredScan = `SELECT id FROM scans WHERE status = 'running' AND (lease_until, lease_until_ns) < ($6, $7)
		ORDER BY lease_until, lease_until_ns, created_at, created_at_ns, id LIMIT 1 FOR UPDATE SKIP LOCKED`
)

func getScan(ctx context.Context, q querier, accountID, id string) (store.Scan, error) {
	return scanScan(q.QueryRow(ctx, `SELECT `+scanColumns+` FROM scans WHERE account_id = $1 AND id = $2`, accountID, id))
}

// DueDomains lists the domains whose scheduled scan is due, soonest first.
func (t *txn) DueDomains(now time.Time, limit int) ([]store.DueDomain, error) {
	at, n := bound(now)
	out, err := collect(t.ctx, t.tx, func(s scanner) (store.DueDomain, error) {
		var d store.DueDomain
		var err error
		d.MonitoredDomain, err = scanDomain(s, &d.Tier)
		return d, err
	}, `SELECT a.tier, `+prefixed("d.", domainColumns)+` FROM monitored_domains d JOIN accounts a ON a.id = d.account_id
		WHERE (d.next_scan_at, d.next_scan_at_ns) <= ($1, $2) ORDER BY d.next_scan_at, d.next_scan_at_ns, d.id LIMIT $3`, at, n, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: due domains: %w", err)
	}
	return out, nil
}

// Scan reads a scan of an account.
func (db *DB) Scan(ctx context.Context, accountID, id string) (store.Scan, error) {
	s, err := getScan(ctx, db.pool, accountID, id)
	if err != nil {
		return s, fmt.Errorf("postgres: scan %s: %w", id, notFound(err))
	}
	return s, nil
}

// LatestScan reads the last completed scan of an owner's domain.
func (db *DB) LatestScan(ctx context.Context, accountID, clientID, domain string) (store.Scan, error) {
	return latestScan(ctx, db.pool, accountID, clientID, domain)
}

func (t *txn) LatestScan(accountID, clientID, domain string) (store.Scan, error) {
	return latestScan(t.ctx, t.tx, accountID, clientID, domain)
}

// ListScans reads a page of one owner's domain's completed scans, the
// last finished first.
func (db *DB) ListScans(ctx context.Context, f store.ScanFilter) ([]store.Scan, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 20
	}
	var w where
	w.and("account_id = ? AND domain = ? AND status = 'completed'", f.AccountID, f.Domain)
	w.owner("client_id", f.ClientID)
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		t, n := bound(at)
		w.and("(finished_at, finished_at_ns, id) < (?, ?, ?)", t, n, id)
	}
	return queryPage(ctx, db.pool, "scans", `SELECT `+scanColumns+` FROM scans WHERE `+w.String()+
		fmt.Sprintf(` ORDER BY finished_at DESC, finished_at_ns DESC, id DESC LIMIT %d`, limit+1), w.args, limit,
		func(s scanner) (store.Scan, error) { return scanScan(s) },
		func(s store.Scan) string { return pageCursor(s.FinishedAt, s.ID) })
}

func latestScan(ctx context.Context, q querier, accountID, clientID, domain string) (store.Scan, error) {
	var w where
	w.and("account_id = ? AND domain = ? AND status = 'completed'", accountID, domain)
	w.owner("client_id", clientID)
	s, err := scanScan(q.QueryRow(ctx, `SELECT `+scanColumns+` FROM scans WHERE `+w.String()+`
		ORDER BY finished_at DESC NULLS LAST, finished_at_ns DESC NULLS LAST, id DESC LIMIT 1`, w.args...))
	if err != nil {
		return s, fmt.Errorf("postgres: latest scan of %s: %w", domain, notFound(err))
	}
	return s, nil
}

// LatestScans finds, in one query, the last completed scan of each of an
// account's monitored domains, each of the domain's own owner.
func (db *DB) LatestScans(ctx context.Context, accountID string, domainIDs []string) (map[string]store.Scan, error) {
	found, err := byDomain(ctx, db.pool, scanScan, `SELECT s.*, d.id FROM monitored_domains d CROSS JOIN LATERAL (
			SELECT `+scanColumns+` FROM scans
			WHERE account_id = d.account_id AND client_id IS NOT DISTINCT FROM d.client_id AND domain = d.domain AND status = 'completed'
			ORDER BY finished_at DESC NULLS LAST, finished_at_ns DESC NULLS LAST, id DESC LIMIT 1) s
		WHERE d.account_id = $1 AND d.id = ANY($2)`, accountID, domainIDs)
	if err != nil {
		return nil, fmt.Errorf("postgres: latest scans: %w", err)
	}
	out := make(map[string]store.Scan, len(found))
	for id, ss := range found {
		out[id] = ss[0]
	}
	return out, nil
}
