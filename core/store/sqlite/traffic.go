package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/text"
)

// Days are kept as their number since 1970-01-01 (UTC): an aggregate's
// key holds one in two or three bytes where a time would take eight.
const daySeconds = 24 * 60 * 60

// dayOf is the number of a day that is a UTC midnight from MinTime up to
// MaxTime; an error for any other time.
func dayOf(t time.Time) (int64, error) {
	if t.Before(store.MinTime) || !t.Before(store.MaxTime) || t.UnixNano()%(daySeconds*int64(time.Second)) != 0 {
		return 0, fmt.Errorf("sqlite: day %s is not a UTC midnight from %s up to %s",
			t.UTC().Format(time.RFC3339Nano), store.MinTime.Format(time.DateOnly), store.MaxTime.Format(time.DateOnly))
	}
	return t.Unix() / daySeconds, nil
}

// dayBound is the number of the first day whose midnight is at or after
// t, t clamped to the range days are kept in, where it compares the same.
func dayBound(t time.Time) int64 {
	switch {
	case t.Before(store.MinTime):
		t = store.MinTime
	case t.After(store.MaxTime):
		t = store.MaxTime
	}
	d := t.Unix() / daySeconds
	if t.After(time.Unix(d*daySeconds, 0)) {
		d++
	}
	return d
}

// dayFloor is the number of the day t falls on, t clamped as dayBound's.
func dayFloor(t time.Time) int64 {
	switch {
	case t.Before(store.MinTime):
		t = store.MinTime
	case t.After(store.MaxTime):
		t = store.MaxTime
	}
	return t.Unix() / daySeconds
}

func fromDay(d int64) time.Time { return time.Unix(d*daySeconds, 0).UTC() }

const tokenColumns = `id, account_id, client_id, domain_id, name, source, token_hash, prefix, signing_secret, fastly_service_id,
	created_at, last_used_at, revoked_at`

func scanToken(s scanner) (store.IngestToken, error) {
	var t store.IngestToken
	var client sql.NullString
	var created int64
	var used, revoked sql.NullInt64
	err := s.Scan(&t.ID, &t.AccountID, &client, &t.DomainID, &t.Name, &t.Source, &t.Hash, &t.Prefix, &t.SigningSecret,
		&t.FastlyServiceID, &created, &used, &revoked)
	t.ClientID, t.CreatedAt = client.String, time.Unix(0, created).UTC()
	if used.Valid {
		u := fromNS(used)
		t.LastUsedAt = &u
	}
	if revoked.Valid {
		r := fromNS(revoked)
		t.RevokedAt = &r
	}
	return t, err
}

// nsPtr is a time that may be none.
func nsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return stamp(*t)
}

// CreateIngestToken keeps a token of the account's domain, its client the
// domain's.
func (db *DB) CreateIngestToken(ctx context.Context, t store.IngestToken) error {
	return insertIngestToken(ctx, db.w, t)
}

// InsertIngestToken is CreateIngestToken in the transaction.
func (tx *txn) InsertIngestToken(t store.IngestToken) error { return insertIngestToken(bg, tx.tx, t) }

// insertIngestToken keeps a token through q: the writer or its
// transaction.
func insertIngestToken(ctx context.Context, q querier, t store.IngestToken) error {
	res, err := q.ExecContext(ctx, `INSERT INTO ingest_tokens (`+tokenColumns+`)
		SELECT ?, account_id, client_id, id, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM monitored_domains WHERE id = ? AND account_id = ?`,
		t.ID, t.Name, t.Source, t.Hash, t.Prefix, t.SigningSecret, t.FastlyServiceID, stamp(t.CreatedAt),
		nsPtr(t.LastUsedAt), nsPtr(t.RevokedAt), t.DomainID, t.AccountID)
	if err != nil {
		return fmt.Errorf("sqlite: create ingest token: %w", conflict(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: domain %s: %w", t.DomainID, store.ErrNotFound)
	}
	return nil
}

// IngestTokenByHash finds a token by its secret's hash.
func (db *DB) IngestTokenByHash(ctx context.Context, hash []byte) (store.IngestToken, error) {
	t, err := scanToken(db.r.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM ingest_tokens WHERE token_hash = ?`, hash))
	if err != nil {
		return t, fmt.Errorf("sqlite: ingest token: %w", notFound(err))
	}
	return t, nil
}

// ListIngestTokens returns a domain's tokens, newest first.
func (db *DB) ListIngestTokens(ctx context.Context, accountID, domainID string) ([]store.IngestToken, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+tokenColumns+` FROM ingest_tokens WHERE domain_id = ? AND account_id = ?
		ORDER BY created_at DESC, id DESC`, domainID, accountID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: ingest tokens: %w", err)
	}
	defer rows.Close()
	var out []store.IngestToken
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: ingest tokens: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// RevokeIngestToken revokes a token, never later than it was.
func (db *DB) RevokeIngestToken(ctx context.Context, accountID, domainID, id string, at time.Time) error {
	res, err := db.w.ExecContext(ctx, `UPDATE ingest_tokens SET revoked_at = min(coalesce(revoked_at, ?1), ?1)
		WHERE id = ?2 AND domain_id = ?3 AND account_id = ?4`, stamp(at), id, domainID, accountID)
	if err != nil {
		return fmt.Errorf("sqlite: revoke ingest token: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: ingest token %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// AddTrafficBatch keeps the batch and adds its aggregates in one call of
// the writer: the batch's row, unique per domain and hash, is written
// first, and a duplicate writes nothing more; b.Then runs last.
func (db *DB) AddTrafficBatch(ctx context.Context, b store.TrafficBatch, hits []store.CrawlerHits, refs []store.ReferralVisits) (bool, error) {
	samples, err := samplesJSON(b.Samples)
	if err != nil {
		return false, fmt.Errorf("sqlite: add traffic batch: %w", err)
	}
	hitRows, err := hitArgs(b.DomainID, hits)
	if err != nil {
		return false, err
	}
	refRows, err := refArgs(b.DomainID, refs)
	if err != nil {
		return false, err
	}
	var duplicate bool
	err = db.Update(ctx, func(tx store.Tx) error {
		w := tx.(*txn).tx
		duplicate = false
		var n int
		if err := w.QueryRow(`SELECT count(*) FROM monitored_domains WHERE id = ? AND account_id = ?`, b.DomainID, b.AccountID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("sqlite: domain %s: %w", b.DomainID, store.ErrNotFound)
		}
		res, err := w.Exec(`INSERT INTO traffic_batches (id, domain_id, token_id, source, hash, lines, malformed, samples, received_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (domain_id, hash) DO NOTHING`,
			b.ID, b.DomainID, nullStr(b.TokenID), b.Source, b.Hash, b.Lines, b.Malformed, samples, stamp(b.ReceivedAt))
		if err != nil {
			return conflict(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			duplicate = true
			return nil
		}
		if err := upsert(w, `INSERT INTO crawler_hits (domain_id, day, page, agent, verification, hits, s2xx, s3xx, s4xx, s5xx,
			nostatus, bytes) VALUES `, ` ON CONFLICT (domain_id, day, page, agent, verification) DO UPDATE SET
			hits = hits + excluded.hits, s2xx = s2xx + excluded.s2xx, s3xx = s3xx + excluded.s3xx, s4xx = s4xx + excluded.s4xx,
			s5xx = s5xx + excluded.s5xx, nostatus = nostatus + excluded.nostatus, bytes = bytes + excluded.bytes`, 12, hitRows); err != nil {
			return err
		}
		if err := upsert(w, `INSERT INTO referral_visits (domain_id, day, page, assistant, visits) VALUES `,
			` ON CONFLICT (domain_id, day, page, assistant) DO UPDATE SET visits = visits + excluded.visits`, 5, refRows); err != nil {
			return err
		}
		if b.TokenID != "" {
			_, err = w.Exec(`UPDATE ingest_tokens SET last_used_at = max(coalesce(last_used_at, ?1), ?1) WHERE id = ?2 AND domain_id = ?3`,
				stamp(b.ReceivedAt), b.TokenID, b.DomainID)
			if err != nil {
				return err
			}
		}
		if b.Then == nil {
			return nil
		}
		return b.Then(tx)
	})
	if err != nil {
		return false, fmt.Errorf("sqlite: add traffic batch: %w", err)
	}
	return duplicate, nil
}

// samplesJSON is a batch's malformed lines as the JSON kept, refusing
// text no engine keeps (JSON would escape a NUL and replace bytes that
// are not UTF-8).
func samplesJSON(samples []store.MalformedLine) (string, error) {
	for _, m := range samples {
		if !text.Valid(m.Reason) || !text.Valid(m.Excerpt) {
			return "", store.ErrInvalidText
		}
	}
	if samples == nil {
		samples = []store.MalformedLine{}
	}
	b, err := json.Marshal(samples)
	return string(b), err
}

// hitArgs are the rows of hits, those of one key added up, as the
// arguments of their upsert (12 a row).
func hitArgs(domainID string, hits []store.CrawlerHits) ([]any, error) {
	type key struct {
		day                       int64
		page, agent, verification string
	}
	at := make(map[key]int, len(hits))
	var args []any
	for _, h := range hits {
		day, err := dayOf(h.Day)
		if err != nil {
			return nil, err
		}
		k := key{day, h.Page, h.Agent, h.Verification}
		counts := [7]int64{h.Hits, h.Status[0], h.Status[1], h.Status[2], h.Status[3], h.Status[4], h.Bytes}
		if i, ok := at[k]; ok {
			for j, c := range counts {
				args[i+5+j] = args[i+5+j].(int64) + c
			}
			continue
		}
		at[k] = len(args)
		args = append(args, domainID, day, h.Page, h.Agent, h.Verification)
		for _, c := range counts {
			args = append(args, c)
		}
	}
	return args, nil
}

// refArgs are the rows of refs, those of one key added up, as the
// arguments of their upsert (5 a row).
func refArgs(domainID string, refs []store.ReferralVisits) ([]any, error) {
	type key struct {
		day             int64
		page, assistant string
	}
	at := make(map[key]int, len(refs))
	var args []any
	for _, r := range refs {
		day, err := dayOf(r.Day)
		if err != nil {
			return nil, err
		}
		k := key{day, r.Page, r.Assistant}
		if i, ok := at[k]; ok {
			args[i+4] = args[i+4].(int64) + r.Visits
			continue
		}
		at[k] = len(args)
		args = append(args, domainID, day, r.Page, r.Assistant, r.Visits)
	}
	return args, nil
}

// maxUpsertRows is the most rows one upsert writes; the rest of a batch
// goes in statements of half as many, and so on, so that a few texts
// (kept by the writer's statement cache) serve batches of every size.
const maxUpsertRows = 256

// upsert writes the rows of args, cols arguments a row, with head's
// INSERT and tail's ON CONFLICT.
func upsert(w *wtx, head, tail string, cols int, args []any) error {
	row := "(?" + strings.Repeat(", ?", cols-1) + ")"
	for len(args) > 0 {
		n := maxUpsertRows
		for n*cols > len(args) {
			n /= 2
		}
		q := head + row + strings.Repeat(", "+row, n-1) + tail
		if _, err := w.Exec(q, args[:n*cols]...); err != nil {
			return err
		}
		args = args[n*cols:]
	}
	return nil
}

// ListTrafficBatches returns the domain's latest batches, newest first.
func (db *DB) ListTrafficBatches(ctx context.Context, accountID, domainID string, limit int) ([]store.TrafficBatch, error) {
	if limit <= 0 {
		limit = 20
	}
	rows, err := db.r.QueryContext(ctx, `SELECT b.id, b.token_id, b.source, b.hash, b.lines, b.malformed, b.samples, b.received_at
		FROM traffic_batches b JOIN monitored_domains d ON d.id = b.domain_id
		WHERE b.domain_id = ?1 AND d.id = ?1 AND d.account_id = ?2 ORDER BY b.received_at DESC, b.id DESC LIMIT ?3`,
		domainID, accountID, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: traffic batches: %w", err)
	}
	defer rows.Close()
	var out []store.TrafficBatch
	for rows.Next() {
		b := store.TrafficBatch{AccountID: accountID, DomainID: domainID}
		var token sql.NullString
		var samples string
		var received int64
		if err := rows.Scan(&b.ID, &token, &b.Source, &b.Hash, &b.Lines, &b.Malformed, &samples, &received); err != nil {
			return nil, fmt.Errorf("sqlite: traffic batches: %w", err)
		}
		if err := json.Unmarshal([]byte(samples), &b.Samples); err != nil {
			return nil, fmt.Errorf("sqlite: traffic batch %s: samples: %w", b.ID, err)
		}
		b.TokenID, b.ReceivedAt = token.String, time.Unix(0, received).UTC()
		out = append(out, b)
	}
	return out, rows.Err()
}

// trafficRange is the condition on the rows of f's domain and days, ?1 to
// ?4, the domain checked to be the account's.
const trafficRange = `domain_id = ?1 AND domain_id IN (SELECT id FROM monitored_domains WHERE id = ?1 AND account_id = ?2)
	AND day >= ?3 AND day < ?4`

func rangeArgs(f store.TrafficFilter) []any {
	to := f.To
	if to.IsZero() {
		to = store.MaxTime
	}
	return []any{f.DomainID, f.AccountID, dayBound(f.From), dayBound(to)}
}

// ListCrawlerHits returns the domain's hits of the days f selects.
func (db *DB) ListCrawlerHits(ctx context.Context, f store.TrafficFilter) ([]store.CrawlerHits, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT day, page, agent, verification, hits, s2xx, s3xx, s4xx, s5xx, nostatus, bytes
		FROM crawler_hits WHERE `+trafficRange+` ORDER BY day, page, agent, verification`, rangeArgs(f)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: crawler hits: %w", err)
	}
	defer rows.Close()
	var out []store.CrawlerHits
	for rows.Next() {
		h := store.CrawlerHits{AccountID: f.AccountID, DomainID: f.DomainID}
		var day int64
		if err := rows.Scan(&day, &h.Page, &h.Agent, &h.Verification, &h.Hits, &h.Status[0], &h.Status[1], &h.Status[2],
			&h.Status[3], &h.Status[4], &h.Bytes); err != nil {
			return nil, fmt.Errorf("sqlite: crawler hits: %w", err)
		}
		h.Day = fromDay(day)
		out = append(out, h)
	}
	return out, rows.Err()
}

// ListReferralVisits returns the domain's visits of the days f selects.
func (db *DB) ListReferralVisits(ctx context.Context, f store.TrafficFilter) ([]store.ReferralVisits, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT day, page, assistant, visits FROM referral_visits WHERE `+trafficRange+`
		ORDER BY day, page, assistant`, rangeArgs(f)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: referral visits: %w", err)
	}
	defer rows.Close()
	var out []store.ReferralVisits
	for rows.Next() {
		r := store.ReferralVisits{AccountID: f.AccountID, DomainID: f.DomainID}
		var day int64
		if err := rows.Scan(&day, &r.Page, &r.Assistant, &r.Visits); err != nil {
			return nil, fmt.Errorf("sqlite: referral visits: %w", err)
		}
		r.Day = fromDay(day)
		out = append(out, r)
	}
	return out, rows.Err()
}

// The retention's statements, each bounded by its LIMIT: the aggregates
// go along their primary keys, domain by domain (a key begins with its
// domain and day), the batches along their domain's and time's index.
const (
	pruneHits = `DELETE FROM crawler_hits WHERE (domain_id, day, page, agent, verification) IN (
		SELECT domain_id, day, page, agent, verification FROM crawler_hits
		WHERE domain_id IN (SELECT id FROM monitored_domains) AND day < ?1 LIMIT ?2)`
	pruneRefs = `DELETE FROM referral_visits WHERE (domain_id, day, page, assistant) IN (
		SELECT domain_id, day, page, assistant FROM referral_visits
		WHERE domain_id IN (SELECT id FROM monitored_domains) AND day < ?1 LIMIT ?2)`
	pruneBatches = `DELETE FROM traffic_batches WHERE id IN (
		SELECT id FROM traffic_batches WHERE domain_id IN (SELECT id FROM monitored_domains) AND received_at < ?1 LIMIT ?2)`
)

// DeleteTrafficBefore deletes the aggregates of the days that ended by day and
// the batches received before it, in bounded deletes of their own on the
// writer connection (as the other retention does).
func (db *DB) DeleteTrafficBefore(ctx context.Context, day time.Time) (int64, error) {
	var total int64
	for _, p := range []struct {
		what, q string
		cut     any
	}{{"crawler hits", pruneHits, dayFloor(day)}, {"referral visits", pruneRefs, dayFloor(day)}, {"traffic batches", pruneBatches, bound(day)}} {
		for {
			n, err := db.prune(ctx, p.what, p.q, p.cut, store.DeleteBatch)
			if err != nil {
				return total, err
			}
			total += int64(n)
			if n < store.DeleteBatch {
				break
			}
		}
	}
	return total, nil
}

// CrawlerRanges reads the lists kept, and when they were saved.
func (db *DB) CrawlerRanges(ctx context.Context) (map[string][]byte, time.Time, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT name, data, updated_at FROM crawler_ranges`)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("sqlite: crawler ranges: %w", err)
	}
	defer rows.Close()
	var out map[string][]byte
	var at int64
	for rows.Next() {
		var name string
		var data []byte
		var updated int64
		if err := rows.Scan(&name, &data, &updated); err != nil {
			return nil, time.Time{}, fmt.Errorf("sqlite: crawler ranges: %w", err)
		}
		if out == nil {
			out = make(map[string][]byte)
		}
		out[name], at = data, max(at, updated)
	}
	if err := rows.Err(); err != nil || out == nil {
		return nil, time.Time{}, err
	}
	return out, time.Unix(0, at).UTC(), nil
}

// SaveCrawlerRanges replaces the lists in one write transaction.
func (db *DB) SaveCrawlerRanges(ctx context.Context, lists map[string][]byte, at time.Time) error {
	err := db.Update(ctx, func(tx store.Tx) error {
		w := tx.(*txn).tx
		if _, err := w.Exec(`DELETE FROM crawler_ranges`); err != nil {
			return err
		}
		for name, data := range lists {
			if data == nil {
				data = []byte{}
			}
			if _, err := w.Exec(`INSERT INTO crawler_ranges (name, data, updated_at) VALUES (?, ?, ?)`, name, data, stamp(at)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: save crawler ranges: %w", err)
	}
	return nil
}
