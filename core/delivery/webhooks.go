package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/domains"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/webhook"
)

// Service is what the API and the dashboard do with webhooks, and, as
// Connections returns it, with connections.
type Service struct {
	Store  Store
	Client *http.Client // the guarded client of the engine
	// CheckURL validates an endpoint URL a user gives (netguard).
	CheckURL func(raw string, allowHTTP bool) error
	// AllowHTTP accepts http:// endpoints (on-premises receivers, tests).
	AllowHTTP bool
	// VerifyTimeout bounds the test payload sent on setup (default 10 s).
	VerifyTimeout time.Duration
	Now           func() time.Time
	// Wake tells the engine that deliveries may be due (optional).
	Wake func()
	// Hub runs the connectors connections deliver through.
	Hub ConnectorHub

	connections bool // Get, Delete and the delivery log see connections
}

// Connections is the service for connections: Get, Delete and the
// delivery log (Deliveries, Delivery, Redeliver, Replay) see connections
// instead of webhooks.
func (s *Service) Connections() *Service {
	c := *s
	c.connections = true
	return &c
}

func (s *Service) noun() string {
	if s.connections {
		return "connection"
	}
	return "webhook"
}

// DefaultGrace is how long an old secret keeps signing after a rotation.
const DefaultGrace = 24 * time.Hour

// MaxGrace bounds the grace period a rotation may ask for.
const MaxGrace = 7 * 24 * time.Hour

// MaxURLLength bounds an endpoint URL.
const MaxURLLength = 2048

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) checkEvents(f *fault.Fields, kinds []string) []string {
	if len(kinds) == 0 {
		f.Add("events", "must list at least one event kind (%s)", strings.Join(events.Kinds, ", "))
		return nil
	}
	var out []string
	for i, k := range kinds {
		if !events.Known(k) {
			f.Add(fmt.Sprintf("events[%d]", i), "unknown event kind %q (kinds: %s)", k, strings.Join(events.Kinds, ", "))
			continue
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func (s *Service) checkURL(f *fault.Fields, u string) {
	switch {
	case len(u) > MaxURLLength:
		f.Add("url", "must be at most %d characters", MaxURLLength)
	default:
		if err := s.CheckURL(u, s.AllowHTTP); err != nil {
			f.Add("url", "%s", err.Error())
		}
	}
}

// DefaultMinCitationChange is the min_citation_change of a webhook or
// connection made without one, in percentage points (docs/events.md says
// why; the stores' column default is the same).
const DefaultMinCitationChange = 10

// checkMinChange validates a minimum change, min_score_change or
// min_citation_change: 0-100, cur when not given.
func checkMinChange(f *fault.Fields, field string, v *int, cur int) int {
	if v == nil {
		return cur
	}
	if *v < 0 || *v > 100 {
		f.Add(field, "must be between 0 and 100")
	}
	return *v
}

// DefaultMinCrawlerErrors is the min_crawler_errors of a webhook or
// connection made without one: every crawler_errors (the stores' column
// default is the same).
const DefaultMinCrawlerErrors = 1

// MaxMinCrawlerErrors bounds min_crawler_errors.
const MaxMinCrawlerErrors = 1000000

// checkMinErrors validates min_crawler_errors: 0-MaxMinCrawlerErrors (0
// and 1 alike let every crawler_errors through), cur when not given.
func checkMinErrors(f *fault.Fields, v *int, cur int) int {
	if v == nil {
		return cur
	}
	if *v < 0 || *v > MaxMinCrawlerErrors {
		f.Add("min_crawler_errors", "must be between 0 and %d", MaxMinCrawlerErrors)
	}
	return *v
}

// Create validates a webhook, sends it the test payload and keeps it only
// if the endpoint answers 200 within the verification timeout, and the
// tier's cap allows one more. The secret is in the result, the only time
// it is shown.
func (s *Service) Create(ctx context.Context, p auth.Principal, in client.CreateWebhook) (store.Webhook, error) {
	var f fault.Fields
	d, err := domains.Normalize(in.Domain)
	if err != nil {
		f.Add("domain", "%s", err.Error())
	}
	kinds := s.checkEvents(&f, in.Events)
	minScore := checkMinChange(&f, "min_score_change", in.MinScoreChange, 0)
	minCitation := checkMinChange(&f, "min_citation_change", in.MinCitationChange, DefaultMinCitationChange)
	minErrors := checkMinErrors(&f, in.MinCrawlerErrors, DefaultMinCrawlerErrors)
	clientID, err := accounts.Owner(ctx, s.Store, p, in.ClientID)
	if err != nil {
		return store.Webhook{}, err
	}
	url := in.URL
	if url == "" {
		if url, err = s.Store.DefaultWebhookURL(ctx, p.AccountID(), clientID); err != nil {
			return store.Webhook{}, err
		}
		if url == "" {
			f.Add("url", "is required: no default endpoint is set for this account")
		}
	}
	if url != "" {
		s.checkURL(&f, url)
	}
	if err := f.Err(); err != nil {
		return store.Webhook{}, err
	}
	if err := s.room(ctx, p, false); err != nil {
		return store.Webhook{}, err
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		return store.Webhook{}, err
	}
	now := s.now()
	w := store.Webhook{ID: randid.New("wh"), AccountID: p.AccountID(), ClientID: clientID, Domain: d, URL: url, Events: kinds,
		MinScoreChange: minScore, MinCitationChange: minCitation, MinCrawlerErrors: minErrors, Enabled: true, Secret: secret, CreatedAt: now, UpdatedAt: now}
	v, err := s.verify(ctx, w, "aivis is verifying this endpoint; answer 200 to activate the webhook")
	if err != nil {
		return store.Webhook{}, err
	}
	return w, s.keep(ctx, p, w, &v)
}

// room refuses a new webhook or connection past the tier's cap before
// anything is sent for it; keep checks again, in the insert's transaction.
func (s *Service) room(ctx context.Context, p auth.Principal, connection bool) error {
	n, err := s.Store.CountWebhooks(ctx, p.AccountID(), connection)
	if err != nil {
		return err
	}
	return capped(p, connection, n)
}

// capped refuses one more webhook or connection to an account that has n
// of them (its clients' included) at its tier's cap.
func capped(p auth.Principal, connection bool, n int) error {
	tier, _ := limits.TierByName(p.Account.Tier)
	if connection {
		return tier.CheckNewConnection(n)
	}
	return tier.CheckNewWebhook(n)
}

// keep stores a new webhook or connection, with the test delivery that
// verified it (v, nil for none) and its attempt, in one transaction that
// checks the tier's cap first: of concurrent creations, no more pass the
// cap than it has room for.
func (s *Service) keep(ctx context.Context, p auth.Principal, w store.Webhook, v *verification) error {
	return s.Store.Update(ctx, func(tx store.Tx) error {
		n, err := tx.CountWebhooks(w.AccountID, w.IsConnection())
		if err != nil {
			return err
		}
		if err := capped(p, w.IsConnection(), n); err != nil {
			return err
		}
		if err := tx.InsertWebhook(w); err != nil {
			return err
		}
		if v == nil {
			return nil
		}
		if _, err := tx.InsertDelivery(v.d); err != nil {
			return err
		}
		return tx.RecordOutcome(v.d.ID, "", store.DeliveryOutcome{Attempt: v.a, Status: store.DeliverySucceeded, Step: 1})
	})
}

// verification is the webhook_test delivery that verified a new target,
// and its attempt.
type verification struct {
	d store.Delivery
	a store.Attempt
}

// verify sends a new webhook, or a new Zapier subscription, a webhook_test
// event once: signed to a webhook's URL, through the connector to a
// connection's destination. A target that does not accept it (a webhook:
// 200; a connection: delivered, that is 2xx) within the verification
// timeout is refused with WEBHOOK_VERIFICATION_FAILED, so that aivis sends
// events only where they were asked for.
func (s *Service) verify(ctx context.Context, w store.Webhook, message string) (verification, error) {
	now := s.now()
	ev, err := testEvent(w, now, message)
	if err != nil {
		return verification{}, err
	}
	m, err := ev.Message()
	if err != nil {
		return verification{}, err
	}
	v := verification{d: store.Delivery{ID: store.NewDeliveryID(now), WebhookID: w.ID, AccountID: w.AccountID, EventID: ev.ID,
		Event: ev.Event, Payload: m.Payload, Status: store.DeliveryPending, CreatedAt: now, UpdatedAt: now}}
	what, want, ok := "endpoint", "with 200", false
	if w.IsConnection() {
		what, want = "target_url", "(2xx)"
		if v.a, ok, err = s.testConnector(ctx, w, v.d, now); err != nil {
			return v, err
		}
	} else {
		v.a, _ = post(ctx, s.Client, s.verifyTimeout(), w.URL, []string{w.Secret}, ev.ID, m.Payload, store.Attempt{N: 1, At: now})
		ok = v.a.StatusCode == http.StatusOK
	}
	v.a.DeliveryID = v.d.ID
	if !ok {
		why := v.a.Error
		if why == "" {
			why = fmt.Sprintf("it answered %d", v.a.StatusCode)
		}
		return v, fault.New(fault.WebhookVerification,
			"the %s did not answer the test payload %s within %s: %s", what, want, s.verifyTimeout(), why)
	}
	return v, nil
}

// testConnector has a connection's connector deliver the test delivery d
// once, within the verification timeout, and says whether it was delivered.
func (s *Service) testConnector(ctx context.Context, w store.Webhook, d store.Delivery, now time.Time) (store.Attempt, bool, error) {
	if s.Hub == nil {
		return store.Attempt{}, false, fault.New(fault.ConnectorUnavailable, "this server runs no connectors")
	}
	ctx, cancel := context.WithTimeout(ctx, s.verifyTimeout())
	defer cancel()
	start := time.Now()
	res, err := s.Hub.Test(ctx, w.Connector, w.Settings, SDKEvent(d, w.ClientID))
	o := outcome{attempt: store.Attempt{N: 1, At: now, Latency: time.Since(start)}}
	switch {
	case err != nil && ctx.Err() != nil:
		o.attempt.Error = fmt.Sprintf("no answer within %s", s.verifyTimeout())
	case err != nil:
		return o.attempt, false, s.hubError(w.Connector, err)
	default:
		o.read(res)
	}
	return o.attempt, o.verdict == delivered, nil
}

// testEvent is a webhook_test event aimed at w alone, about its domain (a
// connection's first; none when it takes every domain).
func testEvent(w store.Webhook, at time.Time, message string) (events.Event, error) {
	data := events.WebhookTestData{Domain: w.Domain, Message: message}
	if w.IsConnection() {
		data.ConnectionID, data.Domain = &w.ID, ""
		if len(w.Domains) > 0 {
			data.Domain = w.Domains[0]
		}
	} else {
		data.WebhookID = &w.ID
	}
	ev, err := events.New(events.WebhookTest, at, w.AccountID, w.ClientID, data.Domain, data)
	ev.WebhookID = w.ID
	return ev, err
}

func (s *Service) verifyTimeout() time.Duration {
	if s.VerifyTimeout > 0 {
		return s.VerifyTimeout
	}
	return 10 * time.Second
}

// Get reads a webhook the principal may see, a deleted one included: its
// deliveries stay readable until they age out.
func (s *Service) Get(ctx context.Context, p auth.Principal, id string) (store.Webhook, error) {
	w, err := s.Store.Webhook(ctx, p.AccountID(), id)
	return s.visible(p, id, w, err)
}

// live reads a webhook the principal may change: not deleted.
func (s *Service) live(ctx context.Context, p auth.Principal, id string) (store.Webhook, error) {
	w, err := s.Store.Webhook(ctx, p.AccountID(), id)
	return s.alive(p, id, w, err)
}

// visible hides another client's webhook, and a target of the other kind,
// behind NOT_FOUND.
func (s *Service) visible(p auth.Principal, id string, w store.Webhook, err error) (store.Webhook, error) {
	if errors.Is(err, store.ErrNotFound) || (err == nil && (p.ClientID() != "" && w.ClientID != p.ClientID() ||
		w.IsConnection() != s.connections)) {
		return store.Webhook{}, fault.New(fault.NotFound, "no %s %s", s.noun(), id)
	}
	return w, err
}

// alive is visible, and hides a deleted webhook from what would change it
// or send it anything.
func (s *Service) alive(p auth.Principal, id string, w store.Webhook, err error) (store.Webhook, error) {
	if w, err = s.visible(p, id, w, err); err == nil && w.Deleted() {
		return store.Webhook{}, fault.New(fault.NotFound, "%s %s was deleted; its deliveries stay readable until they age out", s.noun(), id)
	}
	return w, err
}

// change reads a webhook the principal may change, lets fn change it, and
// writes it, in one transaction; an error from fn changes nothing, and so
// does a change that leaves it as it was but for UpdatedAt (a PATCH that
// changes nothing does not move updated_at).
func (s *Service) change(ctx context.Context, p auth.Principal, id string, fn func(w *store.Webhook) error) (store.Webhook, error) {
	var w store.Webhook
	err := s.Store.Update(ctx, func(tx store.Tx) (err error) {
		w, err = tx.Webhook(p.AccountID(), id)
		if w, err = s.alive(p, id, w, err); err != nil {
			return err
		}
		was := w
		if err := fn(&w); err != nil {
			return err
		}
		if unchanged(was, w) {
			w = was
			return nil
		}
		return tx.UpdateWebhook(w)
	})
	return w, err
}

// unchanged reports whether b is a but for UpdatedAt: lists are compared by
// their items (none, empty or nil, are alike), settings by their bytes.
func unchanged(a, b store.Webhook) bool {
	b.UpdatedAt = a.UpdatedAt
	for _, w := range []*store.Webhook{&a, &b} {
		for _, l := range []*[]string{&w.Events, &w.Domains, &w.SecretFields} {
			if len(*l) == 0 {
				*l = nil
			}
		}
		for _, j := range []*json.RawMessage{&w.Settings, &w.PublicSettings} {
			if len(*j) == 0 {
				*j = nil
			}
		}
	}
	return reflect.DeepEqual(a, b)
}

// List lists the webhooks a principal may see: a client key its client's,
// an account key the account's and every client's, or one client's with
// clientID (accounts.ListScope).
func (s *Service) List(ctx context.Context, p auth.Principal, clientID, cursor string, limit int) ([]store.Webhook, string, error) {
	return s.list(ctx, p, clientID, store.WebhookFilter{Cursor: cursor, Limit: limit})
}

// ListDeleted lists, as List does, the deleted webhooks whose history is
// still kept.
func (s *Service) ListDeleted(ctx context.Context, p auth.Principal, clientID, cursor string, limit int) ([]store.Webhook, string, error) {
	return s.list(ctx, p, clientID, store.WebhookFilter{Cursor: cursor, Limit: limit, Deleted: true})
}

func (s *Service) list(ctx context.Context, p auth.Principal, clientID string, f store.WebhookFilter) ([]store.Webhook, string, error) {
	owner, all, ok := accounts.ListScope(p, clientID)
	if !ok {
		return nil, "", nil
	}
	f.AccountID, f.ClientID, f.AllClients, f.Connections = p.AccountID(), owner, all, s.connections
	ws, next, err := s.Store.ListWebhooks(ctx, f)
	return ws, next, accounts.CursorError(err)
}

// Update changes events, url, minimum changes or enabled. Enabling a
// disabled webhook clears its failure record; a new url is not verified
// again but is checked like the first.
func (s *Service) Update(ctx context.Context, p auth.Principal, id string, in client.UpdateWebhook) (store.Webhook, error) {
	now := s.now()
	w, err := s.change(ctx, p, id, func(w *store.Webhook) error {
		var f fault.Fields
		var kinds []string
		if in.Events != nil {
			kinds = s.checkEvents(&f, in.Events)
		}
		if in.URL != nil {
			s.checkURL(&f, *in.URL)
		}
		minScore := checkMinChange(&f, "min_score_change", in.MinScoreChange, w.MinScoreChange)
		minCitation := checkMinChange(&f, "min_citation_change", in.MinCitationChange, w.MinCitationChange)
		minErrors := checkMinErrors(&f, in.MinCrawlerErrors, w.MinCrawlerErrors)
		if err := f.Err(); err != nil {
			return err
		}
		if in.Events != nil {
			w.Events = kinds
		}
		if in.URL != nil {
			w.URL = *in.URL
		}
		w.MinScoreChange, w.MinCitationChange, w.MinCrawlerErrors = minScore, minCitation, minErrors
		setEnabled(w, in.Enabled, now)
		w.UpdatedAt = now
		return nil
	})
	if err == nil && w.Enabled && s.Wake != nil {
		s.Wake() // deliveries held while it was disabled
	}
	return w, err
}

// setEnabled turns a webhook or connection on or off as the account asks
// (nil: unchanged). Enabling clears the failure record.
func setEnabled(w *store.Webhook, enabled *bool, now time.Time) {
	if enabled == nil || *enabled == w.Enabled {
		return
	}
	w.Enabled = *enabled
	if w.Enabled {
		w.DisabledReason, w.DisabledAt, w.FailingSince, w.Failures = "", time.Time{}, time.Time{}, 0
	} else {
		w.DisabledReason, w.DisabledAt = "disabled by the account", now
	}
}

// Delete deletes a webhook or connection: it gets nothing more (its pending
// deliveries fail), and is no longer listed, but it and its deliveries stay
// readable until they age out (Options.Retention).
func (s *Service) Delete(ctx context.Context, p auth.Principal, id string) error {
	return s.Store.Update(ctx, func(tx store.Tx) error {
		w, err := tx.Webhook(p.AccountID(), id)
		if _, err := s.alive(p, id, w, err); err != nil {
			return err
		}
		return tx.DeleteWebhook(p.AccountID(), id, "deleted by the account", s.now())
	})
}

// Rotate makes a new secret; the old one keeps signing for grace.
func (s *Service) Rotate(ctx context.Context, p auth.Principal, id string, grace time.Duration) (store.Webhook, error) {
	if grace < 0 || grace > MaxGrace {
		return store.Webhook{}, fault.Invalid(fault.FieldError{Field: "grace_period",
			Message: fmt.Sprintf("must be between 0 and %d seconds", int(MaxGrace.Seconds()))})
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		return store.Webhook{}, err
	}
	now := s.now()
	return s.change(ctx, p, id, func(w *store.Webhook) error {
		w.PrevSecret, w.PrevSecretEnd = w.Secret, now.Add(grace)
		if grace == 0 {
			w.PrevSecret, w.PrevSecretEnd = "", time.Time{}
		}
		w.Secret, w.UpdatedAt = secret, now
		return nil
	})
}

// SendTest publishes a webhook_test event to one webhook through the bus,
// delivered like any other event.
func (s *Service) SendTest(ctx context.Context, p auth.Principal, id string) (string, error) {
	w, err := s.live(ctx, p, id)
	if err != nil {
		return "", err
	}
	ev, err := testEvent(w, s.now(), "a test event sent on request")
	if err != nil {
		return "", err
	}
	if err := s.Store.Update(ctx, func(tx store.Tx) error { return events.Publish(ctx, tx, ev) }); err != nil {
		return "", err
	}
	return ev.ID, nil
}

// Deliveries lists a webhook's deliveries, newest first.
func (s *Service) Deliveries(ctx context.Context, p auth.Principal, id, status, cursor string, limit int) ([]store.Delivery, string, error) {
	if _, err := s.Get(ctx, p, id); err != nil {
		return nil, "", err
	}
	if status != "" && status != store.DeliveryPending && status != store.DeliverySucceeded && status != store.DeliveryFailed {
		return nil, "", fault.Invalid(fault.FieldError{Field: "status", Message: "must be pending, succeeded or failed"})
	}
	ds, next, err := s.Store.ListDeliveries(ctx, store.DeliveryFilter{WebhookID: id, Status: status, Cursor: cursor, Limit: limit})
	return ds, next, accounts.CursorError(err)
}

// Delivery reads one delivery with its attempts.
func (s *Service) Delivery(ctx context.Context, p auth.Principal, id, deliveryID string) (store.Delivery, []store.Attempt, error) {
	if _, err := s.Get(ctx, p, id); err != nil {
		return store.Delivery{}, nil, err
	}
	d, as, err := s.Store.Delivery(ctx, id, deliveryID)
	if errors.Is(err, store.ErrNotFound) {
		return d, nil, fault.New(fault.NotFound, "no delivery %s of %s %s", deliveryID, s.noun(), id)
	}
	return d, as, err
}

// Redeliver schedules one delivery again from the start of the schedule.
func (s *Service) Redeliver(ctx context.Context, p auth.Principal, id, deliveryID string) (store.Delivery, error) {
	if _, err := s.live(ctx, p, id); err != nil {
		return store.Delivery{}, err
	}
	d, _, err := s.Delivery(ctx, p, id, deliveryID)
	if err != nil {
		return d, err
	}
	if d.Status == store.DeliveryPending {
		return d, fault.New(fault.InvalidState, "delivery %s is pending: its next attempt is already scheduled", deliveryID)
	}
	err = s.Store.Update(ctx, func(tx store.Tx) error {
		_, err := tx.Redeliver(id, []string{deliveryID}, time.Time{}, time.Time{}, s.now())
		return err
	})
	if err != nil {
		return d, err
	}
	if s.Wake != nil {
		s.Wake()
	}
	d, _, err = s.Store.Delivery(ctx, id, deliveryID)
	return d, err
}

// Replay schedules again every failed delivery of an event whose timestamp
// is in [since, until).
func (s *Service) Replay(ctx context.Context, p auth.Principal, id string, since, until time.Time) (int, error) {
	if _, err := s.live(ctx, p, id); err != nil {
		return 0, err
	}
	now := s.now()
	if until.IsZero() {
		until = now
	}
	if !since.Before(until) {
		return 0, fault.Invalid(fault.FieldError{Field: "since", Message: "must be before until"})
	}
	var n int
	err := s.Store.Update(ctx, func(tx store.Tx) (err error) {
		n, err = tx.Redeliver(id, nil, since, until, now)
		return err
	})
	if err == nil && n > 0 && s.Wake != nil {
		s.Wake()
	}
	return n, err
}

// SetDefaultURL sets the owner's default endpoint, used by webhooks
// created without a url; "" clears it. It is checked like any endpoint.
func (s *Service) SetDefaultURL(ctx context.Context, p auth.Principal, clientID, url string) error {
	owner, err := accounts.Owner(ctx, s.Store, p, clientID)
	if err != nil {
		return err
	}
	if url != "" {
		var f fault.Fields
		s.checkURL(&f, url)
		if err := f.Err(); err != nil {
			return err
		}
	}
	err = s.Store.SetDefaultWebhookURL(ctx, p.AccountID(), owner, url)
	if errors.Is(err, store.ErrNotFound) {
		return fault.New(fault.NotFound, "no account %s", p.AccountID())
	}
	return err
}
