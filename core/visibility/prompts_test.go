package visibility_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/visibility"
)

func prompts(texts ...string) []client.Prompt {
	out := []client.Prompt{}
	for _, t := range texts {
		out = append(out, client.Prompt{Text: t})
	}
	return out
}

// The owner's prompts: replaced whole by SetPrompts, validated (nothing
// kept of a refused set), capped by the tier; shown beside the generated
// prompts the next scan asks, under the id of that set; the domain's
// prompts list is the same data.
func TestOwnersPrompts(t *testing.T) {
	_, p, db := setup(t) // Starter: 10 prompts a domain
	s := &visibility.Domains{Store: db, Now: time.Now, MaxPrompts: 6}
	d, err := s.Create(ctx, p, client.CreateDomain{Domain: "acme.example", Brands: []string{"Acme"}, Competitors: []string{"Globex"},
		Topics: []string{"rocket skates"}, Prompts: []string{"Which rocket skates last?"}})
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.Prompts(ctx, p, d.ID)
	if err != nil || len(before.Prompts) != 1 || before.Prompts[0] != (client.Prompt{Text: "Which rocket skates last?", Intent: probe.Custom}) ||
		before.MaxPrompts != 10 || len(before.Generated) != 5 || !strings.HasPrefix(before.PromptSetID, "ps_") {
		t.Fatalf("the prompts of a new domain: %+v %v", before, err)
	}
	// The generated prompts are those of the scan's set after the owner's.
	set := probe.Prompts(probe.Subject{Domain: "acme.example", Brands: []string{"Acme"}, Competitors: []string{"Globex"},
		Topics: []string{"rocket skates"}, Prompts: []probe.Prompt{{Text: "Which rocket skates last?"}}}, 6)
	for i, g := range before.Generated {
		if g.Text != set[i+1].Text || g.Intent != set[i+1].Intent || g.Intent == probe.Custom {
			t.Errorf("generated[%d] = %+v, want %+v", i, g, set[i+1])
		}
	}
	if before.PromptSetID != visibility.NewPromptSet(set).ID {
		t.Errorf("prompt set id %s, want that of %+v", before.PromptSetID, set)
	}

	put := client.PutPrompts{Prompts: []client.Prompt{{Text: "  Best skates for kids? "}, {Text: "Acme vs Globex?", Intent: probe.Comparison}}}
	got, err := s.SetPrompts(ctx, p, d.ID, put)
	if err != nil || !slices.Equal(got.Prompts, []client.Prompt{{Text: "Best skates for kids?", Intent: probe.Custom},
		{Text: "Acme vs Globex?", Intent: probe.Comparison}}) || len(got.Generated) != 4 || got.PromptSetID == before.PromptSetID {
		t.Fatalf("SetPrompts: %+v %v", got, err)
	}
	if again, _ := s.Prompts(ctx, p, d.ID); !slices.Equal(again.Prompts, got.Prompts) || again.PromptSetID != got.PromptSetID {
		t.Errorf("read after SetPrompts: %+v", again)
	}
	if md, _ := s.Get(ctx, p, d.ID); len(md.Prompts) != 2 || md.Prompts[1] != (store.Prompt{Text: "Acme vs Globex?", Intent: probe.Comparison}) {
		t.Errorf("the domain's prompts: %+v", md.Prompts)
	}

	// Refused whole, changing nothing.
	long := strings.Repeat("é", 1001)
	for name, tc := range map[string]struct {
		in    client.PutPrompts
		code  fault.Code
		field string
	}{
		"no list":       {client.PutPrompts{}, fault.ValidationError, "prompts"},
		"an empty text": {client.PutPrompts{Prompts: prompts("ok?", "  ")}, fault.ValidationError, "prompts[1].text"},
		"too long":      {client.PutPrompts{Prompts: prompts(long)}, fault.ValidationError, "prompts[0].text"},
		"invalid UTF-8": {client.PutPrompts{Prompts: prompts("\xff?")}, fault.ValidationError, "prompts[0].text"},
		"a repeat":      {client.PutPrompts{Prompts: prompts("Best skates?", "best SKATES? ")}, fault.ValidationError, "prompts[1].text"},
		"an unknown intent": {client.PutPrompts{Prompts: []client.Prompt{{Text: "x?", Intent: "sales"}}},
			fault.ValidationError, "prompts[0].intent"},
		"past the tier's cap": {client.PutPrompts{Prompts: prompts("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11")},
			fault.PromptLimitReached, ""},
	} {
		_, err := s.SetPrompts(ctx, p, d.ID, tc.in)
		fe, _ := fault.As(err)
		if code(err) != tc.code || (tc.field != "" && (len(fe.Details) != 1 || fe.Details[0].Field != tc.field)) {
			t.Errorf("%s: %v %+v", name, err, fe)
		}
	}
	if after, _ := s.Prompts(ctx, p, d.ID); !slices.Equal(after.Prompts, got.Prompts) {
		t.Errorf("after refused sets: %+v", after.Prompts)
	}
	ten := prompts("1", "2", "3", "4", "5", "6", "7", "8", "9", "10")
	if got, err := s.SetPrompts(ctx, p, d.ID, client.PutPrompts{Prompts: ten}); err != nil || len(got.Prompts) != 10 || len(got.Generated) != 0 {
		t.Fatalf("the tier's cap exactly: %+v %v", got, err)
	}
	if _, err := s.Create(ctx, p, client.CreateDomain{Domain: "b.example", Prompts: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}}); code(err) != fault.PromptLimitReached {
		t.Errorf("a domain created with 11 prompts on Starter: %v", err)
	}

	// The domain's prompts list is the same data: a text it keeps keeps
	// its intent, a new one is custom; past the cap it is refused.
	if _, err := s.SetPrompts(ctx, p, d.ID, put); err != nil {
		t.Fatal(err)
	}
	up, err := s.Update(ctx, p, d.ID, client.UpdateDomain{Prompts: &[]string{"ACME vs Globex?", "Are Acme skates safe?"}})
	if err != nil || !slices.Equal(up.Prompts, []store.Prompt{{Text: "ACME vs Globex?", Intent: probe.Comparison},
		{Text: "Are Acme skates safe?", Intent: probe.Custom}}) {
		t.Errorf("the prompts list updated: %+v %v", up.Prompts, err)
	}
	eleven := []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}
	if _, err := s.Update(ctx, p, d.ID, client.UpdateDomain{Prompts: &eleven}); code(err) != fault.PromptLimitReached {
		t.Errorf("11 prompts through the domain's list: %v", err)
	}

	// Another account sees and changes none of it.
	q := otherAccount(t, db)
	if _, err := s.Prompts(ctx, q, d.ID); code(err) != fault.NotFound {
		t.Errorf("another account reads the prompts: %v", err)
	}
	if _, err := s.SetPrompts(ctx, q, d.ID, put); code(err) != fault.NotFound {
		t.Errorf("another account sets the prompts: %v", err)
	}
}

// A prompt set's id is the same from one version to the next: docs/api.md
// shows this one.
func TestPromptSetID(t *testing.T) {
	topic := "crm for small business"
	set := probe.Prompts(probe.Subject{Domain: "acme.example", Brands: []string{"Acme"}, Competitors: []string{"Globex"},
		Topics: []string{topic}, Prompts: []probe.Prompt{{Text: "Which CRM suits a 10-person agency?", Intent: probe.Discovery},
			{Text: "Is Acme CRM worth it?"}}}, 20)
	if len(set) != 8 {
		t.Fatalf("%d prompts: %+v", len(set), set)
	}
	if id := visibility.NewPromptSet(set).ID; id != "ps_bd6b23d8c83c3633" {
		t.Errorf("id %s, want ps_bd6b23d8c83c3633", id)
	}
}

// A scan keeps the prompt set it asked, named as the prompts view names
// the next scan's; a scan without engines asks none.
func TestScanRecordsItsPromptSet(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Answer("m", "Acme is fine.")
	readiness := func(context.Context, string) (int, any, error) { return 50, nil, nil }
	d := store.MonitoredDomain{ID: "dom_1", Domain: "acme.example", Brands: []string{"Acme"}, Competitors: []string{"Globex"},
		Prompts: []store.Prompt{{Text: "Acme or Globex for kids?", Intent: probe.Comparison}}}
	s := &visibility.EngineScanner{Readiness: readiness, Prober: &probe.Prober{Client: &probe.Client{HTTP: http.DefaultClient},
		Runs: 1, MaxPrompts: 3, Engines: []probe.Engine{{Label: "E", BaseURL: f.URL(), Model: "m"}}}}
	out, err := s.Scan(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	want := probe.Prompts(probe.Subject{Domain: d.Domain, Brands: d.Brands, Competitors: d.Competitors,
		Prompts: []probe.Prompt{{Text: "Acme or Globex for kids?", Intent: probe.Comparison}}}, 3)
	if out.PromptSet == nil || len(out.PromptSet.Prompts) != 3 || fmt.Sprint(out.PromptSet.Prompts) != fmt.Sprint(want) ||
		out.PromptSet.ID != visibility.NewPromptSet(want).ID || out.PromptSet.Prompts[0].Intent != probe.Comparison {
		t.Errorf("prompt set %+v, want %+v", out.PromptSet, want)
	}
	if out, err := (&visibility.EngineScanner{Readiness: readiness}).Scan(ctx, d); err != nil || out.PromptSet != nil {
		t.Errorf("without engines: %+v %v", out.PromptSet, err)
	}
}
