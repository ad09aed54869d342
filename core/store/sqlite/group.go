package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"

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
// a transaction runs share the next one, each inside its own savepoint, so
// that one failing call rolls back only its own changes while the commit
// (the costly part of a write) is paid once for all of them. A caller is
// answered only after the commit that holds its changes.
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

// commit runs a group of calls in one immediate transaction. A lone call
// needs no savepoint: its error rolls the transaction back.
func (wr *writer) commit(batch []*write) {
	results := make([]result, len(batch))
	tx, err := wr.db.w.BeginTx(context.Background(), nil)
	if err != nil {
		for _, op := range batch {
			op.done <- result{err: err}
		}
		return
	}
	if err := wr.latest.check(tx); err != nil {
		wr.fail(tx, batch, results, err)
		return
	}
	written := make(map[readingKey]latestEntry)
	grouped := len(batch) > 1
	ok := 0
	for i, op := range batch {
		if err := op.ctx.Err(); err != nil {
			results[i].err = err
			continue
		}
		if grouped {
			if _, err := tx.Exec(`SAVEPOINT g`); err != nil {
				wr.fail(tx, batch, results, fmt.Errorf("sqlite: savepoint: %w", err))
				return
			}
		}
		t := &txn{db: wr.db, tx: tx, group: written, cache: wr.latest}
		results[i] = call(op.fn, t)
		if results[i].err == nil && results[i].panicked == nil {
			results[i].t = t
			ok++
			for k, e := range t.readings {
				written[k] = e
			}
			if grouped {
				if _, err := tx.Exec(`RELEASE g`); err != nil {
					wr.fail(tx, batch, results, fmt.Errorf("sqlite: release savepoint: %w", err))
					return
				}
			}
			continue
		}
		if !grouped {
			break
		}
		// Undo this call's changes only; the transaction goes on.
		if _, err := tx.Exec(`ROLLBACK TO g`); err != nil {
			wr.fail(tx, batch, results, fmt.Errorf("sqlite: rollback to savepoint: %w", err))
			return
		}
		if _, err := tx.Exec(`RELEASE g`); err != nil {
			wr.fail(tx, batch, results, fmt.Errorf("sqlite: release savepoint: %w", err))
			return
		}
	}
	if ok == 0 {
		tx.Rollback()
	} else if err := tx.Commit(); err != nil {
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
}

// fail rolls the whole group back after an error of the transaction
// itself: every call gets it, but for one that panicked, which panics.
func (wr *writer) fail(tx *sql.Tx, batch []*write, results []result, err error) {
	tx.Rollback()
	for i, op := range batch {
		if results[i].panicked == nil {
			results[i] = result{err: err}
		}
		op.done <- results[i]
	}
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
	for _, id := range r.t.released {
		db.leases.release(id)
	}
	return nil
}
