package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aivis/aivis/connectors/ga4/mp"
	"github.com/aivis/aivis/connectors/internal/kit"
	"github.com/aivis/aivis/plugins/sdk"
)

// DefaultAPIURL is GA4's collection host; EU data can use
// https://region1.google-analytics.com.
const DefaultAPIURL = "https://www.google-analytics.com"

type settings struct {
	MeasurementID string `json:"measurement_id"`
	APISecret     string `json:"api_secret"`
	ClientID      string `json:"client_id"`
	EventPrefix   string `json:"event_prefix"`
	APIURL        string `json:"api_url"`
}

var schema = json.RawMessage(`{
  "type": "object",
  "title": "Google Analytics 4",
  "required": ["measurement_id", "api_secret"],
  "properties": {
    "measurement_id": {"type": "string", "pattern": "^G-[A-Z0-9]{4,20}$", "title": "Measurement ID", "description": "G-XXXXXXX of the web data stream."},
    "api_secret": {"type": "string", "title": "Measurement Protocol API secret", "description": "Admin > Data streams > Measurement Protocol API secrets."},
    "client_id": {"type": "string", "default": "aivis", "title": "Client ID", "description": "The client_id events are sent under."},
    "event_prefix": {"type": "string", "default": "aivis_", "title": "Event name prefix"},
    "api_url": {"type": "string", "format": "uri", "default": "https://www.google-analytics.com", "title": "Collection host", "description": "https://region1.google-analytics.com collects in the EU."}
  },
  "additionalProperties": false
}`)

var measurementPattern = regexp.MustCompile(`^G-[A-Z0-9]{4,20}$`)

type connector struct{ client *http.Client }

func (c *connector) Info() sdk.Info {
	return sdk.Info{Name: "ga4", Kind: "analytics", Version: "1.0.0", DisplayName: "Google Analytics 4",
		Description:    "Sends aivis events to GA4 with the Measurement Protocol.",
		SettingsSchema: schema, SecretFields: []string{"api_secret"}, DestinationFields: []string{"api_url"}, MaxBatch: mp.MaxEvents}
}

func parse(raw json.RawMessage) (settings, kit.Fields) {
	var s settings
	if f := kit.Decode(raw, &s); f != nil {
		return s, f
	}
	var f kit.Fields
	if !measurementPattern.MatchString(s.MeasurementID) {
		f.Add("measurement_id", "must be a GA4 measurement ID (G-XXXXXXX)")
	}
	f.Required("api_secret", s.APISecret)
	if len(s.ClientID) > 100 {
		f.Add("client_id", "must be at most 100 characters")
	}
	if s.EventPrefix != "" && mp.CheckName(s.EventPrefix+"x", true) != "" {
		f.Add("event_prefix", "must start with a letter and hold only letters, digits and underscores")
	} else if len(s.EventPrefix) > 12 {
		f.Add("event_prefix", "must be at most 12 characters")
	}
	f.URL("api_url", s.APIURL, false, false)
	return s, f
}

func (s settings) prefix() string {
	if s.EventPrefix == "" {
		return "aivis_"
	}
	return s.EventPrefix
}

func (s settings) endpoint(path string) string {
	base := s.APIURL
	if base == "" {
		base = DefaultAPIURL
	}
	q := url.Values{"measurement_id": {s.MeasurementID}, "api_secret": {s.APISecret}}
	return strings.TrimRight(base, "/") + path + "?" + q.Encode()
}

func (c *connector) ValidateSettings(_ context.Context, raw json.RawMessage) []sdk.FieldError {
	_, f := parse(raw)
	return f
}

// paramOrder puts the params that matter first, so that the 25 kept are
// the useful ones.
var paramOrder = []string{"domain", "page", "days", "errors", "pages_with_errors", "engine", "kind", "surface", "market",
	"citation_change", "citation_rate", "previous_citation_rate",
	"source_share", "previous_source_share", "visibility_score", "previous_visibility_score", "score_change", "sentiment",
	"sentiment_score", "previous_sentiment", "readiness_score", "score_before", "score_after", "spent", "status", "url"}

// Event is the GA4 event of an aivis event: its kind under the prefix,
// its data as params (strings cut to 100 characters, a rate {value, hits,
// of} as its value, a market as "de-DE", nulls, lists and other objects
// left out; crawler_errors' page with the most errors as page, its days
// joined by commas), its id as event_id.
func Event(ev sdk.Event, prefix string) mp.Event {
	a := kit.Parse(ev)
	params := map[string]any{"event_id": ev.ID}
	if len(a.ErrorPages) > 0 {
		// crawler_errors: its lists as the page with the most errors
		// and the days.
		a.Data["page"], a.Data["days"] = a.ErrorPages[0].Path, strings.Join(a.Days, ",")
	}
	keys := make([]string, 0, len(a.Data))
	for k := range a.Data {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y string) int {
		ix, iy := slices.Index(paramOrder, x), slices.Index(paramOrder, y)
		if ix < 0 {
			ix = len(paramOrder)
		}
		if iy < 0 {
			iy = len(paramOrder)
		}
		if ix != iy {
			return ix - iy
		}
		return strings.Compare(x, y)
	})
	for _, k := range keys {
		if len(params) == mp.MaxParams {
			break
		}
		if mp.CheckName(k, false) != "" {
			continue
		}
		switch v := a.Data[k].(type) {
		case string:
			params[k] = kit.Truncate(v, mp.MaxValueChars)
		case float64:
			params[k] = v
		case bool:
			params[k] = fmt.Sprint(v)
		case map[string]any:
			if rate, ok := v["value"].(float64); ok {
				params[k] = rate
			}
			if k == "market" && a.Market != "" {
				params[k] = a.Market // "de-DE"
			}
		}
	}
	// A valid name is ASCII and may hold no ellipsis: cut it bytewise.
	name := prefix + ev.Kind
	if len(name) > mp.MaxNameLength {
		name = name[:mp.MaxNameLength]
	}
	return mp.Event{Name: name, Params: params}
}

// payload is the request of a batch: the batch's oldest time as its
// timestamp, unless GA4 would no longer take it (then GA4 uses the time
// of arrival).
func payload(s settings, evs []sdk.Event, now time.Time) mp.Payload {
	p := mp.Payload{ClientID: s.ClientID}
	if p.ClientID == "" {
		p.ClientID = "aivis"
	}
	var oldest time.Time
	for _, ev := range evs {
		p.Events = append(p.Events, Event(ev, s.prefix()))
		if oldest.IsZero() || ev.Timestamp.Before(oldest) {
			oldest = ev.Timestamp
		}
	}
	if !oldest.IsZero() && now.Sub(oldest) < mp.MaxAge-time.Hour && !oldest.After(now) {
		p.TimestampMicros = oldest.UnixMicro()
	}
	return p
}

// Deliver validates every event on its own, fails the ones GA4 would drop
// (with the reason, since GA4 gives none), and sends the rest in one
// request, or in more where one body would reach GA4's limit.
func (c *connector) Deliver(ctx context.Context, raw json.RawMessage, evs []sdk.Event) []sdk.Result {
	s, f := parse(raw)
	if len(f) > 0 {
		return kit.All(len(evs), sdk.FailedResult(f.Err()))
	}
	now := time.Now()
	out := make([]sdk.Result, len(evs))
	var send []sdk.Event
	var idx []int
	for i, ev := range evs {
		p := payload(s, []sdk.Event{ev}, now)
		body, _ := json.Marshal(p)
		if ms := mp.Validate(p, body, now); len(ms) > 0 {
			out[i] = sdk.FailedResult("GA4 would drop this event: " + ms[0].Description)
			continue
		}
		send, idx = append(send, ev), append(idx, i)
	}
	for len(send) > 0 {
		// GA4 drops a whole request past its size: halve the events
		// until they fit (one alone does, checked above).
		n := len(send)
		body, _ := json.Marshal(payload(s, send, now))
		for len(body) >= mp.MaxBody {
			n /= 2
			body, _ = json.Marshal(payload(s, send[:n], now))
		}
		var res sdk.Result
		if r, err := kit.Do(ctx, c.client, http.MethodPost, s.endpoint("/mp/collect"), nil, body); err != nil {
			res = kit.Unreachable("GA4", err)
		} else {
			res = kit.ByStatus(r, "GA4")
		}
		for _, i := range idx[:n] {
			out[i] = res
		}
		send, idx = send[n:], idx[n:]
	}
	return out
}

// Test checks the event with GA4's validation server first, which reports
// what the collection endpoint would drop silently, then sends it.
func (c *connector) Test(ctx context.Context, raw json.RawMessage, ev sdk.Event) sdk.Result {
	s, f := parse(raw)
	if len(f) > 0 {
		return sdk.FailedResult(f.Err())
	}
	body, _ := json.Marshal(payload(s, []sdk.Event{ev}, time.Now()))
	r, err := kit.Do(ctx, c.client, http.MethodPost, s.endpoint("/debug/mp/collect"), nil, body)
	if err != nil {
		return kit.Unreachable("GA4", err)
	}
	if !r.OK() {
		return kit.ByStatus(r, "GA4's validation server")
	}
	var v struct {
		ValidationMessages []mp.Message `json:"validationMessages"`
	}
	if err := json.Unmarshal(r.Body, &v); err != nil {
		return sdk.RetryResult(0, "GA4's validation server answered something else than its JSON: "+r.Snippet())
	}
	if len(v.ValidationMessages) > 0 {
		m := v.ValidationMessages[0]
		return sdk.FailedResult(fmt.Sprintf("GA4 refuses the event: %s (%s %s)", kit.Quote(m.Description, 150),
			kit.Quote(m.ValidationCode, 40), kit.Quote(m.FieldPath, 40)))
	}
	return c.Deliver(ctx, raw, []sdk.Event{ev})[0]
}
