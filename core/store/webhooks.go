package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/text"
)

// Webhook is a delivery target of an owner: a signed webhook endpoint that
// receives the events of one domain, or a connection (Connector set, see
// Connection), which delivers the events of its domains through a
// connector plugin. Both share the delivery log, the retry schedule and
// the dispatcher.
type Webhook struct {
	ID             string
	AccountID      string
	ClientID       string // "" for the account's own webhook
	Domain         string
	URL            string
	Events         []string
	MinScoreChange int
	// MinCitationChange is the least change of an engine's citation rate,
	// in percentage points, of the citation_change events it receives.
	MinCitationChange int
	// MinCrawlerErrors is the least count of AI crawlers' error hits on
	// cited pages of the crawler_errors events it receives.
	MinCrawlerErrors int
	Enabled          bool
	DisabledReason   string
	DisabledAt       time.Time
	Secret           string    // the current signing secret (whsec_...)
	PrevSecret       string    // the previous secret, while it still signs
	PrevSecretEnd    time.Time // when the previous secret stops signing
	FailingSince     time.Time // the first failure since the last success; zero when healthy
	Failures         int       // failed attempts since FailingSince
	LastSuccessAt    time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
	Connection
	// DeletedAt is when it was deleted (zero: it was not). A deleted one
	// is kept, disabled and without its secrets, until its deliveries age
	// out, so that its delivery log stays readable; DisabledReason says
	// why it went.
	DeletedAt time.Time
}

// Deleted reports whether w was deleted (and is kept for its history).
func (w Webhook) Deleted() bool { return !w.DeletedAt.IsZero() }

// WithSecrets is w with each of its secrets that is set (Secret,
// PrevSecret and a connection's Settings) passed through f: an engine
// seals them with it before it writes them, and opens them after it reads
// them. Settings that come out empty are nil.
func (w Webhook) WithSecrets(f func(string) (string, error)) (Webhook, error) {
	var err error
	pass := func(s string) string {
		if s == "" || err != nil {
			return s
		}
		s, err = f(s)
		return s
	}
	settings := pass(string(w.Settings))
	w.Secret, w.PrevSecret, w.Settings = pass(w.Secret), pass(w.PrevSecret), nil
	if settings != "" {
		w.Settings = json.RawMessage(settings)
	}
	return w, err
}

// NewDeliveryID makes the id of a delivery made at t. It begins with t, so
// that deliveries are kept in the order they were made and retention
// prunes them along their primary key (DeliveryIDFloor).
func NewDeliveryID(t time.Time) string { return randid.Sorted("dlv", t) }

// DeliveryIDFloor is what the id of every delivery made at t or later sorts
// at or above, and that of every one made before t below.
func DeliveryIDFloor(t time.Time) string { return randid.SortedFloor("dlv", t) }

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
	// Lease is the claim that holds the delivery ("" when none: a token
	// its claimer makes unique per claim) and LeaseUntil when it ends.
	Lease      string
	LeaseUntil time.Time
	// Trace is the W3C traceparent of the span that made the delivery
	// (the fan-out's handling of its event), which its attempts continue;
	// "" when tracing was off.
	Trace string
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

// Webhooks reads and writes webhooks and connections outside a write
// transaction. Secrets (signing secrets, a connection's secret settings)
// are returned in clear and kept sealed at rest.
type Webhooks interface {
	// Webhook reads a webhook or connection of an account, a deleted one
	// included.
	Webhook(ctx context.Context, accountID, id string) (Webhook, error)
	// ListWebhooks returns one page of an owner's webhooks or connections,
	// newest first (then by id, highest first), and the next page's cursor
	// ("" on the last).
	ListWebhooks(ctx context.Context, f WebhookFilter) ([]Webhook, string, error)
	// MatchWebhooks lists the webhooks of exactly one owner for a domain,
	// and every connection of that owner, enabled or not, deleted ones
	// not: the targets an event of that owner and domain may reach.
	MatchWebhooks(ctx context.Context, accountID, clientID, domain string) ([]Webhook, error)
	// CountWebhooks counts the webhooks, or with connections the
	// connections, of an account, its clients' included, deleted ones not.
	CountWebhooks(ctx context.Context, accountID string, connections bool) (int, error)
	// DefaultWebhookURL is the owner's default endpoint, "" when unset;
	// ErrNotFound for an unknown owner (another account's client too).
	DefaultWebhookURL(ctx context.Context, accountID, clientID string) (string, error)
	// SetDefaultWebhookURL sets (or, with "", clears) the owner's default
	// endpoint.
	SetDefaultWebhookURL(ctx context.Context, accountID, clientID, url string) error
	// PruneDeleted forgets, oldest first, at most limit webhooks and
	// connections deleted before t whose deliveries have all gone, in one
	// short write transaction, and says how many went (a number under
	// limit: none is left).
	PruneDeleted(ctx context.Context, t time.Time, limit int) (int, error)
}

// WebhooksTx is the webhooks' part of a write transaction. Ids are unique
// (ErrConflict); another account's webhook is ErrNotFound. The cap of an
// account's webhooks (or connections) is CountWebhooks then InsertWebhook
// in one Update: it admits no more than the cap however many race.
type WebhooksTx interface {
	InsertWebhook(w Webhook) error
	// CountWebhooks is Webhooks.CountWebhooks in the transaction.
	CountWebhooks(accountID string, connections bool) (int, error)
	// Webhook reads a webhook of an account, a deleted one included.
	Webhook(accountID, id string) (Webhook, error)
	// UpdateWebhook writes the settings, the state and the health; the
	// owner, the domain, the connector, CreatedAt and DeletedAt stay.
	UpdateWebhook(w Webhook) error
	// UpdateWebhookHealth writes only what attempts change: failing_since,
	// failures and last_success_at. updated_at stays when the settings
	// last changed, which an edit checks it read the latest of.
	UpdateWebhookHealth(w Webhook) error
	// DeleteWebhook deletes a webhook or connection that is not deleted
	// yet (else ErrNotFound) at at, for the reason given: it keeps it
	// without its secrets for its history, and fails its pending
	// deliveries, ending their leases (an attempt in flight then records
	// nothing).
	DeleteWebhook(accountID, id, reason string, at time.Time) error
}

// DeliveryFilter selects a webhook's deliveries.
type DeliveryFilter struct {
	WebhookID string
	Status    string
	Cursor    string
	Limit     int
}

// DeliveryCursor is the cursor of the page of deliveries after the one of
// eventID; DeliveryAfter reads it back (ErrMalformed for what it did not
// make: an event id is text).
func DeliveryCursor(eventID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(eventID))
}

func DeliveryAfter(cursor string) (string, error) {
	b, _ := base64.RawURLEncoding.DecodeString(cursor)
	if id := string(b); id != "" && text.Valid(id) && DeliveryCursor(id) == cursor {
		return id, nil
	}
	return "", ErrMalformed
}

// Deliveries reads deliveries and claims the due ones. A delivery is one
// per webhook and event (a unique index). A claim leases deliveries under
// a lease token its caller makes, unique per claim, until the lease's end:
// while a lease holds, no other claim takes the delivery, in this process
// or another (the claim is one atomic write; PostgreSQL: FOR UPDATE SKIP
// LOCKED). The lease ends when DeliveriesTx.RecordOutcome commits under
// it, or at its end, when another claim may take the delivery: an outcome
// recorded under an ended lease that another claim took is refused, so a
// late holder never overwrites the new holder's result.
type Deliveries interface {
	// Delivery reads a delivery of a webhook with its attempts, oldest
	// first (an attempt's Latency kept to the microsecond).
	Delivery(ctx context.Context, webhookID, id string) (Delivery, []Attempt, error)
	// ListDeliveries returns one page of a webhook's deliveries, newest
	// event first, and the next page's cursor.
	ListDeliveries(ctx context.Context, f DeliveryFilter) ([]Delivery, string, error)
	// ClaimDeliveries leases, under lease until leaseEnd, up to limit
	// pending deliveries of enabled webhooks, due at now and not leased,
	// oldest first, at most perWebhook of one webhook and none of the
	// webhooks in skip, and returns them with their webhooks.
	ClaimDeliveries(ctx context.Context, lease string, now, leaseEnd time.Time, limit, perWebhook int, skip []string) ([]Delivery, map[string]Webhook, error)
	// ClaimWebhookDeliveries leases, under lease until leaseEnd, up to
	// limit pending deliveries of one webhook, due at now and not leased,
	// oldest first; more reports that due ones may remain.
	ClaimWebhookDeliveries(ctx context.Context, lease, webhookID string, now, leaseEnd time.Time, limit int) (ds []Delivery, more bool, err error)
	// RenewLeases moves to until the end of each delivery's lease that
	// its caller still holds (by the delivery's Lease token), and returns
	// the ids of those it renewed: the others were lost.
	RenewLeases(ctx context.Context, ds []Delivery, until time.Time) ([]string, error)
	// NextDue is the earliest next attempt after now of a pending
	// delivery; zero when there is none. (Leases that end are found by
	// polling.)
	NextDue(ctx context.Context, now time.Time) (time.Time, error)
	// DeliveryBacklog is what waits for the enabled webhooks and for the
	// enabled connections: their pending deliveries, and the earliest
	// next attempt among them (to the microsecond), in one read whose
	// cost grows with the pending deliveries alone.
	DeliveryBacklog(ctx context.Context) (webhooks, connections Backlog, err error)
	// PruneDeliveries forgets, oldest first, at most limit deliveries made
	// before t with their attempts, in one short write transaction, and
	// says how many went (a number under limit: none is left).
	PruneDeliveries(ctx context.Context, t time.Time, limit int) (int, error)
}

// DeliveriesTx is the deliveries' part of a write transaction.
type DeliveriesTx interface {
	// InsertDelivery adds a delivery unless the webhook already has one for
	// the event or was deleted (added reports which); ErrConflict when the
	// webhook is gone altogether (retention removed it). A delivery given a
	// Lease is inserted leased to its caller (the fan-out that hands it
	// straight to its endpoint's queue).
	InsertDelivery(d Delivery) (added bool, err error)
	// AddAttempt adds an attempt; its number is unique in its delivery
	// (ErrConflict).
	AddAttempt(a Attempt) error
	// RecordOutcome writes an attempt and the delivery's new state (its
	// status, step and next attempt; the attempt's number as its attempts,
	// its time as the last attempt's and the update's, its status code and
	// error as the last) under the lease it holds ("": a delivery no lease
	// holds, such as a webhook's setup test), and ends the lease: ErrLost,
	// and nothing written, when the delivery is held by another lease or by
	// none (the caller's ended and was taken, or the delivery was deleted
	// with its webhook); nothing, and no error, when the delivery is gone
	// (retention removed it).
	RecordOutcome(deliveryID, lease string, o DeliveryOutcome) error
	// InsertDeliveries adds deliveries as InsertDelivery does, in one
	// statement where the engine can: added[i] reports whether ds[i] was.
	// One to a webhook that is gone altogether is not added, and no error.
	InsertDeliveries(ds []Delivery) (added []bool, err error)
	// RecordOutcomes writes outcomes, each of another delivery, as
	// RecordOutcome does, in one statement where the engine can: lost[i]
	// reports that os[i] was refused as ErrLost (nothing of it written).
	RecordOutcomes(os []HeldOutcome) (lost []bool, err error)
	// Redeliver makes failed or succeeded deliveries of a webhook pending
	// again from the start of the schedule, due at now: those of ids (a
	// pending one or another webhook's stays as it is), or with ids nil
	// every failed one of an event in [since, until). It returns how many.
	Redeliver(webhookID string, ids []string, since, until, now time.Time) (int, error)
}

// Backlog is what waits to be delivered to one kind of target.
type Backlog struct {
	Pending  int
	FirstDue time.Time // the earliest next attempt of the pending ones; zero when none is pending
}

// HeldOutcome is an outcome of a delivery and the lease it was attempted
// under ("": none).
type HeldOutcome struct {
	DeliveryID, Lease string
	DeliveryOutcome
}

// DeliveryOutcome is the result of one attempt and what follows from it,
// as the delivery engine decided.
type DeliveryOutcome struct {
	Attempt Attempt
	Status  string    // the delivery's new status
	Step    int       // its next schedule step
	Next    time.Time // its next attempt, when pending
}
