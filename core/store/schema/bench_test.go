package schema_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/mattn/go-sqlite3"

	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/core/store/schema"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/internal/testsvc"
)

// The schema of bc684f8, the release the upgrade tests start from, on
// each engine.
const (
	sqliteFrom   = 26
	postgresFrom = 8
	readings     = 1_000_000
)

// BenchmarkMigrateMillionReadings measures the migration of a database of
// a million readings from the schema of bc684f8 to this aivis's, on each
// engine (the figures of docs/benchmarks.md):
//
//	go test -run '^$' -bench MigrateMillionReadings -benchtime 3x ./core/store/schema
func BenchmarkMigrateMillionReadings(b *testing.B) {
	ctx := context.Background()
	b.Run("sqlite", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			path := filepath.Join(b.TempDir(), "aivis.db")
			r, closeRunner, err := sqlite.OpenMigrations(ctx, path)
			if err != nil {
				b.Fatal(err)
			}
			fill(b, r, sqliteFrom, func(db *sql.DB) error {
				_, err := db.ExecContext(ctx, `
					INSERT INTO accounts (id, name, tier, type, created_at) VALUES ('acct_1', 'a', 'starter', 'standard', 0);
					WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
					INSERT INTO visibility_readings (account_id, domain, visibility_score, sentiment, sentiment_score, source, measured_at)
						SELECT 'acct_1', 'd' || (i % 1000) || '.example', i % 101, 'positive', 0.5, 'api', 1700000000000000000 + i FROM n`, readings)
				return err
			}, dbOf(b, path))
			b.StartTimer()
			migrateUp(b, r)
			b.StopTimer()
			closeRunner()
		}
	})
	b.Run("postgres", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			url := testsvc.Postgres(b)
			r, closeRunner, err := postgres.OpenMigrations(ctx, url)
			if err != nil {
				b.Fatal(err)
			}
			db, err := sql.Open("pgx", url)
			if err != nil {
				b.Fatal(err)
			}
			fill(b, r, postgresFrom, func(db *sql.DB) error {
				_, err := db.ExecContext(ctx, `
					INSERT INTO accounts (id, name, tier, type, created_at, created_at_ns) VALUES ('acct_1', 'a', 'starter', 'standard', now(), 0);
					INSERT INTO visibility_readings (account_id, client_id, domain, visibility_score, sentiment, sentiment_score, source, measured_at, measured_at_ns)
						SELECT 'acct_1', '', 'd' || (i % 1000) || '.example', i % 101, 'positive', 0.5, 'api', now() - i * interval '1 second', 0
						FROM generate_series(1, `+strconv.Itoa(readings)+`) i;
					ANALYZE`)
				return err
			}, db)
			db.Close()
			b.StartTimer()
			migrateUp(b, r)
			b.StopTimer()
			closeRunner()
		}
	})
}

func fill(b *testing.B, r *schema.Runner, from int64, insert func(*sql.DB) error, db *sql.DB) {
	b.Helper()
	if _, err := r.UpTo(context.Background(), from); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := insert(db); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d readings written in %s", readings, time.Since(t0).Round(time.Millisecond))
}

func migrateUp(b *testing.B, r *schema.Runner) {
	b.Helper()
	t0 := time.Now()
	done, err := r.Up(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d migrations applied in %s", len(done), time.Since(t0).Round(time.Millisecond))
}

func dbOf(b *testing.B, path string) *sql.DB {
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}
