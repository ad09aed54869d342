package probe

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aivis/aivis/core/probe/probefake"
)

// TestMarketEveryKind: a request for Germany in German gives each kind's
// search the country in its provider's shape, which the fake checks by
// that provider's rules (openai-responses and anthropic flat with a type,
// openai-chat's search model nested under approximate, perplexity flat
// without one), and asks for German in the prompt; a plain chat model,
// Gemini and Grok take no location and are asked both in the prompt. A
// request without a market sends neither.
func TestMarketEveryKind(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = "key-right"
	const prompt = "best crm for small business"
	germany := Market{Country: "DE", Language: "de"}
	for _, tc := range []struct {
		name    string
		e       Engine
		how     string // Engine.Localisation
		located bool   // the fake notes the requests' user locations
	}{
		{"openai-responses", Engine{Kind: KindOpenAIResponses, BaseURL: f.URL(), Model: "gpt-5"}, LocaliseCountry, true},
		{"openai-chat search model", Engine{Kind: KindOpenAIChat, BaseURL: f.URL(), Model: "gpt-4o-search-preview", SurfaceOf: SurfaceSearchAPI}, LocaliseCountry, true},
		{"openai-chat", Engine{Kind: KindOpenAIChat, BaseURL: f.URL(), Model: "gpt-4o-mini"}, LocalisePrompt, true},
		{"perplexity", Engine{Kind: KindPerplexity, BaseURL: f.Root(), Model: "sonar"}, LocaliseCountry, true},
		{"anthropic", Engine{Kind: KindAnthropic, BaseURL: f.Root(), Model: "claude-sonnet-4-5"}, LocaliseCountry, true},
		{"gemini", Engine{Kind: KindGemini, BaseURL: f.Root(), Model: "gemini-2.5-flash"}, LocalisePrompt, false},
		{"xai", Engine{Kind: KindXAI, BaseURL: f.XAI(), Model: "grok-4"}, LocalisePrompt, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e
			e.Label, e.APIKey = tc.name, f.Key
			f.Answer(e.Model, "HubSpot.")
			if got := e.Localisation(); got != tc.how {
				t.Errorf("Localisation() = %s, want %s", got, tc.how)
			}
			c := &Client{HTTP: http.DefaultClient, MaxAttempts: 1}
			asked := prompt + "\n\n(Answer in German.)"
			country := probefake.Location{Country: "DE"}
			if tc.how == LocalisePrompt {
				asked = prompt + "\n\n(Answer in German, for someone in Germany.)"
				country = probefake.Location{}
			}
			for _, m := range []struct {
				market Market
				prompt string
				loc    probefake.Location
			}{{germany, asked, country}, {Market{}, prompt, probefake.Location{}}} {
				before := len(f.Locations())
				if _, err := c.Complete(context.Background(), e, Request{Prompt: prompt, MaxTokens: 500, Market: m.market}); err != nil {
					t.Fatalf("market %v: %v", m.market, err)
				}
				ps := f.Prompts()
				if got := ps[len(ps)-1]; got != m.prompt {
					t.Errorf("market %v: prompt %q, want %q", m.market, got, m.prompt)
				}
				locs := f.Locations()
				switch {
				case !tc.located && len(locs) != before:
					t.Errorf("market %v: a location noted by a kind that takes none: %v", m.market, locs[before:])
				case tc.located && (len(locs) != before+1 || locs[before] != m.loc):
					t.Errorf("market %v: locations %v, want %v after %d", m.market, locs, m.loc, before)
				}
			}
		})
	}
}

// TestFakeLocationShapes: the fake refuses a user location of another
// provider's shape as that provider does (400), so that a test of an
// adapter's shape is a test against the provider's rules.
func TestFakeLocationShapes(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	for _, m := range []string{"gpt-5", "gpt-4o-search-preview", "gpt-4o-mini", "sonar", "claude"} {
		f.Answer(m, "ok")
	}
	anthropicBody := func(loc string) string {
		return `{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search_20250305","name":"web_search","user_location":` + loc + `}]}`
	}
	for _, tc := range []struct {
		name, url, body string
		status          int
	}{
		{"responses flat", f.URL() + "/responses", `{"model":"gpt-5","input":"hi","tools":[{"type":"web_search","user_location":{"type":"approximate","country":"DE"}}]}`, 200},
		{"responses nested", f.URL() + "/responses", `{"model":"gpt-5","input":"hi","tools":[{"type":"web_search","user_location":{"type":"approximate","approximate":{"country":"DE"}}}]}`, 400},
		{"responses without type", f.URL() + "/responses", `{"model":"gpt-5","input":"hi","tools":[{"type":"web_search","user_location":{"country":"DE"}}]}`, 400},
		{"responses country name", f.URL() + "/responses", `{"model":"gpt-5","input":"hi","tools":[{"type":"web_search","user_location":{"type":"approximate","country":"Germany"}}]}`, 400},
		{"chat nested", f.URL() + "/chat/completions", `{"model":"gpt-4o-search-preview","messages":[{"role":"user","content":"hi"}],"web_search_options":{"user_location":{"type":"approximate","approximate":{"country":"DE"}}}}`, 200},
		{"chat flat", f.URL() + "/chat/completions", `{"model":"gpt-4o-search-preview","messages":[{"role":"user","content":"hi"}],"web_search_options":{"user_location":{"type":"approximate","country":"DE"}}}`, 400},
		{"chat plain model", f.URL() + "/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"web_search_options":{}}`, 400},
		{"perplexity flat", f.Root() + "/chat/completions", `{"model":"sonar","messages":[{"role":"user","content":"hi"}],"web_search_options":{"user_location":{"country":"DE","latitude":52.5,"longitude":13.4}}}`, 200},
		{"perplexity typed", f.Root() + "/chat/completions", `{"model":"sonar","messages":[{"role":"user","content":"hi"}],"web_search_options":{"user_location":{"type":"approximate","country":"DE"}}}`, 400},
		{"anthropic flat", f.Root() + "/v1/messages", anthropicBody(`{"type":"approximate","country":"DE"}`), 200},
		{"anthropic without type", f.Root() + "/v1/messages", anthropicBody(`{"country":"DE"}`), 400},
		{"anthropic nested", f.Root() + "/v1/messages", anthropicBody(`{"type":"approximate","approximate":{"country":"DE"}}`), 400},
	} {
		req, _ := http.NewRequest(http.MethodPost, tc.url, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("anthropic-version", anthropicVersion)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
	}
}
