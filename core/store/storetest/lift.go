package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// ScansAround gives the last Before completed scans of exactly one owner's
// domain that finished before At and the first After at or after it,
// each side in the order they finished (then by id), without results;
// scans of the domain's other owner, of another domain or account, and
// scans not completed are none of them.
func testScansAround(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	update(t, s, "InsertScan", func(tx store.Tx) error {
		// scan_0 to scan_9 finished at hours -5, -4, -3, -2, -1, 0, 0, 1, 2, 3 (scan_5 and scan_6 together).
		for i := range 10 {
			sc := newScan(fmt.Sprintf("scan_%d", i), "acct_1", "", "dom", t0)
			h := min(i, 5) - 5 + max(i-6, 0)
			sc.Status, sc.StartedAt, sc.FinishedAt, sc.Result = store.ScanCompleted, t0, t0.Add(time.Duration(h)*time.Hour), []byte(`{"score":1}`)
			if err := tx.InsertScan(sc); err != nil {
				return err
			}
		}
		for _, sc := range []store.Scan{newScan("scan_c", "acct_1", "cli_1", "dom", t0), newScan("scan_o", "acct_1", "", "other", t0),
			newScan("scan_x", "acct_2", "", "dom", t0), newScan("scan_f", "acct_1", "", "dom", t0)} {
			sc.Status, sc.FinishedAt, sc.Result = store.ScanCompleted, t0, []byte(`{}`)
			if sc.ID == "scan_f" {
				sc.Status, sc.Result, sc.Error = store.ScanFailed, nil, "failed"
			}
			if err := tx.InsertScan(sc); err != nil {
				return err
			}
		}
		return tx.InsertScan(newScan("scan_q", "acct_1", "", "dom", t0)) // queued
	})
	ids := func(l []store.Scan) []string { return idsOf(l, func(sc store.Scan) string { return sc.ID }) }
	for _, tc := range []struct {
		at            time.Time
		before, after int
		wantB, wantA  []string
	}{
		{t0, 3, 3, []string{"scan_2", "scan_3", "scan_4"}, []string{"scan_5", "scan_6", "scan_7"}},
		{t0, 100, 100, []string{"scan_0", "scan_1", "scan_2", "scan_3", "scan_4"}, []string{"scan_5", "scan_6", "scan_7", "scan_8", "scan_9"}},
		{t0.Add(time.Nanosecond), 1, 1, []string{"scan_6"}, []string{"scan_7"}},
		{t0, 0, 2, nil, []string{"scan_5", "scan_6"}},
		{t0, 2, 0, []string{"scan_3", "scan_4"}, nil},
		{t0.Add(-time.Hour), 2, 1, []string{"scan_2", "scan_3"}, []string{"scan_4"}},
		{t0.Add(24 * time.Hour), 1, 5, []string{"scan_9"}, nil},
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), 1, 1, nil, []string{"scan_0"}},
	} {
		b, a, err := s.ScansAround(ctx, store.ScanWindows{AccountID: "acct_1", Domain: "dom.example", At: tc.at, Before: tc.before, After: tc.after})
		if err != nil || !slices.Equal(ids(b), tc.wantB) || !slices.Equal(ids(a), tc.wantA) {
			t.Errorf("ScansAround(%s, %d, %d): %v, %v, %v; want %v, %v", tc.at, tc.before, tc.after, ids(b), ids(a), err, tc.wantB, tc.wantA)
		}
		for _, sc := range append(b, a...) {
			if sc.Result != nil || sc.Status != store.ScanCompleted || sc.FinishedAt.Location() != time.UTC {
				t.Errorf("ScansAround: scan %s read with result %q, status %s, finished %s", sc.ID, sc.Result, sc.Status, sc.FinishedAt)
			}
		}
	}
	if b, a, err := s.ScansAround(ctx, store.ScanWindows{AccountID: "acct_1", ClientID: "cli_1", Domain: "dom.example", At: t0, Before: 5, After: 5}); err != nil ||
		len(b) != 0 || !slices.Equal(ids(a), []string{"scan_c"}) {
		t.Errorf("ScansAround of the client's domain: %v, %v, %v; want [], [scan_c]", ids(b), ids(a), err)
	}
	if b, a, err := s.ScansAround(ctx, store.ScanWindows{AccountID: "acct_2", Domain: "other.example", At: t0, Before: 5, After: 5}); err != nil ||
		len(b)+len(a) != 0 {
		t.Errorf("ScansAround of another account's domain: %v, %v, %v; want none", ids(b), ids(a), err)
	}
}

// AnswerFacts gives the kept answers of an account's scans, failures left
// out, by scan and seq, every field but the text as kept; ScanEngines the
// engines that answered in each scan, sorted, a scan whose answers all
// failed absent; another account's scans have none, an unknown scan
// none.
func testAnswerFacts(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	for _, id := range []string{"scan_1", "scan_2", "scan_3", "scan_4"} {
		answersScan(t, s, id, "acct_1")
	}
	answersScan(t, s, "scan_x", "acct_2")
	kept := map[string][]store.ScanAnswer{}
	for _, id := range []string{"scan_1", "scan_2", "scan_x"} {
		as := scanAnswers(id, 30, t0.In(elsewhere))
		insertAnswers(t, s, as)
		for _, a := range as {
			if a.Error == "" {
				a.Text, a.RecordedAt = "", t0
				kept[id] = append(kept[id], a)
			}
		}
	}
	// scan_3's answers all failed; scan_4 has one engine's answers only.
	failed := scanAnswers("scan_3", 6, t0)
	for i := range failed {
		failed[i].Error = "engine unreachable"
	}
	insertAnswers(t, s, failed)
	insertAnswers(t, s, []store.ScanAnswer{{ScanID: "scan_4", Seq: 0, Prompt: "Q?", Engine: "sonar", Kind: "perplexity", Detail: []byte(`{}`), RecordedAt: t0},
		{ScanID: "scan_4", Seq: 1, Prompt: "Q?", Engine: "gpt", Kind: "openai-chat", Error: "429", Detail: []byte(`{}`), RecordedAt: t0}})

	got, err := s.AnswerFacts(ctx, "acct_1", []string{"scan_2", "scan_x", "scan_none", "scan_1", "scan_3"})
	want := append(slices.Clone(kept["scan_1"]), kept["scan_2"]...)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("AnswerFacts: %d answers, %v; want %d (scan_1's and scan_2's kept ones, without text)", len(got), err, len(want))
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("first difference:\n got  %+v\n want %+v", got[i], want[i])
				break
			}
		}
	}
	if got, err := s.AnswerFacts(ctx, "acct_2", []string{"scan_1"}); err != nil || len(got) != 0 {
		t.Errorf("AnswerFacts of another account's scan: %d answers, %v; want none", len(got), err)
	}
	if got, err := s.AnswerFacts(ctx, "acct_1", nil); err != nil || len(got) != 0 {
		t.Errorf("AnswerFacts of no scan: %d answers, %v; want none", len(got), err)
	}
	engines, err := s.ScanEngines(ctx, "acct_1", []string{"scan_1", "scan_2", "scan_3", "scan_4", "scan_x", "scan_none"})
	wantEngines := map[string][]string{"scan_1": {"claude", "gpt", "sonar"}, "scan_2": {"claude", "gpt", "sonar"}, "scan_4": {"sonar"}}
	if err != nil || !reflect.DeepEqual(engines, wantEngines) {
		t.Errorf("ScanEngines: %v, %v; want %v", engines, err, wantEngines)
	}
	if engines, err := s.ScanEngines(ctx, "acct_2", []string{"scan_1"}); err != nil || len(engines) != 0 {
		t.Errorf("ScanEngines of another account's scan: %v, %v; want none", engines, err)
	}
	// Many scans at once: more ids than one statement of an engine binds.
	var many []string
	for i := range 1200 {
		many = append(many, fmt.Sprintf("scan_%04d", i))
	}
	many = append(many, "scan_2")
	if got, err := s.AnswerFacts(ctx, "acct_1", many); err != nil || !reflect.DeepEqual(got, kept["scan_2"]) {
		t.Errorf("AnswerFacts of 1201 ids: %d answers, %v; want scan_2's %d", len(got), err, len(kept["scan_2"]))
	}
	if engines, err := s.ScanEngines(ctx, "acct_1", many); err != nil || len(engines) != 1 || len(engines["scan_2"]) != 3 {
		t.Errorf("ScanEngines of 1201 ids: %v, %v; want scan_2's three", engines, err)
	}
}

// MarkLiftMeasured sets a change's LiftMeasuredAt once: the change reads
// it (in UTC) and leaves the unmeasured ones' list; a second mark is
// ErrConflict and keeps the first time; another account's change or an
// unknown one is ErrNotFound.
func testMarkLiftMeasured(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	createChanges(t, s, newChange("chg_1", "acct_1", d.ID, t0), newChange("chg_2", "acct_1", d.ID, t0.Add(time.Hour)))
	unmeasured := func() []string {
		return idsOf(changesOf(t, s, store.ChangeFilter{AccountID: "acct_1", DomainID: d.ID, Unmeasured: true}), changeID)
	}
	if got := unmeasured(); !slices.Equal(got, []string{"chg_2", "chg_1"}) {
		t.Errorf("unmeasured changes: %v, want both", got)
	}
	at := t0.Add(48 * time.Hour).In(elsewhere)
	update(t, s, "MarkLiftMeasured", func(tx store.Tx) error { return tx.MarkLiftMeasured("acct_1", "chg_1", at) })
	if c, err := s.Change(ctx, "acct_1", d.ID, "chg_1"); err != nil || !c.LiftMeasuredAt.Equal(at) || c.LiftMeasuredAt.Location() != time.UTC {
		t.Errorf("a measured change: LiftMeasuredAt %s, %v; want %s in UTC", c.LiftMeasuredAt, err, at.UTC())
	}
	if c, err := s.Change(ctx, "acct_1", d.ID, "chg_2"); err != nil || !c.LiftMeasuredAt.IsZero() {
		t.Errorf("an unmeasured change: LiftMeasuredAt %s, %v; want zero", c.LiftMeasuredAt, err)
	}
	if got := unmeasured(); !slices.Equal(got, []string{"chg_2"}) {
		t.Errorf("unmeasured changes after one was measured: %v, want [chg_2]", got)
	}
	for name, c := range map[string]struct {
		account, id string
		want        error
	}{
		"twice":                    {"acct_1", "chg_1", store.ErrConflict},
		"another account's change": {"acct_2", "chg_2", store.ErrNotFound},
		"an unknown change":        {"acct_1", "chg_none", store.ErrNotFound},
	} {
		err := s.Update(ctx, func(tx store.Tx) error { return tx.MarkLiftMeasured(c.account, c.id, t0) })
		if !errors.Is(err, c.want) {
			t.Errorf("MarkLiftMeasured %s: %v, want %v", name, err, c.want)
		}
	}
	if c, _ := s.Change(ctx, "acct_1", d.ID, "chg_1"); !c.LiftMeasuredAt.Equal(at) {
		t.Errorf("a second mark moved LiftMeasuredAt to %s, want %s", c.LiftMeasuredAt, at.UTC())
	}
}

// Of many callers marking one change at once on two handles, exactly one
// marks it; the others get ErrConflict.
func testMarkLiftMeasuredUnderConcurrency(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	createChanges(t, s, newChange("chg_1", "acct_1", d.ID, t0))
	var mu sync.Mutex
	var marked []int
	Together(concurrency, func(i int) {
		err := hs[i%2].Update(ctx, func(tx store.Tx) error {
			return tx.MarkLiftMeasured("acct_1", "chg_1", t0.Add(time.Duration(i+1)*time.Second))
		})
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			marked = append(marked, i)
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("MarkLiftMeasured %d: %v, want nil or ErrConflict", i, err)
		}
	})
	if len(marked) != 1 {
		t.Fatalf("%d callers marked one change: %v; want exactly one", len(marked), marked)
	}
	if c, err := hs[1].Change(ctx, "acct_1", d.ID, "chg_1"); err != nil || !c.LiftMeasuredAt.Equal(t0.Add(time.Duration(marked[0]+1)*time.Second)) {
		t.Errorf("the change's LiftMeasuredAt: %s, %v; want the one caller's", c.LiftMeasuredAt, err)
	}
}
