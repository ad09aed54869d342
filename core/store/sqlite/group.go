package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	bus "github.com/aivis/aivis/core/bus/sqlite"
	"github.com/aivis/aivis/core/store"
)

// maxGroup bounds how many Update calls share one transaction.
const maxGroup = 128

// A write is one Update call waiting for the writer.
type write struct {
	ctx  context.Context
	fn   func(store.Tx) error
	done chan result
}

type result struct {
	err      error
	panicked any
	t        *txn
}

// writer runs Update calls with group commit: the calls that arrive while
// a transaction runs share the next one, so that the commit (the costly
// part of a write) is paid once for all of them, and a caller is answered
// only after the commit that holds its changes. One failing call undoes
// only its own changes; the group has no savepoint per call, which would
// copy every page a call touches (see commit).
type writer struct {
	db     *DB
	latest *latestReadings
	mu     sync.Mutex
	queue  []*write
	closed bool
	wake   chan struct{}
	quit   chan struct{}
	done   chan struct{}
}

func newWriter(db *DB) *writer {
	wr := &writer{db: db, latest: newLatestReadings(), wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go wr.run()
	return wr
}

var errClosed = errors.New("sqlite: database closed")

// stop ends the writer after the calls already queued; later calls get
// errClosed.
func (wr *writer) stop() {
	wr.mu.Lock()
	if wr.closed {
		wr.mu.Unlock()
		return
	}
	wr.closed = true
	wr.mu.Unlock()
	close(wr.quit)
	<-wr.done
}

func (wr *writer) submit(ctx context.Context, fn func(store.Tx) error) result {
	op := &write{ctx: ctx, fn: fn, done: make(chan result, 1)}
	wr.mu.Lock()
	if wr.closed {
		wr.mu.Unlock()
		return result{err: errClosed}
	}
	wr.queue = append(wr.queue, op)
	wr.mu.Unlock()
	select {
	case wr.wake <- struct{}{}:
	default:
	}
	return <-op.done
}

func (wr *writer) run() {
	defer close(wr.done)
	for {
		runtime.Gosched()
		wr.mu.Lock()
		n := min(len(wr.queue), maxGroup)
		batch := wr.queue[:n:n]
		wr.queue = wr.queue[n:]
		if len(wr.queue) == 0 {
			wr.queue = nil
		}
		wr.mu.Unlock()
		if n > 0 {
			wr.commit(batch)
			continue
		}
		select {
		case <-wr.wake:
		case <-wr.quit:
			wr.mu.Lock()
			left := wr.queue
			wr.queue = nil
			wr.mu.Unlock()
			for _, op := range left {
				op.done <- result{err: errClosed}
			}
			return
		}
	}
}

// commit runs a group of calls in one immediate transaction.
//
// A call that fails having written nothing leaves nothing to undo: SQLite
// backs out a failed statement itself. One that fails after writing is
// undone by rolling the transaction back and replaying, statement by
// statement, the writes of the calls before it (redo): they ran on the
// same state, so they make the same state again. A savepoint per call
// would spare the replay, but it copies each page the call touches to a
// journal first: on the hot pages every call shares, that cost a fifth of
// a recorded reading.
func (wr *writer) commit(batch []*write) {
	for len(batch) > 0 {
		batch = wr.group(batch)
	}
}

// group runs one transaction of commit; should it be given up, it returns
// the calls that had yet to run.
func (wr *writer) group(batch []*write) (rest []*write) {
	results := make([]result, len(batch))
	conn, err := wr.db.w.Conn(context.Background())
	if err == nil {
		defer conn.Close()
	}
	var w *wtx
	if err == nil {
		start := time.Now()
		w, err = begin(conn)
		wr.db.metrics.Load().LockWait(time.Since(start))
	}
	var version int64
	if err == nil {
		version, err = wr.latest.check(w.tx)
	}
	if err != nil {
		wr.fail(w, batch, results, err)
		return nil
	}
	written := make(map[readingKey]latestEntry)
	ok := 0
	for i, op := range batch {
		if err := op.ctx.Err(); err != nil {
			results[i].err = err
			continue
		}
		mark := len(w.log)
		t := &txn{db: wr.db, tx: w, group: written, cache: wr.latest}
		results[i] = call(op.fn, t)
		if err := ended(conn); err != nil {
			// SQLite rolled the transaction back (a full disk, an I/O
			// error), whatever the call made of it.
			return wr.giveUp(w, batch, results, i, err)
		}
		if results[i].err == nil && results[i].panicked == nil {
			results[i].t = t
			ok++
			for k, e := range t.readings {
				written[k] = e
			}
			continue
		}
		if len(w.log) == mark || ok == 0 && i == len(batch)-1 {
			continue // nothing to undo, or nothing to keep
		}
		if err := w.redo(conn, mark, version); errors.Is(err, errRedo) {
			// Nothing of the group was written: the failed call keeps
			// its own error, and the others run again (an Update's fn
			// may), on the state the other connection left, in a
			// transaction of their own.
			w.tx.Rollback()
			batch[i].done <- results[i]
			return append(slices.Clone(batch[:i]), batch[i+1:]...)
		} else if err != nil {
			return wr.giveUp(w, batch, results, i, err)
		}
	}
	if ok == 0 {
		w.tx.Rollback()
	} else if err := w.tx.Commit(); err != nil {
		for i := range results {
			if results[i].t != nil {
				results[i] = result{err: err}
			}
		}
	} else {
		wr.latest.keep(written)
	}
	for i, op := range batch {
		op.done <- results[i]
	}
	return nil
}

// fail rolls the whole group back after an error of the transaction
// itself: the calls that succeeded or had yet to run get it; those that
// failed keep their own error (their changes are undone all the same),
// and one that panicked panics.
func (wr *writer) fail(w *wtx, batch []*write, results []result, err error) {
	if w != nil {
		w.tx.Rollback()
	}
	for i, op := range batch {
		if results[i].err == nil && results[i].panicked == nil {
			results[i] = result{err: err}
		}
		op.done <- results[i]
	}
}

// giveUp fails the calls up to the i-th with the transaction and returns
// the ones after it, which had yet to run, for a transaction of their own.
func (wr *writer) giveUp(w *wtx, batch []*write, results []result, i int, err error) []*write {
	wr.fail(w, batch[:i+1], results[:i+1], err)
	return batch[i+1:]
}

// errRedo is redo's word that another connection committed while a
// failed call's changes were being undone: the transaction is given up (a
// replay of the calls' writes on that other state could differ from what
// the calls would do there), and the calls that had not failed run again.
var errRedo = errors.New("sqlite: another connection wrote while this transaction was redone; nothing was written")

// A stmt is a write as it ran.
type stmt struct {
	query string
	args  []any
}

// wtx is the writer's transaction as calls use it: it logs each write that
// succeeded, to be replayed should a later call of the group be undone.
// Every statement of a call goes through it: the log must hold each write.
type wtx struct {
	tx  *sql.Tx
	log []stmt
}

func begin(conn *sql.Conn) (*wtx, error) {
	tx, err := conn.BeginTx(context.Background(), nil)
	if err != nil {
		return nil, err
	}
	return &wtx{tx: tx}, nil
}

func (w *wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := w.tx.ExecContext(ctx, query, args...)
	if err == nil {
		w.log = append(w.log, stmt{query, slices.Clone(args)})
	}
	return res, err
}

func (w *wtx) Exec(query string, args ...any) (sql.Result, error) {
	return w.ExecContext(bg, query, args...)
}

// QueryWrite runs a statement that writes and returns rows (UPDATE ...
// RETURNING): logged as a write, and replayed as one.
func (w *wtx) QueryWrite(query string, args ...any) (*sql.Rows, error) {
	rows, err := w.tx.QueryContext(bg, query, args...)
	if err == nil {
		w.log = append(w.log, stmt{query, slices.Clone(args)})
	}
	return rows, err
}

// Reads are not logged: a statement that writes goes through Exec or
// QueryWrite, which keeps the log whole.
func (w *wtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return w.tx.QueryContext(ctx, query, args...)
}

func (w *wtx) Query(query string, args ...any) (*sql.Rows, error) {
	return w.tx.QueryContext(bg, query, args...)
}

func (w *wtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return w.tx.QueryRowContext(ctx, query, args...)
}

func (w *wtx) QueryRow(query string, args ...any) *sql.Row {
	return w.tx.QueryRowContext(bg, query, args...)
}

// redo undoes the writes logged past mark (a failed call's): it rolls the
// transaction back, begins another, and replays the writes before mark.
// The write lock is let go in between; should another connection (another
// process) take it and commit, the state the calls ran on is gone, and
// redo gives up with errRedo.
func (w *wtx) redo(conn *sql.Conn, mark int, version int64) error {
	w.tx.Rollback()
	if beforeRedo != nil {
		beforeRedo()
	}
	tx, err := conn.BeginTx(context.Background(), nil)
	if err != nil {
		return err
	}
	w.tx = tx
	v, err := dataVersion(tx)
	if err != nil {
		return err
	}
	if v != version {
		return errRedo
	}
	for _, s := range w.log[:mark] {
		if _, err := tx.Exec(s.query, s.args...); err != nil {
			return fmt.Errorf("sqlite: replaying a write: %w", err)
		}
	}
	w.log = w.log[:mark]
	return nil
}

// beforeRedo, when set (by tests), runs while redo holds no transaction.
var beforeRedo func()

// ended reports the transaction on conn gone: SQLite rolls it back itself
// on some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM), and the
// statements that followed would each commit on their own.
func ended(conn *sql.Conn) error {
	auto := false
	err := conn.Raw(func(dc any) error {
		c, err := rawConn(dc)
		if err == nil {
			auto = c.AutoCommit()
		}
		return err
	})
	if err == nil && auto {
		err = errors.New("sqlite: the transaction was rolled back by an error")
	}
	return err
}

// call runs fn, turning a panic into a value the caller re-raises in its
// own goroutine.
func call(fn func(store.Tx) error, t *txn) (r result) {
	defer func() {
		if p := recover(); p != nil {
			r = result{panicked: p}
		}
	}()
	return result{err: fn(t)}
}

// Update runs fn in an immediate write transaction, which it may share
// with concurrent calls (group commit); fn's changes commit or roll back
// as a whole, and Update returns after they are durable.
func (db *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := db.writer.submit(ctx, fn)
	if r.panicked != nil {
		panic(r.panicked)
	}
	if r.err != nil {
		return r.err
	}
	for _, topic := range r.t.topics {
		bus.Notify(topic)
	}
	db.metrics.Load().Published(r.t.kinds)
	return nil
}
