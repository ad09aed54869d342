// Package probefake is a local AI engine for tests and benchmarks: one
// server that answers in the shape of every engine kind (destinations.md,
// "AI answer engines"), each on its provider's path, from a script of
// replies per model taken in turn; scripted failures; an optional delay;
// and a count of the requests in flight. It checks what it receives by
// the providers' rules, not by the code under test.
//
// Base URLs: openai-chat and openai-responses take URL() (…/v1);
// perplexity, anthropic and gemini take Root().
package probefake

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Reply is one scripted answer. Each kind renders it in its own shape.
type Reply struct {
	Text string
	// Sources are the pages the engine reports it consulted.
	Sources []Source
	// Citations cite sources from spans of Text.
	Citations []Citation
	// Queries are the web searches the engine reports it ran; with none,
	// a kind that always searches makes one of the prompt.
	Queries []string
	// XQueries (xai) are the searches of X the engine reports it ran,
	// when the request gives it the x_search tool.
	XQueries []string
	// NoSearch answers without searching: no search call, no metadata.
	NoSearch bool
	// NoMetadata searches but reports no sources: gemini leaves out
	// groundingMetadata, as Gemini occasionally does; anthropic's searches
	// fail (web_search_tool_result_error).
	NoMetadata bool
	// SERP (serpapi) is how the page shows its AI answer when not inline:
	// SERPDeferred, SERPExpired, SERPFailed or SERPNoResults.
	SERP string
	// Think (perplexity reasoning models) is put in a <think> block
	// before the text.
	Think string
	// NoOverview (dataforseo) is a page without an AI Overview: Google
	// showed none for the search.
	NoOverview bool
}

// Source is a page an engine reports.
type Source struct{ URL, Title string }

// Citation cites URL from the first occurrence of Quote in the reply's
// Text ("" : the whole text).
type Citation struct{ URL, Title, Quote string }

// Failure is a scripted failed answer.
type Failure struct {
	Status int
	// RetryAfter is the wait asked for, in seconds: the Retry-After header,
	// or for gemini the error's RetryInfo ("" asks none).
	RetryAfter string
	// Type is the provider's error type or status (default: the kind's
	// usual one for Status).
	Type string
	// Message is what the provider says (default: the kind's usual words
	// for Status).
	Message string
}

// described is a failure's type and message: those given, else the usual
// ones of its status in a kind's table (of 500 for a status not in it).
func (fl Failure) described(usual map[int][2]string, msg string) (typ, text string) {
	u, ok := usual[fl.Status]
	if !ok {
		u = usual[http.StatusInternalServerError]
	}
	typ, text = fl.Type, cmp.Or(msg, fl.Message)
	if typ == "" {
		typ = u[0]
	}
	if text == "" {
		text = u[1]
	}
	return typ, text
}

// Fake is the fake engine.
type Fake struct {
	srv     *httptest.Server
	mu      sync.Mutex
	replies map[string][]Reply // by model
	next    map[string]int
	to      map[string][]answerTo // by model: answers by what the prompt holds
	fail    map[string][]Failure  // by model: the next requests' failures
	prompts []string
	// tasks are the DataForSEO tasks received (Tasks).
	tasks []Task
	// locations are the user locations received (Locations).
	locations []Location
	// Key, when set, is the key required, in each kind's header.
	Key string
	// Delay is how long each answer takes.
	Delay time.Duration
	// TokenTTL is how long a SerpApi page_token lives (default a minute).
	TokenTTL time.Duration
	serp     serpState
	inFlight atomic.Int64
	peak     atomic.Int64
	requests atomic.Int64
}

// routes are the kinds' handlers by request pattern; each kind's file adds
// its own.
var routes = map[string]func(f *Fake, w http.ResponseWriter, r *http.Request){}

// New starts the fake.
func New() *Fake {
	f := &Fake{replies: map[string][]Reply{}, next: map[string]int{}, to: map[string][]answerTo{}, fail: map[string][]Failure{}}
	mux := http.NewServeMux()
	for pattern, h := range routes {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			f.requests.Add(1)
			now := f.inFlight.Add(1)
			defer f.inFlight.Add(-1)
			for old := f.peak.Load(); now > old && !f.peak.CompareAndSwap(old, now); old = f.peak.Load() {
			}
			h(f, w, r)
		})
	}
	f.srv = httptest.NewServer(mux)
	return f
}

// URL is the base URL (…/v1) of the OpenAI kinds.
func (f *Fake) URL() string { return f.srv.URL + "/v1" }

// Root is the base URL of perplexity, anthropic and gemini.
func (f *Fake) Root() string { return f.srv.URL }

// Close stops the fake.
func (f *Fake) Close() { f.srv.Close() }

// Answer sets the answers of a model, text alone, given in turn.
func (f *Fake) Answer(model string, answers ...string) {
	rs := make([]Reply, len(answers))
	for i, a := range answers {
		rs[i] = Reply{Text: a}
	}
	f.Script(model, rs...)
}

// Script sets the replies of a model, given in turn.
func (f *Fake) Script(model string, replies ...Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies[model], f.next[model] = replies, 0
}

type answerTo struct{ text, answer string }

// AnswerTo makes a model answer a prompt that holds text with answer, in
// place of its answers in turn: for callers that ask one model different
// things at once, so that no turn is taken by the wrong question. The
// first of these that matches answers.
func (f *Fake) AnswerTo(model, text, answer string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.to[model] = append(f.to[model], answerTo{text, answer})
}

// Fail makes the next requests for a model answer these statuses (429
// with Retry-After: 0.01).
func (f *Fake) Fail(model string, statuses ...int) {
	fs := make([]Failure, len(statuses))
	for i, s := range statuses {
		fs[i] = Failure{Status: s}
		if s == http.StatusTooManyRequests {
			fs[i].RetryAfter = "0.01"
		}
	}
	f.FailWith(model, fs...)
}

// FailWith makes the next requests for a model fail so.
func (f *Fake) FailWith(model string, fs ...Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[model] = append(f.fail[model], fs...)
}

// Requests is how many requests arrived; Peak, the most in flight at once.
func (f *Fake) Requests() int { return int(f.requests.Load()) }
func (f *Fake) Peak() int     { return int(f.peak.Load()) }

// Prompts are the prompts received.
func (f *Fake) Prompts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.prompts...)
}

// take is what a model answers a prompt: after the delay, a scripted
// failure, else the reply; ok is false when the model has no reply.
func (f *Fake) take(model, prompt string) (reply Reply, fail *Failure, ok bool) {
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fs := f.fail[model]; len(fs) > 0 {
		f.fail[model] = fs[1:]
		return Reply{}, &fs[0], true
	}
	for _, a := range f.to[model] {
		if strings.Contains(prompt, a.text) {
			f.prompts = append(f.prompts, prompt)
			return Reply{Text: a.answer}, nil, true
		}
	}
	list := f.replies[model]
	if len(list) == 0 {
		return Reply{}, nil, false
	}
	reply = list[f.next[model]%len(list)]
	f.next[model]++
	f.prompts = append(f.prompts, prompt)
	return reply, nil, true
}

// span is where the citation's quote lies in text, in bytes.
func (c Citation) span(text string) (start, end int) {
	if c.Quote == "" {
		return 0, len(text)
	}
	i := strings.Index(text, c.Quote)
	if i < 0 {
		panic(fmt.Sprintf("probefake: the quote %q is not in the reply's text", c.Quote))
	}
	return i, i + len(c.Quote)
}

// results are the pages a reply's searches found: its sources, then the
// pages its citations cite that are not among them.
func (r Reply) results() []Source {
	out := append([]Source(nil), r.Sources...)
	for _, c := range r.Citations {
		if !slices.ContainsFunc(out, func(s Source) bool { return s.URL == c.URL }) {
			out = append(out, Source{URL: c.URL, Title: c.Title})
		}
	}
	return out
}

// opaque is a stable opaque token for s, as providers give in place of
// what they do not disclose.
func opaque(s string) string {
	h := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// words counts tokens the way the fake charges them: one a word.
func words(s string) int { return len(strings.Fields(s)) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
