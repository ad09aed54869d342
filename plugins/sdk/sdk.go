// Package sdk is what a partner imports to write an aivis connector: a
// plugin, run by the aivis server as a separate process, that delivers
// aivis events to a third-party tool. A connector implements Connector;
// its main function is one call:
//
//	func main() { sdk.Serve(&myConnector{}) }
//
// The SDK owns the rest: the go-plugin handshake, protocol versions, the
// gRPC wiring, and a watchdog that ends the plugin when the server that
// started it is gone.
package sdk

import (
	"context"
	"encoding/json"
	"time"
)

// Info describes a connector.
type Info struct {
	Name        string // stable identifier, [a-z0-9-], e.g. "slack"
	Kind        string // chat, automation, crm, analytics, cdp, workflow or other
	Version     string // the connector's own version
	DisplayName string
	Description string
	// SettingsSchema is the JSON Schema of the settings object; the
	// dashboard builds its form from it.
	SettingsSchema json.RawMessage
	// SecretFields name the settings the server stores encrypted and never
	// shows again.
	SecretFields []string
	// DestinationFields name the settings that decide where the secret
	// fields are sent: an API URL, a region, a webhook URL. When a change
	// of a connection's settings changes one of them, the server refuses
	// it unless every saved secret field is given again in the same
	// change, so that a secret never follows an edited address. A
	// connector that names none is taken to send its secrets wherever any
	// of its settings says: every change of its settings then needs them
	// again.
	DestinationFields []string
	// MaxBatch is how many events one Deliver call may carry (default 1).
	MaxBatch int
}

// FieldError says what is wrong with one setting.
type FieldError struct {
	Field   string
	Message string
}

// Event is an aivis event on its way to a connector.
type Event struct {
	ID        string    // evt_...; the same on every retry: use it to de-duplicate
	Kind      string    // ai_visibility_change, content_optimized, ...
	Timestamp time.Time // when it happened
	Body      []byte    // the JSON body: {id, event, timestamp, data}
	AccountID string
	ClientID  string // the agency client, "" for an account's own event
	Domain    string
}

// Outcome of one delivery.
type Outcome int

const (
	Delivered        Outcome = iota + 1
	Retry                    // try again later: RetryAfter when the destination said when
	PermanentFailure         // never retry; Reason says why
	// Gone: the destination no longer exists (an HTTP 410, an archived
	// channel, a deleted hook). The server stops delivering to it: it
	// disables the connection, or deletes it when it is a subscription the
	// destination made (Zapier REST Hooks).
	Gone
)

// Result is what became of one event.
type Result struct {
	Outcome    Outcome
	RetryAfter time.Duration
	Reason     string
}

// DeliveredResult, RetryResult, FailedResult and GoneResult build results.
func DeliveredResult() Result { return Result{Outcome: Delivered} }
func RetryResult(after time.Duration, why string) Result {
	return Result{Outcome: Retry, RetryAfter: after, Reason: why}
}
func FailedResult(why string) Result { return Result{Outcome: PermanentFailure, Reason: why} }
func GoneResult(why string) Result   { return Result{Outcome: Gone, Reason: why} }

// Connector is what a partner implements. Settings arrive as the JSON
// object the user saved, secrets included. Every call has a deadline in
// its context; a call that outlives it is abandoned by the server.
type Connector interface {
	Info() Info
	// ValidateSettings returns the problems of settings; none means valid.
	ValidateSettings(ctx context.Context, settings json.RawMessage) []FieldError
	// Deliver delivers events (at most Info.MaxBatch) and returns one
	// result per event, in the same order.
	Deliver(ctx context.Context, settings json.RawMessage, events []Event) []Result
}

// Tester is implemented by connectors whose connection test differs from
// delivering a test event; others are tested with Deliver.
type Tester interface {
	Test(ctx context.Context, settings json.RawMessage, ev Event) Result
}

// EnvAllowPrivate and EnvAllowedTargets carry the server's outbound
// policy to its plugins (they see no other part of its environment).
const (
	EnvAllowPrivate   = "AIVIS_PLUGIN_ALLOW_PRIVATE_TARGETS"
	EnvAllowedTargets = "AIVIS_PLUGIN_ALLOWED_TARGETS"
)
