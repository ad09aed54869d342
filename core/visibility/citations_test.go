package visibility_test

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/core/visibility"
)

// scriptScanner answers each scan with the next breakdown of its script.
type scriptScanner struct {
	mu   sync.Mutex
	next []json.RawMessage
}

func (s *scriptScanner) Scan(context.Context, store.MonitoredDomain) (visibility.Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.next[0]
	s.next = s.next[1:]
	return visibility.Outcome{VisibilityScore: 50, Sentiment: "neutral", ReadinessScore: 70, Breakdown: b}, nil
}

// eng is one engine's citations in a scripted breakdown: hits of of
// answers cite the domain, and src[0] of the src[1] sources cited are the
// domain's (nil: no answer reported sources). A kind "" is left out, as
// breakdowns made before engine kinds have it.
type eng struct {
	label, kind string
	hits, of    int
	src         []int
}

// breakdown writes a scan's breakdown in the scanner's shape, the overall
// figures summed over the engines; formula 0 is left out, as breakdowns
// made before formula versions have it.
func breakdown(formula int, engines ...eng) json.RawMessage {
	rate := func(k, n int) probe.Rate { return probe.NewRate(k, n) }
	share := func(src []int) any {
		if src == nil {
			return nil
		}
		return rate(src[0], src[1])
	}
	var hits, of int
	var src []int // nil while no engine reported sources
	var list []map[string]any
	for _, e := range engines {
		m := map[string]any{"label": e.label, "model": "m", "probes": e.of, "failed": 0, "mention_rate": rate(e.hits, e.of),
			"citation_rate": rate(e.hits, e.of), "source_share": share(e.src)}
		if e.kind != "" {
			m["kind"] = e.kind
		}
		list = append(list, m)
		hits, of = hits+e.hits, of+e.of
		if e.src != nil {
			if src == nil {
				src = []int{0, 0}
			}
			src[0], src[1] = src[0]+e.src[0], src[1]+e.src[1]
		}
	}
	b := map[string]any{"basis": visibility.BasisEngines, "components": map[string]float64{"readiness": 70},
		"overall": map[string]any{"probes": of, "citation_rate": rate(hits, of), "source_share": share(src)}, "engines": list}
	if formula != 0 {
		b["formula_version"] = formula
	}
	raw, _ := json.Marshal(b)
	return raw
}

// readinessOnly is the breakdown of a scan that asked no engine.
var readinessOnly = json.RawMessage(`{"basis":"readiness_only","components":{"readiness":70},"weights":{"readiness":1},` +
	`"sentiment_confidence":0,"readiness":{"score":70}}`)

type busEvent struct {
	meta map[string]string
	body events.Body
}

// busEvents are the events in the bus's table from the n-th on.
func busEvents(t *testing.T, db *sqlite.DB, from int) []busEvent {
	t.Helper()
	_, r := db.Pools()
	rows, err := r.Query(`SELECT metadata, payload FROM bus_messages ORDER BY seq LIMIT -1 OFFSET ?`, from)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []busEvent
	for rows.Next() {
		var meta string
		var payload []byte
		var e busEvent
		if err := rows.Scan(&meta, &payload); err != nil {
			t.Fatal(err)
		}
		if json.Unmarshal([]byte(meta), &e.meta) != nil || json.Unmarshal(payload, &e.body) != nil {
			t.Fatalf("event %s %s", meta, payload)
		}
		out = append(out, e)
	}
	return out
}

func r(k, n int) events.Rate {
	v := 0.0
	if n > 0 {
		v = float64(k) / float64(n)
	}
	return events.Rate{Value: v, Hits: k, Of: n}
}

func rp(k, n int) *events.Rate { x := r(k, n); return &x }

// TestCitationEvents: a domain scanned eight times; each scan's
// citation_change events and scan_completed, worked out by hand from the
// breakdowns.
func TestCitationEvents(t *testing.T) {
	steps := []struct {
		what      string
		breakdown json.RawMessage
		changes   []events.CitationChangeData // without domain and scan ids, which every one carries
		points    []string                    // each change's routing fact
		completed events.ScanCompletedData    // its citation figures
	}{{
		what: "the first scan: nothing to compare with",
		breakdown: breakdown(0, eng{"ChatGPT", "openai-chat", 1, 10, nil},
			eng{"Perplexity", "perplexity", 4, 10, []int{3, 40}}),
		// 5 of 20 answers cite; 3 of the 40 sources reported are the domain's.
		completed: events.ScanCompletedData{CitationRate: rp(5, 20), SourceShare: rp(3, 40), Engines: []events.EngineCitations{
			{Label: "ChatGPT", Kind: "openai-chat", CitationRate: r(1, 10)},
			{Label: "Perplexity", Kind: "perplexity", CitationRate: r(4, 10), SourceShare: rp(3, 40)}}},
	}, {
		what: "Perplexity falls; ChatGPT stays; Gemini and Claude are new",
		breakdown: breakdown(0, eng{"ChatGPT", "openai-chat", 1, 10, nil}, eng{"Perplexity", "perplexity", 1, 8, []int{1, 30}},
			eng{"Gemini", "gemini", 2, 10, []int{2, 25}}, eng{"Claude", "anthropic", 1, 10, []int{1, 20}}),
		// Perplexity: 1/8 - 4/10 = 0.125 - 0.4 = -27.5 points.
		changes: []events.CitationChangeData{{Engine: "Perplexity", Kind: "perplexity", CitationRate: r(1, 8),
			PreviousCitationRate: r(4, 10), CitationChange: -27.5, SourceShare: rp(1, 30), PreviousSourceShare: rp(3, 40)}},
		points: []string{"27.5"},
		// 5 of 38 answers; sources 1+2+1 of 30+25+20.
		completed: events.ScanCompletedData{CitationRate: rp(5, 38), SourceShare: rp(4, 75), Engines: []events.EngineCitations{
			{Label: "ChatGPT", Kind: "openai-chat", CitationRate: r(1, 10)},
			{Label: "Perplexity", Kind: "perplexity", CitationRate: r(1, 8), SourceShare: rp(1, 30)},
			{Label: "Gemini", Kind: "gemini", CitationRate: r(2, 10), SourceShare: rp(2, 25)},
			{Label: "Claude", Kind: "anthropic", CitationRate: r(1, 10), SourceShare: rp(1, 20)}}},
	}, {
		what: "ChatGPT and Gemini rise; Perplexity answered nothing; Claude is now another kind",
		breakdown: breakdown(0, eng{"ChatGPT", "openai-chat", 4, 12, nil}, eng{"Perplexity", "perplexity", 0, 0, nil},
			eng{"Gemini", "gemini", 3, 9, []int{2, 20}}, eng{"Claude", "openai-chat", 6, 10, nil}),
		// ChatGPT: 4/12 - 1/10 = 0.2333 -> 23.33; Gemini: 3/9 - 2/10 = 0.1333 -> 13.33.
		changes: []events.CitationChangeData{
			{Engine: "ChatGPT", Kind: "openai-chat", CitationRate: r(4, 12), PreviousCitationRate: r(1, 10), CitationChange: 23.33},
			{Engine: "Gemini", Kind: "gemini", CitationRate: r(3, 9), PreviousCitationRate: r(2, 10), CitationChange: 13.33,
				SourceShare: rp(2, 20), PreviousSourceShare: rp(2, 25)}},
		points: []string{"23.33", "13.33"},
		completed: events.ScanCompletedData{CitationRate: rp(13, 31), SourceShare: rp(2, 20), Engines: []events.EngineCitations{
			{Label: "ChatGPT", Kind: "openai-chat", CitationRate: r(4, 12)},
			{Label: "Perplexity", Kind: "perplexity", CitationRate: r(0, 0)},
			{Label: "Gemini", Kind: "gemini", CitationRate: r(3, 9), SourceShare: rp(2, 20)},
			{Label: "Claude", Kind: "openai-chat", CitationRate: r(6, 10)}}},
	}, {
		what:      "a scan without engines: no figures",
		breakdown: readinessOnly,
		completed: events.ScanCompletedData{Engines: []events.EngineCitations{}},
	}, {
		what:      "engines again, after a scan without: nothing to compare with; no kind reads as openai-chat",
		breakdown: breakdown(0, eng{"ChatGPT", "", 1, 10, nil}),
		completed: events.ScanCompletedData{CitationRate: rp(1, 10), Engines: []events.EngineCitations{
			{Label: "ChatGPT", Kind: "openai-chat", CitationRate: r(1, 10)}}},
	}, {
		what:      "ChatGPT rises: 3/10 - 1/10 = 20 points",
		breakdown: breakdown(0, eng{"ChatGPT", "openai-chat", 3, 10, nil}),
		changes: []events.CitationChangeData{{Engine: "ChatGPT", Kind: "openai-chat", CitationRate: r(3, 10),
			PreviousCitationRate: r(1, 10), CitationChange: 20}},
		points: []string{"20"},
		completed: events.ScanCompletedData{CitationRate: rp(3, 10), Engines: []events.EngineCitations{
			{Label: "ChatGPT", Kind: "openai-chat", CitationRate: r(3, 10)}}},
	}, {
		what:      "another formula version: not compared",
		breakdown: breakdown(1, eng{"ChatGPT", "openai-chat", 7, 10, nil}),
		completed: events.ScanCompletedData{CitationRate: rp(7, 10), Engines: []events.EngineCitations{
			{Label: "ChatGPT", Kind: "openai-chat", CitationRate: r(7, 10)}}},
	}, {
		what:      "the same formula version again: 6/10 - 7/10 = -10 points",
		breakdown: breakdown(1, eng{"ChatGPT", "openai-chat", 6, 10, nil}),
		changes: []events.CitationChangeData{{Engine: "ChatGPT", Kind: "openai-chat", CitationRate: r(6, 10),
			PreviousCitationRate: r(7, 10), CitationChange: -10}},
		points: []string{"10"},
		completed: events.ScanCompletedData{CitationRate: rp(6, 10), Engines: []events.EngineCitations{
			{Label: "ChatGPT", Kind: "openai-chat", CitationRate: r(6, 10)}}},
	}}
	sc := &scriptScanner{}
	for _, s := range steps {
		sc.next = append(sc.next, s.breakdown)
	}
	rec, p, db := setup(t)
	fx := &scanFixture{p: p, db: db, domains: &visibility.Domains{Store: db, Now: time.Now},
		scans: &visibility.Scans{Store: db, Scanner: sc, Recorder: rec, Now: time.Now, Poll: 20 * time.Millisecond, Lease: 300 * time.Millisecond}}
	t.Cleanup(fx.stop)
	if _, err := fx.domains.Create(ctx, p, client.CreateDomain{Domain: "example.com"}); err != nil {
		t.Fatal(err)
	}
	seen, prevID := 0, ""
	for i, s := range steps {
		// The first request is queued before the queue runs: the
		// domain's first scheduled scan joins it.
		scan, err := fx.scans.Request(ctx, p, client.RequestScan{Domain: "example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			fx.start()
		}
		fx.wait(t, scan.ID, store.ScanCompleted)
		evs := busEvents(t, db, seen)
		seen += len(evs)
		if len(evs) > 0 && evs[0].body.Event == events.VisibilityChange {
			evs = evs[1:] // the first reading
		}
		if len(evs) != len(s.changes)+1 {
			t.Fatalf("scan %d, %s: %d events after the reading's, want %d citation changes and scan_completed", i+1, s.what, len(evs), len(s.changes))
		}
		// These breakdowns are of before surfaces: each engine's surface is
		// its kind's, and every answer was shown.
		surface := func(kind string) string { return probe.Engine{Kind: kind}.Surface() }
		for j, want := range s.changes {
			e := evs[j]
			want.Domain, want.ScanID, want.PreviousScanID, want.Surface = "example.com", scan.ID, prevID, surface(want.Kind)
			var got events.CitationChangeData
			if err := json.Unmarshal(e.body.Data, &got); err != nil || e.body.Event != events.CitationChange || !reflect.DeepEqual(got, want) {
				t.Errorf("scan %d, %s: event %d %s %s\nwant %+v", i+1, s.what, j, e.body.Event, e.body.Data, want)
			}
			if e.meta["citation_change"] != s.points[j] || e.meta["domain"] != "example.com" {
				t.Errorf("scan %d: event %d metadata %v, want citation_change %s", i+1, j, e.meta, s.points[j])
			}
		}
		last := evs[len(evs)-1]
		want := s.completed
		want.ScanID, want.Domain, want.VisibilityScore, want.Sentiment, want.ReadinessScore = scan.ID, "example.com", 50, "neutral", 70
		if want.CitationRate != nil {
			want.OverviewPresence = rp(want.CitationRate.Of, want.CitationRate.Of)
		}
		for k, e := range want.Engines {
			want.Engines[k].Surface, want.Engines[k].OverviewPresence = surface(e.Kind), r(e.CitationRate.Of, e.CitationRate.Of)
		}
		var got events.ScanCompletedData
		if err := json.Unmarshal(last.body.Data, &got); err != nil || last.body.Event != events.ScanCompleted || !reflect.DeepEqual(got, want) {
			t.Errorf("scan %d, %s: last event %s %s\nwant %+v", i+1, s.what, last.body.Event, last.body.Data, want)
		}
		prevID = scan.ID
	}
}
