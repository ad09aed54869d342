package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aivis/aivis/connectors/internal/kit"
	"github.com/aivis/aivis/plugins/sdk"
)

// Hosts of Segment's regions.
var regions = map[string]string{"us": "https://api.segment.io", "eu": "https://events.eu1.segmentapis.com"}

// Segment's limits.
const (
	maxEvent    = 32 << 10
	maxRequest  = 500 << 10
	maxBatch    = 100 // events per Deliver call; Segment takes up to 2,500 per request
	maxUserID   = 200
	libraryName = "aivis"
	version     = "1.0.0"
)

type settings struct {
	WriteKey string `json:"write_key"`
	Region   string `json:"region"`
	APIURL   string `json:"api_url"`
	UserID   string `json:"user_id"`
}

var schema = json.RawMessage(`{
  "type": "object",
  "title": "Segment",
  "required": ["write_key"],
  "properties": {
    "write_key": {"type": "string", "title": "Write key", "description": "The write key of an HTTP API source."},
    "region": {"type": "string", "enum": ["us", "eu"], "default": "us", "title": "Region", "description": "eu for workspaces in the EU (events.eu1.segmentapis.com)."},
    "api_url": {"type": "string", "format": "uri", "title": "API URL", "description": "Instead of a region: a RudderStack data plane URL or a proxy."},
    "user_id": {"type": "string", "maxLength": 200, "title": "User ID", "description": "The userId of every call; default the aivis account or agency client."}
  },
  "additionalProperties": false
}`)

type connector struct{ client *http.Client }

func (c *connector) Info() sdk.Info {
	return sdk.Info{Name: "segment", Kind: "cdp", Version: version, DisplayName: "Segment / RudderStack",
		Description:    "Sends aivis events to Segment (or RudderStack) as track calls.",
		SettingsSchema: schema, SecretFields: []string{"write_key"}, DestinationFields: []string{"region", "api_url"}, MaxBatch: maxBatch}
}

func parse(raw json.RawMessage) (settings, kit.Fields) {
	var s settings
	if f := kit.Decode(raw, &s); f != nil {
		return s, f
	}
	var f kit.Fields
	f.Required("write_key", s.WriteKey)
	f.OneOf("region", s.Region, "us", "eu")
	if s.Region != "" && s.APIURL != "" {
		f.Add("api_url", "give a region or an API URL, not both")
	}
	f.URL("api_url", s.APIURL, false, false)
	if len(s.UserID) > maxUserID {
		f.Add("user_id", "must be at most %d characters", maxUserID)
	}
	return s, f
}

// endpoint is the batch URL of the settings.
func (s settings) endpoint() string {
	base := s.APIURL
	if base == "" {
		base = regions[s.Region]
		if base == "" {
			base = regions["us"]
		}
	}
	return strings.TrimRight(base, "/") + "/v1/batch"
}

func (c *connector) ValidateSettings(_ context.Context, raw json.RawMessage) []sdk.FieldError {
	_, f := parse(raw)
	return f
}

// track is one call of a batch.
type track struct {
	Type       string          `json:"type"`
	UserID     string          `json:"userId"`
	Event      string          `json:"event"`
	Properties map[string]any  `json:"properties"`
	MessageID  string          `json:"messageId"`
	Timestamp  string          `json:"timestamp"`
	Context    json.RawMessage `json:"context"`
}

var trackContext = json.RawMessage(`{"library":{"name":"` + libraryName + `","version":"` + version + `"}}`)

// EventName is the Segment name of an event kind, in Segment's "Object
// Action" style: ai_visibility_change is "AI Visibility Changed".
func EventName(kind string) string {
	words := strings.Fields(kit.Title(kind))
	for i, w := range words {
		if w != "AI" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

// Track is the track call of an event.
func Track(ev sdk.Event, userID string) track {
	a := kit.Parse(ev)
	props := map[string]any{}
	for k, v := range a.Data {
		props[k] = v
	}
	props["aivis_event"] = ev.Kind
	props["aivis_event_id"] = ev.ID
	if userID == "" {
		userID = ev.AccountID
		if ev.ClientID != "" {
			userID = ev.ClientID
		}
	}
	return track{Type: "track", UserID: userID, Event: EventName(ev.Kind), Properties: props, MessageID: ev.ID,
		Timestamp: ev.Timestamp.UTC().Format(time.RFC3339Nano), Context: trackContext}
}

// Deliver sends the events as track calls in as few batch requests as
// Segment's 500 KB limit allows; an event past 32 KB is refused here,
// since Segment would drop it while answering 200.
func (c *connector) Deliver(ctx context.Context, raw json.RawMessage, evs []sdk.Event) []sdk.Result {
	s, f := parse(raw)
	if len(f) > 0 {
		return kit.All(len(evs), sdk.FailedResult(f.Err()))
	}
	out := make([]sdk.Result, len(evs))
	var batch []json.RawMessage
	var idx []int
	size := 0
	flush := func() {
		if len(batch) == 0 {
			return
		}
		r := c.send(ctx, s, batch)
		for _, i := range idx {
			out[i] = r
		}
		batch, idx, size = nil, nil, 0
	}
	for i, ev := range evs {
		b, _ := json.Marshal(Track(ev, s.UserID))
		if len(b) > maxEvent {
			out[i] = sdk.FailedResult(fmt.Sprintf("the event is %d bytes, past Segment's 32 KB", len(b)))
			continue
		}
		if size+len(b)+64 > maxRequest {
			flush()
		}
		batch, idx, size = append(batch, b), append(idx, i), size+len(b)+1
	}
	flush()
	return out
}

func (c *connector) send(ctx context.Context, s settings, batch []json.RawMessage) sdk.Result {
	body, _ := json.Marshal(map[string]any{"batch": batch, "sentAt": time.Now().UTC().Format(time.RFC3339Nano),
		"context": trackContext})
	h := http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(s.WriteKey+":"))}}
	r, err := kit.Do(ctx, c.client, http.MethodPost, s.endpoint(), h, body)
	if err != nil {
		return kit.Unreachable("Segment", err)
	}
	if r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
		return sdk.FailedResult(fmt.Sprintf("Segment refused the write key (%d): check it", r.Status))
	}
	return kit.ByStatus(r, "Segment")
}
