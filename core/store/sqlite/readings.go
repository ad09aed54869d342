package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/aivis/aivis/core/store"
)

// AddReading stores a visibility reading (through the writer, whose
// cache of the newest readings it keeps true).
func (db *DB) AddReading(ctx context.Context, r store.Reading) (store.Reading, error) {
	err := db.Update(ctx, func(tx store.Tx) (err error) {
		r, err = tx.InsertReading(r)
		return err
	})
	return r, err
}

// LatestReading finds the newest reading of a domain in an account (or one client).
func (db *DB) LatestReading(ctx context.Context, f store.ReadingFilter) (store.Reading, error) {
	var cond string
	var args []any
	if !f.AtOrBefore.IsZero() {
		cond, args = `measured_at <= ?`, []any{bound(f.AtOrBefore)}
	}
	q, args := readingsQuery(f, cond, args, 1)
	r, err := scanReading(db.r.QueryRowContext(ctx, q, args...))
	if err != nil {
		return r, fmt.Errorf("sqlite: latest reading: %w", notFound(err))
	}
	return r, nil
}

const readingColumns = `id, account_id, client_id, domain, visibility_score, sentiment, sentiment_score, source, measured_at,
	formula_version`

// readingsQuery selects the newest limit readings of f's domain that meet
// cond (its arguments follow), newest measured first. With a client it
// reads that owner's readings; without, those of every owner in the
// account: it visits the owners that have readings of the domain (the
// account itself and each client, found by skipping along the index from
// one client_id to the next), takes the newest limit of each and merges
// them. An account has few owners of one domain, so that costs a few
// index seeks where a sort of the domain's whole history would not scale.
func readingsQuery(f store.ReadingFilter, cond string, condArgs []any, limit int) (string, []any) {
	if cond != "" {
		cond = ` AND ` + cond
	}
	order := ` ORDER BY measured_at DESC, id DESC LIMIT ?`
	if f.ClientID != "" {
		args := append([]any{f.AccountID, f.Domain, f.ClientID}, condArgs...)
		return `SELECT ` + readingColumns + ` FROM visibility_readings
			WHERE account_id = ? AND domain = ? AND client_id = ?` + cond + order, append(args, limit)
	}
	const next = `SELECT client_id FROM visibility_readings WHERE account_id = ? AND domain = ? AND client_id > %s
		ORDER BY client_id LIMIT 1`
	args := []any{f.AccountID, f.Domain, f.AccountID, f.Domain, f.AccountID, f.Domain}
	args = append(append(args, condArgs...), limit, limit)
	return `WITH RECURSIVE clients(id) AS (
			SELECT (` + fmt.Sprintf(next, `''`) + `)
			UNION ALL
			SELECT (` + fmt.Sprintf(next, `c.id`) + `) FROM clients c WHERE c.id IS NOT NULL
		), owners(id) AS (SELECT NULL UNION ALL SELECT id FROM clients WHERE id IS NOT NULL)
		SELECT ` + prefixed("r.", readingColumns) + `
		FROM owners o JOIN visibility_readings r ON r.id IN (
			SELECT id FROM visibility_readings WHERE account_id = ? AND domain = ? AND client_id IS o.id` + cond + order + `)
		ORDER BY r.measured_at DESC, r.id DESC LIMIT ?`, args
}

// LatestReadings finds, in one query, the newest n readings of each of
// an account's monitored domains, each of the domain's own owner.
func (db *DB) LatestReadings(ctx context.Context, accountID string, domainIDs []string, n int) (map[string][]store.Reading, error) {
	out, err := byDomain(ctx, db.r, scanReading, latestReadingsQuery, accountID, domainIDs, max(n, 1))
	if err != nil {
		return nil, fmt.Errorf("sqlite: latest readings: %w", err)
	}
	return out, nil
}

// byDomain runs a query of records of monitored domains, each row's last
// column the id of the domain it is of, and gathers each domain's records
// in their order. The query's arguments are args, then the account, then
// the domains' ids.
func byDomain[T any](ctx context.Context, db *sql.DB, scan func(scanner) (T, error), query func(ids int) string,
	accountID string, domainIDs []string, args ...any) (map[string][]T, error) {
	out := make(map[string][]T, len(domainIDs))
	if len(domainIDs) == 0 {
		return out, nil
	}
	args = append(args, accountID)
	for _, id := range domainIDs {
		args = append(args, id)
	}
	rows, err := db.QueryContext(ctx, query(len(domainIDs)), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		v, err := scan(withLast{rows, &id})
		if err != nil {
			return nil, err
		}
		out[id] = append(out[id], v)
	}
	return out, rows.Err()
}

// latestReadingsQuery selects the newest n readings of each of an
// account's monitored domains (arguments: n, the account, the ids): per
// domain a search of the owner index that stops after n, whatever the
// length of its history.
func latestReadingsQuery(ids int) string {
	return `SELECT ` + prefixed("r.", readingColumns) + `, d.id
		FROM monitored_domains d JOIN visibility_readings r ON r.id IN (
			SELECT id FROM visibility_readings WHERE account_id = d.account_id AND client_id IS d.client_id AND domain = d.domain
			ORDER BY measured_at DESC, id DESC LIMIT ?)
		WHERE d.account_id = ? AND d.id IN (` + placeholders(ids) + `)
		ORDER BY d.id, r.measured_at DESC, r.id DESC`
}

// withLast scans a row whose last column follows what the scan function
// reads into extra.
type withLast struct {
	s     scanner
	extra any
}

func (w withLast) Scan(dest ...any) error { return w.s.Scan(append(dest, w.extra)...) }

func scanReading(s scanner) (store.Reading, error) {
	var r store.Reading
	var client sql.NullString
	var measured int64
	var formula sql.NullInt64
	err := s.Scan(&r.ID, &r.AccountID, &client, &r.Domain, &r.VisibilityScore, &r.Sentiment, &r.SentimentScore, &r.Source, &measured,
		&formula)
	r.ClientID, r.FormulaVersion = client.String, int(formula.Int64)
	r.MeasuredAt = time.Unix(0, measured).UTC()
	return r, err
}

// ListReadings pages through a domain's readings, newest measured first.
func (db *DB) ListReadings(ctx context.Context, f store.ReadingFilter, cursor string, limit int) ([]store.Reading, string, error) {
	if limit <= 0 {
		limit = 20
	}
	var cond string
	var args []any
	if cursor != "" {
		ts, id, err := decodeCursor(cursor)
		n, perr := strconv.ParseInt(id, 10, 64)
		if err != nil || perr != nil {
			return nil, "", store.ErrMalformed
		}
		cond, args = `(measured_at, id) < (?, ?)`, []any{ts, n}
	}
	q, args := readingsQuery(f, cond, args, limit+1)
	return queryPage(ctx, db.r, "readings", q, args, limit, scanReading,
		func(r store.Reading) string { return pageCursor(r.MeasuredAt, strconv.FormatInt(r.ID, 10)) })
}
