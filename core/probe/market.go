package probe

import (
	"fmt"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
)

// The surfaces an engine answers on: what its figures measure.
const (
	// SurfaceModel is a chat model answering from what it learned,
	// without a web search.
	SurfaceModel = "model"
	// SurfaceSearchAPI is an API that answers from a web search it runs
	// (OpenAI's web search, Perplexity, Anthropic's and Gemini's
	// grounding, Grok's).
	SurfaceSearchAPI = "search_api"
	// SurfaceSERP is the page people see (Google's AI Overviews and AI
	// Mode, Copilot), read through a SERP API.
	SurfaceSERP = "serp"
)

// Surfaces are the surfaces, in the order figures list them.
var Surfaces = []string{SurfaceModel, SurfaceSearchAPI, SurfaceSERP}

// The kinds that read SERP surfaces and Grok (their adapters in their
// own files).
const (
	// KindSerpAPI is SerpApi's search.json: Google's AI Overview
	// (Model google_ai_overview), AI Mode (google_ai_mode) or Copilot
	// (bing_copilot).
	KindSerpAPI = "serpapi"
	// KindDataForSEO is DataForSEO's SERP API: Google's AI Overview
	// (Model ai_overview) or AI Mode (ai_mode).
	KindDataForSEO = "dataforseo"
	// KindXAI is xAI's Responses API with web_search (Grok).
	KindXAI = "xai"
)

// kindSurfaces are the surfaces of the kinds; a kind not listed answers
// from a web search.
var kindSurfaces = map[string]string{
	KindOpenAIChat: SurfaceModel,
	KindSerpAPI:    SurfaceSERP,
	KindDataForSEO: SurfaceSERP,
}

// Surface is the surface the engine answers on: Engine.SurfaceOf when
// set (an openai-chat engine of a search model is a search_api), else
// its kind's.
func (e Engine) Surface() string {
	if e.SurfaceOf != "" {
		return e.SurfaceOf
	}
	if s, ok := kindSurfaces[e.kind()]; ok {
		return s
	}
	return SurfaceSearchAPI
}

// Market is where, and in which language, a prompt is asked: an ISO
// 3166-1 alpha-2 country (upper case) and a BCP 47 language (a language
// subtag, a script where it matters: en, de, pt, zh-Hant). The zero
// Market is none: the engine's default.
type Market struct {
	Country  string `json:"country"`
	Language string `json:"language"`
}

// IsZero reports whether m is no market.
func (m Market) IsZero() bool { return m.Country == "" && m.Language == "" }

// String is the market as a BCP 47 tag of its language and country
// (de-DE, en-US, zh-Hant-TW), the key figures are listed under.
func (m Market) String() string {
	if m.IsZero() {
		return ""
	}
	return m.Language + "-" + m.Country
}

// ParseMarket reads a country and a language as a Market: the country
// an ISO 3166-1 alpha-2 code that names a country, the language a BCP 47
// tag of a language and at most a script (a region belongs in country).
func ParseMarket(country, lang string) (Market, error) {
	r, err := language.ParseRegion(country)
	if err != nil || len(country) != 2 || !r.IsCountry() {
		return Market{}, fmt.Errorf("country %q is not an ISO 3166-1 alpha-2 country code, such as US or DE", country)
	}
	t, err := language.Parse(lang)
	base, conf := t.Base()
	if err != nil || conf != language.Exact {
		return Market{}, fmt.Errorf("language %q is not a BCP 47 language tag, such as en or de", lang)
	}
	if _, c := t.Region(); c == language.Exact {
		return Market{}, fmt.Errorf("language %q names a region: give the language alone (en) and the country apart (GB)", lang)
	}
	tag := base.String()
	if s, c := t.Script(); c == language.Exact {
		tag += "-" + s.String()
	}
	return Market{Country: r.String(), Language: tag}, nil
}

// ParseMarketTag reads a market written as its language and country, a
// BCP 47 tag such as de-DE or zh-Hant-TW (ParseMarket checks both).
func ParseMarketTag(tag string) (Market, error) {
	i := strings.LastIndexByte(tag, '-')
	if i <= 0 {
		return Market{}, fmt.Errorf("%q is not a market: its language and country, such as de-DE", tag)
	}
	return ParseMarket(tag[i+1:], tag[:i])
}

// The ways an engine asks a market.
const (
	// LocaliseNative: the engine takes the country and the language
	// through its own options (SerpApi's gl and hl, DataForSEO's codes).
	LocaliseNative = "native"
	// LocaliseCountry: the engine takes the country through its own
	// options (a web search's user location); the language is asked for
	// in the prompt.
	LocaliseCountry = "country"
	// LocalisePrompt: the engine takes neither; both are asked for in
	// the prompt, which approximates the market at best.
	LocalisePrompt = "prompt"
)

// localiser is the adapter of a kind that takes a market through its
// own options: how it does for the engine.
type localiser interface {
	localisation(e Engine) string
}

// Localisation is how the engine asks a market (LocaliseNative,
// LocaliseCountry or LocalisePrompt): what its figures of a market say of
// them.
func (e Engine) Localisation() string {
	ad, err := adapterOf(e)
	if err == nil {
		if l, ok := ad.(localiser); ok {
			return l.localisation(e)
		}
	}
	return LocalisePrompt
}

// marketPrompt is the prompt as asked of a market by an engine that
// takes what how says it does not through its own options.
func marketPrompt(prompt string, m Market, how string) string {
	if m.IsZero() || how == LocaliseNative {
		return prompt
	}
	en := display.English.Languages()
	lang := en.Name(language.Make(m.Language))
	country := display.English.Regions().Name(language.MustParseRegion(m.Country))
	if how == LocaliseCountry {
		return fmt.Sprintf("%s\n\n(Answer in %s.)", strings.TrimSpace(prompt), lang)
	}
	return fmt.Sprintf("%s\n\n(Answer in %s, for someone in %s.)", strings.TrimSpace(prompt), lang, country)
}
