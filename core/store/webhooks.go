package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/aivis/aivis/core/randid"
)

// Webhook is a delivery target of an owner: a signed webhook endpoint that
// receives the events of one domain, or a connection (Connector set), which
// delivers the events of its domains through a connector plugin. Both share
// the delivery log, the retry schedule and the dispatcher.
type Webhook struct {
	ID             string
	AccountID      string
	ClientID       string // "" for the account's own webhook
	Domain         string
	URL            string
	Events         []string
	MinScoreChange int
	Enabled        bool
	DisabledReason string
	DisabledAt     time.Time
	Secret         string    // the current signing secret (whsec_...)
	PrevSecret     string    // the previous secret, while it still signs
	PrevSecretEnd  time.Time // when the previous secret stops signing
	FailingSince   time.Time // the first failure since the last success; zero when healthy
	Failures       int       // failed attempts since FailingSince
	LastSuccessAt  time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time

	// A connection's: the connector plugin's name, a label, the domains it
	// wants (none: every domain of the owner), its settings with secrets
	// (sealed at rest), the same without the secret fields, and their names.
	Connector      string
	Name           string
	Domains        []string
	Settings       json.RawMessage
	PublicSettings json.RawMessage
	SecretFields   []string
	// Subscription marks a connection the destination created (a Zapier
	// REST Hook): deleted, not disabled, when the destination is gone.
	Subscription bool

	// DeletedAt is when it was deleted (zero: it was not). A deleted one
	// is kept, disabled and without its secrets, until its deliveries age
	// out, so that its delivery log stays readable; DisabledReason says
	// why it went.
	DeletedAt time.Time
}

// Deleted reports whether w was deleted (and is kept for its history).
func (w Webhook) Deleted() bool { return !w.DeletedAt.IsZero() }

// NewDeliveryID makes the id of a delivery made at t. It begins with t, so
// that deliveries are kept in the order they were made and retention
// prunes them along their primary key (DeliveryIDFloor).
func NewDeliveryID(t time.Time) string { return randid.Sorted("dlv", t) }

// DeliveryIDFloor is what the id of every delivery made at t or later sorts
// at or above, and that of every one made before t below.
func DeliveryIDFloor(t time.Time) string { return randid.SortedFloor("dlv", t) }

// IsConnection reports whether w delivers through a connector plugin.
func (w Webhook) IsConnection() bool { return w.Connector != "" }

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// Delivery is one event on its way to one webhook, across its attempts.
type Delivery struct {
	ID            string
	WebhookID     string
	AccountID     string
	EventID       string
	Event         string
	Payload       []byte
	Status        string
	Attempts      int // attempts made
	Step          int // position in the retry schedule of the next attempt
	NextAttemptAt time.Time
	LastAttemptAt time.Time
	LastStatus    int
	LastError     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Attempt is one HTTP request of a delivery and what came back.
type Attempt struct {
	DeliveryID   string
	N            int // 1 for the first attempt
	At           time.Time
	StatusCode   int // 0 when no response came
	Latency      time.Duration
	ResponseBody string // truncated
	Error        string
	// Result is a connector's answer (delivered, retry, failed, gone); ""
	// for a signed webhook's attempt.
	Result string
}

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
	Limit      int
}

// WebhookFilter selects an owner's webhooks.
type WebhookFilter struct {
	AccountID string
	ClientID  string // "" with AllClients false: the account's own only
	// AllClients lists the account's and every client's webhooks.
	AllClients bool
	// Connections lists connections instead of webhooks.
	Connections bool
	// Deleted lists the deleted ones whose history is still kept instead
	// of the others.
	Deleted bool
	Cursor  string
	Limit   int
}

// DeliveryFilter selects a webhook's deliveries.
type DeliveryFilter struct {
	WebhookID string
	Status    string
	Cursor    string
	Limit     int
}

// Webhooks reads webhooks and deliveries outside a write transaction.
type Webhooks interface {
	Webhook(ctx context.Context, accountID, id string) (Webhook, error)
	ListWebhooks(ctx context.Context, f WebhookFilter) ([]Webhook, string, error)
	// MatchWebhooks lists the webhooks of exactly one owner for a domain,
	// and every connection of that owner, enabled or not. The slice may be
	// shared with other callers: it must not be changed.
	MatchWebhooks(ctx context.Context, accountID, clientID, domain string) ([]Webhook, error)
	// CountWebhooks counts the webhooks, or with connections the
	// connections, of an account, its clients' included, deleted ones not.
	CountWebhooks(ctx context.Context, accountID string, connections bool) (int, error)
	// RecentEvents lists an owner's logged events, newest first.
	RecentEvents(ctx context.Context, f EventFilter) ([]LoggedEvent, error)

	// Retention: each call forgets, oldest first, at most limit rows made
	// before t in one short write transaction, and says how many went (a
	// number under limit: none of them is left). PruneDeliveries forgets
	// deliveries with their attempts; PruneDeleted, deleted webhooks and
	// connections deleted before t whose deliveries have all gone;
	// PruneEvents, logged events.
	PruneDeliveries(ctx context.Context, t time.Time, limit int) (int, error)
	PruneDeleted(ctx context.Context, t time.Time, limit int) (int, error)
	PruneEvents(ctx context.Context, t time.Time, limit int) (int, error)
	Delivery(ctx context.Context, webhookID, id string) (Delivery, []Attempt, error)
	ListDeliveries(ctx context.Context, f DeliveryFilter) ([]Delivery, string, error)
	// DefaultWebhookURL is the owner's default endpoint, "" when unset.
	DefaultWebhookURL(ctx context.Context, accountID, clientID string) (string, error)
	// SetDefaultWebhookURL sets (or, with "", clears) the owner's default
	// endpoint.
	SetDefaultWebhookURL(ctx context.Context, accountID, clientID, url string) error

	// ClaimDeliveries leases up to limit pending deliveries of enabled
	// webhooks due at now, oldest first, at most perWebhook of one webhook
	// and none of the webhooks in skip, until leaseEnd, and returns them
	// with their webhooks. A lease keeps other claims away while an attempt
	// is in flight; it ends when Tx.RecordOutcome commits, or at leaseEnd.
	ClaimDeliveries(ctx context.Context, now, leaseEnd time.Time, limit, perWebhook int, skip []string) ([]Delivery, map[string]Webhook, error)
	// ClaimWebhookDeliveries leases up to limit pending deliveries of one
	// webhook due at now, oldest first, until leaseEnd, passing over those
	// leased already (the webhook holds held of them); more reports that
	// due ones may remain.
	ClaimWebhookDeliveries(ctx context.Context, webhookID string, now, leaseEnd time.Time, limit, held int) (ds []Delivery, more bool, err error)
	// LeaseDeliveries leases deliveries the caller already has (just
	// inserted, at written) until leaseEnd, and returns those it leased:
	// none that a claim leased first, nor any released since written.
	LeaseDeliveries(ids []string, written, leaseEnd time.Time) []string
	// NextDue is the earliest next attempt after now of a pending
	// delivery; zero when there is none. (Leases that end are found by
	// polling.)
	NextDue(ctx context.Context, now time.Time) (time.Time, error)
}

// DeliveryOutcome is the result of one attempt and what follows from it,
// as the delivery engine decided.
type DeliveryOutcome struct {
	Attempt Attempt
	Status  string    // the delivery's new status
	Step    int       // its next schedule step
	Next    time.Time // its next attempt, when pending
}
