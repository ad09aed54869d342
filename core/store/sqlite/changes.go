package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aivis/aivis/core/store"
)

// The changes of monitored domains: pages and prompts are JSON arrays.
const changeColumns = `id, account_id, client_id, domain_id, title, notes, live_at, pages, prompts, content_request_id, created_at,
	lift_measured_at`

func scanChange(s scanner) (store.Change, error) {
	var c store.Change
	var client, request sql.NullString
	var at, created int64
	var measured sql.NullInt64
	var pages, prompts string
	if err := s.Scan(&c.ID, &c.AccountID, &client, &c.DomainID, &c.Title, &c.Notes, &at, &pages, &prompts, &request, &created,
		&measured); err != nil {
		return c, err
	}
	c.ClientID, c.ContentRequestID = client.String, request.String
	c.At, c.CreatedAt, c.LiftMeasuredAt = time.Unix(0, at).UTC(), time.Unix(0, created).UTC(), fromNS(measured)
	for _, l := range []struct {
		dst *[]string
		v   string
	}{{&c.Pages, pages}, {&c.Prompts, prompts}} {
		if err := json.Unmarshal([]byte(l.v), l.dst); err != nil {
			return c, fmt.Errorf("change %s: %w", c.ID, err)
		}
	}
	return c, nil
}

// CreateChange keeps a change of the account's domain, its client the
// domain's.
func (db *DB) CreateChange(ctx context.Context, c store.Change) error {
	return insertChange(ctx, db.w, c)
}

// InsertChange is CreateChange in the transaction.
func (t *txn) InsertChange(c store.Change) error { return insertChange(bg, t.tx, c) }

// insertChange keeps a change through q: the writer or its transaction.
func insertChange(ctx context.Context, q querier, c store.Change) error {
	pages, err := listJSON(c.Pages)
	if err != nil {
		return fmt.Errorf("sqlite: create change: %w", err)
	}
	prompts, err := listJSON(c.Prompts)
	if err != nil {
		return fmt.Errorf("sqlite: create change: %w", err)
	}
	res, err := q.ExecContext(ctx, `INSERT INTO domain_changes (`+changeColumns+`)
		SELECT ?, account_id, client_id, id, ?, ?, ?, ?, ?, ?, ?, ? FROM monitored_domains WHERE id = ? AND account_id = ?`,
		c.ID, c.Title, c.Notes, stamp(c.At), pages, prompts, nullStr(c.ContentRequestID), stamp(c.CreatedAt), ns(c.LiftMeasuredAt),
		c.DomainID, c.AccountID)
	if err != nil {
		return fmt.Errorf("sqlite: create change: %w", conflict(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: domain %s: %w", c.DomainID, store.ErrNotFound)
	}
	return nil
}

// Change reads a change of the account's domain.
func (db *DB) Change(ctx context.Context, accountID, domainID, id string) (store.Change, error) {
	c, err := scanChange(db.r.QueryRowContext(ctx, `SELECT `+changeColumns+` FROM domain_changes
		WHERE id = ? AND domain_id = ? AND account_id = ?`, id, domainID, accountID))
	if err != nil {
		return c, fmt.Errorf("sqlite: change %s: %w", id, notFound(err))
	}
	return c, nil
}

// ChangeOfContentRequest reads the account's change of a content request.
func (db *DB) ChangeOfContentRequest(ctx context.Context, accountID, contentRequestID string) (store.Change, error) {
	c, err := scanChange(db.r.QueryRowContext(ctx, `SELECT `+changeColumns+` FROM domain_changes
		WHERE account_id = ? AND content_request_id = ?`, accountID, contentRequestID))
	if err != nil {
		return c, fmt.Errorf("sqlite: change of content request %s: %w", contentRequestID, notFound(err))
	}
	return c, nil
}

// ListChanges returns one page of a domain's changes, the latest first.
func (db *DB) ListChanges(ctx context.Context, f store.ChangeFilter) ([]store.Change, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 20
	}
	where := []string{"domain_id = ?", "account_id = ?"}
	args := []any{f.DomainID, f.AccountID}
	if !f.From.IsZero() {
		where = append(where, "live_at >= ?")
		args = append(args, bound(f.From))
	}
	if !f.To.IsZero() {
		where = append(where, "live_at < ?")
		args = append(args, bound(f.To))
	}
	if f.Unmeasured {
		where = append(where, "lift_measured_at IS NULL")
	}
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		where = append(where, "(live_at, id) < (?, ?)")
		args = append(args, at, id)
	}
	q := `SELECT ` + changeColumns + ` FROM domain_changes WHERE ` + strings.Join(where, " AND ") + ` ORDER BY live_at DESC, id DESC LIMIT ?`
	return queryPage(ctx, db.r, "changes", q, append(args, limit+1), limit, scanChange,
		func(c store.Change) string { return pageCursor(c.At, c.ID) })
}

// DeleteChange deletes a change of the account's domain.
func (db *DB) DeleteChange(ctx context.Context, accountID, domainID, id string) error {
	res, err := db.w.ExecContext(ctx, `DELETE FROM domain_changes WHERE id = ? AND domain_id = ? AND account_id = ?`, id, domainID, accountID)
	if err != nil {
		return fmt.Errorf("sqlite: delete change: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: change %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// MarkLiftMeasured sets a change's lift_measured_at, once.
func (t *txn) MarkLiftMeasured(accountID, id string, at time.Time) error {
	res, err := t.tx.Exec(`UPDATE domain_changes SET lift_measured_at = ? WHERE id = ? AND account_id = ? AND lift_measured_at IS NULL`,
		stamp(at), id, accountID)
	if err != nil {
		return fmt.Errorf("sqlite: mark lift measured: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var one int
	if err := t.tx.QueryRow(`SELECT 1 FROM domain_changes WHERE id = ? AND account_id = ?`, id, accountID).Scan(&one); err != nil {
		return fmt.Errorf("sqlite: change %s: %w", id, notFound(err))
	}
	return fmt.Errorf("sqlite: change %s: lift measured already: %w", id, store.ErrConflict)
}
