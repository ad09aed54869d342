package limits_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/limits/countertest"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/internal/testsvc"
)

// storeEngines open stores of each engine for the store counter's tests:
// fresh makes a new, empty store and returns an opener of handles on it,
// each a handle of its own, as another process opens one, closed when the
// test that opened it ends.
var storeEngines = []struct {
	name  string
	fresh func(t *testing.T) func(t *testing.T) store.Store
}{
	{"sqlite", func(t *testing.T) func(*testing.T) store.Store {
		_, path := openDB(t)
		return func(t *testing.T) store.Store {
			h, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			return h
		}
	}},
	{"postgres", func(t *testing.T) func(*testing.T) store.Store {
		url := testsvc.Postgres(t)
		key := make([]byte, 32)
		rand.Read(key)
		box, err := secrets.New(key)
		if err != nil {
			t.Fatal(err)
		}
		return func(t *testing.T) store.Store {
			h, err := postgres.Open(context.Background(), url, box)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			return h
		}
	}},
}

// TestStoreCounter runs the suite every counter passes on the store
// counter over a SQLite file and a PostgreSQL database; each handle opens
// the store anew, as another process does, and the suite races requests
// over two of them.
func TestStoreCounter(t *testing.T) {
	for _, e := range storeEngines {
		t.Run(e.name, func(t *testing.T) {
			countertest.Run(t, func(t *testing.T) (store.Store, func(*testing.T, time.Time) limits.Counter) {
				open := e.fresh(t)
				return open(t), func(t *testing.T, _ time.Time) limits.Counter { return limits.NewStoreCounter(open(t), nil) }
			})
		})
	}
}

// TestStoreGuard runs the suite every guard passes on the store counter's
// guards, over a SQLite file and a PostgreSQL database: each guard opened
// is on a handle of its own, as each process's is, so that the cases over
// two handles (failures at once, a guard of one name opened again) are
// two processes sharing its windows.
func TestStoreGuard(t *testing.T) {
	for _, e := range storeEngines {
		t.Run(e.name, func(t *testing.T) {
			countertest.RunGuards(t, func(t *testing.T) func(*testing.T, string, int, time.Duration) limits.Guard {
				open := e.fresh(t)
				return func(t *testing.T, name string, limit int, window time.Duration) limits.Guard {
					return limits.NewStoreCounter(open(t), nil).Guard(name, limit, window)
				}
			})
		})
	}
}

// TestStoreAdmit runs the cases of Admit and Screen on the store counter
// with its guard, each pair on a handle of its own, as two processes on
// one store have them: the guesses at one process refuse the address at
// the other.
func TestStoreAdmit(t *testing.T) {
	for _, e := range storeEngines {
		t.Run(e.name, func(t *testing.T) {
			countertest.RunAdmit(t, func(t *testing.T) func(*testing.T, int) (limits.Counter, limits.Guard) {
				open := e.fresh(t)
				return func(t *testing.T, limit int) (limits.Counter, limits.Guard) {
					c := limits.NewStoreCounter(open(t), nil)
					return c, c.Guard("auth", limit, time.Minute)
				}
			})
		})
	}
}

// TestStoreCounterPrunesGuards: the store counter's Run deletes the
// guards' windows that ended a minute ago or more, and keeps the current
// ones.
func TestStoreCounterPrunesGuards(t *testing.T) {
	for _, e := range storeEngines {
		t.Run(e.name, func(t *testing.T) {
			st := e.fresh(t)(t)
			c := limits.NewStoreCounter(st, nil)
			g := c.Guard("auth", 5, time.Minute)
			now := time.Now()
			then := now.Add(-3 * time.Minute)
			old, current := limits.AddrSubject(addr("203.0.113.1")), limits.AddrSubject(addr("203.0.113.2"))
			countertest.Fail(t, g, addr("203.0.113.1"), then)
			countertest.Fail(t, g, addr("203.0.113.2"), now)
			if tl, err := g.Peek(t.Context(), old, then); err != nil || tl.Count != 1 {
				t.Fatalf("the old window before Run: %+v, %v; want its failure", tl, err)
			}
			ctx, stop := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { c.Run(ctx); close(done) }()
			defer func() { stop(); <-done }()
			deadline := time.Now().Add(10 * time.Second)
			for {
				tl, err := g.Peek(t.Context(), old, then)
				if err != nil {
					t.Fatal(err)
				}
				if tl.Count == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the window that ended 2 minutes ago is still kept 10 s after Run began: %+v", tl)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if tl, err := g.Peek(t.Context(), current, now); err != nil || tl.Count != 1 {
				t.Errorf("the current window after the pruning: %+v, %v; want its failure kept", tl, err)
			}
		})
	}
}
