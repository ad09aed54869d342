package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/aivis/aivis/core/store/cache"
)

// signal is PostgreSQL's cache.Signal: the versions of migration 00002,
// which triggers move in the very transaction that changes a topic, read
// by one small statement per call. Reading them at the call is what
// Signal promises (every commit that ended before the call, by any
// instance, is in them); LISTEN/NOTIFY would tell of a change only after
// the commit, on another connection, and proving that every notification
// sent before the call has arrived takes a round trip to the server,
// which is what this read costs. A request's reads share one call
// (cache.AsOf).
type signal struct{ pool *pgxpool.Pool }

// versionsQuery reads every topic's count and its bumps in one pass over
// each table (one statement, one snapshot); a subquery per topic and
// table cost PostgreSQL four times the CPU.
const versionsQuery = `SELECT topic, n FROM cache_versions
	UNION ALL SELECT topic, count(*) FROM cache_bumps GROUP BY topic`

// Versions reads the topics' versions: one statement, one snapshot.
func (s *signal) Versions(ctx context.Context) (cache.Versions, error) {
	var v cache.Versions
	rows, err := s.pool.Query(ctx, versionsQuery)
	if err == nil {
		var topic string
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&topic, &n}, func() error {
			switch topic {
			case "keys":
				v.Keys += n
			case "budgets":
				v.Budgets += n
			case "targets":
				v.Targets += n
			}
			return nil
		})
	}
	if err != nil {
		return v, fmt.Errorf("postgres: cache versions: %w", err)
	}
	return v, nil
}

// fold moves the bumps into cache_versions in one statement, which leaves
// every version as it was: the rows it deletes are those it counts. Two
// instances folding at once each take the rows the other has not (a row
// deleted meanwhile is passed over), so none is counted twice.
func (s *signal) fold(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `WITH gone AS (DELETE FROM cache_bumps RETURNING topic),
		counted AS (SELECT topic, count(*) AS n FROM gone GROUP BY topic)
		UPDATE cache_versions v SET n = v.n + counted.n FROM counted WHERE v.topic = counted.topic`)
	if err != nil {
		return fmt.Errorf("postgres: fold cache versions: %w", err)
	}
	return nil
}

// Signal tells the caches in front of this database (core/store/cache)
// that a commit may have changed what they hold.
func (db *DB) Signal() cache.Signal { return db.signal }
