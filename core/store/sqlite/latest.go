package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/aivis/aivis/core/store"
)

// latestReadings remembers, per owner and domain, the newest reading on
// the writer's connection, so that recording a reading (which reads the
// latest to detect a change) does not query it each time. Only the writer
// goroutine uses it. It holds while PRAGMA data_version, read at the start
// of every write transaction, is unchanged: that is, while no other
// connection (another process sharing the file) has committed.
type latestReadings struct {
	version int64
	m       map[readingKey]latestEntry
}

type readingKey struct{ account, client, domain string }

// latestEntry is an owner's newest reading of a domain, or that it has none.
type latestEntry struct {
	r     store.Reading
	found bool
}

// maxLatest bounds the cache; past it, it starts afresh.
const maxLatest = 100_000

func newLatestReadings() *latestReadings {
	return &latestReadings{version: -1, m: make(map[readingKey]latestEntry)}
}

// check empties the cache if another connection has committed since the
// last transaction; it runs inside the writer's immediate transaction, so
// none can commit until it ends. It returns the data version.
func (l *latestReadings) check(tx *sql.Tx) (int64, error) {
	v, err := dataVersion(tx)
	if err != nil {
		return 0, err
	}
	if v != l.version || len(l.m) >= maxLatest {
		clear(l.m)
		l.version = v
	}
	return v, nil
}

// dataVersion is PRAGMA data_version: it moves when another connection
// commits.
func dataVersion(tx *sql.Tx) (int64, error) {
	var v int64
	if err := tx.QueryRow(`PRAGMA data_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlite: data version: %w", err)
	}
	return v, nil
}

// keep adds what a committed transaction wrote.
func (l *latestReadings) keep(written map[readingKey]latestEntry) {
	for k, e := range written {
		l.m[k] = e
	}
}

// latest finds the newest reading of exactly one owner: from what this
// call or the earlier ones of its group wrote, from the cache, or from the
// table (which then holds only committed readings of that owner and
// domain: any this transaction wrote would be in the first two).
func (t *txn) latest(k readingKey) (latestEntry, error) {
	if e, ok := t.readings[k]; ok {
		return e, nil
	}
	if e, ok := t.group[k]; ok {
		return e, nil
	}
	if e, ok := t.cache.m[k]; ok {
		return e, nil
	}
	r, err := scanReading(t.tx.QueryRow(`SELECT `+readingColumns+` FROM visibility_readings WHERE account_id = ? AND client_id IS ? AND domain = ?
		ORDER BY measured_at DESC, id DESC LIMIT 1`, k.account, nullStr(k.client), k.domain))
	if errors.Is(err, sql.ErrNoRows) {
		t.cache.m[k] = latestEntry{}
		return latestEntry{}, nil
	} else if err != nil {
		return latestEntry{}, fmt.Errorf("sqlite: latest reading: %w", err)
	}
	e := latestEntry{r: r, found: true}
	t.cache.m[k] = e
	return e, nil
}

func (t *txn) LatestReading(f store.ReadingFilter) (store.Reading, error) {
	e, err := t.latest(readingKey{f.AccountID, f.ClientID, f.Domain})
	if err != nil {
		return store.Reading{}, err
	}
	if !e.found {
		return store.Reading{}, fmt.Errorf("sqlite: latest reading: %w", store.ErrNotFound)
	}
	return e.r, nil
}

func (t *txn) InsertReadings(rs []store.Reading) (added, before []store.Reading, err error) {
	before = make([]store.Reading, len(rs))
	for i, r := range rs {
		e, err := t.latest(readingKey{r.AccountID, r.ClientID, r.Domain})
		if err != nil {
			return nil, nil, err
		}
		before[i] = e.r
	}
	added = make([]store.Reading, len(rs))
	for i, r := range rs {
		if added[i], err = t.InsertReading(r); err != nil {
			return nil, nil, err
		}
	}
	return added, before, nil
}

func (t *txn) InsertReading(r store.Reading) (store.Reading, error) {
	k := readingKey{r.AccountID, r.ClientID, r.Domain}
	prev, err := t.latest(k)
	if err != nil {
		return r, err
	}
	res, err := t.tx.Exec(`INSERT INTO visibility_readings (account_id, client_id, domain, visibility_score, sentiment,
		sentiment_score, source, measured_at, formula_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.AccountID, nullStr(r.ClientID), r.Domain, r.VisibilityScore, r.Sentiment, r.SentimentScore, r.Source, stamp(r.MeasuredAt),
		nullInt(r.FormulaVersion))
	if err != nil {
		return r, fmt.Errorf("sqlite: add reading: %w", conflict(err))
	}
	r.ID, _ = res.LastInsertId()
	// As the table would read it back: nanoseconds, UTC.
	stored := r
	stored.MeasuredAt = time.Unix(0, r.MeasuredAt.UnixNano()).UTC()
	if !prev.found || stored.NewerThan(prev.r) {
		if t.readings == nil {
			t.readings = make(map[readingKey]latestEntry)
		}
		t.readings[k] = latestEntry{r: stored, found: true}
	}
	return r, nil
}
