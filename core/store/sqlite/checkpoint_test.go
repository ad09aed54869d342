package sqlite_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// The writer leaves checkpoints to the checkpointer, which keeps the WAL
// from growing with what is written: 8 MB written in a hundred commits
// over about two seconds leave a WAL of a fraction of that.
func TestCheckpointerKeepsTheWALSmall(t *testing.T) {
	db, path := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	big := strings.Repeat("x", 80<<10)
	for i := range 100 {
		must(t, db.Update(ctx, func(tx store.Tx) error {
			_, err := tx.InsertReading(store.Reading{AccountID: "acct_1", Domain: big[:200] + ".example", VisibilityScore: i % 100,
				Sentiment: "neutral", Source: big, MeasuredAt: t0.Add(time.Duration(i) * time.Second)})
			return err
		}))
		time.Sleep(20 * time.Millisecond)
	}
	fi, err := os.Stat(path + "-wal")
	must(t, err)
	if fi.Size() > 4<<20 {
		t.Errorf("the WAL is %d bytes after 8 MB written over 2 s; checkpoints every %v should keep it far smaller", fi.Size(), 200*time.Millisecond)
	}
	var n int
	must(t, raw(t, path).QueryRow(`SELECT count(*) FROM visibility_readings`).Scan(&n))
	if n != 100 {
		t.Errorf("%d readings, want 100", n)
	}
}
