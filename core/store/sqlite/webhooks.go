package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	bus "github.com/aivis/aivis/core/bus/sqlite"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
)

// SetSecrets gives the store the master key that seals the secrets it
// keeps (webhook signing secrets); without it, they cannot be written.
func (db *DB) SetSecrets(b *secrets.Box) { db.box = b }

func (db *DB) seal(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	if db.box == nil {
		return "", errors.New("sqlite: no master key to seal a secret with")
	}
	return db.box.Seal(s), nil
}

func (db *DB) open(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	if db.box == nil {
		return "", errors.New("sqlite: no master key to open a secret with")
	}
	return db.box.Open(s)
}

// Publish writes messages to the bus's table in this transaction; Update
// wakes this process's subscribers once it commits.
func (t *txn) Publish(topic string, msgs ...*message.Message) error {
	if err := bus.PublishTx(bg, t.tx, topic, msgs...); err != nil {
		return fmt.Errorf("sqlite: publish: %w", err)
	}
	t.topics = append(t.topics, topic)
	return nil
}

// webhookColumns are those written; webhookSelect, those read: a webhook
// is marked deleted only by DeleteWebhook.
const (
	webhookColumns = `id, account_id, client_id, domain, url, events, min_score_change, enabled, disabled_reason, disabled_at,
	secret, prev_secret, prev_secret_end, failing_since, failures, last_success_at, created_at, updated_at,
	connector, name, domains, settings, public_settings, secret_fields, subscription`
	webhookSelect = webhookColumns + `, deleted_at`
)

func (db *DB) scanWebhook(s scanner) (store.Webhook, error) {
	var w store.Webhook
	var client, reason, prev, connector sql.NullString
	var events, doms, settings, public, secretFields string
	var enabled, subscription int
	var disabledAt, prevEnd, failing, success, created, updated, deleted sql.NullInt64
	err := s.Scan(&w.ID, &w.AccountID, &client, &w.Domain, &w.URL, &events, &w.MinScoreChange, &enabled, &reason, &disabledAt,
		&w.Secret, &prev, &prevEnd, &failing, &w.Failures, &success, &created, &updated,
		&connector, &w.Name, &doms, &settings, &public, &secretFields, &subscription, &deleted)
	if err != nil {
		return w, err
	}
	w.Connector, w.Domains, w.SecretFields, w.Subscription = connector.String, strings.Fields(doms), strings.Fields(secretFields), subscription == 1
	if public != "" {
		w.PublicSettings = json.RawMessage(public)
	}
	if settings, err = db.open(settings); err != nil {
		return w, err
	}
	if settings != "" {
		w.Settings = json.RawMessage(settings)
	}
	w.ClientID, w.DisabledReason, w.PrevSecret = client.String, reason.String, prev.String
	w.Events = strings.Fields(events)
	w.Enabled = enabled == 1
	w.DisabledAt, w.PrevSecretEnd, w.FailingSince = fromNS(disabledAt), fromNS(prevEnd), fromNS(failing)
	w.LastSuccessAt, w.CreatedAt, w.UpdatedAt, w.DeletedAt = fromNS(success), fromNS(created), fromNS(updated), fromNS(deleted)
	if w.Secret, err = db.open(w.Secret); err != nil {
		return w, err
	}
	w.PrevSecret, err = db.open(w.PrevSecret)
	return w, err
}

func (db *DB) webhookArgs(w store.Webhook) ([]any, error) {
	var err error
	if w.Secret, err = db.seal(w.Secret); err != nil {
		return nil, err
	}
	if w.PrevSecret, err = db.seal(w.PrevSecret); err != nil {
		return nil, err
	}
	settings, err := db.seal(string(w.Settings))
	if err != nil {
		return nil, err
	}
	return []any{w.ID, w.AccountID, nullStr(w.ClientID), w.Domain, w.URL, strings.Join(w.Events, " "), w.MinScoreChange, bit(w.Enabled),
		nullStr(w.DisabledReason), ns(w.DisabledAt), w.Secret, nullStr(w.PrevSecret), ns(w.PrevSecretEnd), ns(w.FailingSince),
		w.Failures, ns(w.LastSuccessAt), ns(w.CreatedAt), ns(w.UpdatedAt),
		nullStr(w.Connector), w.Name, strings.Join(w.Domains, " "), settings, string(w.PublicSettings),
		strings.Join(w.SecretFields, " "), bit(w.Subscription)}, nil
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (t *txn) InsertWebhook(w store.Webhook) error {
	args, err := t.db.webhookArgs(w)
	if err != nil {
		return err
	}
	_, err = t.tx.Exec(`INSERT INTO webhooks (`+webhookColumns+`) VALUES (`+placeholders(len(args))+`)`, args...)
	if err != nil {
		return fmt.Errorf("sqlite: insert webhook: %w", conflict(err))
	}
	return nil
}

func (t *txn) Webhook(accountID, id string) (store.Webhook, error) {
	w, err := t.db.scanWebhook(t.tx.QueryRow(`SELECT `+webhookSelect+` FROM webhooks WHERE account_id = ? AND id = ?`, accountID, id))
	if err != nil {
		return w, fmt.Errorf("sqlite: webhook %s: %w", id, notFound(err))
	}
	return w, nil
}

func (t *txn) UpdateWebhook(w store.Webhook) error {
	args, err := t.db.webhookArgs(w)
	if err != nil {
		return err
	}
	res, err := t.tx.Exec(`UPDATE webhooks SET url = ?5, events = ?6, min_score_change = ?7, enabled = ?8, disabled_reason = ?9,
		disabled_at = ?10, secret = ?11, prev_secret = ?12, prev_secret_end = ?13, failing_since = ?14, failures = ?15,
		last_success_at = ?16, updated_at = ?18, name = ?20, domains = ?21, settings = ?22, public_settings = ?23,
		secret_fields = ?24, subscription = ?25 WHERE id = ?1 AND account_id = ?2`, args...)
	if err != nil {
		return fmt.Errorf("sqlite: update webhook: %w", conflict(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: webhook %s: %w", w.ID, store.ErrNotFound)
	}
	return nil
}

func (t *txn) UpdateWebhookHealth(w store.Webhook) error {
	res, err := t.tx.Exec(`UPDATE webhooks SET failing_since = ?, failures = ?, last_success_at = ?
		WHERE id = ? AND account_id = ?`, ns(w.FailingSince), w.Failures, ns(w.LastSuccessAt), w.ID, w.AccountID)
	if err != nil {
		return fmt.Errorf("sqlite: update webhook: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: webhook %s: %w", w.ID, store.ErrNotFound)
	}
	return nil
}

func (t *txn) DeleteWebhook(accountID, id, reason string, at time.Time) error {
	// Kept for its delivery log; its secrets are of no further use.
	res, err := t.tx.Exec(`UPDATE webhooks SET deleted_at = ?3, enabled = 0, disabled_reason = ?4, disabled_at = ?3, updated_at = ?3,
		secret = '', prev_secret = NULL, prev_secret_end = NULL, settings = ''
		WHERE account_id = ?1 AND id = ?2 AND deleted_at IS NULL`, accountID, id, at.UnixNano(), reason)
	if err != nil {
		return fmt.Errorf("sqlite: delete webhook: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: webhook %s: %w", id, store.ErrNotFound)
	}
	// Along its due index: what is left to send will not be.
	_, err = t.tx.Exec(`UPDATE webhook_deliveries INDEXED BY webhook_deliveries_due_by_webhook
		SET status = 'failed', next_attempt_at = NULL, last_error = ?1, updated_at = ?2 WHERE webhook_id = ?3 AND status = 'pending'`,
		reason, at.UnixNano(), id)
	if err != nil {
		return fmt.Errorf("sqlite: delete webhook: %w", err)
	}
	return nil
}

func (t *txn) CountWebhooks(accountID string, connections bool) (int, error) {
	return countWebhooks(t.tx.QueryRow, accountID, connections)
}

// CountWebhooks counts an account's webhooks or connections, its clients'
// included, deleted ones not.
func (db *DB) CountWebhooks(ctx context.Context, accountID string, connections bool) (int, error) {
	return countWebhooks(func(q string, args ...any) *sql.Row { return db.r.QueryRowContext(ctx, q, args...) }, accountID, connections)
}

func countWebhooks(queryRow func(string, ...any) *sql.Row, accountID string, connections bool) (int, error) {
	var n int
	err := queryRow(`SELECT count(*) FROM webhooks WHERE account_id = ? AND (connector IS NOT NULL) = ? AND deleted_at IS NULL`,
		accountID, connections).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqlite: count webhooks: %w", err)
	}
	return n, nil
}

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
func (db *DB) LeaseDeliveries(ids []string, written, leaseEnd time.Time) []string {
	return db.leases.take(ids, -1, time.Now(), leaseEnd, written)
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

// Webhook reads a webhook of an account.
func (db *DB) Webhook(ctx context.Context, accountID, id string) (store.Webhook, error) {
	w, err := db.scanWebhook(db.r.QueryRowContext(ctx, `SELECT `+webhookSelect+` FROM webhooks WHERE account_id = ? AND id = ?`, accountID, id))
	if err != nil {
		return w, fmt.Errorf("sqlite: webhook %s: %w", id, notFound(err))
	}
	return w, nil
}

// ListWebhooks returns one page of an owner's webhooks, newest first.
func (db *DB) ListWebhooks(ctx context.Context, f store.WebhookFilter) ([]store.Webhook, string, error) {
	q := `SELECT ` + webhookSelect + ` FROM webhooks WHERE account_id = ? AND (connector IS NOT NULL) = ? AND (deleted_at IS NOT NULL) = ?`
	args := []any{f.AccountID, f.Connections, f.Deleted}
	if !f.AllClients {
		q += ` AND client_id IS ?`
		args = append(args, nullStr(f.ClientID))
	}
	return listPage(ctx, db.r, "webhooks", q, args, f.Cursor, f.Limit, db.scanWebhook,
		func(w store.Webhook) (time.Time, string) { return w.CreatedAt, w.ID })
}

// MatchWebhooks lists the webhooks, enabled or not, of exactly one owner
// for a domain. Every event asks it: the answer is cached for as long as
// cache_epoch's webhooks counter stays put, and shared by the callers,
// which must not change it.
func (db *DB) MatchWebhooks(ctx context.Context, accountID, clientID, domain string) ([]store.Webhook, error) {
	v, err := db.fresh.current(ctx)
	if err != nil {
		return nil, err
	}
	k := matchKey{accountID, clientID, domain}
	if ws, ok := db.fresh.match(k); ok {
		return ws, nil
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+webhookSelect+` FROM webhooks
		WHERE account_id = ?1 AND client_id IS ?3 AND (domain = ?2 OR connector IS NOT NULL) AND deleted_at IS NULL`,
		accountID, domain, nullStr(clientID))
	if err != nil {
		return nil, fmt.Errorf("sqlite: match webhooks: %w", err)
	}
	defer rows.Close()
	var out []store.Webhook
	for rows.Next() {
		w, err := db.scanWebhook(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: match webhooks: %w", err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: match webhooks: %w", err)
	}
	db.fresh.putMatch(v, k, slices.Clip(out))
	return out, nil
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

// DefaultWebhookURL is the owner's default endpoint, "" when unset.
func (db *DB) DefaultWebhookURL(ctx context.Context, accountID, clientID string) (string, error) {
	var u sql.NullString
	var err error
	if clientID == "" {
		err = db.r.QueryRowContext(ctx, `SELECT default_webhook_url FROM accounts WHERE id = ?`, accountID).Scan(&u)
	} else {
		err = db.r.QueryRowContext(ctx, `SELECT default_webhook_url FROM clients WHERE account_id = ? AND id = ?`, accountID, clientID).Scan(&u)
	}
	if err != nil {
		return "", fmt.Errorf("sqlite: default webhook url: %w", notFound(err))
	}
	return u.String, nil
}

func (t *txn) LogEvent(e store.LoggedEvent) error {
	_, err := t.tx.Exec(`INSERT INTO event_log (id, account_id, client_id, event, domain, payload, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		e.ID, e.AccountID, nullStr(e.ClientID), e.Event, e.Domain, e.Payload, e.CreatedAt.UnixNano())
	if err != nil {
		return fmt.Errorf("sqlite: log event: %w", err)
	}
	return nil
}

// RecentEvents lists an owner's logged events, newest first.
func (db *DB) RecentEvents(ctx context.Context, f store.EventFilter) ([]store.LoggedEvent, error) {
	q := `SELECT id, account_id, client_id, event, domain, payload, created_at FROM event_log WHERE account_id = ?`
	args := []any{f.AccountID}
	if !f.AllClients {
		q += ` AND client_id IS ?`
		args = append(args, nullStr(f.ClientID))
	}
	if f.Event != "" {
		q += ` AND event = ?`
		args = append(args, f.Event)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, max(f.Limit, 1))
	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: recent events: %w", err)
	}
	defer rows.Close()
	var out []store.LoggedEvent
	for rows.Next() {
		var e store.LoggedEvent
		var client sql.NullString
		var created int64
		if err := rows.Scan(&e.ID, &e.AccountID, &client, &e.Event, &e.Domain, &e.Payload, &created); err != nil {
			return nil, fmt.Errorf("sqlite: recent events: %w", err)
		}
		e.ClientID, e.CreatedAt = client.String, time.Unix(0, created).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// The retention's statements, each bounded by its LIMIT. Deliveries and
// logged events are pruned along their primary keys, whose ids begin with
// the time they were made; deliveries take their attempts with them (ON
// DELETE CASCADE). A deleted webhook goes once its deliveries have: they
// were made before it was deleted, so they are pruned first.
const (
	pruneDeliveries = `DELETE FROM webhook_deliveries WHERE id IN (
		SELECT id FROM webhook_deliveries WHERE id < ? ORDER BY id LIMIT ?)`
	pruneDeleted = `DELETE FROM webhooks WHERE id IN (
		SELECT id FROM webhooks w INDEXED BY webhooks_deleted WHERE deleted_at < ?
		AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = w.id) ORDER BY deleted_at LIMIT ?)`
	pruneEvents = `DELETE FROM event_log WHERE id IN (
		SELECT id FROM event_log WHERE id < ? AND created_at < ? ORDER BY id LIMIT ?)`
)

// PruneDeliveries forgets up to limit deliveries made before t, oldest
// first, with their attempts.
func (db *DB) PruneDeliveries(ctx context.Context, t time.Time, limit int) (int, error) {
	return db.prune(ctx, "deliveries", pruneDeliveries, store.DeliveryIDFloor(t), limit)
}

// PruneDeleted forgets up to limit webhooks and connections deleted before
// t whose deliveries have all gone.
func (db *DB) PruneDeleted(ctx context.Context, t time.Time, limit int) (int, error) {
	return db.prune(ctx, "deleted webhooks", pruneDeleted, t.UnixNano(), limit)
}

// PruneEvents forgets up to limit logged events made before t, oldest
// first.
func (db *DB) PruneEvents(ctx context.Context, t time.Time, limit int) (int, error) {
	return db.prune(ctx, "events", pruneEvents, events.IDFloor(t), t.UnixNano(), limit)
}

// prune runs one bounded DELETE on the writer connection: a short write
// transaction of its own, outside the group commit, which the writer's
// next group waits for.
func (db *DB) prune(ctx context.Context, what, q string, args ...any) (int, error) {
	res, err := db.w.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
