// Package probe asks AI engines about a domain and measures the answers:
// whether the brand is mentioned, where among the brands named, whether
// the domain is cited, which competitors appear, and the sentiment of
// the sentences that mention it. Engines are OpenAI-compatible
// chat-completions endpoints (hosted models, Ollama, vLLM, llama.cpp).
package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/aivis/aivis/core/retryafter"
)

// Engine is one configured AI engine.
type Engine struct {
	Label   string
	BaseURL string // e.g. https://api.openai.com/v1 or http://localhost:11434/v1
	Model   string
	APIKey  string
	// Prices in dollars per million tokens.
	InputPricePerMTok, OutputPricePerMTok float64
	// Concurrency bounds the requests in flight to this engine (default 4).
	Concurrency int
	// Timeout bounds one request (default 60 s).
	Timeout time.Duration
}

// Answer is one completion.
type Answer struct {
	Text                      string
	InputTokens, OutputTokens int
	Attempts                  int
}

// Cost is what the answer cost at the engine's prices, in dollars.
func (e Engine) Cost(a Answer) float64 {
	return (float64(a.InputTokens)*e.InputPricePerMTok + float64(a.OutputTokens)*e.OutputPricePerMTok) / 1e6
}

// Client asks engines, retrying throttling and server errors.
type Client struct {
	HTTP *http.Client
	// MaxAttempts bounds the attempts of one prompt (default 4).
	MaxAttempts int
	// Backoff is the first wait between attempts, doubled each time with
	// jitter, unless the engine says (Retry-After); default 500 ms.
	Backoff time.Duration
	// MaxWait caps a wait the engine asks for (default 30 s).
	MaxWait time.Duration
}

// ErrPermanent marks an error retrying cannot mend (a bad key, an unknown
// model, a refused request).
var ErrPermanent = errors.New("permanent")

type chatRequest struct {
	Model       string    `json:"model"`
	Messages    []message `json:"messages"`
	Temperature float64   `json:"temperature"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
}

// Request is one chat completion: an optional system message, the user's
// prompt, and a cap on the answer's tokens (0: the engine's own).
type Request struct {
	System      string
	Prompt      string
	MaxTokens   int
	Temperature float64
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatResponse struct {
	Choices []struct {
		Message message `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// Ask sends one prompt as a user message and returns the answer.
func (c *Client) Ask(ctx context.Context, e Engine, prompt string) (Answer, error) {
	return c.Complete(ctx, e, Request{Prompt: prompt, Temperature: 0.7})
}

// Complete sends one request and returns the answer.
func (c *Client) Complete(ctx context.Context, e Engine, r Request) (Answer, error) {
	attempts, backoff, maxWait := c.MaxAttempts, c.Backoff, c.MaxWait
	if attempts <= 0 {
		attempts = 4
	}
	if backoff <= 0 {
		backoff = 500 * time.Millisecond
	}
	if maxWait <= 0 {
		maxWait = 30 * time.Second
	}
	msgs := []message{{Role: "user", Content: r.Prompt}}
	if r.System != "" {
		msgs = append([]message{{Role: "system", Content: r.System}}, msgs...)
	}
	body, _ := json.Marshal(chatRequest{Model: e.Model, Messages: msgs, Temperature: r.Temperature, MaxTokens: r.MaxTokens})
	var last error
	for i := 1; i <= attempts; i++ {
		a, wait, err := c.once(ctx, e, body)
		if err == nil {
			a.Attempts = i
			return a, nil
		}
		last = err
		if errors.Is(err, ErrPermanent) || i == attempts {
			break
		}
		if wait <= 0 {
			wait = backoff<<(i-1) + time.Duration(rand.Int64N(int64(backoff)))
		}
		select {
		case <-ctx.Done():
			return Answer{}, ctx.Err()
		case <-time.After(min(wait, maxWait)):
		}
	}
	return Answer{}, fmt.Errorf("%s: %w", e.Label, last)
}

// once makes one attempt; wait is what the engine asked to wait.
func (c *Client) once(ctx context.Context, e Engine, body []byte) (Answer, time.Duration, error) {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(e.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return Answer{}, 0, fmt.Errorf("%w: %v", ErrPermanent, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Answer{}, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return Answer{}, 0, err
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout:
		return Answer{}, retryafter.Header(resp.Header, time.Now()), fmt.Errorf("the engine answered %s", resp.Status)
	case resp.StatusCode != http.StatusOK:
		return Answer{}, 0, fmt.Errorf("%w: the engine answered %s: %.200s", ErrPermanent, resp.Status, b)
	}
	var cr chatResponse
	if err := json.Unmarshal(b, &cr); err != nil || len(cr.Choices) == 0 {
		return Answer{}, 0, fmt.Errorf("the engine's answer is not a chat completion: %.200s", b)
	}
	return Answer{Text: cr.Choices[0].Message.Content, InputTokens: cr.Usage.PromptTokens, OutputTokens: cr.Usage.CompletionTokens}, 0, nil
}
