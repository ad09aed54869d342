package visibility_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/visibility"
)

// A completed scan keeps every answer with it, a failed probe with its
// error, each with its prompt, engine and kind and what was read in it;
// they are the principal's to list, filtered, and no one else's.
func TestScanKeepsItsAnswers(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	text := "Acme (https://acme.example/x) beats Globex. Acme is great."
	f.Script("m-search-1", probefake.Reply{Text: text, Citations: []probefake.Citation{{URL: "https://acme.example/x", Title: "X", Quote: "Acme"}}})
	f.Fail("m-search-1", http.StatusBadRequest)
	fx := newScanFixture(t, nil)
	engines := []probe.Engine{{Label: "S", Kind: probe.KindOpenAIChat, BaseURL: f.URL(), Model: "m-search-1", Concurrency: 1}}
	fx.scans.Scanner = &visibility.EngineScanner{Readiness: func(context.Context, string) (int, any, error) { return 50, nil, nil },
		Prober: &probe.Prober{Client: &probe.Client{HTTP: http.DefaultClient}, Runs: 2, MaxPrompts: 2, Engines: engines}}
	if _, err := fx.domains.Create(ctx, fx.p, client.CreateDomain{Domain: "acme.example", Brands: []string{"Acme"},
		Competitors: []string{"Globex"}, Prompts: []string{"Best rocket skates?"}}); err != nil {
		t.Fatal(err)
	}
	sc, err := fx.scans.Request(ctx, fx.p, client.RequestScan{Domain: "acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	fx.start()
	fx.wait(t, sc.ID, store.ScanCompleted)

	as, next, err := fx.scans.Answers(ctx, fx.p, sc.ID, store.AnswerFilter{Limit: 10})
	if err != nil || len(as) != 4 || next != "" {
		t.Fatalf("answers: %+v %q %v; want 4 (2 prompts, 2 runs)", as, next, err)
	}
	var failed int
	for i, a := range as {
		if a.ScanID != sc.ID || a.Seq != i || a.Engine != "S" || a.Kind != probe.KindOpenAIChat || a.Run != i%2 || a.PromptIndex != i/2 {
			t.Errorf("answer %d: %+v", i, a)
		}
		if a.PromptIndex == 0 && (a.Prompt != "Best rocket skates?" || a.Intent != probe.Custom) {
			t.Errorf("answer %d's prompt: %q %q", i, a.Prompt, a.Intent)
		}
		if a.Error != "" {
			failed++
			continue
		}
		if a.Text != text || !a.Mentioned || !a.Cited || a.Position != 1 || !a.SourcesReported ||
			string(a.Detail) != `{"sources":[{"url":"https://acme.example/x","title":"X","domain":"acme.example"}],`+
				`"citations":[{"url":"https://acme.example/x","title":"X","domain":"acme.example","start":0,"end":4,"text":"Acme"}],`+
				`"queries":[],"competitors":["Globex"],"sentences":[{"text":"Acme (https://acme.example/x) beats Globex.","sentiment":0},`+
				`{"text":"Acme is great.","sentiment":0.6249}],"surface":"model"}` {
			t.Errorf("answer %d: %+v %s", i, a, a.Detail)
		}
	}
	if failed != 1 {
		t.Errorf("%d failed probes kept, want 1", failed)
	}
	yes := true
	if as, _, err := fx.scans.Answers(ctx, fx.p, sc.ID, store.AnswerFilter{Mentioned: &yes, Limit: 10}); err != nil || len(as) != 3 {
		t.Errorf("answers naming the brand: %d %v", len(as), err)
	}
	if _, _, err := fx.scans.Answers(ctx, otherAccount(t, fx.db), sc.ID, store.AnswerFilter{}); code(err) != fault.NotFound {
		t.Errorf("another account lists the answers: %v", err)
	}
	if _, _, err := fx.scans.Answers(ctx, fx.p, sc.ID, store.AnswerFilter{Cursor: "nope"}); code(err) != fault.ValidationError {
		t.Errorf("a cursor the list did not give: %v", err)
	}
}
