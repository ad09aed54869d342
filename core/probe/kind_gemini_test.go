package probe

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/aivis/aivis/core/probe/probefake"
)

const googleRedirect = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/"

// TestGemini: the grounding metadata read into one answer: the chunks as
// sources attributed to the domains their titles name (their URIs
// redirect through Google), each support's chunks as citations of its
// byte span (the first from 0, which Google's JSON leaves out), the
// queries, one grounded search charged, the search's tool-use tokens as
// input.
func TestGemini(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = "AIza-right"
	f.Script("gemini", searchReply)
	c := &Client{HTTP: http.DefaultClient}
	e := Engine{Label: "Gemini", Kind: KindGemini, BaseURL: f.Root(), Model: "gemini", APIKey: "AIza-right",
		InputPricePerMTok: 0.3, OutputPricePerMTok: 2.5, SearchPricePer1K: 35}
	a, err := c.Ask(context.Background(), e, skatesPrompt)
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != searchText || !a.SourcesReported || a.Searches != 1 || !reflect.DeepEqual(a.Queries, searchReply.Queries) {
		t.Fatalf("%+v", a)
	}
	if got := domains(a.Sources); strings.Join(got, " ") != "acme.example shop.globex.example reviews.example.org" {
		t.Errorf("sources %+v", a.Sources)
	}
	urls := map[string]bool{}
	for _, s := range a.Sources {
		urls[s.URL] = true
		if !strings.HasPrefix(s.URL, googleRedirect) || s.Title != s.Domain {
			t.Errorf("source %+v", s)
		}
	}
	if len(urls) != 3 {
		t.Errorf("the sources' redirects are not distinct: %+v", a.Sources)
	}
	checkCitations(t, a, [][3]string{
		{"Acme makes the fastest rocket skates.", "acme.example", a.Sources[0].URL},
		{"Acme makes the fastest rocket skates.", "reviews.example.org", a.Sources[2].URL},
		{"Initech's are sturdy.", "shop.globex.example", a.Sources[1].URL},
	})
	// 6 prompt words and 100 tool-use tokens a query in, 17 out; one
	// grounded prompt at $35 a thousand.
	if in := 6 + 2*100; a.InputTokens != in || a.OutputTokens != 17 || !near(e.Cost(a)*1e6, float64(in)*0.3+17*2.5+35_000) {
		t.Errorf("tokens %d/%d, cost %v", a.InputTokens, a.OutputTokens, e.Cost(a))
	}
	// Read by the subject's domain, the redirects count as its citations.
	if fd := Analyze(subject, a); !fd.Cited || !fd.SourcesReported || strings.Join(fd.SourceDomains, " ") != "acme.example shop.globex.example reviews.example.org" {
		t.Errorf("finding %+v", fd)
	}
}

// TestGeminiOdd: an answer that searched but lost its groundingMetadata,
// and one that did not search, report no sources (not zero citations);
// the first still counts the search's tokens. A system prompt and a cap
// pass the API's checks.
func TestGeminiOdd(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	lost := searchReply
	lost.NoMetadata = true
	f.Script("gemini", lost, probefake.Reply{Text: "Acme, from memory.", NoSearch: true})
	c := &Client{HTTP: http.DefaultClient}
	e := Engine{Label: "Gemini", Kind: KindGemini, BaseURL: f.Root(), Model: "gemini"}
	a, err := c.Complete(context.Background(), e, Request{System: "Answer briefly.", Prompt: skatesPrompt, MaxTokens: 200})
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != searchText || a.SourcesReported || a.Searches != 0 || a.Queries != nil || a.Sources != nil || a.Citations != nil || a.InputTokens != 206 {
		t.Errorf("no groundingMetadata: %+v", a)
	}
	a, err = c.Ask(context.Background(), e, skatesPrompt)
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != "Acme, from memory." || a.SourcesReported || a.Searches != 0 || a.Sources != nil || a.InputTokens != 6 {
		t.Errorf("no search: %+v", a)
	}
}

// TestChunkDomain: a chunk is attributed to the domain its title names,
// else to its URI's host.
func TestChunkDomain(t *testing.T) {
	for _, tc := range []struct{ uri, title, want string }{
		{googleRedirect + "AbC", "acme.example", "acme.example"},
		{googleRedirect + "AbC", " WWW.Acme.Example ", "acme.example"},
		{googleRedirect + "AbC", "bücher.de", "bücher.de"},
		{"https://docs.acme.example/guide", "Acme docs: the guide", "docs.acme.example"},
		{"https://docs.acme.example/guide", "10.0.0.1", "docs.acme.example"},
		{"https://docs.acme.example/guide", "-acme.example", "docs.acme.example"},
		{"https://docs.acme.example/guide", "localhost", "docs.acme.example"},
		{"https://docs.acme.example/guide", "", "docs.acme.example"},
	} {
		if got := chunkDomain(tc.uri, tc.title); got != tc.want {
			t.Errorf("%q %q: %q, want %q", tc.uri, tc.title, got, tc.want)
		}
	}
}

func TestGeminiErrors(t *testing.T) {
	testKindErrors(t, KindGemini, 503, "UNAVAILABLE: The model is overloaded", "INVALID_ARGUMENT: API key not valid")
}
