package visibility_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/core/visibility"
)

var ctx = context.Background()

func setup(t testing.TB) (*visibility.Recorder, auth.Principal, *sqlite.DB) {
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	a := store.Account{ID: "acct_1", Name: "A", Tier: "starter", Type: store.AccountStandard, CreatedAt: time.Now()}
	if err := db.CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	p := auth.Principal{Principal: store.Principal{Key: store.Key{ID: "key_1", AccountID: a.ID}, Account: a}}
	return &visibility.Recorder{Store: db, Now: time.Now}, p, db
}

// otherAccount makes a second account, acct_2 (Enterprise), and its key's
// principal.
func otherAccount(t *testing.T, db *sqlite.DB) auth.Principal {
	t.Helper()
	a := store.Account{ID: "acct_2", Name: "B", Tier: "enterprise", Type: store.AccountStandard, CreatedAt: time.Now()}
	if err := db.CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	return auth.Principal{Principal: store.Principal{Key: store.Key{ID: "key_2", AccountID: a.ID}, Account: a}}
}

func ptr[T any](v T) *T { return &v }

func TestChangeDetection(t *testing.T) {
	r, p, _ := setup(t)
	rec := func(score int, sentiment string, at *time.Time) (bool, int) {
		t.Helper()
		_, ev, err := r.Record(ctx, p, client.RecordReading{Domain: "Example.COM", VisibilityScore: &score, Sentiment: sentiment, MeasuredAt: at})
		if err != nil {
			t.Fatal(err)
		}
		if ev == nil {
			return false, 0
		}
		return true, ev.ScoreChange
	}
	if ok, change := rec(40, "neutral", nil); !ok || change != -1 {
		t.Fatalf("first reading: event %v, change %d", ok, change)
	}
	if ok, _ := rec(40, "neutral", nil); ok {
		t.Fatal("an unchanged reading emitted an event")
	}
	if ok, change := rec(40, "positive", nil); !ok || change != 0 {
		t.Fatalf("a sentiment change: %v %d", ok, change)
	}
	if ok, change := rec(31, "positive", nil); !ok || change != 9 {
		t.Fatalf("a score change: %v %d", ok, change)
	}
	if ok, _ := rec(99, "negative", ptr(time.Now().Add(-time.Hour))); ok {
		t.Fatal("a reading older than the latest emitted an event")
	}
}

func TestBadReadingsChangeNothing(t *testing.T) {
	r, p, db := setup(t)
	for name, in := range map[string]client.RecordReading{
		"no score":        {Domain: "example.com", Sentiment: "positive"},
		"score too high":  {Domain: "example.com", VisibilityScore: ptr(101), Sentiment: "positive"},
		"bad sentiment":   {Domain: "example.com", VisibilityScore: ptr(1), Sentiment: "great"},
		"sentiment score": {Domain: "example.com", VisibilityScore: ptr(1), Sentiment: "mixed", SentimentScore: ptr(1.5)},
		"future":          {Domain: "example.com", VisibilityScore: ptr(1), Sentiment: "mixed", MeasuredAt: ptr(time.Now().Add(time.Hour))},
		"year 1500":       {Domain: "example.com", VisibilityScore: ptr(1), Sentiment: "mixed", MeasuredAt: ptr(time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC))},
		"before 2000":     {Domain: "example.com", VisibilityScore: ptr(1), Sentiment: "mixed", MeasuredAt: ptr(visibility.Earliest.Add(-time.Nanosecond))},
		"year 9999":       {Domain: "example.com", VisibilityScore: ptr(1), Sentiment: "mixed", MeasuredAt: ptr(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))},
		"bad domain":      {Domain: "localhost", VisibilityScore: ptr(1), Sentiment: "mixed"},
	} {
		_, _, err := r.Record(ctx, p, in)
		if f, ok := fault.As(err); !ok || f.Code != fault.ValidationError {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, _, err := r.Record(ctx, p, client.RecordReading{Domain: "example.com", VisibilityScore: ptr(1), Sentiment: "mixed", ClientID: "cli_x"})
	if f, ok := fault.As(err); !ok || f.Code != fault.PlanNotAllowed {
		t.Errorf("client_id on a standard account: %v", err)
	}
	if _, err := db.LatestReading(ctx, store.ReadingFilter{AccountID: "acct_1", Domain: "example.com"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused reading was stored: %v", err)
	}
}
