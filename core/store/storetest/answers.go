package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// answersScan inserts a completed scan of accountID to hang answers on.
func answersScan(t *testing.T, s store.Store, id, accountID string) {
	t.Helper()
	sc := newScan(id, accountID, "", "dom_"+id, t0)
	sc.Status, sc.FinishedAt = store.ScanCompleted, t0
	update(t, s, "InsertScan", func(tx store.Tx) error { return tx.InsertScan(sc) })
}

// insertAnswers adds answers in one Update.
func insertAnswers(t *testing.T, s store.Store, as []store.ScanAnswer) {
	t.Helper()
	update(t, s, "InsertScanAnswers", func(tx store.Tx) error { return tx.InsertScanAnswers(as) })
}

// scanAnswers are n answers of a scan: 3 engines, n/6 prompts asked twice;
// every third mentions the brand, every fourth cites it, every fifth
// failed.
func scanAnswers(scanID string, n int, at time.Time) []store.ScanAnswer {
	as := make([]store.ScanAnswer, n)
	for i := range as {
		as[i] = store.ScanAnswer{ScanID: scanID, Seq: i, PromptIndex: i / 2 % max(n/6, 1), Prompt: fmt.Sprintf("Question %d?", i/2%max(n/6, 1)),
			Intent: "custom", Run: i % 2, Engine: []string{"gpt", "sonar", "claude"}[i%3], Kind: "openai-chat", Market: []string{"", "de-DE"}[i/30%2],
			Text: fmt.Sprintf("Answer %d about rocket skates.", i), SourcesReported: i%2 == 0, Mentioned: i%3 == 0, Cited: i%4 == 0,
			Detail: json.RawMessage(`{"sources":[]}`), RecordedAt: at}
		if as[i].Mentioned {
			as[i].Position = 1 + i%2
		}
		if i%5 == 0 {
			as[i].Text, as[i].Error, as[i].Mentioned, as[i].Cited, as[i].Position = "", "engine unreachable", false, false, 0
		}
	}
	return as
}

func answerSeq(a store.ScanAnswer) int { return a.Seq }

// A scan's answers keep every field (the time in UTC, Detail byte for
// byte); the list is one scan's, by seq, filtered by engine, prompt,
// mentioned, cited and a case-insensitive text search (letters of every
// script), each alone or together, in pages that neither skip nor
// repeat; another account's scan has none; a (scan, seq) twice or an
// unknown scan is ErrConflict; a cursor the engine did not make is
// ErrMalformed; a Limit of zero or less is 20.
func testScanAnswers(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	answersScan(t, s, "scan_1", "acct_1")
	answersScan(t, s, "scan_2", "acct_1")
	answersScan(t, s, "scan_x", "acct_2")
	full := store.ScanAnswer{ScanID: "scan_1", Seq: 0, PromptIndex: 3, Prompt: "Qui fabrique les meilleurs patins à fusée ?", Intent: "discovery",
		Run: 2, Engine: "Perplexity Sonar", Kind: "perplexity", Market: "zh-Hant-TW", Text: "Les patins ACME sont réputés. Voir https://acme.example/patins.",
		SourcesReported: true, Mentioned: true, Cited: true, Position: 2,
		Detail:     json.RawMessage(`{"sources":[{"url":"https://acme.example/patins","title":"Patins","domain":"acme.example"}], "queries":["patins"]}`),
		RecordedAt: t0.In(elsewhere)}
	failed := store.ScanAnswer{ScanID: "scan_1", Seq: 1, PromptIndex: 3, Prompt: full.Prompt, Intent: "discovery", Run: 0, Engine: "gpt",
		Kind: "openai-chat", Error: "429 Too Many Requests", Detail: json.RawMessage(`{}`), RecordedAt: t0}
	many := scanAnswers("scan_1", 60, t0)[2:] // seq 2 to 59
	insertAnswers(t, s, append([]store.ScanAnswer{full, failed}, many...))
	insertAnswers(t, s, scanAnswers("scan_2", 6, t0))
	insertAnswers(t, s, scanAnswers("scan_x", 6, t0))

	list := func(f store.AnswerFilter) []store.ScanAnswer {
		t.Helper()
		page, next, err := s.ListScanAnswers(ctx, f)
		must(t, err, "ListScanAnswers(%+v)", f)
		if next != "" {
			t.Fatalf("ListScanAnswers(%+v): a next page at a limit of %d", f, f.Limit)
		}
		return page
	}
	want := full
	want.RecordedAt = t0
	got, _, err := s.ListScanAnswers(ctx, store.AnswerFilter{AccountID: "acct_1", ScanID: "scan_1", Limit: 2})
	if err != nil || len(got) != 2 || !reflect.DeepEqual(got[0], want) || !reflect.DeepEqual(got[1], failed) {
		t.Errorf("ListScanAnswers round trip:\n got  %+v, %v\n want %+v\n and  %+v", got, err, want, failed)
	}
	if got := list(store.AnswerFilter{AccountID: "acct_2", ScanID: "scan_1", Limit: 100}); len(got) != 0 {
		t.Errorf("another account lists %d answers of the scan", len(got))
	}
	if got := list(store.AnswerFilter{AccountID: "acct_1", ScanID: "scan_none", Limit: 100}); len(got) != 0 {
		t.Errorf("an unknown scan lists %d answers", len(got))
	}

	all := append([]store.ScanAnswer{want, failed}, many...)
	yes, no, three := true, false, 3
	for _, tc := range []struct {
		name string
		f    store.AnswerFilter
		keep func(store.ScanAnswer) bool
	}{
		{"none", store.AnswerFilter{}, func(store.ScanAnswer) bool { return true }},
		{"engine", store.AnswerFilter{Engine: "sonar"}, func(a store.ScanAnswer) bool { return a.Engine == "sonar" }},
		{"market", store.AnswerFilter{Market: "de-DE"}, func(a store.ScanAnswer) bool { return a.Market == "de-DE" }},
		{"market and engine", store.AnswerFilter{Market: "de-DE", Engine: "gpt"}, func(a store.ScanAnswer) bool { return a.Market == "de-DE" && a.Engine == "gpt" }},
		{"prompt", store.AnswerFilter{Prompt: &three}, func(a store.ScanAnswer) bool { return a.PromptIndex == 3 }},
		{"mentioned", store.AnswerFilter{Mentioned: &yes}, func(a store.ScanAnswer) bool { return a.Mentioned }},
		{"not mentioned", store.AnswerFilter{Mentioned: &no}, func(a store.ScanAnswer) bool { return !a.Mentioned }},
		{"cited", store.AnswerFilter{Cited: &yes}, func(a store.ScanAnswer) bool { return a.Cited }},
		{"not cited", store.AnswerFilter{Cited: &no}, func(a store.ScanAnswer) bool { return !a.Cited }},
		{"text, ASCII case", store.AnswerFilter{Query: "ROCKET Skates"}, func(a store.ScanAnswer) bool { return a.Text != "" && a.Seq > 1 }},
		{"text, accents are letters", store.AnswerFilter{Query: "PATINS ÀCME"}, func(store.ScanAnswer) bool { return false }},
		{"text, accented capitals", store.AnswerFilter{Query: "RÉPUTÉS"}, func(a store.ScanAnswer) bool { return a.Seq == 0 }},
		{"text, a number", store.AnswerFilter{Query: "answer 1"}, func(a store.ScanAnswer) bool { return a.Text != "" && a.Seq/10 == 1 }},
		{"text, none", store.AnswerFilter{Query: "%"}, func(store.ScanAnswer) bool { return false }},
		{"together", store.AnswerFilter{Engine: "gpt", Mentioned: &yes, Cited: &no, Query: "skates"}, func(a store.ScanAnswer) bool {
			return a.Engine == "gpt" && a.Mentioned && !a.Cited
		}},
	} {
		var wantSeqs []int
		for _, a := range all {
			if tc.keep(a) {
				wantSeqs = append(wantSeqs, a.Seq)
			}
		}
		for _, limit := range []int{1, 7, 100} {
			f := tc.f
			f.AccountID, f.ScanID, f.Limit = "acct_1", "scan_1", limit
			var seqs []int
			walked := walk(t, "ListScanAnswers "+tc.name, limit, func(cursor string) ([]string, string, error) {
				f.Cursor = cursor
				page, next, err := s.ListScanAnswers(ctx, f)
				seqs = append(seqs, idsOf(page, answerSeq)...)
				return idsOf(page, func(a store.ScanAnswer) string { return a.ScanID }), next, err
			})
			if len(walked) != len(seqs) || !slices.Equal(seqs, wantSeqs) || slices.ContainsFunc(walked, func(id string) bool { return id != "scan_1" }) {
				t.Errorf("ListScanAnswers, filter %s, limit %d: seqs %v of scans %v; want %v", tc.name, limit, seqs, walked, wantSeqs)
			}
		}
	}

	for _, c := range []string{"!!!not a cursor!!!", "\xff\xfe\x00", "c2VxOng", "MTc5NTg2MjMzNjEyMzQ1Njc4OTpjcl83WWJRZTJ"} {
		if _, _, err := s.ListScanAnswers(ctx, store.AnswerFilter{AccountID: "acct_1", ScanID: "scan_1", Cursor: c}); !errors.Is(err, store.ErrMalformed) {
			t.Errorf("ListScanAnswers with the cursor %q: %v, want ErrMalformed", c, err)
		}
	}
	if page, next, err := s.ListScanAnswers(ctx, store.AnswerFilter{AccountID: "acct_1", ScanID: "scan_1"}); err != nil || len(page) != 20 || next == "" {
		t.Errorf("ListScanAnswers without a limit: %d answers, next %q, %v; want a page of 20", len(page), next, err)
	}
	for name, as := range map[string][]store.ScanAnswer{
		"a seq of the scan again": {{ScanID: "scan_1", Seq: 5, Detail: json.RawMessage(`{}`), RecordedAt: t0}},
		"an unknown scan":         {{ScanID: "scan_none", Seq: 0, Detail: json.RawMessage(`{}`), RecordedAt: t0}},
	} {
		if err := s.Update(ctx, func(tx store.Tx) error { return tx.InsertScanAnswers(as) }); !errors.Is(err, store.ErrConflict) {
			t.Errorf("InsertScanAnswers of %s: %v, want ErrConflict", name, err)
		}
	}
	if got := list(store.AnswerFilter{AccountID: "acct_1", ScanID: "scan_2", Limit: 100}); !slices.Equal(idsOf(got, answerSeq), []int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("the other scan's answers: %v", idsOf(got, answerSeq))
	}
}

// PruneScanAnswers forgets the answers recorded before its cut, oldest
// first, at most limit a call, and says how many went.
func testPruneScanAnswers(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	var at []time.Time
	for i := range 6 {
		id := fmt.Sprintf("scan_%d", i)
		answersScan(t, s, id, []string{"acct_1", "acct_2"}[i%2])
		at = append(at, t0.Add(time.Duration(i)*time.Hour))
		insertAnswers(t, s, scanAnswers(id, 5, at[i]))
	}
	left := func() []int {
		var n []int
		for i := range 6 {
			page, _, err := s.ListScanAnswers(ctx, store.AnswerFilter{AccountID: []string{"acct_1", "acct_2"}[i%2],
				ScanID: fmt.Sprintf("scan_%d", i), Limit: 100})
			must(t, err, "ListScanAnswers")
			n = append(n, len(page))
		}
		return n
	}
	var batches []int
	for n := 4; n == 4 && len(batches) < 10; {
		var err error
		n, err = s.PruneScanAnswers(ctx, at[3], 4)
		must(t, err, "PruneScanAnswers")
		batches = append(batches, n)
		if got := left(); len(batches) == 1 && !slices.Equal(got, []int{1, 5, 5, 5, 5, 5}) {
			t.Errorf("after the first batch, answers left per scan %v; want the 4 oldest gone", got)
		}
	}
	if got := left(); !slices.Equal(batches, []int{4, 4, 4, 3}) || !slices.Equal(got, []int{0, 0, 0, 5, 5, 5}) {
		t.Errorf("PruneScanAnswers went in batches of %v and left %v per scan; want [4 4 4 3], and the answers from the cut on kept",
			batches, got)
	}
}
