package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/aivis/aivis/core/store"
)

// The changes of monitored domains. An account has one change of a
// content request: a unique index of (account, request), which refuses
// a second (ErrConflict) once the first commits, a caller meanwhile
// waiting for it.

const changeColumns = `id, account_id, client_id, domain_id, title, notes, live_at, live_at_ns, pages, prompts, content_request_id,
	created_at, created_at_ns, lift_measured_at, lift_measured_at_ns`

func scanChange(s scanner) (store.Change, error) {
	var c store.Change
	var client, request *string
	var at, created, measured tcol
	err := s.Scan(&c.ID, &c.AccountID, &client, &c.DomainID, &c.Title, &c.Notes, &at.t, &at.ns, &c.Pages, &c.Prompts, &request,
		&created.t, &created.ns, &measured.t, &measured.ns)
	c.ClientID, c.ContentRequestID = str(client), str(request)
	c.At, c.CreatedAt, c.LiftMeasuredAt = at.time(), created.time(), measured.time()
	return c, err
}

// CreateChange keeps a change of the account's domain, its client the
// domain's.
func (db *DB) CreateChange(ctx context.Context, c store.Change) error {
	return insertChange(ctx, db.pool, c)
}

// InsertChange is CreateChange in the transaction.
func (t *txn) InsertChange(c store.Change) error { return insertChange(t.ctx, t.tx, c) }

// insertChange keeps a change through q: the pool or a transaction.
func insertChange(ctx context.Context, q querier, c store.Change) error {
	tag, err := q.Exec(ctx, `INSERT INTO domain_changes (`+changeColumns+`)
		SELECT $1, account_id, client_id, id, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 FROM monitored_domains
		WHERE id = $13 AND account_id = $14`,
		c.ID, c.Title, c.Notes, ts(c.At), ns(c.At), nonNil(c.Pages), nonNil(c.Prompts), null(c.ContentRequestID),
		ts(c.CreatedAt), ns(c.CreatedAt), tsz(c.LiftMeasuredAt), nsz(c.LiftMeasuredAt), c.DomainID, c.AccountID)
	if err != nil {
		return fmt.Errorf("postgres: create change: %w", conflict(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: domain %s: %w", c.DomainID, store.ErrNotFound)
	}
	return nil
}

// Change reads a change of the account's domain.
func (db *DB) Change(ctx context.Context, accountID, domainID, id string) (store.Change, error) {
	c, err := scanChange(db.pool.QueryRow(ctx, `SELECT `+changeColumns+` FROM domain_changes
		WHERE id = $1 AND domain_id = $2 AND account_id = $3`, id, domainID, accountID))
	if err != nil {
		return c, fmt.Errorf("postgres: change %s: %w", id, notFound(err))
	}
	return c, nil
}

// ChangeOfContentRequest reads the account's change of a content request.
func (db *DB) ChangeOfContentRequest(ctx context.Context, accountID, contentRequestID string) (store.Change, error) {
	c, err := scanChange(db.pool.QueryRow(ctx, `SELECT `+changeColumns+` FROM domain_changes
		WHERE account_id = $1 AND content_request_id = $2`, accountID, contentRequestID))
	if err != nil {
		return c, fmt.Errorf("postgres: change of content request %s: %w", contentRequestID, notFound(err))
	}
	return c, nil
}

// ListChanges returns one page of a domain's changes, the latest first.
func (db *DB) ListChanges(ctx context.Context, f store.ChangeFilter) ([]store.Change, string, error) {
	var w where
	w.and("domain_id = ?", f.DomainID)
	w.and("account_id = ?", f.AccountID)
	if !f.From.IsZero() {
		t, n := bound(f.From)
		w.and("(live_at, live_at_ns) >= (?, ?)", t, n)
	}
	if !f.To.IsZero() {
		t, n := bound(f.To)
		w.and("(live_at, live_at_ns) < (?, ?)", t, n)
	}
	if f.Unmeasured {
		w.and("lift_measured_at IS NULL")
	}
	return listPage(ctx, db, "changes", `SELECT `+changeColumns+` FROM domain_changes`, w, "live_at", f.Cursor, f.Limit, scanChange,
		func(c store.Change) (time.Time, string) { return c.At, c.ID })
}

// DeleteChange deletes a change of the account's domain.
func (db *DB) DeleteChange(ctx context.Context, accountID, domainID, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM domain_changes WHERE id = $1 AND domain_id = $2 AND account_id = $3`, id, domainID, accountID)
	if err != nil {
		return fmt.Errorf("postgres: delete change: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: change %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// MarkLiftMeasured sets a change's lift_measured_at, once: a second
// caller waits for the first's row lock and then finds it set.
func (t *txn) MarkLiftMeasured(accountID, id string, at time.Time) error {
	tag, err := t.tx.Exec(t.ctx, `UPDATE domain_changes SET lift_measured_at = $1, lift_measured_at_ns = $2
		WHERE id = $3 AND account_id = $4 AND lift_measured_at IS NULL`, ts(at), ns(at), id, accountID)
	if err != nil {
		return fmt.Errorf("postgres: mark lift measured: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var one int
	if err := t.tx.QueryRow(t.ctx, `SELECT 1 FROM domain_changes WHERE id = $1 AND account_id = $2`, id, accountID).Scan(&one); err != nil {
		return fmt.Errorf("postgres: change %s: %w", id, notFound(err))
	}
	return fmt.Errorf("postgres: change %s: lift measured already: %w", id, store.ErrConflict)
}
