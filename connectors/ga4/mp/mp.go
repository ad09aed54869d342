// Package mp is the GA4 Measurement Protocol payload and its validation.
// GA4 answers 2xx even for a payload it drops, so a sender must check the
// rules itself before sending: this package is those rules.
package mp

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of the Measurement Protocol.
const (
	MaxEvents     = 25
	MaxParams     = 25
	MaxNameLength = 40
	MaxValueChars = 100
	MaxBody       = 130_000
	MaxAge        = 72 * time.Hour
)

// Payload is the body of /mp/collect.
type Payload struct {
	ClientID        string  `json:"client_id"`
	UserID          string  `json:"user_id,omitempty"`
	TimestampMicros int64   `json:"timestamp_micros,omitempty"`
	Events          []Event `json:"events"`
}

// Event is one event of a payload; a param is a string or a number.
type Event struct {
	Name   string         `json:"name"`
	Params map[string]any `json:"params,omitempty"`
}

// Message is one validation problem, as the debug endpoint reports them.
type Message struct {
	FieldPath      string `json:"fieldPath"`
	Description    string `json:"description"`
	ValidationCode string `json:"validationCode"`
}

var namePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// ReservedPrefixes may not begin event or parameter names.
var ReservedPrefixes = []string{"_", "firebase_", "ga_", "google_", "gtag."}

// ReservedEvents are event names GA4 keeps for itself.
var ReservedEvents = []string{"ad_activeview", "ad_click", "ad_exposure", "ad_query", "ad_reward", "adunit_exposure",
	"app_background", "app_clear_data", "app_exception", "app_remove", "app_store_refund", "app_store_subscription_cancel",
	"app_store_subscription_convert", "app_store_subscription_renew", "app_update", "app_upgrade", "dynamic_link_app_open",
	"dynamic_link_app_update", "dynamic_link_first_open", "error", "first_open", "first_visit", "in_app_purchase",
	"notification_dismiss", "notification_foreground", "notification_open", "notification_receive", "os_update",
	"session_start", "session_start_with_rollout", "user_engagement"}

// CheckName says what is wrong with an event or parameter name, or "".
func CheckName(name string, event bool) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > MaxNameLength:
		return fmt.Sprintf("is longer than %d characters", MaxNameLength)
	case slices.ContainsFunc(ReservedPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }):
		return "starts with a reserved prefix"
	case !namePattern.MatchString(name):
		return "must start with a letter and hold only letters, digits and underscores"
	case event && slices.Contains(ReservedEvents, name):
		return "is a reserved event name"
	}
	return ""
}

// Validate returns the problems of a payload (none: GA4 keeps it).
func Validate(p Payload, body []byte, now time.Time) []Message {
	var ms []Message
	add := func(path, code, format string, a ...any) {
		ms = append(ms, Message{FieldPath: path, ValidationCode: code, Description: fmt.Sprintf(format, a...)})
	}
	if len(body) >= MaxBody {
		add("", "VALUE_INVALID", "the body is %d bytes; the limit is %d", len(body), MaxBody)
	}
	if p.ClientID == "" {
		add("client_id", "VALUE_REQUIRED", "client_id is required")
	}
	if p.TimestampMicros != 0 {
		t := time.UnixMicro(p.TimestampMicros)
		if now.Sub(t) > MaxAge || t.Sub(now) > 15*time.Minute {
			add("timestamp_micros", "VALUE_OUT_OF_BOUNDS", "timestamp_micros must be within the last 72 hours")
		}
	}
	switch {
	case len(p.Events) == 0:
		add("events", "VALUE_REQUIRED", "at least one event is required")
	case len(p.Events) > MaxEvents:
		add("events", "MAX_EVENTS_EXCEEDED", "%d events; at most %d", len(p.Events), MaxEvents)
	}
	for i, e := range p.Events {
		path := fmt.Sprintf("events[%d]", i)
		if why := CheckName(e.Name, true); why != "" {
			add(path+".name", "NAME_INVALID", "event name %q %s", e.Name, why)
		}
		if len(e.Params) > MaxParams {
			add(path+".params", "MAX_PARAMS_EXCEEDED", "%d params; at most %d", len(e.Params), MaxParams)
		}
		for k, v := range e.Params {
			if why := CheckName(k, false); why != "" {
				add(path+".params."+k, "NAME_INVALID", "param name %q %s", k, why)
			}
			switch v := v.(type) {
			case string:
				if utf8.RuneCountInString(v) > MaxValueChars {
					add(path+".params."+k, "VALUE_INVALID", "param %s is longer than %d characters", k, MaxValueChars)
				}
			case float64, int, int64, json.Number:
			default:
				add(path+".params."+k, "VALUE_INVALID", "param %s must be a string or a number", k)
			}
		}
	}
	return ms
}
