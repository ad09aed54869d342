// Package postgres is the storage engine that several instances of aivis
// share: one PostgreSQL database (14 or later) on a pgx connection pool.
// Open migrates the schema (migrations/, by goose, under an advisory lock)
// and registers this process as a holder of the work it claims.
//
// How each contract of core/store is met (the files say it again where
// each is written):
//   - Update runs its function in one SERIALIZABLE transaction and runs it
//     again, from a fresh transaction, when PostgreSQL reports a
//     serialization failure (40001), a deadlock (40P01) or its locks'
//     shared memory full (53200) at any statement or at the commit: every
//     Update is as if no other ran meanwhile. That
//     is what keeps a budget, the active-request cap and the caps of
//     domains, webhooks and connections, each read and then written in one
//     Update: of callers that race past a limit, all but one fail and
//     retry, and then see the limit reached. A write the store refuses as
//     a conflict (a taken id or name, a missing parent) inside Update
//     returns ErrConflict and leaves the transaction usable (INSERT ... ON
//     CONFLICT DO NOTHING); a record no row may hold (a CHECK) ends it.
//   - A method outside Update is one statement, or one transaction of its
//     own, at READ COMMITTED: its statement sees every commit before it.
//     Those that write several rows say how they stay right under
//     concurrency (SaveCounts: conditional upserts in key order; claims of
//     deliveries: FOR UPDATE SKIP LOCKED; AcceptInvitation: SERIALIZABLE).
//   - Uniqueness is a unique index: ids, key hashes, an owner's domain
//     names, one active scan per domain, one delivery per webhook and
//     event, emails in any ASCII case.
//   - Claims take rows FOR UPDATE SKIP LOCKED and lease them in the same
//     statement or transaction (UPDATE ... RETURNING); a fenced write (an
//     outcome, a scan's or a content request's step) is an UPDATE
//     conditional on the lease or the claim's number, ErrLost when it
//     changes no row.
//   - Times: see times.go. Secrets are sealed with the master key.
//   - The caches: signal.go. Holders: holders.go. The outbox: events.go.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	buspg "github.com/aivis/aivis/core/bus/postgres"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/schema"
)

// DB is the PostgreSQL implementation of store.Store.
type DB struct {
	pool    *pgxpool.Pool
	box     *secrets.Box
	signal  *signal
	holders *holders
	outbox  *buspg.Outbox
	metrics atomic.Pointer[metrics.Store] // see SetMetrics
}

var _ store.Store = (*DB)(nil)

// SetMetrics gives the store what it counts in: the transactions run
// again and the events its commits publish.
func (db *DB) SetMetrics(m *metrics.Store) { db.metrics.Store(m) }

// PoolStats are a pool's figures, for the metrics.
func PoolStats(p *pgxpool.Pool) metrics.PoolStats {
	s := p.Stat()
	return metrics.PoolStats{Max: s.MaxConns(), Idle: s.IdleConns(), InUse: s.AcquiredConns(), Constructing: s.ConstructingConns(),
		Acquires: s.AcquireCount(), EmptyAcquires: s.EmptyAcquireCount(), Cancel: s.CanceledAcquireCount(), AcquireWait: s.AcquireDuration()}
}

// Pool is the store's connection pool.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Open connects to the database at url (a postgres:// URL or key=value
// settings), applies any pending migrations and starts this process's
// holder. box seals the secrets the store keeps; every instance on the
// database must be given the same master key.
func Open(ctx context.Context, url string, box *secrets.Box) (*DB, error) {
	return open(ctx, url, box, defaultHolderTimes, schema.Apply)
}

// OpenWith is Open doing with the schema what policy allows
// (schema.Runner.Prepare): a schema newer than the binary is always
// refused.
func OpenWith(ctx context.Context, url string, box *secrets.Box, policy schema.Policy) (*DB, error) {
	return open(ctx, url, box, defaultHolderTimes, policy)
}

func open(ctx context.Context, connString string, box *secrets.Box, ht holderTimes, policy schema.Policy) (*DB, error) {
	if box == nil {
		return nil, errors.New("postgres: no master key to seal secrets with")
	}
	pool, err := connect(ctx, connString)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, pool, policy); err != nil {
		pool.Close()
		return nil, err
	}
	db := &DB{pool: pool, box: box, signal: &signal{pool: pool}, outbox: buspg.NewOutbox(pool, buspg.Name)}
	if db.holders, err = startHolder(ctx, db, ht); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: holders: %w", err)
	}
	return db, nil
}

// connect opens a pool on the database of connString and reaches it.
func connect(ctx context.Context, connString string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		// pgx's message names what is wrong with the URL, its password
		// left out.
		return nil, fmt.Errorf("postgres: postgres_url: %w", err)
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "aivis"
	}
	// Every query is short: compiling one (JIT, for those the planner
	// thinks dear) costs more than running it.
	cfg.ConnConfig.RuntimeParams["jit"] = "off"
	cfg.ConnConfig.Tracer = retryTracer{}
	where := describe(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", where, err)
	}
	if err := reach(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %s: %w", where, err)
	}
	return pool, nil
}

// reachWait is how long opening waits out a server that refuses new
// connections for now.
const reachWait = 15 * time.Second

// refused is told of each refusal reach waits out (tests).
var refused func()

// reach pings the pool, waiting (backing off from 50 ms to a second) while
// the server refuses a connection for now: at its connections' limit, the
// server's or the role's (53300: another instance or a CLI command frees
// one soon), or starting up (57P03); up to reachWait, then its error.
func reach(ctx context.Context, pool *pgxpool.Pool) error {
	start, wait := time.Now(), 50*time.Millisecond
	for {
		err := pool.Ping(ctx)
		var pe *pgconn.PgError
		if err == nil || !errors.As(err, &pe) || (pe.Code != "53300" && pe.Code != "57P03") || time.Since(start) > reachWait {
			return err
		}
		if refused != nil {
			refused()
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// describe names a database without its password: user, host, port and
// database, for errors and logs.
func describe(c *pgx.ConnConfig) string {
	u := url.URL{Scheme: "postgres", User: url.User(c.User), Host: fmt.Sprintf("%s:%d", c.Host, c.Port), Path: "/" + c.Database}
	return u.String()
}

// Ping is a round trip to the server on a connection of the pool.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }

// Close stops this process's holder (forgetting it) and closes the pool.
func (db *DB) Close() error {
	db.holders.stop()
	db.pool.Close()
	return nil
}

// Update runs fn in a SERIALIZABLE transaction (see serializable).
func (db *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	var last *txn
	err := db.serializable(ctx, func(ctx context.Context, tx pgx.Tx) error {
		last = &txn{db: db, tx: tx, ctx: ctx}
		return last.run(fn)
	})
	if err == nil && last != nil {
		db.metrics.Load().Published(last.kinds)
	}
	return err
}

// serializable runs fn in a SERIALIZABLE transaction, again from the start
// while PostgreSQL reports a serialization failure or a deadlock at any of
// its statements, whatever fn made of the error, or at the commit (after a
// short random wait, growing with each try), up to maxTries. fn runs its
// statements under the context it is given.
func (db *DB) serializable(ctx context.Context, fn func(context.Context, pgx.Tx) error) error {
	for try := 1; ; try++ {
		err, again := db.once(ctx, fn)
		if !again || ctx.Err() != nil {
			return err
		}
		if try == maxTries {
			return fmt.Errorf("postgres: gave up after %d serialization failures: %w", try, err)
		}
		db.metrics.Load().Retry()
		backoff(ctx, try)
	}
}

// maxTries bounds the runs of one transaction. Each failed run lost to a
// transaction that committed, so a run waits only for those that raced
// it: 32 callers racing for one row commit one after the other within a
// few dozen runs each.
const maxTries = 100

func backoff(ctx context.Context, try int) {
	limit := min(time.Duration(1)<<min(try, 16)*50*time.Microsecond, 20*time.Millisecond)
	select {
	case <-ctx.Done():
	case <-time.After(rand.N(limit) + 1):
	}
}

// once runs fn in one transaction; again says that the transaction lost a
// conflict and is to be run again.
func (db *DB) once(ctx context.Context, fn func(context.Context, pgx.Tx) error) (err error, again bool) {
	lost := new(conflictMark)
	tctx := context.WithValue(ctx, conflictKey{}, lost)
	tx := newPipelined(db.pool)
	done := false
	defer func() {
		if !done {
			tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	err = fn(tctx, tx)
	if err == nil && !lost.hit {
		err = tx.Commit(tctx)
		done = err == nil
	}
	return err, lost.hit
}

// conflictMark notes that a statement of a transaction failed with a
// serialization failure or a deadlock; retryTracer sets it, from the
// context every statement of the transaction runs under.
type conflictMark struct{ hit bool }

type conflictKey struct{}

type retryTracer struct{}

func (retryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (retryTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	if m, ok := ctx.Value(conflictKey{}).(*conflictMark); ok && retryable(data.Err) {
		m.hit = true
	}
}

// The statements of a batch (pipelined's) are traced as a batch's.
func (retryTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (retryTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	if m, ok := ctx.Value(conflictKey{}).(*conflictMark); ok && retryable(data.Err) {
		m.hit = true
	}
}

func (retryTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// And a COPY's (a scan's answers).
func (retryTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	return ctx
}

func (retryTracer) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromEndData) {
	if m, ok := ctx.Value(conflictKey{}).(*conflictMark); ok && retryable(data.Err) {
		m.hit = true
	}
}

// retryable reports a serialization failure, a deadlock, or the shared
// memory of the locks running out (53200): a SERIALIZABLE transaction's
// reads take predicate locks, kept after its commit until every
// transaction that overlapped it has ended, in a table of
// max_pred_locks_per_transaction × max_connections entries; under many
// concurrent Updates it can fill for a moment, and the transaction that
// finds it full fails where a later one succeeds.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01" || pe.Code == "53200")
}

// txn is a write transaction (store.Tx); its statements run under ctx.
type txn struct {
	db    *DB
	tx    pgx.Tx
	ctx   context.Context
	kinds []string // of the events published, counted once it commits
	held  []held   // the messages published, written at its end
}

// querier is what the pool and a transaction share, so that reads are
// written once for both.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

type scanner interface{ Scan(...any) error }

// collect reads every row of a query with scan.
func collect[T any](ctx context.Context, q querier, scan func(scanner) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
}

func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// conflict is ErrConflict for a write an integrity constraint refused (a
// taken key, a missing parent, a CHECK), as SQLite's engine says it.
func conflict(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && len(pe.Code) == 5 && pe.Code[:2] == "23" {
		return fmt.Errorf("%w: %v", store.ErrConflict, err)
	}
	return err
}

// prefixed qualifies each of a comma-separated column list with p.
func prefixed(p, columns string) string {
	fields := strings.Split(columns, ",")
	for i, f := range fields {
		fields[i] = p + strings.TrimSpace(f)
	}
	return strings.Join(fields, ", ")
}

// null is NULL for "".
func null(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nonNil is an empty list for none: the arrays of the schema are NOT NULL.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
