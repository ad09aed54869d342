package postgres

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/store"
)

// ClaimContentRequest takes the next request to process: a processing one
// whose lease ended before now, else the fair choice among the queued. The
// row is locked FOR UPDATE SKIP LOCKED, so that concurrent claims pass
// over the request another claim is taking instead of waiting for it, and
// leased in the same transaction; its attempts, one more, fence the
// claim's writes. Under the Update's SERIALIZABLE isolation, two claims
// that read the same queue and both commit are not possible either: one
// of them runs again.
func (t *txn) ClaimContentRequest(holder string, now, leaseEnd time.Time) (store.ContentRequest, error) {
	at, n := bound(now)
	id, err := t.claimID(claimExpired, at, n)
	if errors.Is(err, pgx.ErrNoRows) {
		id, err = t.claimID(claimQueued)
	}
	if err != nil {
		return store.ContentRequest{}, fmt.Errorf("postgres: claim content request: %w", notFound(err))
	}
	c, err := scanCR(t.tx.QueryRow(t.ctx, `UPDATE content_requests SET status = 'processing', holder = $2,
			lease_until = $3, lease_until_ns = $4, updated_at = $5, updated_at_ns = $6, attempts = attempts + 1,
			started_at = coalesce(started_at, $5), started_at_ns = coalesce(started_at_ns, $6)
		WHERE id = $1 RETURNING `+crColumns, id, holder, ts(leaseEnd), ns(leaseEnd), ts(now), ns(now)))
	if err != nil {
		return c, fmt.Errorf("postgres: claim content request: %w", conflict(err))
	}
	return c, nil
}

func (t *txn) claimID(q string, args ...any) (string, error) {
	var id string
	err := t.tx.QueryRow(t.ctx, q, args...).Scan(&id)
	return id, err
}

// The claim's queries. The fair choice is made among the owners with
// queued requests, the account first and then its client (an agency's
// clients share their account's turn): the one with the fewest requests
// processing, then the one whose last request started longest ago (never
// first), then the one whose oldest queued request is oldest; within it,
// its oldest queued request. Each owner's figures are index searches
// (migration 00001); the request is locked, not the owners, so the
// ranking joins back to it.
const (
	claimExpired = `SELECT id FROM content_requests WHERE status = 'processing' AND (lease_until, lease_until_ns) < ($1, $2)
		ORDER BY lease_until, lease_until_ns, id LIMIT 1 FOR UPDATE SKIP LOCKED`
	claimQueued = `WITH owners AS (
			SELECT account_id, client_id FROM content_requests WHERE status = 'queued' GROUP BY account_id, client_id
		), ranked AS (
			SELECT o.account_id, o.client_id,
				(SELECT count(*) FROM content_requests p WHERE p.account_id = o.account_id AND p.status = 'processing') AS account_busy,
				(SELECT ROW(p.started_at, p.started_at_ns) FROM content_requests p WHERE p.account_id = o.account_id
					AND p.started_at IS NOT NULL ORDER BY p.started_at DESC, p.started_at_ns DESC LIMIT 1) AS account_start,
				(SELECT ROW(q.created_at, q.created_at_ns, q.id) FROM content_requests q
					WHERE q.status = 'queued' AND q.account_id = o.account_id
					ORDER BY q.created_at, q.created_at_ns, q.id LIMIT 1) AS account_oldest,
				(SELECT count(*) FROM content_requests p WHERE p.account_id = o.account_id AND p.client_id = o.client_id
					AND p.status = 'processing') AS busy,
				(SELECT ROW(p.started_at, p.started_at_ns) FROM content_requests p WHERE p.account_id = o.account_id
					AND p.client_id = o.client_id AND p.started_at IS NOT NULL
					ORDER BY p.started_at DESC, p.started_at_ns DESC LIMIT 1) AS start,
				o.oldest
			FROM (SELECT w.account_id, w.client_id,
					(SELECT ROW(q.created_at, q.created_at_ns, q.id) FROM content_requests q
						WHERE q.status = 'queued' AND q.account_id = w.account_id AND q.client_id = w.client_id
						ORDER BY q.created_at, q.created_at_ns, q.id LIMIT 1) AS oldest
				FROM owners w) o
		)
		SELECT c.id FROM ranked r JOIN content_requests c ON c.account_id = r.account_id AND c.client_id = r.client_id
		WHERE c.status = 'queued'
		ORDER BY r.account_busy, r.account_start NULLS FIRST, r.account_oldest, r.account_id,
			r.busy, r.start NULLS FIRST, r.oldest, r.client_id, c.created_at, c.created_at_ns, c.id
		LIMIT 1 FOR UPDATE OF c SKIP LOCKED`
)

// RenewContentLease moves one claim's lease without rewriting the row (its
// content and work may weigh megabytes).
func (t *txn) RenewContentLease(id string, attempts int, leaseUntil time.Time) error {
	tag, err := t.tx.Exec(t.ctx, `UPDATE content_requests SET lease_until = $1, lease_until_ns = $2
		WHERE id = $3 AND status = 'processing' AND attempts = $4`, tsz(leaseUntil), nsz(leaseUntil), id, attempts)
	if err != nil {
		return fmt.Errorf("postgres: renew content lease: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: content request %s is not processing under attempt %d: %w", id, attempts, store.ErrLost)
	}
	return nil
}

// HandBackContentRequest ends a claim's lease at now and counts the
// hand-back (the claim's number stays taken: a worker of that claim still
// running somewhere must not find it valid again).
func (t *txn) HandBackContentRequest(id string, attempts int, now time.Time) error {
	tag, err := t.tx.Exec(t.ctx, `UPDATE content_requests SET lease_until = $1, lease_until_ns = $2, handbacks = handbacks + 1
		WHERE id = $3 AND status = 'processing' AND attempts = $4`, tsz(now), nsz(now), id, attempts)
	if err != nil {
		return fmt.Errorf("postgres: hand back content request: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: content request %s is not processing under attempt %d: %w", id, attempts, store.ErrLost)
	}
	return nil
}
