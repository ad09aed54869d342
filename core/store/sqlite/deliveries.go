package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
)

const deliveryColumns = `id, webhook_id, account_id, event_id, event, payload, status, attempts, step, next_attempt_at,
	last_attempt_at, last_status, last_error, created_at, updated_at, lease, lease_until, trace`

func scanDelivery(s scanner) (store.Delivery, error) {
	var d store.Delivery
	var next, last, created, updated, leaseUntil sql.NullInt64
	var status sql.NullInt64
	var lastErr, lease sql.NullString
	err := s.Scan(&d.ID, &d.WebhookID, &d.AccountID, &d.EventID, &d.Event, &d.Payload, &d.Status, &d.Attempts, &d.Step, &next,
		&last, &status, &lastErr, &created, &updated, &lease, &leaseUntil, &d.Trace)
	d.NextAttemptAt, d.LastAttemptAt, d.CreatedAt, d.UpdatedAt = fromNS(next), fromNS(last), fromNS(created), fromNS(updated)
	d.LastStatus, d.LastError, d.Lease, d.LeaseUntil = int(status.Int64), lastErr.String, lease.String, fromNS(leaseUntil)
	return d, err
}

func (t *txn) InsertDelivery(d store.Delivery) (bool, error) {
	// A webhook deleted since the fan-out matched it gets nothing more.
	res, err := t.tx.Exec(`INSERT INTO webhook_deliveries (`+deliveryColumns+`)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18
		WHERE NOT EXISTS (SELECT 1 FROM webhooks WHERE id = ?2 AND deleted_at IS NOT NULL)
		ON CONFLICT (webhook_id, event_id) DO NOTHING`,
		d.ID, d.WebhookID, d.AccountID, d.EventID, d.Event, d.Payload, d.Status, d.Attempts, d.Step, ns(d.NextAttemptAt),
		ns(d.LastAttemptAt), nullInt(d.LastStatus), nullStr(d.LastError), stamp(d.CreatedAt), stamp(d.UpdatedAt),
		nullStr(d.Lease), ns(d.LeaseUntil), d.Trace)
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
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, a.DeliveryID, a.N, stamp(a.At), a.StatusCode, a.Latency.Microseconds(), anyBytes(a.ResponseBody), a.Error,
		a.Result)
	if err != nil {
		return fmt.Errorf("sqlite: add attempt: %w", conflict(err))
	}
	return nil
}

// A claim is one write (an UPDATE that returns the rows it leased) run by
// the writer, which every process's writes to the file take in turn: two
// claims, in one process or in several, never lease one delivery. The
// lease's end is in the row, so a process that dies leaves its deliveries
// to the claims of another once their leases end.

// ClaimWebhookDeliveries leases the webhook's oldest due deliveries that no
// lease holds, along the webhook's due index.
func (db *DB) ClaimWebhookDeliveries(ctx context.Context, lease, webhookID string, now, leaseEnd time.Time, limit int) ([]store.Delivery, bool, error) {
	ds, err := db.claim(ctx, `UPDATE webhook_deliveries SET lease = ?1, lease_until = ?2 WHERE id IN (
			SELECT id FROM webhook_deliveries INDEXED BY webhook_deliveries_due_by_webhook
			WHERE webhook_id = ?3 AND status = 'pending' AND next_attempt_at <= ?4 AND (lease_until IS NULL OR lease_until <= ?4)
			ORDER BY next_attempt_at LIMIT ?5)
		RETURNING `+deliveryColumns, lease, ns(leaseEnd), webhookID, bound(now), limit)
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: claim deliveries of %s: %w", webhookID, err)
	}
	return ds, len(ds) == limit, nil
}

// ClaimDeliveries leases the due deliveries of enabled webhooks that no
// lease holds: the inner query walks the due index in order and stops
// after a bounded window, so a claim costs the same with a long backlog;
// the outer one caps each webhook's share of the window.
func (db *DB) ClaimDeliveries(ctx context.Context, lease string, now, leaseEnd time.Time, limit, perWebhook int, skip []string) ([]store.Delivery, map[string]store.Webhook, error) {
	skipJSON, err := json.Marshal(nonNil(skip))
	if err != nil {
		return nil, nil, err
	}
	// Most claims find nothing due: a read says so without taking the
	// write lock.
	var due bool
	err = db.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_deliveries d INDEXED BY webhook_deliveries_due
		WHERE d.status = 'pending' AND d.next_attempt_at <= ?1 AND (d.lease_until IS NULL OR d.lease_until <= ?1)
		AND d.webhook_id IN (SELECT id FROM webhooks WHERE enabled = 1))`, bound(now)).Scan(&due)
	if err != nil || !due {
		return nil, nil, err
	}
	out, err := db.claim(ctx, `UPDATE webhook_deliveries SET lease = ?1, lease_until = ?2 WHERE id IN (SELECT id FROM (
			SELECT id, next_attempt_at, row_number() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at) AS rn FROM (
				SELECT d.id, d.webhook_id, d.next_attempt_at FROM webhook_deliveries d INDEXED BY webhook_deliveries_due
				WHERE d.status = 'pending' AND d.next_attempt_at <= ?3 AND (d.lease_until IS NULL OR d.lease_until <= ?3)
				AND d.webhook_id NOT IN (SELECT value FROM json_each(?6))
				AND d.webhook_id IN (SELECT id FROM webhooks WHERE enabled = 1)
				ORDER BY d.next_attempt_at LIMIT ?4 * 4))
			WHERE rn <= ?5 ORDER BY next_attempt_at LIMIT ?4)
		RETURNING `+deliveryColumns, lease, ns(leaseEnd), bound(now), limit, perWebhook, string(skipJSON))
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: claim deliveries: %w", err)
	}
	hooks := make(map[string]store.Webhook)
	for _, d := range out {
		if _, ok := hooks[d.WebhookID]; ok {
			continue
		}
		w, err := db.scanWebhook(db.r.QueryRowContext(ctx, `SELECT `+webhookSelect+` FROM webhooks WHERE id = ?`, d.WebhookID))
		if err != nil {
			// Leased and not attempted: their leases end, and a later
			// claim takes them.
			return nil, nil, fmt.Errorf("sqlite: claim deliveries: webhook %s: %w", d.WebhookID, notFound(err))
		}
		hooks[d.WebhookID] = w
	}
	return out, hooks, nil
}

// claim runs a statement that leases deliveries and returns them, in one
// write of its own, oldest due first.
func (db *DB) claim(ctx context.Context, query string, args ...any) ([]store.Delivery, error) {
	var out []store.Delivery
	err := db.Update(ctx, func(tx store.Tx) error {
		out = out[:0]
		rows, err := tx.(*txn).tx.QueryWrite(query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	slices.SortFunc(out, func(a, b store.Delivery) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), cmp.Compare(a.ID, b.ID))
	})
	return out, err
}

// RenewLeases moves the end of the leases still held, in one write.
func (db *DB) RenewLeases(ctx context.Context, ds []store.Delivery, until time.Time) ([]string, error) {
	held := make([][2]string, len(ds))
	for i, d := range ds {
		held[i] = [2]string{d.ID, d.Lease}
	}
	j, err := json.Marshal(held)
	if err != nil {
		return nil, err
	}
	var ids []string
	err = db.Update(ctx, func(tx store.Tx) error {
		ids = ids[:0]
		rows, err := tx.(*txn).tx.QueryWrite(`UPDATE webhook_deliveries SET lease_until = ?1
			WHERE (id, lease) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?2)) RETURNING id`, ns(until), string(j))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: renew delivery leases: %w", err)
	}
	return ids, nil
}

func (t *txn) RecordOutcome(id, lease string, o store.DeliveryOutcome) error {
	res, err := t.tx.Exec(`UPDATE webhook_deliveries SET status = ?, attempts = ?, step = ?, next_attempt_at = ?,
		last_attempt_at = ?, last_status = ?, last_error = ?, updated_at = ?, lease = NULL, lease_until = NULL WHERE id = ? AND lease IS ?`,
		o.Status, o.Attempt.N, o.Step, ns(o.Next), stamp(o.Attempt.At), nullInt(o.Attempt.StatusCode), nullStr(o.Attempt.Error),
		stamp(o.Attempt.At), id, nullStr(lease))
	if err != nil {
		return fmt.Errorf("sqlite: record outcome: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var exists bool
		if err := t.tx.QueryRow(`SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = ?)`, id).Scan(&exists); err != nil {
			return fmt.Errorf("sqlite: record outcome: %w", err)
		}
		if exists {
			return fmt.Errorf("sqlite: outcome of delivery %s: %w", id, store.ErrLost)
		}
		return nil // pruned while it was attempted: nothing to keep
	}
	return t.AddAttempt(o.Attempt)
}

// InsertDeliveries and RecordOutcomes write one at a time: in process, a
// statement costs no round trip.
func (t *txn) InsertDeliveries(ds []store.Delivery) ([]bool, error) {
	added := make([]bool, len(ds))
	for i, d := range ds {
		ok, err := t.InsertDelivery(d)
		if err != nil && !errors.Is(err, store.ErrConflict) {
			return nil, err
		}
		added[i] = ok
	}
	return added, nil
}

func (t *txn) RecordOutcomes(os []store.HeldOutcome) ([]bool, error) {
	lost := make([]bool, len(os))
	for i, o := range os {
		err := t.RecordOutcome(o.DeliveryID, o.Lease, o.DeliveryOutcome)
		if errors.Is(err, store.ErrLost) {
			lost[i] = true
		} else if err != nil {
			return nil, err
		}
	}
	return lost, nil
}

func (t *txn) Redeliver(webhookID string, ids []string, since, until, now time.Time) (int, error) {
	q := `UPDATE webhook_deliveries SET status = 'pending', step = 0, next_attempt_at = ?1, updated_at = ?1
		WHERE webhook_id = ?2 AND status != 'pending'`
	args := []any{stamp(now), webhookID}
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
		bound(now)).Scan(&next)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: next due: %w", err)
	}
	return fromNS(next), nil
}

// DeliveryBacklog counts each webhook's pending deliveries along its due
// index (which holds what the count and the minimum read), then adds up
// those of the enabled ones by kind.
func (db *DB) DeliveryBacklog(ctx context.Context) (webhooks, connections store.Backlog, err error) {
	rows, err := db.r.QueryContext(ctx, `SELECT w.connector IS NOT NULL, sum(p.n), min(p.first) FROM (
			SELECT webhook_id, count(*) AS n, min(next_attempt_at) AS first
			FROM webhook_deliveries INDEXED BY webhook_deliveries_due_by_webhook WHERE status = 'pending' GROUP BY webhook_id) p
		JOIN webhooks w ON w.id = p.webhook_id WHERE w.enabled = 1 GROUP BY 1`)
	if err != nil {
		return webhooks, connections, fmt.Errorf("sqlite: delivery backlog: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var connection bool
		var b store.Backlog
		var first sql.NullInt64
		if err := rows.Scan(&connection, &b.Pending, &first); err != nil {
			return webhooks, connections, fmt.Errorf("sqlite: delivery backlog: %w", err)
		}
		b.FirstDue = fromNS(first).Truncate(time.Microsecond)
		if connection {
			connections = b
		} else {
			webhooks = b
		}
	}
	if err := rows.Err(); err != nil {
		return webhooks, connections, fmt.Errorf("sqlite: delivery backlog: %w", err)
	}
	return webhooks, connections, nil
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
		after, err := store.DeliveryAfter(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND event_id < ?`
		args = append(args, after)
	}
	return queryPage(ctx, db.r, "deliveries", q+` ORDER BY event_id DESC LIMIT ?`, append(args, limit+1), limit, scanDelivery,
		func(d store.Delivery) string { return store.DeliveryCursor(d.EventID) })
}
