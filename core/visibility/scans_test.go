package visibility_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/core/visibility"
)

// fakeScanner measures a fixed score per domain, fails the attempts it is
// told to, and can hold scans until released.
type fakeScanner struct {
	mu      sync.Mutex
	scores  map[string]int
	failing map[string]int // attempts left to fail
	calls   map[string]int
	first   map[string]time.Time // when each domain was first scanned
	hold    chan struct{}        // nil: answer at once
}

func (f *fakeScanner) Scan(ctx context.Context, d store.MonitoredDomain) (visibility.Outcome, error) {
	f.mu.Lock()
	f.calls[d.Domain]++
	if _, ok := f.first[d.Domain]; !ok && f.first != nil {
		f.first[d.Domain] = time.Now()
	}
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return visibility.Outcome{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing[d.Domain] > 0 {
		f.failing[d.Domain]--
		return visibility.Outcome{}, errors.New("engine unreachable")
	}
	return visibility.Outcome{VisibilityScore: f.scores[d.Domain], Sentiment: "positive", SentimentScore: 0.4, ReadinessScore: 70,
		FormulaVersion: visibility.FormulaVersion, Breakdown: json.RawMessage(`{"engines":[]}`)}, nil
}

func (f *fakeScanner) count(domain string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[domain]
}

type scanFixture struct {
	scans   *visibility.Scans
	domains *visibility.Domains
	p       auth.Principal
	db      *sqlite.DB
	cancel  context.CancelFunc
	done    chan struct{}
}

func newScanFixture(t *testing.T, f *fakeScanner) *scanFixture {
	r, p, db := setup(t)
	fx := &scanFixture{p: p, db: db, domains: &visibility.Domains{Store: db, Now: time.Now},
		scans: &visibility.Scans{Store: db, Scanner: f, Recorder: r, Now: time.Now, Poll: 20 * time.Millisecond, Lease: 300 * time.Millisecond}}
	t.Cleanup(fx.stop)
	return fx
}

func (fx *scanFixture) start() {
	ctx, cancel := context.WithCancel(context.Background())
	fx.cancel, fx.done = cancel, make(chan struct{})
	go func() { fx.scans.Run(ctx); close(fx.done) }()
}

func (fx *scanFixture) stop() {
	if fx.cancel != nil {
		fx.cancel()
		<-fx.done
		fx.cancel = nil
	}
}

func (fx *scanFixture) wait(t *testing.T, id, status string) store.Scan {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sc, err := fx.scans.Get(ctx, fx.p, id)
		if err == nil && sc.Status == status {
			return sc
		}
		if time.Now().After(deadline) {
			t.Fatalf("scan %s: %+v %v, want %s", id, sc, err, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestScanQueue(t *testing.T) {
	f := &fakeScanner{scores: map[string]int{"example.com": 64, "flaky.com": 30, "broken.com": 0},
		failing: map[string]int{"flaky.com": 1, "broken.com": 99}, calls: map[string]int{}}
	fx := newScanFixture(t, f)
	for _, d := range []string{"example.com", "flaky.com", "broken.com"} {
		if _, err := fx.domains.Create(ctx, fx.p, client.CreateDomain{Domain: d}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fx.scans.Request(ctx, fx.p, client.RequestScan{Domain: "unknown.com"}); err == nil {
		t.Fatal("a scan of a domain that is not monitored")
	}
	manual, err := fx.scans.Request(ctx, fx.p, client.RequestScan{Domain: "Example.com"})
	if err != nil || manual.Status != store.ScanQueued || manual.Trigger != store.ScanManual {
		t.Fatalf("request: %+v %v", manual, err)
	}
	again, _ := fx.scans.Request(ctx, fx.p, client.RequestScan{Domain: "example.com"})
	if again.ID != manual.ID {
		t.Fatalf("a second request while one is queued made %s", again.ID)
	}
	// The scan asked for takes the place of the next scheduled one, which
	// comes a full interval on (a week, Starter); the others are due now.
	ds, _, _ := fx.db.ListDomains(ctx, store.DomainFilter{AccountID: fx.p.AccountID(), Limit: 10})
	for _, d := range ds {
		if later := d.NextScanAt.After(time.Now().Add(6 * 24 * time.Hour)); later != (d.Domain == "example.com") {
			t.Errorf("%s: next scan %s", d.Domain, d.NextScanAt)
		}
	}

	fx.start() // the new domains' first scheduled scans are due at once
	done := fx.wait(t, manual.ID, store.ScanCompleted)
	var res visibility.ScanResult
	if err := json.Unmarshal(done.Result, &res); err != nil || res.VisibilityScore != 64 || res.ReadinessScore != 70 || done.Attempts != 1 {
		t.Fatalf("completed: %+v %s %v", done, done.Result, err)
	}
	rd, err := fx.db.LatestReading(ctx, store.ReadingFilter{AccountID: fx.p.AccountID(), Domain: "example.com"})
	if err != nil || rd.VisibilityScore != 64 || rd.Source != visibility.SourceScan || rd.FormulaVersion != visibility.FormulaVersion {
		t.Fatalf("the reading: %+v %v", rd, err)
	}
	if got := published(t, fx.db); len(got) < 2 || got[0] != events.VisibilityChange || got[1] != events.ScanCompleted {
		t.Fatalf("events published: %v", got)
	}

	// A failing scan is attempted again, and fails for good after the last.
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("not within 10 s: %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	eventually("flaky.com scanned on its second attempt", func() bool {
		rd, err := fx.db.LatestReading(ctx, store.ReadingFilter{AccountID: fx.p.AccountID(), Domain: "flaky.com"})
		return err == nil && rd.VisibilityScore == 30
	})
	// Once the scan is failed for good no worker can take it again, so
	// the attempts made are all there will be.
	_, r := fx.db.Pools()
	eventually("broken.com given up", func() bool {
		var failed bool
		err := r.QueryRow(`SELECT status = ? FROM scans WHERE domain = 'broken.com'`, store.ScanFailed).Scan(&failed)
		return err == nil && failed
	})
	if n := f.count("broken.com"); n != 3 {
		t.Fatalf("broken.com attempted %d times, want 3", n)
	}
	if f.count("example.com") != 1 {
		t.Fatalf("example.com scanned %d times: the scheduled scan did not join the queued one", f.count("example.com"))
	}
	md, _, _ := fx.db.ListDomains(ctx, store.DomainFilter{AccountID: fx.p.AccountID(), Limit: 10})
	for _, d := range md {
		if d.NextScanAt.Before(time.Now().Add(6 * 24 * time.Hour)) {
			t.Errorf("%s: next scan %s, want a week on (Starter)", d.Domain, d.NextScanAt)
		}
	}
}

// published lists the kinds of the events in the bus's table, in order.
func published(t *testing.T, db *sqlite.DB) []string {
	t.Helper()
	var kinds []string
	for _, e := range busEvents(t, db, 0) {
		kinds = append(kinds, e.meta["event"])
	}
	return kinds
}

// TestScanResumesAfterACrash: a scan left running by a process that died
// is taken again once its lease ends; one running at shutdown is handed
// back to the queue.
func TestScanResumesAfterACrash(t *testing.T) {
	f := &fakeScanner{scores: map[string]int{"example.com": 42}, failing: map[string]int{}, calls: map[string]int{}, first: map[string]time.Time{}}
	fx := newScanFixture(t, f)
	md, err := fx.domains.Create(ctx, fx.p, client.CreateDomain{Domain: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	orphan := store.Scan{ID: "scan_orphan", AccountID: md.AccountID, DomainID: md.ID, Domain: md.Domain, Trigger: store.ScanManual,
		Status: store.ScanRunning, Attempts: 1, LeaseUntil: now.Add(200 * time.Millisecond), CreatedAt: now, StartedAt: now}
	if err := fx.db.Update(ctx, func(tx store.Tx) error { return tx.InsertScan(orphan) }); err != nil {
		t.Fatal(err)
	}
	fx.start()
	sc := fx.wait(t, orphan.ID, store.ScanCompleted)
	if sc.Attempts != 2 || f.count("example.com") != 1 {
		t.Fatalf("attempts %d, scanned %d times; want 2 attempts, scanned once", sc.Attempts, f.count("example.com"))
	}
	f.mu.Lock()
	taken := f.first["example.com"]
	f.mu.Unlock()
	if taken.Before(orphan.LeaseUntil) {
		t.Fatalf("the scan was taken at %v, %v before the other process's lease ended", taken, orphan.LeaseUntil.Sub(taken))
	}

	// Shutdown in the middle of a scan: it is queued again, not lost, and
	// that claim is not counted against its attempts.
	f.mu.Lock()
	f.hold = make(chan struct{})
	f.mu.Unlock()
	next, err := fx.scans.Request(ctx, fx.p, client.RequestScan{Domain: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	fx.wait(t, next.ID, store.ScanRunning)
	fx.stop()
	if sc, _ := fx.scans.Get(ctx, fx.p, next.ID); sc.Status != store.ScanQueued || sc.Attempts != 1 || sc.HandBacks != 1 {
		t.Fatalf("after shutdown: %+v", sc)
	}
	f.mu.Lock()
	f.hold = nil
	f.mu.Unlock()
	fx.start()
	fx.wait(t, next.ID, store.ScanCompleted)
}

// unkept measures what the store refuses to keep: an answer whose text
// holds a NUL, as an engine's could before answers were cleaned.
type unkept struct{ calls int }

func (u *unkept) Scan(context.Context, store.MonitoredDomain) (visibility.Outcome, error) {
	u.calls++
	return visibility.Outcome{VisibilityScore: 50, Sentiment: "neutral", FormulaVersion: visibility.FormulaVersion,
		Breakdown: json.RawMessage(`{}`), Answers: []store.ScanAnswer{{Engine: "gpt", Kind: "openai-chat", Text: "bad\x00answer",
			Detail: json.RawMessage(`{}`)}}}, nil
}

// A scan whose result the store refuses fails that attempt, recorded as
// such, and after its attempts is failed with a reason that says so: it
// is not claimed again when its lease ends, paying every engine again,
// while the domain's scans wait behind it.
func TestScanWhoseEndCannotBeRecorded(t *testing.T) {
	u := &unkept{}
	fx := newScanFixture(t, nil)
	fx.scans.Scanner = u
	if _, err := fx.domains.Create(ctx, fx.p, client.CreateDomain{Domain: "poisoned.com"}); err != nil {
		t.Fatal(err)
	}
	sc, err := fx.scans.Request(ctx, fx.p, client.RequestScan{Domain: "poisoned.com"})
	if err != nil {
		t.Fatal(err)
	}
	fx.start()
	got := fx.wait(t, sc.ID, store.ScanFailed)
	fx.stop()
	if got.Error != "the scan's result could not be recorded" || got.Attempts != 3 || u.calls != 3 {
		t.Errorf("scan %+v after %d runs", got, u.calls)
	}
}

// A scan claimed past its attempts (its workers died, or its end could not
// be recorded even as a failure) is failed at once, not run again; the
// claims of a server that stopped gracefully do not count.
func TestScanClaimsCapped(t *testing.T) {
	f := &fakeScanner{scores: map[string]int{"dead.com": 10, "handed.com": 20}, calls: map[string]int{}}
	fx := newScanFixture(t, f)
	var ids [2]string
	past := time.Now().Add(-time.Minute)
	for i, d := range []string{"dead.com", "handed.com"} {
		md, err := fx.domains.Create(ctx, fx.p, client.CreateDomain{Domain: d})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = "scan_" + d
		sc := store.Scan{ID: ids[i], AccountID: md.AccountID, DomainID: md.ID, Domain: d, Trigger: store.ScanManual,
			Status: store.ScanRunning, Attempts: 3, HandBacks: 3 * i, Holder: "proc_gone", LeaseUntil: past, CreatedAt: past, StartedAt: past}
		if err := fx.db.Update(ctx, func(tx store.Tx) error { return tx.InsertScan(sc) }); err != nil {
			t.Fatal(err)
		}
	}
	fx.start()
	dead := fx.wait(t, ids[0], store.ScanFailed)
	handed := fx.wait(t, ids[1], store.ScanCompleted)
	fx.stop()
	if dead.Error != "the scan stopped 3 times before its end was recorded" || dead.Attempts != 4 || f.count("dead.com") != 0 {
		t.Errorf("the scan past its attempts: %+v, run %d times", dead, f.count("dead.com"))
	}
	if handed.Attempts != 4 || f.count("handed.com") != 1 {
		t.Errorf("the scan handed back three times: %+v, run %d times", handed, f.count("handed.com"))
	}
}
