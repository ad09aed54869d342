package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/connectors/slack/slackfake"
	"github.com/aivis/aivis/plugins/sdk"
)

// FuzzAnswers: what the connector makes of the answers of Slack's Web API
// and of an incoming webhook, which may repeat the bot token or the
// webhook's URL (kittest.FuzzAnswers).
func FuzzAnswers(f *testing.F) {
	fake := slackfake.New()
	f.Cleanup(fake.Close)
	c := newConnector(kittest.Client())
	c.pace.every = 0
	hook := fake.WebhookURL("/services/T000/B000/S3cretHookPath")
	ev := kittest.Change("evt_1", "example.com", 50, 61, "negative")
	// Both answer 200 alone when they take a message; 429 and 5xx are
	// retried.
	usual := func(status int) []sdk.Outcome {
		switch {
		case status == 200:
			return []sdk.Outcome{sdk.Delivered}
		case status == 408 || status == 429 || status >= 500:
			return []sdk.Outcome{sdk.Retry}
		}
		return []sdk.Outcome{sdk.PermanentFailure}
	}
	kittest.FuzzAnswers(f, fake, []string{slackfake.Token, hook}, []kittest.Call{
		// The Web API says ok:false with an error code on 200: retried,
		// gone or failed by the code; a 200 that is not its JSON is
		// retried.
		{Name: "Web API", Do: func(ctx context.Context) sdk.Result {
			return c.Deliver(ctx, botSettings(fake, "C0000OPEN"), []sdk.Event{ev})[0]
		},
			Want: func(status int, body []byte) []sdk.Outcome {
				var r struct {
					OK    bool   `json:"ok"`
					Error string `json:"error"`
				}
				if status != 200 {
					return usual(status)
				}
				switch err := json.NewDecoder(bytes.NewReader(body)).Decode(&r); {
				case err != nil:
					return []sdk.Outcome{sdk.Retry}
				case r.OK:
					return []sdk.Outcome{sdk.Delivered}
				case retryCodes[r.Error]:
					return []sdk.Outcome{sdk.Retry}
				case goneCodes[r.Error]:
					return []sdk.Outcome{sdk.Gone}
				}
				return []sdk.Outcome{sdk.PermanentFailure}
			}},
		// An incoming webhook: 404 and 410, the channel gone, are gone.
		{Name: "webhook", Do: func(ctx context.Context) sdk.Result {
			return c.Deliver(ctx, json.RawMessage(`{"webhook_url": "`+hook+`"}`), []sdk.Event{ev})[0]
		}, Want: func(status int, _ []byte) []sdk.Outcome {
			if slices.Contains([]int{404, 410}, status) {
				return []sdk.Outcome{sdk.Gone}
			}
			return usual(status)
		}},
	}, kittest.Answer{Status: 200, Before: `{"ok":false,"error":"invalid_auth `, After: `"}`, Echo: 1},
		kittest.Answer{Status: 200, Before: `{"ok":false,"error":"channel_is_archived"}`},
		kittest.Answer{Status: 200, Before: `{"ok":true,"channel":"C0000OPEN","ts":"1.2"}`},
		kittest.Answer{Status: 404, Before: "channel_not_found"})
}
