package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
)

// Deliveries. One per webhook and event: a unique index. A claim is one
// UPDATE ... RETURNING whose rows are chosen FOR UPDATE SKIP LOCKED at
// READ COMMITTED: concurrent claims, in this process or another, pass over
// the rows another claim is leasing, and a row whose lease another claim
// wrote since the claim began is checked again against its new version
// (and passed over, its lease not ended): no delivery is leased twice. An
// outcome is an UPDATE conditional on the lease (ErrLost when it changes
// nothing).

const deliveryColumns = `id, webhook_id, account_id, event_id, event, payload, status, attempts, step,
	next_attempt_at, next_attempt_at_ns, last_attempt_at, last_attempt_at_ns, last_status, last_error, lease, lease_until, lease_until_ns,
	created_at, created_at_ns, updated_at, updated_at_ns, trace`

func scanDelivery(s scanner) (store.Delivery, error) {
	var d store.Delivery
	var status *int
	var lastErr, lease *string
	var next, last, leaseUntil, created, updated tcol
	err := s.Scan(&d.ID, &d.WebhookID, &d.AccountID, &d.EventID, &d.Event, &d.Payload, &d.Status, &d.Attempts, &d.Step,
		&next.t, &next.ns, &last.t, &last.ns, &status, &lastErr, &lease, &leaseUntil.t, &leaseUntil.ns,
		&created.t, &created.ns, &updated.t, &updated.ns, &d.Trace)
	if status != nil {
		d.LastStatus = *status
	}
	d.LastError, d.Lease = str(lastErr), str(lease)
	d.NextAttemptAt, d.LastAttemptAt, d.LeaseUntil = next.time(), last.time(), leaseUntil.time()
	d.CreatedAt, d.UpdatedAt = created.time(), updated.time()
	return d, err
}

// nullInt is NULL for 0.
func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

// deliveryTypes are the types of deliveryColumns.
var deliveryTypes = []string{"text", "text", "text", "text", "text", "bytea", "text", "int4", "int4",
	"timestamptz", "int2", "timestamptz", "int2", "int4", "text", "text", "timestamptz", "int2",
	"timestamptz", "int2", "timestamptz", "int2", "text"}

// InsertDeliveries adds the deliveries in one statement, a column an
// array; those it added come back.
func (t *txn) InsertDeliveries(ds []store.Delivery) ([]bool, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	var c columns
	for _, d := range ds {
		c.row()
		c.text(d.ID, d.WebhookID, d.AccountID, d.EventID, d.Event)
		c.bytes(d.Payload)
		c.text(d.Status)
		c.int(d.Attempts)
		c.int(d.Step)
		c.nullTime(d.NextAttemptAt)
		c.nullTime(d.LastAttemptAt)
		c.nullInt(d.LastStatus)
		c.nullText(d.LastError)
		c.nullText(d.Lease)
		c.nullTime(d.LeaseUntil)
		c.time(d.CreatedAt)
		c.time(d.UpdatedAt)
		c.text(d.Trace)
	}
	if c.err != nil {
		return nil, fmt.Errorf("postgres: insert deliveries: %w", c.err)
	}
	ids, err := collect(t.ctx, t.tx, scanID, `INSERT INTO webhook_deliveries (`+deliveryColumns+`)
		SELECT u.* FROM unnest(`+c.params(deliveryTypes...)+`) AS u (`+deliveryColumns+`)
		WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.id = u.webhook_id AND w.deleted_at IS NULL)
		ON CONFLICT (webhook_id, event_id) DO NOTHING RETURNING id`, c.args()...)
	if err != nil {
		return nil, fmt.Errorf("postgres: insert deliveries: %w", conflict(err))
	}
	in := make(map[string]bool, len(ids))
	for _, id := range ids {
		in[id] = true
	}
	added := make([]bool, len(ds))
	for i, d := range ds {
		added[i] = in[d.ID]
	}
	return added, nil
}

func scanID(s scanner) (string, error) {
	var id string
	return id, s.Scan(&id)
}

// RecordOutcomes writes the outcomes in one statement: the deliveries
// held by their leases are updated, their attempts added, and each
// outcome says which it was, and whether its delivery is there.
func (t *txn) RecordOutcomes(os []store.HeldOutcome) ([]bool, error) {
	if len(os) == 0 {
		return nil, nil
	}
	var c columns
	for _, o := range os {
		a := o.Attempt
		c.row()
		c.text(o.DeliveryID, o.Lease, o.Status)
		c.int(a.N)
		c.int(o.Step)
		c.nullTime(o.Next)
		c.time(a.At)
		c.int(a.StatusCode)
		c.int64(a.Latency.Microseconds())
		c.bytes([]byte(a.ResponseBody))
		c.text(a.Error, a.Result)
	}
	if c.err != nil {
		return nil, fmt.Errorf("postgres: record outcomes: %w", c.err)
	}
	type result struct {
		i                       int64
		written, added, present bool
	}
	res, err := collect(t.ctx, t.tx, func(s scanner) (result, error) {
		var r result
		return r, s.Scan(&r.i, &r.written, &r.added, &r.present)
	}, `WITH o AS (
			SELECT * FROM unnest(`+c.params("text", "text", "text", "int4", "int4", "timestamptz", "int2", "timestamptz", "int2",
		"int4", "int8", "bytea", "text", "text")+`) WITH ORDINALITY
				AS o (id, lease, status, n, step, next_at, next_ns, at, at_ns, status_code, latency_us, body, error, result, i)
		), up AS (
			UPDATE webhook_deliveries d SET status = o.status, attempts = o.n, step = o.step,
				next_attempt_at = o.next_at, next_attempt_at_ns = o.next_ns, last_attempt_at = o.at, last_attempt_at_ns = o.at_ns,
				last_status = NULLIF(o.status_code, 0), last_error = NULLIF(o.error, ''), updated_at = o.at, updated_at_ns = o.at_ns,
				lease = NULL, lease_until = NULL, lease_until_ns = NULL
			FROM o WHERE d.id = o.id AND d.lease IS NOT DISTINCT FROM NULLIF(o.lease, '') RETURNING o.i
		), ins AS (
			INSERT INTO webhook_attempts (delivery_id, n, at, at_ns, status_code, latency_us, response_body, error, result)
			SELECT o.id, o.n, o.at, o.at_ns, o.status_code, o.latency_us, o.body, o.error, o.result FROM o JOIN up ON up.i = o.i
			ON CONFLICT DO NOTHING RETURNING delivery_id, n
		)
		SELECT o.i, up.i IS NOT NULL, up.i IS NOT NULL AND EXISTS (SELECT 1 FROM ins WHERE ins.delivery_id = o.id AND ins.n = o.n),
			EXISTS (SELECT 1 FROM webhook_deliveries x WHERE x.id = o.id)
		FROM o LEFT JOIN up ON up.i = o.i`, c.args()...)
	if err != nil {
		return nil, fmt.Errorf("postgres: record outcomes: %w", conflict(err))
	}
	lost := make([]bool, len(os))
	for _, r := range res {
		switch {
		case r.written && !r.added:
			return nil, fmt.Errorf("postgres: attempt of delivery %s exists: %w", os[r.i-1].DeliveryID, store.ErrConflict)
		case !r.written && r.present:
			lost[r.i-1] = true // held by another lease, or by none
		}
	}
	return lost, nil
}

// InsertDelivery adds a delivery as InsertDeliveries does, and tells a
// webhook that is gone altogether (ErrConflict) from one that has the
// event's delivery or was deleted.
func (t *txn) InsertDelivery(d store.Delivery) (bool, error) {
	added, err := t.InsertDeliveries([]store.Delivery{d})
	if err != nil || added[0] {
		return err == nil, err
	}
	var exists bool
	if err := t.tx.QueryRow(t.ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE id = $1)`, d.WebhookID).Scan(&exists); err != nil {
		return false, fmt.Errorf("postgres: insert delivery: %w", err)
	}
	if !exists {
		return false, fmt.Errorf("postgres: delivery to webhook %s, which is gone: %w", d.WebhookID, store.ErrConflict)
	}
	return false, nil
}

func (t *txn) AddAttempt(a store.Attempt) error {
	return addAttempt(t.ctx, t.tx, a)
}

func addAttempt(ctx context.Context, q querier, a store.Attempt) error {
	tag, err := q.Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, n, at, at_ns, status_code, latency_us, response_body, error, result)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
		a.DeliveryID, a.N, ts(a.At), ns(a.At), a.StatusCode, a.Latency.Microseconds(), []byte(a.ResponseBody), a.Error, a.Result)
	if err != nil {
		return fmt.Errorf("postgres: add attempt: %w", conflict(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: attempt %d of delivery %s exists: %w", a.N, a.DeliveryID, store.ErrConflict)
	}
	return nil
}

// claimable is the condition of a delivery (its columns prefixed with p)
// a claim may take at ($1, $2): pending, due and not leased.
func claimable(p string) string {
	return fmt.Sprintf(`%[1]sstatus = 'pending' AND (%[1]snext_attempt_at, %[1]snext_attempt_at_ns) <= ($1, $2)
		AND (%[1]slease_until IS NULL OR (%[1]slease_until, %[1]slease_until_ns) <= ($1, $2))`, p)
}

// ClaimWebhookDeliveries leases the webhook's oldest due deliveries that no
// lease holds, along the webhook's due index.
func (db *DB) ClaimWebhookDeliveries(ctx context.Context, lease, webhookID string, now, leaseEnd time.Time, limit int) ([]store.Delivery, bool, error) {
	at, n := bound(now)
	ds, err := claim(ctx, db.pool, claimWebhook, at, n, lease, tsz(leaseEnd), nsz(leaseEnd), webhookID, limit)
	if err != nil {
		return nil, false, fmt.Errorf("postgres: claim deliveries of %s: %w", webhookID, err)
	}
	return ds, len(ds) == limit, nil
}

// ClaimDeliveries leases the due deliveries of enabled webhooks that no
// lease holds: it locks a bounded window of them along the due index (four
// times the limit), then leases the oldest of it, at most perWebhook of
// one webhook; the rest of the window is let go at the commit.
func (db *DB) ClaimDeliveries(ctx context.Context, lease string, now, leaseEnd time.Time, limit, perWebhook int, skip []string) ([]store.Delivery, map[string]store.Webhook, error) {
	at, n := bound(now)
	out, err := claim(ctx, db.pool, claimDue, at, n, lease, tsz(leaseEnd), nsz(leaseEnd), limit, perWebhook, nonNil(skip))
	if err != nil || len(out) == 0 {
		return nil, nil, err
	}
	ids := make([]string, 0, len(out))
	for _, d := range out {
		ids = append(ids, d.WebhookID)
	}
	ws, err := collect(ctx, db.pool, db.scanWebhook, `SELECT `+webhookSelect+` FROM webhooks WHERE id = ANY($1)`, ids)
	if err != nil {
		// Leased and not attempted: their leases end, and a later claim
		// takes them.
		return nil, nil, fmt.Errorf("postgres: claim deliveries: webhooks: %w", err)
	}
	hooks := make(map[string]store.Webhook, len(ws))
	for _, w := range ws {
		hooks[w.ID] = w
	}
	return out, hooks, nil
}

// The claims of deliveries: at ($1, $2), leased to $3 until ($4, $5).
var (
	claimWebhook = `WITH taken AS (
			SELECT id FROM webhook_deliveries WHERE webhook_id = $6 AND ` + claimable("") + `
			ORDER BY next_attempt_at, next_attempt_at_ns LIMIT $7 FOR UPDATE SKIP LOCKED)
		UPDATE webhook_deliveries d SET lease = $3, lease_until = $4, lease_until_ns = $5 FROM taken
		WHERE d.id = taken.id RETURNING ` + prefixed("d.", deliveryColumns)
	claimDue = `WITH due AS (
			SELECT d.id, d.webhook_id, d.next_attempt_at, d.next_attempt_at_ns FROM webhook_deliveries d
			WHERE ` + claimable("d.") + ` AND NOT (d.webhook_id = ANY($8))
			AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = d.webhook_id AND w.enabled)
			ORDER BY d.next_attempt_at, d.next_attempt_at_ns LIMIT $6 * 4 FOR UPDATE OF d SKIP LOCKED
		), taken AS (
			SELECT id FROM (SELECT id, next_attempt_at, next_attempt_at_ns,
				row_number() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, next_attempt_at_ns) AS rn FROM due) r
			WHERE rn <= $7 ORDER BY next_attempt_at, next_attempt_at_ns LIMIT $6
		)
		UPDATE webhook_deliveries d SET lease = $3, lease_until = $4, lease_until_ns = $5 FROM taken
		WHERE d.id = taken.id RETURNING ` + prefixed("d.", deliveryColumns)
)

// claim runs a statement that leases deliveries and returns them, oldest
// due first.
func claim(ctx context.Context, q querier, sql string, args ...any) ([]store.Delivery, error) {
	out, err := collect(ctx, q, scanDelivery, sql, args...)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b store.Delivery) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// RenewLeases moves the end of the leases still held, in one statement.
func (db *DB) RenewLeases(ctx context.Context, ds []store.Delivery, until time.Time) ([]string, error) {
	ids, leases := make([]string, len(ds)), make([]string, len(ds))
	for i, d := range ds {
		ids[i], leases[i] = d.ID, d.Lease
	}
	out, err := collect(ctx, db.pool, scanID, `UPDATE webhook_deliveries d SET lease_until = $3, lease_until_ns = $4
		FROM unnest($1::text[], $2::text[]) AS h (id, lease) WHERE d.id = h.id AND d.lease = h.lease RETURNING d.id`,
		ids, leases, tsz(until), nsz(until))
	if err != nil {
		return nil, fmt.Errorf("postgres: renew delivery leases: %w", err)
	}
	return out, nil
}

// RecordOutcome writes an attempt's outcome as RecordOutcomes does: ErrLost
// for one held by another lease or by none.
func (t *txn) RecordOutcome(id, lease string, o store.DeliveryOutcome) error {
	lost, err := t.RecordOutcomes([]store.HeldOutcome{{DeliveryID: id, Lease: lease, DeliveryOutcome: o}})
	if err == nil && lost[0] {
		err = fmt.Errorf("postgres: outcome of delivery %s: %w", id, store.ErrLost)
	}
	return err
}

// Redeliver makes failed or succeeded deliveries of a webhook pending
// again, due at now.
func (t *txn) Redeliver(webhookID string, ids []string, since, until, now time.Time) (int, error) {
	q := `UPDATE webhook_deliveries SET status = 'pending', step = 0, next_attempt_at = $1, next_attempt_at_ns = $2,
		updated_at = $1, updated_at_ns = $2 WHERE webhook_id = $3 AND status <> 'pending'`
	args := []any{ts(now), ns(now), webhookID}
	if ids != nil {
		if len(ids) == 0 {
			return 0, nil
		}
		q += ` AND id = ANY($4)`
		args = append(args, ids)
	} else {
		q += ` AND status = 'failed' AND event_id >= $4 AND event_id < $5`
		args = append(args, events.IDFloor(since), events.IDFloor(until))
	}
	tag, err := t.tx.Exec(t.ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("postgres: redeliver: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

const nextDue = `SELECT next_attempt_at, next_attempt_at_ns FROM webhook_deliveries
	WHERE status = 'pending' AND (next_attempt_at, next_attempt_at_ns) > ($1, $2)
	ORDER BY next_attempt_at, next_attempt_at_ns LIMIT 1`

// NextDue reads when the next retry is due.
func (db *DB) NextDue(ctx context.Context, now time.Time) (time.Time, error) {
	at, n := bound(now)
	var next tcol
	err := db.pool.QueryRow(ctx, nextDue, at, n).Scan(&next.t, &next.ns)
	if err != nil && err != pgx.ErrNoRows {
		return time.Time{}, fmt.Errorf("postgres: next due: %w", err)
	}
	return next.time(), nil
}

// DeliveryBacklog counts each webhook's pending deliveries along its due
// index, then adds up those of the enabled ones by kind.
func (db *DB) DeliveryBacklog(ctx context.Context) (webhooks, connections store.Backlog, err error) {
	rows, err := db.pool.Query(ctx, `SELECT w.connector IS NOT NULL, sum(p.n)::bigint, min(p.first) FROM (
			SELECT webhook_id, count(*) AS n, min(next_attempt_at) AS first
			FROM webhook_deliveries WHERE status = 'pending' GROUP BY webhook_id) p
		JOIN webhooks w ON w.id = p.webhook_id WHERE w.enabled GROUP BY 1`)
	if err != nil {
		return webhooks, connections, fmt.Errorf("postgres: delivery backlog: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var connection bool
		var n int64
		var first *time.Time
		if err := rows.Scan(&connection, &n, &first); err != nil {
			return webhooks, connections, fmt.Errorf("postgres: delivery backlog: %w", err)
		}
		b := store.Backlog{Pending: int(n)}
		if first != nil {
			b.FirstDue = *first
		}
		if connection {
			connections = b
		} else {
			webhooks = b
		}
	}
	if err := rows.Err(); err != nil {
		return webhooks, connections, fmt.Errorf("postgres: delivery backlog: %w", err)
	}
	return webhooks, connections, nil
}

// Delivery reads one delivery of a webhook with its attempts, oldest first.
func (db *DB) Delivery(ctx context.Context, webhookID, id string) (store.Delivery, []store.Attempt, error) {
	d, err := scanDelivery(db.pool.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE webhook_id = $1 AND id = $2`,
		webhookID, id))
	if err != nil {
		return d, nil, fmt.Errorf("postgres: delivery %s: %w", id, notFound(err))
	}
	as, err := collect(ctx, db.pool, func(s scanner) (store.Attempt, error) {
		var a store.Attempt
		var at tcol
		var us int64
		var body []byte
		err := s.Scan(&a.DeliveryID, &a.N, &at.t, &at.ns, &a.StatusCode, &us, &body, &a.Error, &a.Result)
		a.At, a.Latency, a.ResponseBody = at.time(), time.Duration(us)*time.Microsecond, string(body)
		return a, err
	}, `SELECT delivery_id, n, at, at_ns, status_code, latency_us, response_body, error, result FROM webhook_attempts
		WHERE delivery_id = $1 ORDER BY n`, id)
	if err != nil {
		return d, nil, fmt.Errorf("postgres: attempts: %w", err)
	}
	return d, as, nil
}

// ListDeliveries returns one page of a webhook's deliveries, newest event
// first: along the unique index of (webhook_id, event_id), whose event ids
// begin with the event's time. The cursor is the last event id.
func (db *DB) ListDeliveries(ctx context.Context, f store.DeliveryFilter) ([]store.Delivery, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 20
	}
	var w where
	w.and("webhook_id = ?", f.WebhookID)
	if f.Status != "" {
		w.and("status = ?", f.Status)
	}
	if f.Cursor != "" {
		after, err := store.DeliveryAfter(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		w.and("event_id < ?", after)
	}
	return queryPage(ctx, db.pool, "deliveries", `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE `+w.String()+
		fmt.Sprintf(` ORDER BY event_id DESC LIMIT %d`, limit+1), w.args, limit, scanDelivery,
		func(d store.Delivery) string { return store.DeliveryCursor(d.EventID) })
}
