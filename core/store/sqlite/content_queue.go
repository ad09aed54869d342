package sqlite

import (
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
func (t *txn) ClaimContentRequest(now, leaseEnd time.Time) (store.ContentRequest, error) {
	c, err := scanCR(t.tx.QueryRow(`SELECT `+crColumns+` FROM content_requests
		WHERE status = 'processing' AND lease_until < ? ORDER BY lease_until, id LIMIT 1`, now.UnixNano()))
	if errors.Is(err, sql.ErrNoRows) {
		c, err = t.fairQueued()
	}
	if err != nil {
		return c, fmt.Errorf("sqlite: claim content request: %w", notFound(err))
	}
	c.Status, c.LeaseUntil, c.UpdatedAt = "processing", leaseEnd, now
	c.Attempts++
	if c.StartedAt.IsZero() {
		c.StartedAt = now
	}
	return c, t.UpdateContentRequest(c)
}

func (t *txn) fairQueued() (store.ContentRequest, error) {
	var account string
	err := t.tx.QueryRow(`SELECT q.account_id FROM content_requests q WHERE q.status = 'queued'
		GROUP BY q.account_id
		ORDER BY (SELECT count(*) FROM content_requests p WHERE p.account_id = q.account_id AND p.status = 'processing'),
		         coalesce((SELECT max(started_at) FROM content_requests p WHERE p.account_id = q.account_id), 0),
		         min(q.created_at)
		LIMIT 1`).Scan(&account)
	if err != nil {
		return store.ContentRequest{}, err
	}
	var client sql.NullString
	err = t.tx.QueryRow(`SELECT q.client_id FROM content_requests q WHERE q.account_id = ?1 AND q.status = 'queued'
		GROUP BY q.client_id
		ORDER BY (SELECT count(*) FROM content_requests p WHERE p.account_id = ?1 AND p.client_id IS q.client_id AND p.status = 'processing'),
		         coalesce((SELECT max(started_at) FROM content_requests p WHERE p.account_id = ?1 AND p.client_id IS q.client_id), 0),
		         min(q.created_at)
		LIMIT 1`, account).Scan(&client)
	if err != nil {
		return store.ContentRequest{}, err
	}
	return scanCR(t.tx.QueryRow(`SELECT `+crColumns+` FROM content_requests
		WHERE status = 'queued' AND account_id = ? AND client_id IS ? ORDER BY created_at, id LIMIT 1`, account, client))
}
