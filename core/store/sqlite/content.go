package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/text"
)

// querier is what *sql.DB and *sql.Tx share, so reads are written once.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

const crColumns = `id, account_id, client_id, key_id, type, status, domain, url, content, target_queries, metadata,
	budget, spent, budget_month, failure_reason, result, created_at, updated_at, started_at, ended_at,
	step, attempts, lease_until, work, handbacks, holder`

// crListColumns leaves the content and the work out: list pages do not
// carry them.
var crListColumns = strings.Replace(strings.Replace(crColumns, "content,", "NULL,", 1), "work", "NULL", 1)

func scanCR(s scanner) (store.ContentRequest, error) {
	var c store.ContentRequest
	var client, key, url, content, reason, result, step, work, holder sql.NullString
	var queries, meta string
	var created, updated, started, ended, lease sql.NullInt64
	err := s.Scan(&c.ID, &c.AccountID, &client, &key, &c.Type, &c.Status, &c.Domain, &url, &content, &queries, &meta,
		&c.Budget, &c.Spent, &c.BudgetMonth, &reason, &result, &created, &updated, &started, &ended,
		&step, &c.Attempts, &lease, &work, &c.HandBacks, &holder)
	if err != nil {
		return c, err
	}
	c.ClientID, c.KeyID, c.URL, c.Content, c.FailureReason = client.String, key.String, url.String, content.String, reason.String
	c.Step, c.LeaseUntil, c.Holder = step.String, fromNS(lease), holder.String
	if result.Valid {
		c.Result = []byte(result.String)
	}
	if work.Valid {
		c.Work = []byte(work.String)
	}
	if err := json.Unmarshal([]byte(queries), &c.TargetQueries); err != nil {
		return c, fmt.Errorf("target_queries: %w", err)
	}
	if err := json.Unmarshal([]byte(meta), &c.Metadata); err != nil {
		return c, fmt.Errorf("metadata: %w", err)
	}
	c.CreatedAt, c.UpdatedAt, c.StartedAt, c.EndedAt = fromNS(created), fromNS(updated), fromNS(started), fromNS(ended)
	return c, nil
}

func getCR(ctx context.Context, q querier, accountID, id string) (store.ContentRequest, error) {
	c, err := scanCR(q.QueryRowContext(ctx, `SELECT `+crColumns+` FROM content_requests WHERE id = ? AND account_id = ?`, id, accountID))
	if err != nil {
		return c, fmt.Errorf("sqlite: content request %s: %w", id, notFound(err))
	}
	return c, nil
}

func activeCount(ctx context.Context, q querier, accountID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM content_requests WHERE account_id = ? AND status IN ('queued', 'processing')`,
		accountID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqlite: active content requests: %w", err)
	}
	return n, nil
}

func budgetMonth(ctx context.Context, q querier, accountID, month string) (store.BudgetMonth, error) {
	var b store.BudgetMonth
	err := q.QueryRowContext(ctx, `SELECT spent, reserved FROM budget_months WHERE account_id = ? AND month = ?`,
		accountID, month).Scan(&b.Spent, &b.Reserved)
	if err == sql.ErrNoRows {
		return b, nil
	}
	if err != nil {
		return b, fmt.Errorf("sqlite: budget month: %w", err)
	}
	return b, nil
}

// ContentRequest reads one of an account's content requests.
func (db *DB) ContentRequest(ctx context.Context, accountID, id string) (store.ContentRequest, error) {
	return getCR(ctx, db.r, accountID, id)
}

// Budget reads an account's ledger for a month and its active requests.
func (db *DB) Budget(ctx context.Context, accountID, month string) (store.BudgetMonth, int, error) {
	var b store.BudgetMonth
	var active int
	if err := db.budget.QueryRowContext(ctx, accountID, month).Scan(&active, &b.Spent, &b.Reserved); err != nil {
		return b, 0, fmt.Errorf("sqlite: budget: %w", err)
	}
	return b, active, nil
}

const budgetQuery = `SELECT
	(SELECT count(*) FROM content_requests WHERE account_id = ?1 AND status IN ('queued', 'processing')),
	coalesce((SELECT spent FROM budget_months WHERE account_id = ?1 AND month = ?2), 0),
	coalesce((SELECT reserved FROM budget_months WHERE account_id = ?1 AND month = ?2), 0)`

// pageCursor is the opaque cursor after the row created at t with id.
func pageCursor(t time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(t.UnixNano(), 10) + ":" + id))
}

// listPage reads one page of rows, newest first, and the cursor of the
// next page ("" on the last). q selects the rows and ends in its WHERE
// conditions, whose arguments are args; the cursor and limit (default 20)
// are added here.
func listPage[T any](ctx context.Context, db *sql.DB, what, q string, args []any, cursor string, limit int,
	scan func(scanner) (T, error), key func(T) (time.Time, string)) ([]T, string, error) {
	if limit <= 0 {
		limit = 20
	}
	if cursor != "" {
		ts, id, err := decodeCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (created_at, id) < (?, ?)`
		args = append(args, ts, id)
	}
	return queryPage(ctx, db, what, q+` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit+1), limit, scan,
		func(v T) string { return pageCursor(key(v)) })
}

// queryPage runs q, whose LIMIT is one past limit, and returns at most
// limit rows and, when more follow, the cursor of the last one.
func queryPage[T any](ctx context.Context, db *sql.DB, what, q string, args []any, limit int,
	scan func(scanner) (T, error), cursor func(T) string) ([]T, string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: list %s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, "", fmt.Errorf("sqlite: list %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	return out, cursor(out[limit-1]), nil
}

// decodeCursor reads back what pageCursor made, the time in Unix
// nanoseconds (ErrMalformed for anything else: an id is text).
func decodeCursor(s string) (int64, string, error) {
	b, _ := base64.RawURLEncoding.DecodeString(s)
	ts, id, _ := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" || !text.Valid(id) || pageCursor(time.Unix(0, n), id) != s {
		return 0, "", store.ErrMalformed
	}
	return n, id, nil
}

// ListContentRequests returns one page, newest first.
func (db *DB) ListContentRequests(ctx context.Context, f store.ContentFilter) ([]store.ContentRequest, string, error) {
	where := []string{"account_id = ?"}
	args := []any{f.AccountID}
	for _, c := range []struct{ col, val string }{{"client_id", f.ClientID}, {"status", f.Status}, {"domain", f.Domain}} {
		if c.val != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.val)
		}
	}
	return listPage(ctx, db.r, "content requests", `SELECT `+crListColumns+` FROM content_requests WHERE `+strings.Join(where, " AND "),
		args, f.Cursor, f.Limit, scanCR, func(c store.ContentRequest) (time.Time, string) { return c.CreatedAt, c.ID })
}

// txn is a write transaction.
type txn struct {
	db     *DB
	tx     *wtx
	topics []string // published to: woken after the commit
	kinds  []string // of the events published, counted after the commit
	// The newest readings: this call's writes, its group's earlier calls'
	// (committed with it), and the writer's cache of committed ones.
	readings map[readingKey]latestEntry
	group    map[readingKey]latestEntry
	cache    *latestReadings
}

var bg = context.Background()

func (t *txn) ContentRequest(accountID, id string) (store.ContentRequest, error) {
	return getCR(bg, t.tx, accountID, id)
}

func (t *txn) ActiveContentRequests(accountID string) (int, error) {
	return activeCount(bg, t.tx, accountID)
}

func (t *txn) BudgetMonth(accountID, month string) (store.BudgetMonth, error) {
	return budgetMonth(bg, t.tx, accountID, month)
}

func (t *txn) AddToBudgetMonth(accountID, month string, spent, reserved int64) error {
	if spent < 0 || reserved < 0 {
		// Money is released or moved only where it was reserved: the month
		// must exist, and the CHECKs refuse going below zero.
		res, err := t.tx.Exec(`UPDATE budget_months SET spent = spent + ?3, reserved = reserved + ?4
			WHERE account_id = ?1 AND month = ?2`, accountID, month, spent, reserved)
		if err != nil {
			return fmt.Errorf("sqlite: budget month: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("sqlite: budget month %s of %s: nothing to release: %w", month, accountID, store.ErrNotFound)
		}
		return nil
	}
	_, err := t.tx.Exec(`INSERT INTO budget_months (account_id, month, spent, reserved) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (account_id, month) DO UPDATE SET spent = spent + ?3, reserved = reserved + ?4`,
		accountID, month, spent, reserved)
	if err != nil {
		return fmt.Errorf("sqlite: budget month: %w", err)
	}
	return nil
}

func crArgs(c store.ContentRequest) ([]any, error) {
	queries, err := listJSON(c.TargetQueries)
	if err != nil {
		return nil, err
	}
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	if err := store.CheckMetadata(c.Metadata); err != nil {
		return nil, err
	}
	meta, err := json.Marshal(c.Metadata)
	if err != nil {
		return nil, err
	}
	var result, work any
	if c.Result != nil {
		result = string(c.Result)
	}
	if c.Work != nil {
		work = string(c.Work)
	}
	return []any{c.ID, c.AccountID, nullStr(c.ClientID), nullStr(c.KeyID), c.Type, c.Status, c.Domain, nullStr(c.URL),
		nullAnyBytes(c.Content), queries, string(meta), c.Budget, c.Spent, c.BudgetMonth, nullStr(c.FailureReason), result,
		stamp(c.CreatedAt), stamp(c.UpdatedAt), ns(c.StartedAt), ns(c.EndedAt),
		nullStr(c.Step), c.Attempts, ns(c.LeaseUntil), work, c.HandBacks, nullStr(c.Holder)}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (t *txn) InsertContentRequest(c store.ContentRequest) error {
	args, err := crArgs(c)
	if err != nil {
		return err
	}
	_, err = t.tx.Exec(`INSERT INTO content_requests (`+crColumns+`) VALUES (`+placeholders(26)+`)`, args...)
	if err != nil {
		return fmt.Errorf("sqlite: insert content request: %w", conflict(err))
	}
	return nil
}

func (t *txn) UpdateContentRequest(c store.ContentRequest, claim int) error {
	args, err := crArgs(c)
	if err != nil {
		return err
	}
	q := `UPDATE content_requests SET (` + crColumns + `) = (` + placeholders(26) + `) WHERE id = ?`
	args = append(args, c.ID)
	if claim > 0 {
		q += ` AND status = 'processing' AND attempts = ?`
		args = append(args, claim)
	}
	res, err := t.tx.Exec(q, args...)
	if err != nil {
		return fmt.Errorf("sqlite: update content request: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if claim > 0 {
			if _, err := getCR(bg, t.tx, c.AccountID, c.ID); err == nil {
				return fmt.Errorf("sqlite: content request %s is not processing under claim %d: %w", c.ID, claim, store.ErrLost)
			}
		}
		return fmt.Errorf("sqlite: content request %s: %w", c.ID, store.ErrNotFound)
	}
	return nil
}

func (t *txn) Idempotency(scope, key string, notBefore time.Time) (store.Idempotency, error) {
	r := store.Idempotency{Scope: scope, Key: key}
	var created int64
	err := t.tx.QueryRow(`SELECT request_hash, status, body, created_at FROM idempotency_keys WHERE scope = ? AND key = ? AND created_at >= ?`,
		scope, key, bound(notBefore)).Scan(&r.RequestHash, &r.Status, &r.Body, &created)
	if err != nil {
		return r, notFound(err)
	}
	r.CreatedAt = time.Unix(0, created).UTC()
	return r, nil
}

func (t *txn) PutIdempotency(r store.Idempotency) error {
	_, err := t.tx.Exec(`INSERT INTO idempotency_keys (scope, key, request_hash, status, body, created_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (scope, key) DO UPDATE SET request_hash = excluded.request_hash, status = excluded.status,
		body = excluded.body, created_at = excluded.created_at`,
		r.Scope, r.Key, r.RequestHash, r.Status, r.Body, stamp(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("sqlite: put idempotency: %w", err)
	}
	return nil
}

func (t *txn) DeleteIdempotency(scope, key string) error {
	if _, err := t.tx.Exec(`DELETE FROM idempotency_keys WHERE scope = ? AND key = ?`, scope, key); err != nil {
		return fmt.Errorf("sqlite: delete idempotency: %w", err)
	}
	return nil
}

// DeleteIdempotencyBefore forgets idempotency records made before t.
func (db *DB) DeleteIdempotencyBefore(ctx context.Context, t time.Time) (int64, error) {
	res, err := db.w.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE created_at < ?`, bound(t))
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune idempotency keys: %w", err)
	}
	return res.RowsAffected()
}
