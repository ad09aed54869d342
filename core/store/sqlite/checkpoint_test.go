package sqlite_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// The writer leaves checkpoints to the checkpointer, which keeps the WAL
// from growing with what is written: 8 MB written in ten rounds, each
// round followed by a checkpoint that copied all of it (the fence), leave
// a WAL of about one round, which the writer starts over after each.
func TestCheckpointerKeepsTheWALSmall(t *testing.T) {
	complete := make(chan struct{}, 1)
	sqlite.AfterCheckpoint(t, func(frames, copied int) {
		if frames > 0 && copied == frames {
			select {
			case complete <- struct{}{}:
			default:
			}
		}
	})
	db, path := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	// The migrations' frames (a megabyte and more) checkpointed first: the
	// rounds' WAL starts over, and measures the rounds alone.
	select {
	case <-complete:
	case <-time.After(10 * time.Second):
		t.Fatal("no complete checkpoint of the migrations in 10 s")
	}
	big := strings.Repeat("x", 80<<10)
	for round := range 10 {
		for i := range 10 {
			n := round*10 + i
			must(t, db.Update(ctx, func(tx store.Tx) error {
				_, err := tx.InsertReading(store.Reading{AccountID: "acct_1", Domain: big[:200] + ".example", VisibilityScore: n % 100,
					Sentiment: "neutral", Source: big, MeasuredAt: t0.Add(time.Duration(n) * time.Second)})
				return err
			}))
		}
		// A checkpoint that began before the last commit may report
		// complete: the second one told after this point began after it.
		select {
		case <-complete:
		default:
		}
		for range 2 {
			select {
			case <-complete:
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: no complete checkpoint in 10 s", round)
			}
		}
	}
	fi, err := os.Stat(path + "-wal")
	must(t, err)
	if fi.Size() > 2<<20 {
		t.Errorf("the WAL is %d bytes after 8 MB written in rounds of 800 KB, each checkpointed; want about one round", fi.Size())
	}
	var n int
	must(t, raw(t, path).QueryRow(`SELECT count(*) FROM visibility_readings`).Scan(&n))
	if n != 100 {
		t.Errorf("%d readings, want 100", n)
	}
}
