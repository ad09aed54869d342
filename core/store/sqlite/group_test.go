package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
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
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			results[i] = db.Update(ctx, func(tx store.Tx) error {
				// Two writes per call: a failing call must lose both.
				for j := range 2 {
					if _, err := tx.InsertReading(reading(fmt.Sprintf("d%d.example", i), j)); err != nil {
						return err
					}
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
