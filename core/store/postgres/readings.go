package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/store"
)

// Readings. A reading's owner is its account and client_id, '' for the
// account's own. Recording one reads the owner's latest and inserts, in
// one SERIALIZABLE Update: a reading recorded meanwhile for the same owner
// and domain makes one of the two run again, which then compares with it.

const readingColumns = `id, account_id, client_id, domain, visibility_score, sentiment, sentiment_score, source, measured_at, measured_at_ns,
	formula_version`

func scanReading(s scanner, extra ...any) (store.Reading, error) {
	var r store.Reading
	var measured tcol
	var formula *int
	err := s.Scan(append([]any{&r.ID, &r.AccountID, &r.ClientID, &r.Domain, &r.VisibilityScore, &r.Sentiment, &r.SentimentScore,
		&r.Source, &measured.t, &measured.ns, &formula}, extra...)...)
	r.MeasuredAt = measured.time()
	if formula != nil {
		r.FormulaVersion = *formula
	}
	return r, err
}

// AddReading stores a visibility reading in a transaction of its own.
func (db *DB) AddReading(ctx context.Context, r store.Reading) (store.Reading, error) {
	err := db.Update(ctx, func(tx store.Tx) (err error) {
		r, err = tx.InsertReading(r)
		return err
	})
	return r, err
}

// readingsQuery selects the newest limit readings of f's domain that meet
// cond (its arguments follow), newest measured first. With a client it
// reads that owner's readings along the index; without, those of every
// owner of the account: it finds the owners that have readings of the
// domain by skipping along the index from one client_id to the next (a
// recursive query, an index search per owner), takes the newest limit of
// each, and merges them. An account has few owners of one domain, so that
// costs a few searches where a sort of the domain's whole history would
// not scale.
func readingsQuery(f store.ReadingFilter, cond string, condArgs []any, limit int) (string, []any) {
	var w where
	w.and("account_id = ? AND domain = ?", f.AccountID, f.Domain) // $1, $2
	if f.ClientID != "" {
		w.and("client_id = ?", f.ClientID)
	} else {
		w.and("client_id = o.client_id")
	}
	if cond != "" {
		w.and(cond, condArgs...)
	}
	order := ` ORDER BY measured_at DESC, measured_at_ns DESC, id DESC LIMIT ` + strconv.Itoa(limit)
	if f.ClientID != "" {
		return `SELECT ` + readingColumns + ` FROM visibility_readings WHERE ` + w.String() + order, w.args
	}
	return `WITH RECURSIVE owners (client_id) AS (
			SELECT min(client_id) FROM visibility_readings WHERE account_id = $1 AND domain = $2
			UNION ALL
			SELECT (SELECT min(r.client_id) FROM visibility_readings r
				WHERE r.account_id = $1 AND r.domain = $2 AND r.client_id > o.client_id)
			FROM owners o WHERE o.client_id IS NOT NULL
		)
		SELECT r.* FROM owners o CROSS JOIN LATERAL (
			SELECT ` + readingColumns + ` FROM visibility_readings WHERE ` + w.String() + order + `) r
		WHERE o.client_id IS NOT NULL` + order, w.args
}

// LatestReading finds the newest reading of a domain in an account (or one
// client's).
func (db *DB) LatestReading(ctx context.Context, f store.ReadingFilter) (store.Reading, error) {
	var cond string
	var args []any
	if !f.AtOrBefore.IsZero() {
		at, n := bound(f.AtOrBefore)
		cond, args = "(measured_at, measured_at_ns) <= (?, ?)", []any{at, n}
	}
	q, args := readingsQuery(f, cond, args, 1)
	r, err := scanReading(db.pool.QueryRow(ctx, q, args...))
	if err != nil {
		return r, fmt.Errorf("postgres: latest reading: %w", notFound(err))
	}
	return r, nil
}

// LatestReadings finds, in one query, the newest n readings of each of
// an account's monitored domains, each of the domain's own owner.
func (db *DB) LatestReadings(ctx context.Context, accountID string, domainIDs []string, n int) (map[string][]store.Reading, error) {
	out, err := byDomain(ctx, db.pool, scanReading, `SELECT r.*, d.id FROM monitored_domains d CROSS JOIN LATERAL (
			SELECT `+readingColumns+` FROM visibility_readings
			WHERE account_id = d.account_id AND client_id = coalesce(d.client_id, '') AND domain = d.domain
			ORDER BY measured_at DESC, measured_at_ns DESC, id DESC LIMIT $3) r
		WHERE d.account_id = $1 AND d.id = ANY($2)
		ORDER BY d.id, r.measured_at DESC, r.measured_at_ns DESC, r.id DESC`, accountID, domainIDs, max(n, 1))
	if err != nil {
		return nil, fmt.Errorf("postgres: latest readings: %w", err)
	}
	return out, nil
}

// byDomain runs a query of records of monitored domains ($1 the account,
// $2 the domains' ids), each row's last column the id of the domain it is
// of, and gathers each domain's records in their order.
func byDomain[T any](ctx context.Context, q querier, scan func(scanner, ...any) (T, error), sql, accountID string,
	domainIDs []string, args ...any) (map[string][]T, error) {
	out := make(map[string][]T, len(domainIDs))
	if len(domainIDs) == 0 {
		return out, nil
	}
	type found struct {
		id string
		v  T
	}
	rs, err := collect(ctx, q, func(s scanner) (found, error) {
		var f found
		var err error
		f.v, err = scan(s, &f.id)
		return f, err
	}, sql, append([]any{accountID, domainIDs}, args...)...)
	if err != nil {
		return nil, err
	}
	for _, f := range rs {
		out[f.id] = append(out[f.id], f.v)
	}
	return out, nil
}

// ListReadings pages through a domain's readings, newest measured first.
func (db *DB) ListReadings(ctx context.Context, f store.ReadingFilter, cursor string, limit int) ([]store.Reading, string, error) {
	if limit <= 0 {
		limit = 20
	}
	var cond string
	var args []any
	if cursor != "" {
		at, id, err := decodeCursor(cursor)
		n, perr := strconv.ParseInt(id, 10, 64)
		if err != nil || perr != nil {
			return nil, "", store.ErrMalformed
		}
		t, tn := bound(at)
		cond, args = "(measured_at, measured_at_ns, id) < (?, ?, ?)", []any{t, tn, n}
	}
	q, args := readingsQuery(f, cond, args, limit+1)
	return queryPage(ctx, db.pool, "readings", q, args, limit, func(s scanner) (store.Reading, error) { return scanReading(s) },
		func(r store.Reading) string { return pageCursor(r.MeasuredAt, strconv.FormatInt(r.ID, 10)) })
}

// LatestReading is the newest reading of exactly one owner.
func (t *txn) LatestReading(f store.ReadingFilter) (store.Reading, error) {
	r, err := scanReading(t.tx.QueryRow(t.ctx, `SELECT `+readingColumns+` FROM visibility_readings
		WHERE account_id = $1 AND domain = $2 AND client_id = $3
		ORDER BY measured_at DESC, measured_at_ns DESC, id DESC LIMIT 1`, f.AccountID, f.Domain, f.ClientID))
	if err != nil {
		return r, fmt.Errorf("postgres: latest reading: %w", notFound(err))
	}
	return r, nil
}

// InsertReadings reads the owners' latest and writes the readings in one
// batch (one round trip): the read runs first, so it sees none of them.
// The rows are written in their order, each taking the next id, so the
// ids, sorted, are theirs in turn.
func (t *txn) InsertReadings(rs []store.Reading) (added, before []store.Reading, err error) {
	if len(rs) == 0 {
		return nil, nil, nil
	}
	type owner struct{ account, client, domain string }
	latest := make(map[owner]store.Reading, len(rs))
	asked := make(map[owner]bool, len(rs))
	var keys, rows columns
	for _, r := range rs {
		if k := (owner{r.AccountID, r.ClientID, r.Domain}); !asked[k] {
			asked[k] = true
			keys.row()
			keys.text(r.AccountID, r.ClientID, r.Domain)
		}
		rows.row()
		rows.text(r.AccountID, r.ClientID, r.Domain)
		rows.int(r.VisibilityScore)
		rows.text(r.Sentiment)
		put(&rows, r.SentimentScore)
		rows.text(r.Source)
		rows.time(r.MeasuredAt)
		rows.nullInt(r.FormulaVersion)
	}
	if rows.err != nil {
		return nil, nil, fmt.Errorf("postgres: add readings: %w", rows.err)
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT `+prefixed("r.", readingColumns)+` FROM unnest(`+keys.params("text", "text", "text")+`) AS k (a, c, d)
		CROSS JOIN LATERAL (SELECT `+readingColumns+` FROM visibility_readings WHERE account_id = k.a AND domain = k.d AND client_id = k.c
			ORDER BY measured_at DESC, measured_at_ns DESC, id DESC LIMIT 1) r`, keys.args()...)
	b.Queue(`INSERT INTO visibility_readings (account_id, client_id, domain, visibility_score, sentiment, sentiment_score, source,
			measured_at, measured_at_ns, formula_version)
		SELECT a, c, d, s, se, ss, so, m, mn, f FROM unnest(`+rows.params("text", "text", "text", "int4", "text", "float8", "text",
		"timestamptz", "int2", "int4")+`) WITH ORDINALITY AS u (a, c, d, s, se, ss, so, m, mn, f, i)
		ORDER BY i RETURNING id`, rows.args()...)
	br := t.tx.SendBatch(t.ctx, b)
	defer br.Close()
	found, err := br.Query()
	if err == nil {
		var rs []store.Reading
		rs, err = pgx.CollectRows(found, func(row pgx.CollectableRow) (store.Reading, error) { return scanReading(row) })
		for _, r := range rs {
			latest[owner{r.AccountID, r.ClientID, r.Domain}] = r
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: add readings: %w", err)
	}
	var ids []int64
	written, err := br.Query()
	if err == nil {
		ids, err = pgx.CollectRows(written, pgx.RowTo[int64])
	}
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: add readings: %w", conflict(err))
	}
	if len(ids) != len(rs) {
		return nil, nil, fmt.Errorf("postgres: add readings: %d of %d written", len(ids), len(rs))
	}
	slices.Sort(ids)
	added, before = slices.Clone(rs), make([]store.Reading, len(rs))
	for i, r := range rs {
		added[i].ID = ids[i]
		before[i] = latest[owner{r.AccountID, r.ClientID, r.Domain}]
	}
	return added, before, nil
}

func (t *txn) InsertReading(r store.Reading) (store.Reading, error) {
	err := t.tx.QueryRow(t.ctx, `INSERT INTO visibility_readings (account_id, client_id, domain, visibility_score, sentiment,
		sentiment_score, source, measured_at, measured_at_ns, formula_version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
		r.AccountID, r.ClientID, r.Domain, r.VisibilityScore, r.Sentiment, r.SentimentScore, r.Source, ts(r.MeasuredAt), ns(r.MeasuredAt),
		nullInt(r.FormulaVersion)).Scan(&r.ID)
	if err != nil {
		return r, fmt.Errorf("postgres: add reading: %w", conflict(err))
	}
	return r, nil
}
