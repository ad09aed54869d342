// Package slackfake is a local stand-in for Slack's Web API
// (chat.postMessage) and incoming webhooks, answering as Slack does:
// errors as ok:false on HTTP 200 for the Web API, plain-text errors with
// their status for webhooks, 429 with Retry-After when throttled.
package slackfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aivis/aivis/connectors/internal/fakekit"
)

// Token is the bot token the fake accepts by default.
const Token = "xoxb-fake-token"

// Channel states.
const (
	Open        = "open"
	Archived    = "archived"
	NotInvited  = "not_in_channel"
	Removed     = "removed"    // webhooks: 404 channel_not_found
	Prohibited  = "prohibited" // webhooks: 403 action_prohibited
	webhookPath = "/services/"
)

// Message is a message the fake accepted.
type Message struct {
	Via     string // "api" or "webhook"
	Token   string // the bot token it came with (its workspace), "" by webhook
	Channel string // the channel, or the webhook's path
	Text    string
	Blocks  []map[string]any
	At      time.Time
}

// Fake is the fake Slack.
type Fake struct {
	*fakekit.Server
	mu       sync.Mutex
	tokens   map[string]bool
	channels map[string]string
	hooks    map[string]string
	got      []Message
	last     map[string]time.Time
	// PerChannel, when set, is the least time between two messages to a
	// channel of a workspace; a faster one is answered 429 with
	// Retry-After.
	PerChannel time.Duration
}

// New starts a fake that knows the token Token, the open channel
// C0000OPEN (#alerts), and the webhook /services/T000/B000/OK.
func New() *Fake {
	f := &Fake{tokens: map[string]bool{Token: true}, last: map[string]time.Time{},
		channels: map[string]string{"C0000OPEN": Open, "#alerts": Open},
		hooks:    map[string]string{"/services/T000/B000/OK": Open}}
	f.Server = fakekit.New(f.handle)
	return f
}

// AddWorkspace makes token the bot token of another workspace, with
// channels of the same names and states as the first one's.
func (f *Fake) AddWorkspace(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens[token] = true
}

// SetChannel sets a channel's state (Open, Archived, NotInvited).
func (f *Fake) SetChannel(id, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.channels[id] = state
}

// SetWebhook sets the state of the webhook at path (Open, Archived,
// Removed, Prohibited).
func (f *Fake) SetWebhook(path, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hooks[path] = state
}

// APIURL is the Web API base (for the connector's api_url).
func (f *Fake) APIURL() string { return f.URL() + "/api/" }

// WebhookURL is the URL of the webhook at path.
func (f *Fake) WebhookURL(path string) string { return f.URL() + path }

// Received are the accepted messages.
func (f *Fake) Received() []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Message(nil), f.got...)
}

func (f *Fake) handle(w http.ResponseWriter, r *http.Request, body []byte) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/chat.postMessage":
		f.postMessage(w, r, body)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, webhookPath):
		f.webhook(w, r, body)
	default:
		http.NotFound(w, r)
	}
}

// postMessage takes JSON or a form, as Slack does.
func (f *Fake) postMessage(w http.ResponseWriter, r *http.Request, body []byte) {
	var token, channel, text string
	var blocks []map[string]any
	blocksOK := true
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var m struct {
			Channel string           `json:"channel"`
			Text    string           `json:"text"`
			Blocks  []map[string]any `json:"blocks"`
		}
		if json.Unmarshal(body, &m) != nil {
			apiError(w, "invalid_json")
			return
		}
		channel, text, blocks = m.Channel, m.Text, m.Blocks
	} else {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			apiError(w, "invalid_form_data")
			return
		}
		token, channel, text = form.Get("token"), form.Get("channel"), form.Get("text")
		if b := form.Get("blocks"); b != "" {
			blocksOK = json.Unmarshal([]byte(b), &blocks) == nil
		}
	}
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		token = t
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case token == "":
		apiError(w, "not_authed")
	case !f.tokens[token]:
		apiError(w, "invalid_auth")
	case channel == "" || f.channels[channel] == "":
		apiError(w, "channel_not_found")
	case f.channels[channel] == Archived:
		apiError(w, "is_archived")
	case f.channels[channel] == NotInvited:
		apiError(w, "not_in_channel")
	case !blocksOK || !validBlocks(blocks):
		apiError(w, "invalid_blocks")
	case text == "" && len(blocks) == 0:
		apiError(w, "no_text")
	case len(text) > 40000:
		apiError(w, "msg_too_long")
	case f.throttled(token + " " + channel):
		w.Header().Set("Retry-After", fmt.Sprint(int(f.PerChannel.Seconds()+0.999)))
		w.WriteHeader(http.StatusTooManyRequests)
	default:
		f.got = append(f.got, Message{Via: "api", Token: token, Channel: channel, Text: text, Blocks: blocks, At: time.Now()})
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":"%d.000100"}`, channel, time.Now().Unix())
	}
}

// throttled says whether a message to the channel (of a workspace, or a
// webhook's) comes too soon after the last one.
func (f *Fake) throttled(channel string) bool {
	if f.PerChannel == 0 {
		return false
	}
	now := time.Now()
	if now.Sub(f.last[channel]) < f.PerChannel {
		return true
	}
	f.last[channel] = now
	return false
}

func (f *Fake) webhook(w http.ResponseWriter, r *http.Request, body []byte) {
	var m struct {
		Text   string           `json:"text"`
		Blocks []map[string]any `json:"blocks"`
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	state := f.hooks[r.URL.Path]
	switch {
	case state == "" || state == Removed:
		plain(w, http.StatusNotFound, "channel_not_found")
	case state == Archived:
		plain(w, http.StatusGone, "channel_is_archived")
	case state == Prohibited:
		plain(w, http.StatusForbidden, "action_prohibited")
	case json.Unmarshal(body, &m) != nil || (m.Text == "" && len(m.Blocks) == 0) || !validBlocks(m.Blocks):
		plain(w, http.StatusBadRequest, "invalid_payload")
	case f.throttled(r.URL.Path):
		w.Header().Set("Retry-After", fmt.Sprint(int(f.PerChannel.Seconds()+0.999)))
		plain(w, http.StatusTooManyRequests, "rate_limited")
	default:
		f.got = append(f.got, Message{Via: "webhook", Channel: r.URL.Path, Text: m.Text, Blocks: m.Blocks, At: time.Now()})
		plain(w, http.StatusOK, "ok")
	}
}

// validBlocks checks Slack's limits: at most 50 blocks, header text at most
// 150 characters, section text at most 3,000, at most 10 fields of 2,000.
func validBlocks(blocks []map[string]any) bool {
	if len(blocks) > 50 {
		return false
	}
	textLen := func(v any) int {
		m, _ := v.(map[string]any)
		s, _ := m["text"].(string)
		return len([]rune(s))
	}
	for _, b := range blocks {
		switch b["type"] {
		case "header":
			if n := textLen(b["text"]); n == 0 || n > 150 {
				return false
			}
		case "section":
			if textLen(b["text"]) > 3000 {
				return false
			}
			fields, _ := b["fields"].([]any)
			if len(fields) > 10 {
				return false
			}
			for _, fl := range fields {
				if textLen(fl) > 2000 {
					return false
				}
			}
		case "context", "actions", "divider":
		default:
			return false
		}
	}
	return true
}

func apiError(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"ok":false,"error":%q}`, code)
}

func plain(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(status)
	fmt.Fprint(w, text)
}
