package main

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/aivis/aivis/connectors/internal/kit"
	"github.com/aivis/aivis/plugins/sdk"
)

type settings struct {
	TargetURL string `json:"target_url"`
}

var schema = json.RawMessage(`{
  "type": "object",
  "title": "Zapier",
  "required": ["target_url"],
  "properties": {
    "target_url": {"type": "string", "format": "uri", "title": "Hook URL",
      "description": "A Catch Hook URL (https://hooks.zapier.com/hooks/catch/...). Subscriptions of the aivis Zapier app set it themselves."}
  },
  "additionalProperties": false
}`)

type connector struct{ client *http.Client }

func (c *connector) Info() sdk.Info {
	return sdk.Info{Name: "zapier", Kind: "automation", Version: "1.0.0", DisplayName: "Zapier",
		Description:    "Triggers Zaps with aivis events: instant triggers (REST Hooks) and Catch Hooks.",
		SettingsSchema: schema, SecretFields: []string{"target_url"}, DestinationFields: []string{"target_url"}, MaxBatch: 1}
}

func parse(raw json.RawMessage) (settings, kit.Fields) {
	var s settings
	if f := kit.Decode(raw, &s); f != nil {
		return s, f
	}
	var f kit.Fields
	f.URL("target_url", s.TargetURL, true, false)
	return s, f
}

func (c *connector) ValidateSettings(_ context.Context, raw json.RawMessage) []sdk.FieldError {
	_, f := parse(raw)
	return f
}

// Deliver POSTs each event's JSON body, the same object the list of recent
// events (Zapier's sample data) returns, to the target URL. 410 Gone ends
// the subscription.
func (c *connector) Deliver(ctx context.Context, raw json.RawMessage, evs []sdk.Event) []sdk.Result {
	s, f := parse(raw)
	if len(f) > 0 {
		return kit.All(len(evs), sdk.FailedResult(f.Err()))
	}
	out := make([]sdk.Result, len(evs))
	for i, ev := range evs {
		r, err := kit.Do(ctx, c.client, http.MethodPost, s.TargetURL, http.Header{"Idempotency-Key": {ev.ID}}, ev.Body)
		if err != nil {
			out[i] = kit.Unreachable("Zapier", err)
			continue
		}
		out[i] = kit.ByStatus(r, "Zapier")
	}
	return out
}
