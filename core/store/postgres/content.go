package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aivis/aivis/core/store"
)

// Content requests and the budget ledger. The budget and the
// active-request cap are read and then written in one Update, which is
// SERIALIZABLE (see the package comment): of callers that race past the
// cap, all but one are failed by PostgreSQL and run again, and then see
// it reached. A step of a claimed request is fenced by the claim's number
// (UPDATE ... WHERE attempts = the claim's).

const crColumns = `id, account_id, client_id, key_id, type, status, domain, url, content, target_queries, metadata,
	budget, spent, budget_month, failure_reason, result, step, attempts, handbacks, holder, lease_until, lease_until_ns,
	work, created_at, created_at_ns, updated_at, updated_at_ns, started_at, started_at_ns, ended_at, ended_at_ns`

// crListColumns leaves the content and the work out: list pages do not
// carry them.
var crListColumns = strings.Replace(strings.Replace(crColumns, "content,", "NULL,", 1), "work,", "NULL,", 1)

func scanCR(s scanner) (store.ContentRequest, error) {
	var c store.ContentRequest
	var key, url, reason, step, holder *string
	var content []byte
	var lease, created, updated, started, ended tcol
	err := s.Scan(&c.ID, &c.AccountID, &c.ClientID, &key, &c.Type, &c.Status, &c.Domain, &url, &content, &c.TargetQueries, &c.Metadata,
		&c.Budget, &c.Spent, &c.BudgetMonth, &reason, &c.Result, &step, &c.Attempts, &c.HandBacks, &holder, &lease.t, &lease.ns,
		&c.Work, &created.t, &created.ns, &updated.t, &updated.ns, &started.t, &started.ns, &ended.t, &ended.ns)
	if err != nil {
		return c, err
	}
	c.KeyID, c.URL, c.Content, c.FailureReason, c.Step, c.Holder = str(key), str(url), string(content), str(reason), str(step), str(holder)
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	c.LeaseUntil, c.CreatedAt, c.UpdatedAt, c.StartedAt, c.EndedAt = lease.time(), created.time(), updated.time(), started.time(), ended.time()
	return c, nil
}

// bytesOf is a string's bytes, NULL for "".
func bytesOf(s string) any {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// str is "" for NULL.
func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// crArgs are the values of crColumns.
func crArgs(c store.ContentRequest) ([]any, error) {
	meta := c.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	if err := store.CheckMetadata(meta); err != nil {
		return nil, err
	}
	return []any{c.ID, c.AccountID, c.ClientID, null(c.KeyID), c.Type, c.Status, c.Domain, null(c.URL), bytesOf(c.Content),
		nonNil(c.TargetQueries), meta, c.Budget, c.Spent, c.BudgetMonth, null(c.FailureReason), c.Result, null(c.Step),
		c.Attempts, c.HandBacks, null(c.Holder), tsz(c.LeaseUntil), nsz(c.LeaseUntil),
		c.Work, ts(c.CreatedAt), ns(c.CreatedAt), ts(c.UpdatedAt), ns(c.UpdatedAt), tsz(c.StartedAt), nsz(c.StartedAt),
		tsz(c.EndedAt), nsz(c.EndedAt)}, nil
}

// params is "$1, $2, ... $n".
func params(from, n int) string {
	p := make([]string, n)
	for i := range p {
		p[i] = "$" + strconv.Itoa(from+i)
	}
	return strings.Join(p, ", ")
}

func getCR(ctx context.Context, q querier, accountID, id string) (store.ContentRequest, error) {
	c, err := scanCR(q.QueryRow(ctx, `SELECT `+crColumns+` FROM content_requests WHERE id = $1 AND account_id = $2`, id, accountID))
	if err != nil {
		return c, fmt.Errorf("postgres: content request %s: %w", id, notFound(err))
	}
	return c, nil
}

// ContentRequest reads one of an account's content requests.
func (db *DB) ContentRequest(ctx context.Context, accountID, id string) (store.ContentRequest, error) {
	return getCR(ctx, db.pool, accountID, id)
}

// ContentRequestClaim reads a request's status and attempts only.
func (db *DB) ContentRequestClaim(ctx context.Context, accountID, id string) (string, int, error) {
	var status string
	var attempts int
	err := db.pool.QueryRow(ctx, `SELECT status, attempts FROM content_requests WHERE id = $1 AND account_id = $2`, id, accountID).
		Scan(&status, &attempts)
	if err != nil {
		return "", 0, fmt.Errorf("postgres: content request %s: %w", id, notFound(err))
	}
	return status, attempts, nil
}

// Budget reads an account's ledger for a month and its active requests,
// in one statement (one snapshot).
func (db *DB) Budget(ctx context.Context, accountID, month string) (store.BudgetMonth, int, error) {
	var b store.BudgetMonth
	var active int
	err := db.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM content_requests WHERE account_id = $1 AND status IN ('queued', 'processing')),
		coalesce((SELECT spent FROM budget_months WHERE account_id = $1 AND month = $2), 0),
		coalesce((SELECT reserved FROM budget_months WHERE account_id = $1 AND month = $2), 0)`, accountID, month).
		Scan(&active, &b.Spent, &b.Reserved)
	if err != nil {
		return b, 0, fmt.Errorf("postgres: budget: %w", err)
	}
	return b, active, nil
}

// ListContentRequests returns one page, newest first.
func (db *DB) ListContentRequests(ctx context.Context, f store.ContentFilter) ([]store.ContentRequest, string, error) {
	var w where
	w.and("account_id = ?", f.AccountID)
	for _, c := range []struct{ col, val string }{{"client_id", f.ClientID}, {"status", f.Status}, {"domain", f.Domain}} {
		if c.val != "" {
			w.and(c.col+" = ?", c.val)
		}
	}
	return listPage(ctx, db, "content requests", `SELECT `+crListColumns+` FROM content_requests`, w, "created_at", f.Cursor, f.Limit,
		scanCR, func(c store.ContentRequest) (time.Time, string) { return c.CreatedAt, c.ID })
}

func (t *txn) ContentRequest(accountID, id string) (store.ContentRequest, error) {
	return getCR(t.ctx, t.tx, accountID, id)
}

func (t *txn) ActiveContentRequests(accountID string) (int, error) {
	var n int
	err := t.tx.QueryRow(t.ctx, `SELECT count(*) FROM content_requests WHERE account_id = $1 AND status IN ('queued', 'processing')`,
		accountID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: active content requests: %w", err)
	}
	return n, nil
}

func (t *txn) BudgetMonth(accountID, month string) (store.BudgetMonth, error) {
	var b store.BudgetMonth
	err := t.tx.QueryRow(t.ctx, `SELECT spent, reserved FROM budget_months WHERE account_id = $1 AND month = $2`, accountID, month).
		Scan(&b.Spent, &b.Reserved)
	if err = notFound(err); err != nil && err != store.ErrNotFound {
		return b, fmt.Errorf("postgres: budget month: %w", err)
	}
	return b, nil
}

// AddToBudgetMonth adds to a month's ledger. A release (a negative amount)
// changes only a month that has enough, and is refused (changing nothing,
// the transaction still usable) otherwise.
func (t *txn) AddToBudgetMonth(accountID, month string, spent, reserved int64) error {
	if spent < 0 || reserved < 0 {
		tag, err := t.tx.Exec(t.ctx, `UPDATE budget_months SET spent = spent + $3, reserved = reserved + $4
			WHERE account_id = $1 AND month = $2 AND spent + $3 >= 0 AND reserved + $4 >= 0`, accountID, month, spent, reserved)
		if err != nil {
			return fmt.Errorf("postgres: budget month: %w", err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("postgres: budget month %s of %s: not that much to release: %w", month, accountID, store.ErrNotFound)
		}
		return nil
	}
	_, err := t.tx.Exec(t.ctx, `INSERT INTO budget_months AS b (account_id, month, spent, reserved) VALUES ($1, $2, $3, $4)
		ON CONFLICT (account_id, month) DO UPDATE SET spent = b.spent + $3, reserved = b.reserved + $4`,
		accountID, month, spent, reserved)
	if err != nil {
		return fmt.Errorf("postgres: budget month: %w", err)
	}
	return nil
}

func (t *txn) InsertContentRequest(c store.ContentRequest) error {
	args, err := crArgs(c)
	if err != nil {
		return err
	}
	tag, err := t.tx.Exec(t.ctx, `INSERT INTO content_requests (`+crColumns+`) VALUES (`+params(1, 31)+`)
		ON CONFLICT (id) DO NOTHING`, args...)
	if err != nil {
		return fmt.Errorf("postgres: insert content request: %w", conflict(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: content request %s exists: %w", c.ID, store.ErrConflict)
	}
	return nil
}

func (t *txn) UpdateContentRequest(c store.ContentRequest, claim int) error {
	q := `UPDATE content_requests SET (` + crColumns + `) = (` + params(1, 31) + `) WHERE id = $1 AND account_id = $2`
	args, err := crArgs(c)
	if err != nil {
		return err
	}
	if claim > 0 {
		q += ` AND status = 'processing' AND attempts = $32`
		args = append(args, claim)
	}
	tag, err := t.tx.Exec(t.ctx, q, args...)
	if err != nil {
		return fmt.Errorf("postgres: update content request: %w", conflict(err))
	}
	if tag.RowsAffected() == 0 {
		if claim > 0 {
			if _, err := getCR(t.ctx, t.tx, c.AccountID, c.ID); err == nil {
				return fmt.Errorf("postgres: content request %s is not processing under claim %d: %w", c.ID, claim, store.ErrLost)
			}
		}
		return fmt.Errorf("postgres: content request %s: %w", c.ID, store.ErrNotFound)
	}
	return nil
}

func (t *txn) Idempotency(scope, key string, notBefore time.Time) (store.Idempotency, error) {
	r := store.Idempotency{Scope: scope, Key: key}
	var created tcol
	at, n := bound(notBefore)
	err := t.tx.QueryRow(t.ctx, `SELECT request_hash, status, body, created_at, created_at_ns FROM idempotency_keys
		WHERE scope = $1 AND key = $2 AND (created_at, created_at_ns) >= ($3, $4)`, scope, key, at, n).
		Scan(&r.RequestHash, &r.Status, &r.Body, &created.t, &created.ns)
	if err != nil {
		return r, fmt.Errorf("postgres: idempotency: %w", notFound(err))
	}
	r.CreatedAt = created.time()
	return r, nil
}

func (t *txn) PutIdempotency(r store.Idempotency) error {
	_, err := t.tx.Exec(t.ctx, `INSERT INTO idempotency_keys (scope, key, request_hash, status, body, created_at, created_at_ns)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (scope, key) DO UPDATE SET request_hash = excluded.request_hash, status = excluded.status,
		body = excluded.body, created_at = excluded.created_at, created_at_ns = excluded.created_at_ns`,
		r.Scope, r.Key, r.RequestHash, r.Status, r.Body, ts(r.CreatedAt), ns(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("postgres: put idempotency: %w", err)
	}
	return nil
}

func (t *txn) DeleteIdempotency(scope, key string) error {
	if _, err := t.tx.Exec(t.ctx, `DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2`, scope, key); err != nil {
		return fmt.Errorf("postgres: delete idempotency: %w", err)
	}
	return nil
}

// DeleteIdempotencyBefore forgets idempotency records made before t.
func (db *DB) DeleteIdempotencyBefore(ctx context.Context, t time.Time) (int64, error) {
	at, n := bound(t)
	tag, err := db.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE (created_at, created_at_ns) < ($1, $2)`, at, n)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune idempotency keys: %w", err)
	}
	return tag.RowsAffected(), nil
}
