package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/aivis/aivis/connectors/internal/kit"
	"github.com/aivis/aivis/plugins/sdk"
)

// DefaultAPIURL is Slack's Web API.
const DefaultAPIURL = "https://slack.com/api/"

// settings of a Slack connection: a bot token and a channel, or an
// incoming-webhook URL.
type settings struct {
	BotToken     string `json:"bot_token"`
	Channel      string `json:"channel"`
	WebhookURL   string `json:"webhook_url"`
	DashboardURL string `json:"dashboard_url"`
	APIURL       string `json:"api_url"`
}

var schema = json.RawMessage(`{
  "type": "object",
  "title": "Slack",
  "description": "Either a bot token and a channel, or an incoming-webhook URL.",
  "properties": {
    "bot_token": {"type": "string", "title": "Bot token", "pattern": "^xox[bp]-", "description": "A bot token (xoxb-...) with the chat:write scope; invite the bot to the channel."},
    "channel": {"type": "string", "title": "Channel", "description": "Channel ID (C0123ABCD) or name (#alerts)."},
    "webhook_url": {"type": "string", "format": "uri", "title": "Incoming webhook URL", "description": "https://hooks.slack.com/services/... (instead of a bot token)."},
    "dashboard_url": {"type": "string", "format": "uri", "title": "Dashboard URL", "description": "Your aivis address; messages then link to the domain's page."},
    "api_url": {"type": "string", "format": "uri", "title": "Web API URL", "default": "https://slack.com/api/"}
  },
  "oneOf": [{"required": ["bot_token", "channel"]}, {"required": ["webhook_url"]}],
  "additionalProperties": false
}`)

var channelPattern = regexp.MustCompile(`^(#[a-z0-9][a-z0-9._-]{0,79}|[CGD][A-Z0-9]{6,})$`)

type connector struct {
	client *http.Client
	pace   pacer
}

func newConnector(c *http.Client) *connector {
	return &connector{client: c, pace: pacer{every: time.Second, next: map[slot]time.Time{}}}
}

func (c *connector) Info() sdk.Info {
	return sdk.Info{Name: "slack", Kind: "chat", Version: "1.0.0", DisplayName: "Slack",
		Description:    "Posts aivis alerts to a Slack channel as Block Kit messages.",
		SettingsSchema: schema, SecretFields: []string{"bot_token", "webhook_url"},
		DestinationFields: []string{"api_url", "webhook_url"}, MaxBatch: 1}
}

func parse(raw json.RawMessage) (settings, kit.Fields) {
	var s settings
	if fs := kit.Decode(raw, &s); fs != nil {
		return s, fs
	}
	var f kit.Fields
	switch {
	case s.WebhookURL != "" && (s.BotToken != "" || s.Channel != ""):
		f.Add("webhook_url", "give either a webhook URL or a bot token and a channel, not both")
	case s.WebhookURL != "":
		f.URL("webhook_url", s.WebhookURL, true, false)
	default:
		if s.BotToken == "" {
			f.Add("bot_token", "is required (or give webhook_url)")
		} else if !strings.HasPrefix(s.BotToken, "xoxb-") && !strings.HasPrefix(s.BotToken, "xoxp-") {
			f.Add("bot_token", "must be a Slack bot token (xoxb-...)")
		}
		if s.Channel == "" {
			f.Add("channel", "is required with a bot token")
		} else if !channelPattern.MatchString(s.Channel) {
			f.Add("channel", "must be a channel ID (C0123ABCD) or #name")
		}
	}
	f.URL("dashboard_url", s.DashboardURL, false, false)
	f.URL("api_url", s.APIURL, false, false)
	return s, f
}

func (c *connector) ValidateSettings(_ context.Context, raw json.RawMessage) []sdk.FieldError {
	_, f := parse(raw)
	return f
}

func (c *connector) Deliver(ctx context.Context, raw json.RawMessage, evs []sdk.Event) []sdk.Result {
	s, f := parse(raw)
	if len(f) > 0 {
		return kit.All(len(evs), sdk.FailedResult(f.Err()))
	}
	out := make([]sdk.Result, len(evs))
	for i, ev := range evs {
		out[i] = c.post(ctx, s, ev)
	}
	return out
}

func (c *connector) post(ctx context.Context, s settings, ev sdk.Event) sdk.Result {
	a := kit.Parse(ev)
	blocks := Blocks(a, s.DashboardURL)
	fallback := kit.Truncate(a.Headline(), 3000)
	// Slack takes about one message a second per channel of a workspace:
	// wait for its turn when it is near, hand the wait back to the server
	// when not.
	if wait := c.pace.reserve(ctx, s.slot(), 5*time.Second); wait > 0 {
		where := "the webhook's channel"
		if s.WebhookURL == "" {
			where = s.Channel
		}
		return sdk.RetryResult(wait, "pacing to one message a second in "+where)
	}
	if s.WebhookURL != "" {
		return webhookResult(slack.PostWebhookCustomHTTPContext(ctx, s.WebhookURL, c.client,
			&slack.WebhookMessage{Text: fallback, Blocks: &slack.Blocks{BlockSet: blocks}}))
	}
	api := s.APIURL
	if api == "" {
		api = DefaultAPIURL
	}
	if !strings.HasSuffix(api, "/") {
		api += "/"
	}
	client := slack.New(s.BotToken, slack.OptionAPIURL(api), slack.OptionHTTPClient(c.client))
	_, _, err := client.PostMessageContext(ctx, s.Channel, slack.MsgOptionText(fallback, false), slack.MsgOptionBlocks(blocks...))
	return apiResult(err)
}

// Block Kit limits.
const (
	maxHeader  = 150
	maxField   = 2000
	maxFields  = 10
	maxSection = 3000
)

// Blocks is the message of an alert: a header, the facts as fields, a
// context line and, given the dashboard's address, a button to it.
func Blocks(a kit.Alert, dashboard string) []slack.Block {
	header := kit.Title(a.Kind)
	if a.Domain != "" {
		header += ": " + a.Domain
	}
	blocks := []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, kit.Truncate(header, maxHeader), false, false))}
	var fields []*slack.TextBlockObject
	for _, f := range a.Facts() {
		if f.Label == "When" || len(fields) == maxFields {
			continue
		}
		v := f.Value
		if f.Label == "Domain" {
			v = fmt.Sprintf("<https://%s|%s>", escape(a.Domain), escape(a.Domain))
		} else {
			v = escape(v)
		}
		fields = append(fields, slack.NewTextBlockObject(slack.MarkdownType, kit.Truncate("*"+f.Label+"*\n"+v, maxField), false, false))
	}
	if len(fields) > 0 {
		blocks = append(blocks, slack.NewSectionBlock(nil, fields, nil))
	}
	if dashboard != "" && a.Domain != "" {
		link := strings.TrimRight(dashboard, "/") + "/domains/" + url.PathEscape(a.Domain)
		btn := slack.NewButtonBlockElement("open_aivis", a.ID, slack.NewTextBlockObject(slack.PlainTextType, "Open in aivis", false, false)).WithURL(link)
		blocks = append(blocks, slack.NewActionBlock("", btn))
	}
	ctx := "aivis"
	if !a.Time.IsZero() {
		ctx += " · " + a.Time.Format("2006-01-02 15:04 MST")
	}
	blocks = append(blocks, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, escape(ctx), false, false)))
	return blocks
}

// escape makes text safe in mrkdwn: &, < and > are control characters.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Web API error codes (ok:false on HTTP 200) by what to do about them.
var (
	retryCodes = map[string]bool{"ratelimited": true, "internal_error": true, "fatal_error": true,
		"service_unavailable": true, "request_timeout": true, "team_added_to_org": true}
	goneCodes = map[string]bool{"is_archived": true, "channel_is_archived": true, "token_revoked": true,
		"account_inactive": true, "team_disabled": true}
)

func apiResult(err error) sdk.Result {
	var rl *slack.RateLimitedError
	var se slack.SlackErrorResponse
	var sc slack.StatusCodeError
	var ne *strconv.NumError
	switch {
	case err == nil:
		return sdk.DeliveredResult()
	case errors.As(err, &rl):
		return sdk.RetryResult(rl.RetryAfter, "Slack is throttling: retry after "+rl.RetryAfter.String())
	case errors.As(err, &ne):
		// slack-go reads a 429's Retry-After as whole seconds, and returns
		// the parse error of any other.
		return sdk.RetryResult(0, "Slack is throttling, with a Retry-After that is not whole seconds")
	case errors.As(err, &se):
		why := "Slack refused the message: " + kit.Quote(se.Err, 100)
		switch {
		case retryCodes[se.Err]:
			return sdk.RetryResult(0, why)
		case goneCodes[se.Err]:
			return sdk.GoneResult(why)
		default:
			return sdk.FailedResult(why + hint(se.Err))
		}
	case errors.As(err, &sc):
		if kit.Retryable(sc.Code) {
			return sdk.RetryResult(0, "Slack answered "+sc.Status)
		}
		return sdk.FailedResult("Slack answered " + sc.Status)
	default:
		return kit.Unreachable("Slack", err)
	}
}

// hint says what the user can do about a permanent error.
func hint(code string) string {
	switch code {
	case "not_in_channel":
		return " (invite the bot to the channel: /invite @yourbot)"
	case "channel_not_found":
		return " (check the channel ID; private channels need the bot invited)"
	case "invalid_auth", "not_authed":
		return " (check the bot token)"
	case "missing_scope":
		return " (the bot token needs the chat:write scope)"
	}
	return ""
}

// webhookResult reads the answer of an incoming webhook: plain-text errors
// with 400 invalid_payload, 403 action_prohibited, 404 channel_not_found
// and 410 channel_is_archived; the last two mean the channel is gone.
func webhookResult(err error) sdk.Result {
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && sc.Code == http.StatusGone {
		return sdk.GoneResult("the Slack channel is archived (410)")
	}
	if errors.As(err, &sc) && sc.Code == http.StatusNotFound {
		return sdk.GoneResult("the Slack webhook or its channel no longer exists (404)")
	}
	return apiResult(err)
}

// slot is what Slack paces: a channel of a workspace. The workspace is
// known by the credential that reaches it (a bot token, or an incoming
// webhook, which posts to one channel), held only as its hash so that no
// secret lies in the pacer.
type slot struct {
	workspace [sha256.Size]byte
	channel   string
}

func (s settings) slot() slot {
	if s.WebhookURL != "" {
		return slot{workspace: sha256.Sum256([]byte(s.WebhookURL))}
	}
	return slot{workspace: sha256.Sum256([]byte(s.BotToken)), channel: s.Channel}
}

// pacer spaces messages to one channel of a workspace.
type pacer struct {
	mu    sync.Mutex
	every time.Duration
	next  map[slot]time.Time
}

// reserve takes the slot's next turn and sleeps until it, when that is
// within limit; otherwise it takes nothing and returns the wait.
func (p *pacer) reserve(ctx context.Context, at slot, limit time.Duration) time.Duration {
	p.mu.Lock()
	now := time.Now()
	turn := p.next[at]
	if turn.Before(now) {
		turn = now
	}
	wait := turn.Sub(now)
	if wait > limit {
		p.mu.Unlock()
		return wait
	}
	p.next[at] = turn.Add(p.every)
	for s, t := range p.next {
		if t.Before(now) {
			delete(p.next, s)
		}
	}
	p.mu.Unlock()
	select {
	case <-time.After(wait):
	case <-ctx.Done():
	}
	return 0
}
