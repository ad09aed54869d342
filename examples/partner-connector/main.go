// Command partner-connector is a complete third-party aivis connector,
// built only on the SDK: it posts each event as a chat message to an
// incoming-webhook URL (the kind Discord, Mattermost or Rocket.Chat give).
// Build it, register it with `aivis plugin register`, and connections can
// use it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aivis/aivis/plugins/sdk"
)

func main() { sdk.Serve(&chat{client: sdk.HTTPClient(10 * time.Second)}) }

type chat struct{ client *http.Client }

type settings struct {
	WebhookURL string `json:"webhook_url"`
	Username   string `json:"username"`
}

var schema = json.RawMessage(`{
  "type": "object",
  "required": ["webhook_url"],
  "properties": {
    "webhook_url": {"type": "string", "format": "uri", "title": "Incoming webhook URL"},
    "username": {"type": "string", "maxLength": 80, "title": "Name shown on messages"}
  },
  "additionalProperties": false
}`)

func (c *chat) Info() sdk.Info {
	return sdk.Info{Name: "partner-chat", Kind: "chat", Version: "1.0.0", DisplayName: "Partner Chat",
		Description: "Posts aivis alerts to a chat incoming webhook.", SettingsSchema: schema,
		SecretFields: []string{"webhook_url"}, DestinationFields: []string{"webhook_url"}, MaxBatch: 1}
}

func parse(raw json.RawMessage) (settings, []sdk.FieldError) {
	var s settings
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		// Field errors in words of the settings, not of Go's decoder.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return s, []sdk.FieldError{{Field: te.Field, Message: "must be a string"}}
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return s, []sdk.FieldError{{Field: strings.Trim(name, `"`), Message: "is not a setting of this connector"}}
		}
		return s, []sdk.FieldError{{Message: "settings must be a JSON object of webhook_url and username"}}
	}
	var errs []sdk.FieldError
	if u, err := url.Parse(s.WebhookURL); s.WebhookURL == "" || err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		errs = append(errs, sdk.FieldError{Field: "webhook_url", Message: "must be an http(s) URL"})
	}
	if len(s.Username) > 80 {
		errs = append(errs, sdk.FieldError{Field: "username", Message: "must be at most 80 characters"})
	}
	return s, errs
}

func (c *chat) ValidateSettings(_ context.Context, raw json.RawMessage) []sdk.FieldError {
	_, errs := parse(raw)
	return errs
}

func (c *chat) Deliver(ctx context.Context, raw json.RawMessage, events []sdk.Event) []sdk.Result {
	s, errs := parse(raw)
	out := make([]sdk.Result, len(events))
	for i, ev := range events {
		if len(errs) > 0 {
			out[i] = sdk.FailedResult("invalid settings: " + errs[0].Message)
			continue
		}
		out[i] = c.post(ctx, s, ev)
	}
	return out
}

func (c *chat) post(ctx context.Context, s settings, ev sdk.Event) sdk.Result {
	var body struct {
		Data struct {
			Domain          string `json:"domain"`
			VisibilityScore *int   `json:"visibility_score"`
			Sentiment       string `json:"sentiment"`
		} `json:"data"`
	}
	json.Unmarshal(ev.Body, &body)
	text := fmt.Sprintf("aivis: %s for %s", ev.Kind, ev.Domain)
	if body.Data.VisibilityScore != nil {
		text += fmt.Sprintf(": visibility %d, sentiment %s", *body.Data.VisibilityScore, body.Data.Sentiment)
	}
	msg, _ := json.Marshal(map[string]string{"content": text, "username": s.Username})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.WebhookURL, bytes.NewReader(msg))
	if err != nil {
		return sdk.FailedResult(sdk.ErrorText(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", ev.ID)
	resp, err := c.client.Do(req)
	if err != nil {
		// Not err.Error(): it carries the whole URL, whose path is the
		// webhook's secret.
		return sdk.RetryResult(0, sdk.ErrorText(err))
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return sdk.DeliveredResult()
	case resp.StatusCode == http.StatusGone:
		return sdk.GoneResult("the webhook is gone (410)")
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		after, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return sdk.RetryResult(time.Duration(after)*time.Second, resp.Status)
	default:
		return sdk.FailedResult("the webhook answered " + resp.Status)
	}
}
