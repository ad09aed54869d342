// Package probefake is a local OpenAI-compatible chat-completions server
// for tests and benchmarks: canned answers per model, taken in turn,
// scripted failures (429 with Retry-After, 5xx, 401), an optional delay,
// and a count of the requests in flight.
package probefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Fake is the fake engine.
type Fake struct {
	srv     *httptest.Server
	mu      sync.Mutex
	answers map[string][]string // by model
	next    map[string]int
	to      map[string][]answerTo // by model: answers by what the prompt holds
	fail    map[string][]int      // by model: statuses of the next requests
	prompts []string
	// Key, when set, is the bearer key required.
	Key string
	// Delay is how long each answer takes.
	Delay    time.Duration
	inFlight atomic.Int64
	peak     atomic.Int64
	requests atomic.Int64
}

// New starts the fake.
func New() *Fake {
	f := &Fake{answers: map[string][]string{}, next: map[string]int{}, to: map[string][]answerTo{}, fail: map[string][]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	return f
}

// URL is the base URL (…/v1) to configure as the engine's base_url.
func (f *Fake) URL() string { return f.srv.URL + "/v1" }

// Close stops the fake.
func (f *Fake) Close() { f.srv.Close() }

// Answer sets the answers of a model, given in turn.
func (f *Fake) Answer(model string, answers ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[model] = answers
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
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[model] = append(f.fail[model], statuses...)
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

func (f *Fake) handle(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	now := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for old := f.peak.Load(); now > old && !f.peak.CompareAndSwap(old, now); old = f.peak.Load() {
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	if f.Key != "" && r.Header.Get("Authorization") != "Bearer "+f.Key {
		writeErr(w, http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided.")
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		writeErr(w, http.StatusBadRequest, "invalid_request_error", "messages are required")
		return
	}
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	f.mu.Lock()
	if fs := f.fail[req.Model]; len(fs) > 0 {
		f.fail[req.Model] = fs[1:]
		f.mu.Unlock()
		if fs[0] == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0.01")
		}
		writeErr(w, fs[0], "scripted", "scripted failure")
		return
	}
	prompt := req.Messages[len(req.Messages)-1].Content
	text, ok := "", false
	for _, a := range f.to[req.Model] {
		if strings.Contains(prompt, a.text) {
			text, ok = a.answer, true
			break
		}
	}
	if list := f.answers[req.Model]; !ok && len(list) > 0 {
		text, ok = list[f.next[req.Model]%len(list)], true
		f.next[req.Model]++
	}
	if !ok {
		f.mu.Unlock()
		writeErr(w, http.StatusNotFound, "model_not_found", fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return
	}
	f.prompts = append(f.prompts, prompt)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]string{"role": "assistant", "content": text}}},
		"usage":   map[string]int{"prompt_tokens": len(strings.Fields(prompt)), "completion_tokens": len(strings.Fields(text)), "total_tokens": len(strings.Fields(prompt)) + len(strings.Fields(text))},
	})
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg, "type": code, "code": code}})
}
