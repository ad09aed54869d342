package store

import (
	"context"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// LoggedEvent is an event as the event log keeps it.
type LoggedEvent struct {
	ID        string
	AccountID string
	ClientID  string
	Event     string
	Domain    string
	Payload   []byte // the body receivers get
	CreatedAt time.Time
}

// EventFilter selects an owner's recent events, newest first.
type EventFilter struct {
	AccountID  string
	ClientID   string // "" with AllClients false: the account's own only
	AllClients bool   // the account's and every client's
	Event      string // "" for every kind
	Cursor     string // "" for the first page
	Limit      int    // at most that many
}

// Events reads the event log: each event once, as the fan-out logged it.
type Events interface {
	// RecentEvents returns one page of an owner's logged events, newest
	// first (then by id, highest first), and the next page's cursor (""
	// on the last).
	RecentEvents(ctx context.Context, f EventFilter) ([]LoggedEvent, string, error)
	// PruneEvents forgets, oldest first, at most limit events logged
	// before t, in one short write transaction, and says how many went (a
	// number under limit: none is left).
	PruneEvents(ctx context.Context, t time.Time, limit int) (int, error)
}

// EventsTx is the events' part of a write transaction.
type EventsTx interface {
	// Publish writes messages to a bus topic in this transaction (the
	// outbox): subscribers see them once it commits, never if it rolls back.
	Publish(topic string, msgs ...*message.Message) error
	// LogEvents keeps events in the event log, in one statement where the
	// engine can (each once: a repeat of an id is ignored, whatever it
	// holds).
	LogEvents(es ...LoggedEvent) error
}
