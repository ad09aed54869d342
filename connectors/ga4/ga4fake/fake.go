// Package ga4fake is a local stand-in for GA4's Measurement Protocol. It
// checks what it receives by GA4's documented rules, written here on their
// own (never the connector's code, so that a rule the connector gets wrong
// shows): /mp/collect answers 204 to everything and silently drops what is
// malformed, which the fake records for tests to see; /debug/mp/collect
// answers 200 with the validation messages.
package ga4fake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/connectors/internal/fakekit"
)

// MeasurementID and APISecret are the stream the fake knows.
const (
	MeasurementID = "G-FAKE1234"
	APISecret     = "fake-secret"
)

// GA4's limits for a standard property.
const (
	maxBody   = 130_000 // bytes; a body must be smaller
	maxEvents = 25      // a request
	maxParams = 25      // an event
	maxName   = 40      // characters of an event or parameter name
	maxValue  = 100     // characters of a string parameter value
	maxAge    = 72 * time.Hour
)

var name = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// reservedPrefixes may begin no event or parameter name.
var reservedPrefixes = []string{"google_", "ga_", "firebase_"}

// reservedEvents are the event names the Measurement Protocol reference
// reserves (those with a reserved prefix aside).
var reservedEvents = []string{"ad_activeview", "ad_click", "ad_exposure", "ad_query", "ad_reward", "adunit_exposure",
	"app_background", "app_clear_data", "app_exception", "app_remove", "app_store_refund",
	"app_store_subscription_cancel", "app_store_subscription_convert", "app_store_subscription_renew",
	"app_update", "app_upgrade", "dynamic_link_app_open", "dynamic_link_app_update", "dynamic_link_first_open",
	"error", "first_open", "first_visit", "in_app_purchase", "notification_dismiss", "notification_foreground",
	"notification_open", "notification_receive", "os_update", "session_start", "session_start_with_rollout",
	"user_engagement"}

// Event is an event as the fake read it; a number param is a float64.
type Event struct {
	Name   string         `json:"name"`
	Params map[string]any `json:"params"`
}

// Hit is one event GA4 kept.
type Hit struct {
	ClientID        string
	TimestampMicros int64
	Event
}

// Message is a validation message as /debug/mp/collect reports it.
type Message struct {
	FieldPath      string `json:"fieldPath"`
	Description    string `json:"description"`
	ValidationCode string `json:"validationCode"`
}

// Drop is an event /mp/collect dropped without a word, and why; Event is
// zero when the body could not be read.
type Drop struct {
	Event Event
	Why   []Message
}

// Fake is the fake GA4.
type Fake struct {
	*fakekit.Server
	mu      sync.Mutex
	got     []Hit
	dropped []Drop
}

// New starts the fake.
func New() *Fake {
	f := &Fake{}
	f.Server = fakekit.New(f.handle)
	return f
}

// Received are the events kept.
func (f *Fake) Received() []Hit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Hit(nil), f.got...)
}

// Dropped are the events /mp/collect dropped.
func (f *Fake) Dropped() []Drop {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Drop(nil), f.dropped...)
}

type payload struct {
	ClientID        string  `json:"client_id"`
	TimestampMicros int64   `json:"timestamp_micros"`
	Events          []Event `json:"events"`
}

func (f *Fake) handle(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost || (r.URL.Path != "/mp/collect" && r.URL.Path != "/debug/mp/collect") {
		http.NotFound(w, r)
		return
	}
	var p payload
	whole := check(body, &p, time.Now())
	each := make([][]Message, len(p.Events))
	for i, e := range p.Events {
		each[i] = checkEvent(i, e)
	}
	if r.URL.Path == "/debug/mp/collect" {
		// The validation server checks the payload, not the stream.
		ms := append([]Message{}, whole...)
		for _, m := range each {
			ms = append(ms, m...)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"validationMessages": ms})
		return
	}
	q := r.URL.Query()
	if q.Get("measurement_id") != MeasurementID || q.Get("api_secret") != APISecret {
		whole = append(whole, Message{Description: "unknown measurement_id or api_secret", ValidationCode: "VALUE_INVALID"})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(p.Events) == 0 && len(whole) > 0 {
		f.dropped = append(f.dropped, Drop{Why: whole})
	}
	for i, e := range p.Events {
		if why := append(slices.Clip(whole), each[i]...); len(why) > 0 {
			f.dropped = append(f.dropped, Drop{Event: e, Why: why})
			continue
		}
		f.got = append(f.got, Hit{ClientID: p.ClientID, TimestampMicros: p.TimestampMicros, Event: e})
	}
	w.WriteHeader(http.StatusNoContent)
}

// check reads the body into p and returns what is wrong with the request
// as a whole, which costs every event of it.
func check(body []byte, p *payload, now time.Time) []Message {
	var ms []Message
	if len(body) >= maxBody {
		ms = append(ms, Message{Description: fmt.Sprintf("The request body is %d bytes; it must be smaller than 130kB.", len(body)),
			ValidationCode: "VALUE_INVALID"})
	}
	if err := json.Unmarshal(body, p); err != nil {
		*p = payload{}
		return append(ms, Message{Description: "Unable to parse the JSON payload: " + err.Error(), ValidationCode: "VALUE_INVALID"})
	}
	if p.ClientID == "" {
		ms = append(ms, Message{FieldPath: "client_id", Description: "client_id is required.", ValidationCode: "VALUE_REQUIRED"})
	}
	if p.TimestampMicros != 0 && now.Sub(time.UnixMicro(p.TimestampMicros)) > maxAge {
		ms = append(ms, Message{FieldPath: "timestamp_micros",
			Description: "timestamp_micros is more than 72 hours in the past.", ValidationCode: "VALUE_OUT_OF_BOUNDS"})
	}
	switch {
	case len(p.Events) == 0:
		ms = append(ms, Message{FieldPath: "events", Description: "At least one event is required.", ValidationCode: "VALUE_REQUIRED"})
	case len(p.Events) > maxEvents:
		ms = append(ms, Message{FieldPath: "events",
			Description:    fmt.Sprintf("The request has %d events; at most %d are allowed.", len(p.Events), maxEvents),
			ValidationCode: "EXCEEDED_MAX_ENTITIES"})
	}
	return ms
}

// checkEvent returns what is wrong with the i-th event of a request.
func checkEvent(i int, e Event) []Message {
	var ms []Message
	if code, why := checkName(e.Name, true); code != "" {
		ms = append(ms, Message{FieldPath: "events",
			Description: fmt.Sprintf("Event at index: [%d] has invalid name [%s]. %s", i, e.Name, why), ValidationCode: code})
	}
	if len(e.Params) > maxParams {
		ms = append(ms, Message{FieldPath: "events.params",
			Description:    fmt.Sprintf("Event at index: [%d] has %d params; at most %d are allowed.", i, len(e.Params), maxParams),
			ValidationCode: "EXCEEDED_MAX_ENTITIES"})
	}
	for k, v := range e.Params {
		if code, why := checkName(k, false); code != "" {
			ms = append(ms, Message{FieldPath: "events.params",
				Description: fmt.Sprintf("Event at index: [%d] has invalid param name [%s]. %s", i, k, why), ValidationCode: code})
		}
		switch v := v.(type) {
		case string:
			if utf8.RuneCountInString(v) > maxValue {
				ms = append(ms, Message{FieldPath: "events.params." + k,
					Description:    fmt.Sprintf("Event at index: [%d] has a value of param [%s] longer than %d characters.", i, k, maxValue),
					ValidationCode: "VALUE_INVALID"})
			}
		case float64:
		default:
			ms = append(ms, Message{FieldPath: "events.params." + k,
				Description: fmt.Sprintf("Event at index: [%d] has param [%s] that is neither a string nor a number.", i, k), ValidationCode: "VALUE_INVALID"})
		}
	}
	return ms
}

// checkName returns the validation code and the reason of a bad event or
// parameter name, or "".
func checkName(n string, event bool) (code, why string) {
	switch {
	case utf8.RuneCountInString(n) > maxName:
		return "NAME_INVALID", fmt.Sprintf("Names must be at most %d characters.", maxName)
	case !name.MatchString(n):
		return "NAME_INVALID", "Names must start with a letter and hold only letters, digits and underscores."
	case slices.ContainsFunc(reservedPrefixes, func(p string) bool { return strings.HasPrefix(n, p) }):
		return "NAME_RESERVED", "The prefix is reserved."
	case event && slices.Contains(reservedEvents, n):
		return "NAME_RESERVED", "The name is reserved."
	}
	return "", ""
}
