package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
)

const deliveryColumns = `id, webhook_id, account_id, event_id, event, payload, status, attempts, step, next_attempt_at,
	last_attempt_at, last_status, last_error, created_at, updated_at`

func scanDelivery(s scanner) (store.Delivery, error) {
	var d store.Delivery
	var next, last, created, updated sql.NullInt64
	var status sql.NullInt64
	var lastErr sql.NullString
	err := s.Scan(&d.ID, &d.WebhookID, &d.AccountID, &d.EventID, &d.Event, &d.Payload, &d.Status, &d.Attempts, &d.Step, &next,
		&last, &status, &lastErr, &created, &updated)
	d.NextAttemptAt, d.LastAttemptAt, d.CreatedAt, d.UpdatedAt = fromNS(next), fromNS(last), fromNS(created), fromNS(updated)
	d.LastStatus, d.LastError = int(status.Int64), lastErr.String
	return d, err
}

func (t *txn) InsertDelivery(d store.Delivery) (bool, error) {
	// A webhook deleted since the fan-out matched it gets nothing more.
	res, err := t.tx.Exec(`INSERT INTO webhook_deliveries (`+deliveryColumns+`)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15
		WHERE NOT EXISTS (SELECT 1 FROM webhooks WHERE id = ?2 AND deleted_at IS NOT NULL)
		ON CONFLICT (webhook_id, event_id) DO NOTHING`,
		d.ID, d.WebhookID, d.AccountID, d.EventID, d.Event, d.Payload, d.Status, d.Attempts, d.Step, ns(d.NextAttemptAt),
		ns(d.LastAttemptAt), nullInt(d.LastStatus), nullStr(d.LastError), ns(d.CreatedAt), ns(d.UpdatedAt))
	if err != nil {
		return false, fmt.Errorf("sqlite: insert delivery: %w", conflict(err))
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

func (t *txn) AddAttempt(a store.Attempt) error {
	_, err := t.tx.Exec(`INSERT INTO webhook_attempts (delivery_id, n, at, status_code, latency_us, response_body, error, result)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, a.DeliveryID, a.N, a.At.UnixNano(), a.StatusCode, a.Latency.Microseconds(), a.ResponseBody, a.Error,
		a.Result)
	if err != nil {
		return fmt.Errorf("sqlite: add attempt: %w", conflict(err))
	}
	return nil
}

// leases are the embedded engine's delivery leases. They live in the
// memory of the process that serves the database: one process delivers
// from a SQLite file, and a lease ends with it, so after a crash every
// pending delivery is due again at once. (An engine shared by several
// processes keeps them in the database, e.g. PostgreSQL's FOR UPDATE SKIP
// LOCKED.)
// LeaseDeliveries leases, in memory, deliveries no claim holds and none
// released since written (their outcome may be newer than the caller's
// copy). It never waits for a claim's query: a claim leases what it read
// the same way, so whichever comes second finds the lease taken.
func (db *DB) LeaseDeliveries(_ context.Context, ids []string, written, leaseEnd time.Time) ([]string, error) {
	return db.leases.take(ids, -1, time.Now(), leaseEnd, written), nil
}

// ClaimWebhookDeliveries reads the webhook's oldest due deliveries on its
// own index, a page at a time, and leases the first limit of them that no
// one holds: those the webhook holds and those whose outcome is being
// recorded come first and are passed over. It reads at most maxPages pages;
// more reports that rows it did not read may remain.
func (db *DB) ClaimWebhookDeliveries(ctx context.Context, webhookID string, now, leaseEnd time.Time, limit, held int) (out []store.Delivery, more bool, err error) {
	const maxPages = 8
	page := max(limit+held, 64)
	after, afterRow := int64(math.MinInt64), int64(0)
	for range maxPages {
		read := time.Now() // before the query's snapshot
		rows, err := db.r.QueryContext(ctx, `SELECT rowid, `+deliveryColumns+` FROM webhook_deliveries INDEXED BY webhook_deliveries_due_by_webhook
			WHERE webhook_id = ?1 AND status = 'pending' AND next_attempt_at <= ?2
			AND (next_attempt_at > ?3 OR (next_attempt_at = ?3 AND rowid > ?4))
			ORDER BY next_attempt_at, rowid LIMIT ?5`,
			webhookID, now.UnixNano(), after, afterRow, page)
		if err != nil {
			return nil, false, fmt.Errorf("sqlite: claim deliveries of %s: %w", webhookID, err)
		}
		var ds []store.Delivery
		var ids []string
		for rows.Next() {
			d, err := scanDelivery(rowidScanner{rows, &afterRow})
			if err != nil {
				rows.Close()
				return nil, false, fmt.Errorf("sqlite: claim deliveries of %s: %w", webhookID, err)
			}
			after = d.NextAttemptAt.UnixNano()
			ds = append(ds, d)
			ids = append(ids, d.ID)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, false, err
		}
		taken := make(map[string]bool)
		for _, id := range db.leases.take(ids, limit-len(out), now, leaseEnd, read) {
			taken[id] = true
		}
		for _, d := range ds {
			if taken[d.ID] {
				out = append(out, d)
			}
		}
		if len(out) == limit {
			return out, true, nil
		}
		if len(ds) < page {
			return out, false, nil
		}
	}
	return out, true, nil
}

// rowidScanner scans a row whose first column is the rowid, into *rowid,
// and the rest as s would.
type rowidScanner struct {
	s     scanner
	rowid *int64
}

func (r rowidScanner) Scan(dest ...any) error {
	return r.s.Scan(append([]any{r.rowid}, dest...)...)
}

// ClaimDeliveries reads due deliveries on a reader and leases them in memory.
func (db *DB) ClaimDeliveries(ctx context.Context, now, leaseEnd time.Time, limit, perWebhook int, skip []string) ([]store.Delivery, map[string]store.Webhook, error) {
	db.claimMu.Lock() // one claim at a time
	defer db.claimMu.Unlock()
	read := time.Now() // before the held list and the query's snapshot
	skipJSON, err := json.Marshal(nonNil(skip))
	if err != nil {
		return nil, nil, err
	}
	heldJSON, err := json.Marshal(db.leases.held(now))
	if err != nil {
		return nil, nil, err
	}
	// The inner query walks the due index in order and stops after a bounded
	// window, so a claim costs the same with a long backlog; the outer one
	// caps each webhook's share of the window. Nothing is written.
	rows, err := db.r.QueryContext(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE id IN (SELECT id FROM (
			SELECT id, next_attempt_at, row_number() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at) AS rn FROM (
				SELECT d.id, d.webhook_id, d.next_attempt_at FROM webhook_deliveries d INDEXED BY webhook_deliveries_due
				WHERE d.status = 'pending' AND d.next_attempt_at <= ?1
				AND d.id NOT IN (SELECT value FROM json_each(?5))
				AND d.webhook_id NOT IN (SELECT value FROM json_each(?4))
				AND d.webhook_id IN (SELECT id FROM webhooks WHERE enabled = 1)
				ORDER BY d.next_attempt_at LIMIT ?2 * 4))
			WHERE rn <= ?3 ORDER BY next_attempt_at LIMIT ?2)`,
		now.UnixNano(), limit, perWebhook, string(skipJSON), string(heldJSON))
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: claim deliveries: %w", err)
	}
	defer rows.Close()
	var out []store.Delivery
	var ids []string
	hooks := make(map[string]store.Webhook)
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, nil, fmt.Errorf("sqlite: claim deliveries: %w", err)
		}
		out = append(out, d)
		ids = append(ids, d.ID)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	rows.Close()
	// The fan-out may have leased some since they were read, even attempted
	// them: keep the rest.
	free := make(map[string]bool, len(ids))
	for _, id := range db.leases.take(ids, -1, now, leaseEnd, read) {
		free[id] = true
	}
	out = slices.DeleteFunc(out, func(d store.Delivery) bool { return !free[d.ID] })
	for _, d := range out {
		hooks[d.WebhookID] = store.Webhook{}
	}
	for id := range hooks {
		w, err := db.scanWebhook(db.r.QueryRowContext(ctx, `SELECT `+webhookSelect+` FROM webhooks WHERE id = ?`, id))
		if err != nil {
			for _, d := range out {
				db.leases.release(d.ID)
			}
			return nil, nil, fmt.Errorf("sqlite: claim deliveries: webhook %s: %w", id, notFound(err))
		}
		hooks[id] = w
	}
	return out, hooks, nil
}

func (t *txn) RecordOutcome(id string, o store.DeliveryOutcome) error {
	t.released = append(t.released, id)
	res, err := t.tx.Exec(`UPDATE webhook_deliveries SET status = ?, attempts = ?, step = ?, next_attempt_at = ?,
		last_attempt_at = ?, last_status = ?, last_error = ?, updated_at = ? WHERE id = ?`,
		o.Status, o.Attempt.N, o.Step, ns(o.Next), o.Attempt.At.UnixNano(), nullInt(o.Attempt.StatusCode), nullStr(o.Attempt.Error),
		o.Attempt.At.UnixNano(), id)
	if err != nil {
		return fmt.Errorf("sqlite: record outcome: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // pruned while it was attempted: nothing to keep
	}
	return t.AddAttempt(o.Attempt)
}

func (t *txn) Redeliver(webhookID string, ids []string, since, until, now time.Time) (int, error) {
	q := `UPDATE webhook_deliveries SET status = 'pending', step = 0, next_attempt_at = ?1, updated_at = ?1
		WHERE webhook_id = ?2 AND status != 'pending'`
	args := []any{now.UnixNano(), webhookID}
	if ids != nil {
		if len(ids) == 0 {
			return 0, nil
		}
		q += ` AND id IN (` + placeholders(len(ids)) + `)`
		for _, id := range ids {
			args = append(args, id)
		}
	} else {
		q += ` AND status = 'failed' AND event_id >= ?3 AND event_id < ?4`
		args = append(args, events.IDFloor(since), events.IDFloor(until))
	}
	res, err := t.tx.Exec(q, args...)
	if err != nil {
		return 0, fmt.Errorf("sqlite: redeliver: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// NextDue reads when the next retry is due.
func (db *DB) NextDue(ctx context.Context, now time.Time) (time.Time, error) {
	var next sql.NullInt64
	err := db.r.QueryRowContext(ctx, `SELECT min(next_attempt_at) FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at > ?`,
		now.UnixNano()).Scan(&next)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: next due: %w", err)
	}
	return fromNS(next), nil
}

// Delivery reads one delivery of a webhook with its attempts, oldest first.
func (db *DB) Delivery(ctx context.Context, webhookID, id string) (store.Delivery, []store.Attempt, error) {
	d, err := scanDelivery(db.r.QueryRowContext(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE webhook_id = ? AND id = ?`,
		webhookID, id))
	if err != nil {
		return d, nil, fmt.Errorf("sqlite: delivery %s: %w", id, notFound(err))
	}
	as, err := db.attempts(ctx, []string{id})
	return d, as[id], err
}

func (db *DB) attempts(ctx context.Context, ids []string) (map[string][]store.Attempt, error) {
	out := make(map[string][]store.Attempt, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := db.r.QueryContext(ctx, `SELECT delivery_id, n, at, status_code, latency_us, response_body, error, result FROM webhook_attempts
		WHERE delivery_id IN (`+placeholders(len(ids))+`) ORDER BY delivery_id, n`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a store.Attempt
		var at, us int64
		if err := rows.Scan(&a.DeliveryID, &a.N, &at, &a.StatusCode, &us, &a.ResponseBody, &a.Error, &a.Result); err != nil {
			return nil, fmt.Errorf("sqlite: attempts: %w", err)
		}
		a.At, a.Latency = time.Unix(0, at).UTC(), time.Duration(us)*time.Microsecond
		out[a.DeliveryID] = append(out[a.DeliveryID], a)
	}
	return out, rows.Err()
}

// ListDeliveries returns one page of a webhook's deliveries, newest event
// first: along the unique index of (webhook_id, event_id), whose event ids
// begin with the event's time. The cursor is the last event id.
func (db *DB) ListDeliveries(ctx context.Context, f store.DeliveryFilter) ([]store.Delivery, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 20
	}
	q := `SELECT ` + deliveryColumns + ` FROM webhook_deliveries WHERE webhook_id = ?`
	args := []any{f.WebhookID}
	if f.Status != "" {
		q += ` AND status = ?`
		args = append(args, f.Status)
	}
	if f.Cursor != "" {
		after, err := base64.RawURLEncoding.DecodeString(f.Cursor)
		if err != nil || len(after) == 0 {
			return nil, "", store.ErrMalformed
		}
		q += ` AND event_id < ?`
		args = append(args, string(after))
	}
	return queryPage(ctx, db.r, "deliveries", q+` ORDER BY event_id DESC LIMIT ?`, append(args, limit+1), limit, scanDelivery,
		func(d store.Delivery) string { return base64.RawURLEncoding.EncodeToString([]byte(d.EventID)) })
}
