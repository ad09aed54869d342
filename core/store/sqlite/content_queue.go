package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/aivis/aivis/core/store"
)

// ClaimContentRequest takes the next request to process. The fair choice
// is made in two rounds, the account then its client (an agency's clients
// share their account's turn): the one with the fewest requests
// processing, then the one whose last request started longest ago (never
// first), then the one whose oldest queued request is oldest.
func (t *txn) ClaimContentRequest(holder string, now, leaseEnd time.Time) (store.ContentRequest, error) {
	c, err := scanCR(t.tx.QueryRow(`SELECT `+crColumns+` FROM content_requests `+claimExpired, bound(now)))
	if errors.Is(err, sql.ErrNoRows) {
		c, err = t.fairQueued()
	}
	if err != nil {
		return c, fmt.Errorf("sqlite: claim content request: %w", notFound(err))
	}
	c.Status, c.LeaseUntil, c.UpdatedAt, c.Holder = "processing", leaseEnd, now, holder
	c.Attempts++
	if c.StartedAt.IsZero() {
		c.StartedAt = now
	}
	return c, t.UpdateContentRequest(c, 0)
}

// The claim's queries (migration 0012 indexes each): a processing request
// whose lease ended; the account, then its client, to serve; its oldest
// queued request.
const (
	claimExpired = `WHERE status = 'processing' AND lease_until < ? ORDER BY lease_until, id LIMIT 1`
	claimAccount = `SELECT q.account_id FROM content_requests q WHERE q.status = 'queued'
		GROUP BY q.account_id
		ORDER BY (SELECT count(*) FROM content_requests p WHERE p.account_id = q.account_id AND p.status = 'processing'),
		         coalesce((SELECT max(started_at) FROM content_requests p WHERE p.account_id = q.account_id), 0),
		         min(q.created_at)
		LIMIT 1`
	claimClient = `SELECT q.client_id FROM content_requests q WHERE q.account_id = ?1 AND q.status = 'queued'
		GROUP BY q.client_id
		ORDER BY (SELECT count(*) FROM content_requests p WHERE p.account_id = ?1 AND p.client_id IS q.client_id AND p.status = 'processing'),
		         coalesce((SELECT max(started_at) FROM content_requests p WHERE p.account_id = ?1 AND p.client_id IS q.client_id), 0),
		         min(q.created_at)
		LIMIT 1`
	claimOldest = `WHERE status = 'queued' AND account_id = ? AND client_id IS ? ORDER BY created_at, id LIMIT 1`
)

func (t *txn) fairQueued() (store.ContentRequest, error) {
	var account string
	if err := t.tx.QueryRow(claimAccount).Scan(&account); err != nil {
		return store.ContentRequest{}, err
	}
	var client sql.NullString
	if err := t.tx.QueryRow(claimClient, account).Scan(&client); err != nil {
		return store.ContentRequest{}, err
	}
	return scanCR(t.tx.QueryRow(`SELECT `+crColumns+` FROM content_requests `+claimOldest, account, client))
}

// RenewContentLease moves one claim's lease without rewriting the row (its
// content and work may weigh megabytes).
func (t *txn) RenewContentLease(id string, attempts int, leaseUntil time.Time) error {
	res, err := t.tx.Exec(`UPDATE content_requests SET lease_until = ? WHERE id = ? AND status = 'processing' AND attempts = ?`,
		ns(leaseUntil), id, attempts)
	if err != nil {
		return fmt.Errorf("sqlite: renew content lease: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: content request %s is not processing under attempt %d: %w", id, attempts, store.ErrLost)
	}
	return nil
}

// HandBackContentRequest ends a claim's lease at now and counts the
// hand-back (the claim's number stays taken: a worker of that claim still
// running somewhere must not find it valid again).
func (t *txn) HandBackContentRequest(id string, attempts int, now time.Time) error {
	res, err := t.tx.Exec(`UPDATE content_requests SET lease_until = ?, handbacks = handbacks + 1
		WHERE id = ? AND status = 'processing' AND attempts = ?`, ns(now), id, attempts)
	if err != nil {
		return fmt.Errorf("sqlite: hand back content request: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: content request %s is not processing under attempt %d: %w", id, attempts, store.ErrLost)
	}
	return nil
}

// ContentRequestClaim reads a request's status and attempts only.
func (db *DB) ContentRequestClaim(ctx context.Context, accountID, id string) (string, int, error) {
	var status string
	var attempts int
	err := db.r.QueryRowContext(ctx, `SELECT status, attempts FROM content_requests WHERE id = ? AND account_id = ?`, id, accountID).
		Scan(&status, &attempts)
	if err != nil {
		return "", 0, fmt.Errorf("sqlite: content request %s: %w", id, notFound(err))
	}
	return status, attempts, nil
}
