package visibility

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// gate is a store whose first Update says it began (began) and waits
// until it is let go (first), and whose transactions refuse readings of
// one domain.
type gate struct {
	Store
	mu      sync.Mutex
	updates int
	began   chan struct{}
	first   chan struct{}
	refuse  string
}

func (g *gate) Update(ctx context.Context, fn func(store.Tx) error) error {
	g.mu.Lock()
	g.updates++
	n := g.updates
	g.mu.Unlock()
	if n == 1 {
		g.began <- struct{}{}
		<-g.first
	}
	return g.Store.Update(ctx, func(tx store.Tx) error { return fn(refusing{tx, g.refuse}) })
}

type refusing struct {
	store.Tx
	domain string
}

func (r refusing) InsertReading(rd store.Reading) (store.Reading, error) {
	if rd.Domain == r.domain {
		return rd, fmt.Errorf("refused: %w", store.ErrConflict)
	}
	return r.Tx.InsertReading(rd)
}

func (r refusing) InsertReadings(rds []store.Reading) ([]store.Reading, []store.Reading, error) {
	for _, rd := range rds {
		if rd.Domain == r.domain {
			return nil, nil, fmt.Errorf("refused: %w", store.ErrConflict)
		}
	}
	return r.Tx.InsertReadings(rds)
}

// TestAddsShareATransaction: readings added while a transaction runs go
// together in the next one; when the store refuses that group, each is
// written alone, and only the refused one fails.
func TestAddsShareATransaction(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "A", Tier: "starter", Type: store.AccountStandard, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	g := &gate{Store: db, began: make(chan struct{}), first: make(chan struct{}), refuse: "bad.example"}
	r := &Recorder{Store: g, Now: time.Now}
	reading := func(domain string, score int) store.Reading {
		return store.Reading{AccountID: "acct_1", Domain: domain, VisibilityScore: score, Sentiment: "neutral", Source: SourceAPI,
			MeasuredAt: time.Now().UTC()}
	}
	type result struct {
		domain string
		ev     bool
		err    error
	}
	add := func(rd store.Reading, out chan<- result) {
		_, ev, err := r.Add(ctx, rd)
		out <- result{rd.Domain, ev != nil, err}
	}
	// The first reading's transaction waits; meanwhile 10 more come, two
	// of one domain, ordered: the second changes nothing.
	firstOut := make(chan result, 1)
	go add(reading("first.example", 10), firstOut)
	<-g.began
	out := make(chan result, 10)
	for i := range 8 {
		go add(reading(fmt.Sprintf("d%d.example", i), 20+i), out)
	}
	waitQueued(t, r, 8)
	go add(reading("twice.example", 50), out)
	waitQueued(t, r, 9)
	go add(reading("twice.example", 50), out)
	waitQueued(t, r, 10)
	close(g.first)
	if res := <-firstOut; res.err != nil || !res.ev {
		t.Fatalf("the first reading: %+v", res)
	}
	events := 0
	for range 10 {
		res := <-out
		if res.err != nil {
			t.Errorf("%s: %v", res.domain, res.err)
		}
		if res.ev {
			events++
		}
	}
	if events != 9 || g.updates != 2 {
		t.Errorf("%d events (want 9: the repeat changes nothing), %d transactions (want 2)", events, g.updates)
	}

	// A group with a refused reading: written again one at a time.
	g.mu.Lock()
	g.updates, g.first = 0, make(chan struct{})
	g.mu.Unlock()
	firstOut = make(chan result, 1)
	go add(reading("first.example", 11), firstOut)
	<-g.began
	out = make(chan result, 3)
	for i, d := range []string{"d0.example", "bad.example", "d1.example"} {
		go add(reading(d, 70), out)
		waitQueued(t, r, i+1)
	}
	close(g.first)
	<-firstOut
	for range 3 {
		res := <-out
		if refused := res.domain == "bad.example"; refused != errors.Is(res.err, store.ErrConflict) || (!refused && !res.ev) {
			t.Errorf("%s: event %v, %v", res.domain, res.ev, res.err)
		}
	}
	if g.updates != 1+1+3 {
		t.Errorf("%d transactions; want the first, the refused group, and one a reading", g.updates)
	}
	for d, want := range map[string]int{"d0.example": 70, "d1.example": 70, "twice.example": 50, "first.example": 11} {
		if rd, err := db.LatestReading(ctx, store.ReadingFilter{AccountID: "acct_1", Domain: d}); err != nil || rd.VisibilityScore != want {
			t.Errorf("%s's latest: %+v, %v; want %d", d, rd, err, want)
		}
	}
	if _, err := db.LatestReading(ctx, store.ReadingFilter{AccountID: "acct_1", Domain: "bad.example"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused reading was stored: %v", err)
	}
}

// waitQueued polls, with a deadline, until n readings wait for the next
// transaction: the queue is the Recorder's own, with no event to wait on.
func waitQueued(t *testing.T, r *Recorder, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		r.mu.Lock()
		q := len(r.queue)
		r.mu.Unlock()
		if q == n {
			return
		}
	}
	t.Fatalf("%d readings never waited together", n)
}
