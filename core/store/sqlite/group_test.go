package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// Concurrent Update calls share transactions; each call's changes commit
// or roll back as its own: a call that fails or panics takes back only its
// own writes.
func TestGroupCommitKeepsEachCallWhole(t *testing.T) {
	db, path := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	reading := func(domain string, score int) store.Reading {
		return store.Reading{AccountID: "acct_1", Domain: domain, VisibilityScore: score, Sentiment: "neutral",
			Source: "api", MeasuredAt: t0}
	}
	// The first call holds the writer until the others have queued behind
	// it, so that they run as groups of several.
	held, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- db.Update(ctx, func(tx store.Tx) error {
			close(held)
			<-release
			_, err := tx.InsertReading(reading("first.example", 1))
			return err
		})
	}()
	<-held

	const calls = 60
	errBoom := errors.New("boom")
	results := make([]error, calls)
	panics := make([]any, calls)
	ids := make([][2]int64, calls) // what each call was told of its rows
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			results[i] = db.Update(ctx, func(tx store.Tx) error {
				// Two writes per call: a failing call must lose both.
				for j := range 2 {
					r, err := tx.InsertReading(reading(fmt.Sprintf("d%d.example", i), j))
					if err != nil {
						return err
					}
					ids[i][j] = r.ID
				}
				switch i % 3 {
				case 1:
					return errBoom
				case 2:
					if i%2 == 0 {
						panic("call " + fmt.Sprint(i))
					}
				}
				return nil
			})
		})
	}
	time.Sleep(100 * time.Millisecond) // let them queue
	close(release)
	wg.Wait()
	must(t, <-first)

	r := raw(t, path)
	for i := range calls {
		var n int
		must(t, r.QueryRow(`SELECT count(*) FROM visibility_readings WHERE domain = ?`, fmt.Sprintf("d%d.example", i)).Scan(&n))
		switch {
		case i%3 == 1:
			if !errors.Is(results[i], errBoom) || n != 0 {
				t.Errorf("call %d failed: Update = %v with %d rows kept, want boom and none", i, results[i], n)
			}
		case i%3 == 2 && i%2 == 0:
			if panics[i] != "call "+fmt.Sprint(i) || n != 0 {
				t.Errorf("call %d panicked: recovered %v with %d rows kept, want its panic and none", i, panics[i], n)
			}
		default:
			if results[i] != nil || panics[i] != nil || n != 2 {
				t.Errorf("call %d: Update = %v (panic %v) with %d rows, want nil and 2", i, results[i], panics[i], n)
			}
			// The calls after it in its group were undone by replaying
			// its writes: the ids it was given are still its rows'.
			for j, id := range ids[i] {
				var domain string
				var score int
				must(t, r.QueryRow(`SELECT domain, visibility_score FROM visibility_readings WHERE id = ?`, id).Scan(&domain, &score))
				if domain != fmt.Sprintf("d%d.example", i) || score != j {
					t.Errorf("call %d was given id %d for its reading %d; that row is %s's %d", i, id, j, domain, score)
				}
			}
		}
	}
	var firstRows int
	must(t, r.QueryRow(`SELECT count(*) FROM visibility_readings WHERE domain = 'first.example'`).Scan(&firstRows))
	if firstRows != 1 {
		t.Errorf("the first call kept %d rows, want 1", firstRows)
	}
}

// A call whose context ended before its turn does nothing; a call after
// Close is refused.
func TestUpdateCancelledAndClosed(t *testing.T) {
	db, _ := newDB(t)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	ran := false
	if err := db.Update(cctx, func(store.Tx) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
		t.Errorf("cancelled Update = %v, ran %v; want context.Canceled, not run", err, ran)
	}
	must(t, db.Close())
	if err := db.Update(ctx, func(store.Tx) error { ran = true; return nil }); err == nil || ran {
		t.Errorf("Update after Close = %v, ran %v; want an error, not run", err, ran)
	}
}

// A failed call's writes are undone by replaying the writes of the calls
// before it in a new transaction. Should another connection commit in
// between, the replay could differ from what those calls would do on that
// state: the replay is given up, and those calls run again, with the calls
// after, which had yet to run, in a transaction of their own; the failed
// call keeps its error.
func TestRedoGivesUpWhenAnotherConnectionWrote(t *testing.T) {
	db, path := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	reading := func(domain string) store.Reading {
		return store.Reading{AccountID: "acct_1", Domain: domain, VisibilityScore: 1, Sentiment: "neutral",
			Source: "api", MeasuredAt: t0}
	}
	insert := func(domain string, fail error) func(store.Tx) error {
		return func(tx store.Tx) error {
			if _, err := tx.InsertReading(reading(domain)); err != nil {
				return err
			}
			return fail
		}
	}
	other := raw(t, path)
	sqlite.BeforeRedo(t, func() {
		_, err := other.Exec(`INSERT INTO visibility_readings (account_id, domain, visibility_score, sentiment, sentiment_score,
			source, measured_at) VALUES ('acct_1', 'other.example', 1, 'neutral', 0, 'api', 0)`)
		must(t, err)
	})

	held, release := make(chan struct{}), make(chan struct{})
	go db.Update(ctx, func(store.Tx) error { close(held); <-release; return nil })
	<-held
	errBoom := errors.New("boom")
	calls := []func(store.Tx) error{insert("a.example", nil), insert("b.example", errBoom), insert("c.example", nil)}
	results := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, fn := range calls {
		wg.Go(func() { results[i] = db.Update(ctx, fn) })
		for sqlite.Queued(db) < i+1 { // one group, in this order
			time.Sleep(time.Millisecond)
		}
	}
	close(release)
	wg.Wait()

	r := raw(t, path)
	count := func(domain string) (n int) {
		must(t, r.QueryRow(`SELECT count(*) FROM visibility_readings WHERE domain = ?`, domain).Scan(&n))
		return n
	}
	if results[0] != nil || count("a.example") != 1 {
		t.Errorf("the call before the failed one: Update = %v with %d rows; want nil and 1 (run again)", results[0], count("a.example"))
	}
	if !errors.Is(results[1], errBoom) || count("b.example") != 0 {
		t.Errorf("the failed call: Update = %v with %d rows; want boom and none", results[1], count("b.example"))
	}
	if results[2] != nil || count("c.example") != 1 {
		t.Errorf("the call after: Update = %v with %d rows; want nil and 1", results[2], count("c.example"))
	}
	if count("other.example") != 1 {
		t.Errorf("the other connection's row: %d", count("other.example"))
	}
	// The writer goes on.
	must(t, db.Update(ctx, insert("d.example", nil)))
}
