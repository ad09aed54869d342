package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/text"
)

// Days are kept as a date (four bytes).
const oneDay = 24 * time.Hour

// dayOf is a day that is a UTC midnight from MinTime up to MaxTime, in
// UTC; an error for any other time.
func dayOf(t time.Time) (time.Time, error) {
	if t.Before(store.MinTime) || !t.Before(store.MaxTime) || !t.Equal(t.Truncate(oneDay)) {
		return time.Time{}, fmt.Errorf("postgres: day %s is not a UTC midnight from %s up to %s",
			t.UTC().Format(time.RFC3339Nano), store.MinTime.Format(time.DateOnly), store.MaxTime.Format(time.DateOnly))
	}
	return t.UTC(), nil
}

// dayBound is the first day whose midnight is at or after t, t clamped to
// the range days are kept in, where it compares the same.
func dayBound(t time.Time) pgtype.Date {
	switch {
	case t.Before(store.MinTime):
		t = store.MinTime
	case t.After(store.MaxTime):
		t = store.MaxTime
	}
	d := t.UTC().Truncate(oneDay)
	if d.Before(t) {
		d = d.Add(oneDay)
	}
	return pgtype.Date{Time: d, Valid: true}
}

// dayFloor is the day t falls on, t clamped as dayBound's.
func dayFloor(t time.Time) pgtype.Date {
	switch {
	case t.Before(store.MinTime):
		t = store.MinTime
	case t.After(store.MaxTime):
		t = store.MaxTime
	}
	return pgtype.Date{Time: t.UTC().Truncate(oneDay), Valid: true}
}

const tokenColumns = `id, account_id, client_id, domain_id, name, source, token_hash, prefix, signing_secret, fastly_service_id,
	created_at, created_at_ns, last_used_at, last_used_at_ns, revoked_at, revoked_at_ns`

func scanToken(s scanner) (store.IngestToken, error) {
	var t store.IngestToken
	var client *string
	var created, used, revoked tcol
	err := s.Scan(&t.ID, &t.AccountID, &client, &t.DomainID, &t.Name, &t.Source, &t.Hash, &t.Prefix, &t.SigningSecret,
		&t.FastlyServiceID, &created.t, &created.ns, &used.t, &used.ns, &revoked.t, &revoked.ns)
	if client != nil {
		t.ClientID = *client
	}
	t.CreatedAt = created.time()
	if used.t.Valid {
		u := used.time()
		t.LastUsedAt = &u
	}
	if revoked.t.Valid {
		r := revoked.time()
		t.RevokedAt = &r
	}
	return t, err
}

// tsPtr and nsPtr are the two columns of a time that may be none.
func tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func nsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ns(*t)
}

// CreateIngestToken keeps a token of the account's domain, its client the
// domain's.
func (db *DB) CreateIngestToken(ctx context.Context, t store.IngestToken) error {
	return insertIngestToken(ctx, db.pool, t)
}

// InsertIngestToken is CreateIngestToken in the transaction.
func (tx *txn) InsertIngestToken(t store.IngestToken) error {
	return insertIngestToken(tx.ctx, tx.tx, t)
}

// insertIngestToken keeps a token through q: the pool or a transaction.
func insertIngestToken(ctx context.Context, q querier, t store.IngestToken) error {
	tag, err := q.Exec(ctx, `INSERT INTO ingest_tokens (`+tokenColumns+`)
		SELECT $1, account_id, client_id, id, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 FROM monitored_domains
		WHERE id = $14 AND account_id = $15`,
		t.ID, t.Name, t.Source, t.Hash, t.Prefix, t.SigningSecret, t.FastlyServiceID, ts(t.CreatedAt), ns(t.CreatedAt),
		tsPtr(t.LastUsedAt), nsPtr(t.LastUsedAt), tsPtr(t.RevokedAt), nsPtr(t.RevokedAt), t.DomainID, t.AccountID)
	if err != nil {
		return fmt.Errorf("postgres: create ingest token: %w", conflict(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: domain %s: %w", t.DomainID, store.ErrNotFound)
	}
	return nil
}

// IngestTokenByHash finds a token by its secret's hash.
func (db *DB) IngestTokenByHash(ctx context.Context, hash []byte) (store.IngestToken, error) {
	t, err := scanToken(db.pool.QueryRow(ctx, `SELECT `+tokenColumns+` FROM ingest_tokens WHERE token_hash = $1`, hash))
	if err != nil {
		return t, fmt.Errorf("postgres: ingest token: %w", notFound(err))
	}
	return t, nil
}

// ListIngestTokens returns a domain's tokens, newest first.
func (db *DB) ListIngestTokens(ctx context.Context, accountID, domainID string) ([]store.IngestToken, error) {
	out, err := collect(ctx, db.pool, scanToken, `SELECT `+tokenColumns+` FROM ingest_tokens WHERE domain_id = $1 AND account_id = $2
		ORDER BY created_at DESC, created_at_ns DESC, id DESC`, domainID, accountID)
	if err != nil {
		return nil, fmt.Errorf("postgres: ingest tokens: %w", err)
	}
	return out, nil
}

// RevokeIngestToken revokes a token, never later than it was.
func (db *DB) RevokeIngestToken(ctx context.Context, accountID, domainID, id string, at time.Time) error {
	tag, err := db.pool.Exec(ctx, `UPDATE ingest_tokens SET revoked_at = $1, revoked_at_ns = $2
		WHERE id = $3 AND domain_id = $4 AND account_id = $5 AND (revoked_at IS NULL OR (revoked_at, revoked_at_ns) > ($1, $2))`,
		ts(at), ns(at), id, domainID, accountID)
	if err != nil {
		return fmt.Errorf("postgres: revoke ingest token: %w", err)
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM ingest_tokens WHERE id = $1 AND domain_id = $2 AND account_id = $3`,
		id, domainID, accountID).Scan(&n); err != nil {
		return fmt.Errorf("postgres: revoke ingest token: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("postgres: ingest token %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// hitColumns are crawler_hits' columns as arrays, one a column, for an
// upsert of many rows in one statement (unnest).
type hitColumns struct {
	days                        []time.Time
	pages, agents, verification []string
	counts                      [7][]int64 // hits, the five classes, bytes
}

// hitRows are hits with those of one key added up, in key order, so that
// two batches that share keys lock them in one order and never wait for
// each other in a circle.
func hitRows(hits []store.CrawlerHits) (hitColumns, error) {
	type key struct {
		day                       time.Time
		page, agent, verification string
	}
	type row struct {
		key
		counts [7]int64
	}
	at := make(map[key]int, len(hits))
	var rows []row
	for _, h := range hits {
		d, err := dayOf(h.Day)
		if err != nil {
			return hitColumns{}, err
		}
		k := key{d, h.Page, h.Agent, h.Verification}
		counts := [7]int64{h.Hits, h.Status[0], h.Status[1], h.Status[2], h.Status[3], h.Status[4], h.Bytes}
		if i, ok := at[k]; ok {
			for j, c := range counts {
				rows[i].counts[j] += c
			}
			continue
		}
		at[k] = len(rows)
		rows = append(rows, row{k, counts})
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(a.day.Compare(b.day), cmp.Compare(a.page, b.page), cmp.Compare(a.agent, b.agent),
			cmp.Compare(a.verification, b.verification))
	})
	var c hitColumns
	for _, r := range rows {
		c.days, c.pages, c.agents, c.verification = append(c.days, r.day), append(c.pages, r.page), append(c.agents, r.agent),
			append(c.verification, r.verification)
		for j, n := range r.counts {
			c.counts[j] = append(c.counts[j], n)
		}
	}
	return c, nil
}

// refColumns are referral_visits' columns as arrays.
type refColumns struct {
	days              []time.Time
	pages, assistants []string
	visits            []int64
}

// refRows are refs with those of one key added up, in key order.
func refRows(refs []store.ReferralVisits) (refColumns, error) {
	type key struct {
		day             time.Time
		page, assistant string
	}
	type row struct {
		key
		visits int64
	}
	at := make(map[key]int, len(refs))
	var rows []row
	for _, r := range refs {
		d, err := dayOf(r.Day)
		if err != nil {
			return refColumns{}, err
		}
		k := key{d, r.Page, r.Assistant}
		if i, ok := at[k]; ok {
			rows[i].visits += r.Visits
			continue
		}
		at[k] = len(rows)
		rows = append(rows, row{k, r.Visits})
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(a.day.Compare(b.day), cmp.Compare(a.page, b.page), cmp.Compare(a.assistant, b.assistant))
	})
	var c refColumns
	for _, r := range rows {
		c.days, c.pages, c.assistants, c.visits = append(c.days, r.day), append(c.pages, r.page), append(c.assistants, r.assistant),
			append(c.visits, r.visits)
	}
	return c, nil
}

// AddTrafficBatch keeps the batch and adds its aggregates in one
// transaction at READ COMMITTED. The batch's row comes first: a second
// caller with the same hash waits at the unique index for the first to
// end, and then adds nothing (ON CONFLICT DO NOTHING) if it committed.
// The aggregates go in one upsert a table, rows in key order; the token's
// last use next, and b.Then last.
func (db *DB) AddTrafficBatch(ctx context.Context, b store.TrafficBatch, hits []store.CrawlerHits, refs []store.ReferralVisits) (bool, error) {
	samples, err := samplesJSON(b.Samples)
	if err != nil {
		return false, fmt.Errorf("postgres: add traffic batch: %w", err)
	}
	hc, err := hitRows(hits)
	if err != nil {
		return false, err
	}
	rc, err := refRows(refs)
	if err != nil {
		return false, err
	}
	var token *string
	if b.TokenID != "" {
		token = &b.TokenID
	}
	var duplicate bool
	var then *txn // b.Then's transaction, whose events count once it commits
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO traffic_batches (id, domain_id, token_id, source, hash, lines, malformed, samples,
			received_at, received_at_ns) SELECT $1, id, $2, $3, $4, $5, $6, $7, $8, $9 FROM monitored_domains
			WHERE id = $10 AND account_id = $11 ON CONFLICT (domain_id, hash) DO NOTHING`,
			b.ID, token, b.Source, b.Hash, b.Lines, b.Malformed, samples, ts(b.ReceivedAt), ns(b.ReceivedAt), b.DomainID, b.AccountID)
		if err != nil {
			return conflict(err)
		}
		if tag.RowsAffected() == 0 {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM monitored_domains WHERE id = $1 AND account_id = $2`,
				b.DomainID, b.AccountID).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("postgres: domain %s: %w", b.DomainID, store.ErrNotFound)
			}
			duplicate = true
			return nil
		}
		var q pgx.Batch
		if len(hc.days) > 0 {
			q.Queue(`INSERT INTO crawler_hits AS c (domain_id, day, page, agent, verification, hits, s2xx, s3xx, s4xx, s5xx, nostatus, bytes)
				SELECT $1, * FROM unnest($2::date[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[],
					$9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[])
				ON CONFLICT (domain_id, day, page, agent, verification) DO UPDATE SET hits = c.hits + excluded.hits,
					s2xx = c.s2xx + excluded.s2xx, s3xx = c.s3xx + excluded.s3xx, s4xx = c.s4xx + excluded.s4xx,
					s5xx = c.s5xx + excluded.s5xx, nostatus = c.nostatus + excluded.nostatus, bytes = c.bytes + excluded.bytes`,
				b.DomainID, hc.days, hc.pages, hc.agents, hc.verification, hc.counts[0], hc.counts[1], hc.counts[2], hc.counts[3],
				hc.counts[4], hc.counts[5], hc.counts[6])
		}
		if len(rc.days) > 0 {
			q.Queue(`INSERT INTO referral_visits AS r (domain_id, day, page, assistant, visits)
				SELECT $1, * FROM unnest($2::date[], $3::text[], $4::text[], $5::bigint[])
				ON CONFLICT (domain_id, day, page, assistant) DO UPDATE SET visits = r.visits + excluded.visits`,
				b.DomainID, rc.days, rc.pages, rc.assistants, rc.visits)
		}
		if token != nil {
			q.Queue(`UPDATE ingest_tokens SET last_used_at = $3, last_used_at_ns = $4
				WHERE id = $1 AND domain_id = $2 AND (last_used_at IS NULL OR (last_used_at, last_used_at_ns) < ($3, $4))`,
				b.TokenID, b.DomainID, ts(b.ReceivedAt), ns(b.ReceivedAt))
		}
		if q.Len() > 0 {
			if err := tx.SendBatch(ctx, &q).Close(); err != nil {
				return err
			}
		}
		if b.Then == nil {
			return nil
		}
		then = &txn{db: db, tx: tx, ctx: ctx}
		return then.run(b.Then)
	})
	if err != nil {
		return false, fmt.Errorf("postgres: add traffic batch: %w", err)
	}
	if then != nil {
		db.metrics.Load().Published(then.kinds)
	}
	return duplicate, nil
}

// samplesJSON is a batch's malformed lines as the JSON kept, refusing
// text no engine keeps (JSON would escape a NUL and replace bytes that
// are not UTF-8).
func samplesJSON(samples []store.MalformedLine) (json.RawMessage, error) {
	for _, m := range samples {
		if !text.Valid(m.Reason) || !text.Valid(m.Excerpt) {
			return nil, store.ErrInvalidText
		}
	}
	if samples == nil {
		samples = []store.MalformedLine{}
	}
	return json.Marshal(samples)
}

// ListTrafficBatches returns the domain's latest batches, newest first.
func (db *DB) ListTrafficBatches(ctx context.Context, accountID, domainID string, limit int) ([]store.TrafficBatch, error) {
	if limit <= 0 {
		limit = 20
	}
	out, err := collect(ctx, db.pool, func(s scanner) (store.TrafficBatch, error) {
		b := store.TrafficBatch{AccountID: accountID, DomainID: domainID}
		var token *string
		var samples []byte
		var received tcol
		if err := s.Scan(&b.ID, &token, &b.Source, &b.Hash, &b.Lines, &b.Malformed, &samples, &received.t, &received.ns); err != nil {
			return b, err
		}
		if token != nil {
			b.TokenID = *token
		}
		b.ReceivedAt = received.time()
		return b, json.Unmarshal(samples, &b.Samples)
	}, `SELECT b.id, b.token_id, b.source, b.hash, b.lines, b.malformed, b.samples, b.received_at, b.received_at_ns
		FROM traffic_batches b JOIN monitored_domains d ON d.id = b.domain_id
		WHERE b.domain_id = $1 AND d.account_id = $2 ORDER BY b.received_at DESC, b.received_at_ns DESC, b.id DESC LIMIT $3`,
		domainID, accountID, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: traffic batches: %w", err)
	}
	return out, nil
}

// trafficRange is the condition on the rows of f's domain and days, $1 to
// $4, the domain checked to be the account's.
const trafficRange = `domain_id = $1 AND EXISTS (SELECT 1 FROM monitored_domains WHERE id = $1 AND account_id = $2)
	AND day >= $3 AND day < $4`

func rangeArgs(f store.TrafficFilter) []any {
	to := f.To
	if to.IsZero() {
		to = store.MaxTime
	}
	return []any{f.DomainID, f.AccountID, dayBound(f.From), dayBound(to)}
}

// ListCrawlerHits returns the domain's hits of the days f selects.
func (db *DB) ListCrawlerHits(ctx context.Context, f store.TrafficFilter) ([]store.CrawlerHits, error) {
	out, err := collect(ctx, db.pool, func(s scanner) (store.CrawlerHits, error) {
		h := store.CrawlerHits{AccountID: f.AccountID, DomainID: f.DomainID}
		var d time.Time
		err := s.Scan(&d, &h.Page, &h.Agent, &h.Verification, &h.Hits, &h.Status[0], &h.Status[1], &h.Status[2], &h.Status[3],
			&h.Status[4], &h.Bytes)
		h.Day = d.UTC()
		return h, err
	}, `SELECT day, page, agent, verification, hits, s2xx, s3xx, s4xx, s5xx, nostatus, bytes FROM crawler_hits
		WHERE `+trafficRange+` ORDER BY day, page, agent, verification`, rangeArgs(f)...)
	if err != nil {
		return nil, fmt.Errorf("postgres: crawler hits: %w", err)
	}
	return out, nil
}

// ListReferralVisits returns the domain's visits of the days f selects.
func (db *DB) ListReferralVisits(ctx context.Context, f store.TrafficFilter) ([]store.ReferralVisits, error) {
	out, err := collect(ctx, db.pool, func(s scanner) (store.ReferralVisits, error) {
		r := store.ReferralVisits{AccountID: f.AccountID, DomainID: f.DomainID}
		var d time.Time
		err := s.Scan(&d, &r.Page, &r.Assistant, &r.Visits)
		r.Day = d.UTC()
		return r, err
	}, `SELECT day, page, assistant, visits FROM referral_visits WHERE `+trafficRange+` ORDER BY day, page, assistant`,
		rangeArgs(f)...)
	if err != nil {
		return nil, fmt.Errorf("postgres: referral visits: %w", err)
	}
	return out, nil
}

// The retention's statements, each bounded by its LIMIT: the aggregates
// go along their primary keys, domain by domain (a key begins with its
// domain and day), the batches along their domain's and time's index.
const (
	pruneHits = `DELETE FROM crawler_hits WHERE ctid IN (SELECT ctid FROM crawler_hits
		WHERE domain_id = ANY (ARRAY(SELECT id FROM monitored_domains)) AND day < $1 LIMIT $2)`
	pruneRefs = `DELETE FROM referral_visits WHERE ctid IN (SELECT ctid FROM referral_visits
		WHERE domain_id = ANY (ARRAY(SELECT id FROM monitored_domains)) AND day < $1 LIMIT $2)`
	pruneBatches = `DELETE FROM traffic_batches WHERE ctid IN (SELECT ctid FROM traffic_batches
		WHERE domain_id = ANY (ARRAY(SELECT id FROM monitored_domains)) AND (received_at, received_at_ns) < ($1, $2) LIMIT $3)`
)

// DeleteTrafficBefore deletes the aggregates of the days that ended by day and
// the batches received before it, each statement a transaction of its
// own of at most DeleteBatch rows.
func (db *DB) DeleteTrafficBefore(ctx context.Context, day time.Time) (int64, error) {
	t, n := bound(day)
	var total int64
	for _, p := range []struct {
		what, q string
		args    []any
	}{{"crawler hits", pruneHits, []any{dayFloor(day)}}, {"referral visits", pruneRefs, []any{dayFloor(day)}},
		{"traffic batches", pruneBatches, []any{t, n}}} {
		for {
			tag, err := db.pool.Exec(ctx, p.q, append(p.args, store.DeleteBatch)...)
			if err != nil {
				return total, fmt.Errorf("postgres: prune %s: %w", p.what, err)
			}
			total += tag.RowsAffected()
			if tag.RowsAffected() < store.DeleteBatch {
				break
			}
		}
	}
	return total, nil
}

// CrawlerRanges reads the lists kept, and when they were saved.
func (db *DB) CrawlerRanges(ctx context.Context) (map[string][]byte, time.Time, error) {
	rows, err := db.pool.Query(ctx, `SELECT name, data, updated_at, updated_at_ns FROM crawler_ranges`)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("postgres: crawler ranges: %w", err)
	}
	defer rows.Close()
	var out map[string][]byte
	var at time.Time
	for rows.Next() {
		var name string
		var data []byte
		var updated tcol
		if err := rows.Scan(&name, &data, &updated.t, &updated.ns); err != nil {
			return nil, time.Time{}, fmt.Errorf("postgres: crawler ranges: %w", err)
		}
		if out == nil {
			out = make(map[string][]byte)
		}
		out[name] = data
		if u := updated.time(); u.After(at) {
			at = u
		}
	}
	if err := rows.Err(); err != nil || out == nil {
		return nil, time.Time{}, err
	}
	return out, at, nil
}

// SaveCrawlerRanges replaces the lists in one transaction, which holds the
// table against another save (readers go on reading the lists before).
func (db *DB) SaveCrawlerRanges(ctx context.Context, lists map[string][]byte, at time.Time) error {
	names, data := make([]string, 0, len(lists)), make([][]byte, 0, len(lists))
	for name, d := range lists {
		if d == nil {
			d = []byte{}
		}
		names, data = append(names, name), append(data, d)
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var q pgx.Batch
		q.Queue(`LOCK TABLE crawler_ranges IN SHARE ROW EXCLUSIVE MODE`)
		q.Queue(`DELETE FROM crawler_ranges`)
		q.Queue(`INSERT INTO crawler_ranges (name, data, updated_at, updated_at_ns) SELECT name, data, $3, $4
			FROM unnest($1::text[], $2::bytea[]) AS l (name, data)`, names, data, ts(at), ns(at))
		return tx.SendBatch(ctx, &q).Close()
	})
	if err != nil {
		return fmt.Errorf("postgres: save crawler ranges: %w", err)
	}
	return nil
}
