// Package content manages content requests: their validation, their budgets
// and their states (queued -> processing -> completed | failed;
// queued | processing -> cancelled), and the Engine that processes them
// (docs/content-requests.md).
package content

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/domains"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
)

// Limits on a content request's fields.
const (
	MaxContentBytes = 512 << 10
	MaxURLLength    = 2048
	MaxQueries      = 20
	MaxQueryRunes   = 200
	MaxMetadata     = 20
	MaxMetaKeyRunes = 40
	MaxMetaValRunes = 500
	IdempotencyTTL  = 24 * time.Hour
)

// Service creates, reads and cancels content requests.
type Service struct {
	Store Store
	Now   func() time.Time
	// Queued, when set, is called after a request is queued (it wakes
	// the workers).
	Queued func()
	// Metrics counts the requests queued and cancelled, and the budgets
	// reserved (nil: none).
	Metrics *metrics.Content
}

// Idempotency ties a create or cancel to an Idempotency-Key: Hash identifies
// the request (method, path, body) and Render makes the response stored for
// replays, in the same transaction as the change.
type Idempotency struct {
	Key    string
	Hash   []byte
	Render func(store.ContentRequest) (status int, body []byte, err error)
}

// Replay is a stored response to send again instead of acting twice.
type Replay struct {
	Status int
	Body   []byte
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) }) >= 0
}

// validate checks and normalizes the fields of a new request.
func validate(in *client.CreateContentRequest) error {
	var f fault.Fields
	d, err := domains.Normalize(in.Domain)
	if err != nil {
		f.Add("domain", "%s", err.Error())
	} else {
		in.Domain = d
	}
	if in.Budget <= 0 {
		f.Add("budget", "is required and must be greater than 0")
	}
	if in.URL != "" {
		u, err := url.Parse(in.URL)
		switch {
		case len(in.URL) > MaxURLLength:
			f.Add("url", "must be at most %d characters", MaxURLLength)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil:
			f.Add("url", "must be an absolute http or https URL without credentials")
		case d != "" && !covers(d, u.Hostname()): // an invalid domain is the only fault
			f.Add("url", "must be on %s or one of its subdomains", in.Domain)
		}
	}
	if len(in.Content) > MaxContentBytes {
		f.Add("content", "must be at most %d bytes", MaxContentBytes)
	}
	if len(in.TargetQueries) > MaxQueries {
		f.Add("target_queries", "must have at most %d queries", MaxQueries)
	}
	for i, q := range in.TargetQueries {
		q = strings.TrimSpace(q)
		if n := utf8.RuneCountInString(q); n == 0 || n > MaxQueryRunes || hasControl(q) {
			f.Add(fmt.Sprintf("target_queries[%d]", i), "must be 1 to %d characters without control characters", MaxQueryRunes)
		}
		in.TargetQueries[i] = q
	}
	switch in.Type {
	case "":
		in.Type = client.TypeOptimize
	case client.TypeOptimize, client.TypeAnalyze:
	default:
		f.Add("type", "must be %q or %q", client.TypeOptimize, client.TypeAnalyze)
	}
	if len(in.Metadata) > MaxMetadata {
		f.Add("metadata", "must have at most %d keys", MaxMetadata)
	}
	for k, v := range in.Metadata {
		if n := utf8.RuneCountInString(k); n == 0 || n > MaxMetaKeyRunes || hasControl(k) {
			f.Add("metadata", "keys must be 1 to %d characters without control characters", MaxMetaKeyRunes)
			break
		}
		if utf8.RuneCountInString(v) > MaxMetaValRunes {
			f.Add("metadata."+k, "must be at most %d characters", MaxMetaValRunes)
		}
	}
	return f.Err()
}

// covers reports whether a URL's host, as written (Unicode or punycode,
// any case), is the domain or one of its subdomains.
func covers(domain, host string) bool {
	h, err := domains.Normalize(host)
	return err == nil && domains.Covers(domain, h)
}

func tierOf(p auth.Principal) (limits.Tier, error) {
	t, ok := limits.TierByName(p.Account.Tier)
	if !ok {
		return t, fmt.Errorf("content: account %s has unknown tier %q", p.AccountID(), p.Account.Tier)
	}
	return t, nil
}

// IdempotencyScope is whose Idempotency-Keys a principal's are: its
// account's, a client key's its client's. Every operation's keys share it.
func IdempotencyScope(p auth.Principal) string { return p.AccountID() + "/" + p.ClientID() }

// withIdempotency runs fn in a write transaction, replaying the stored
// response when the key was used before with the same request.
func (s *Service) withIdempotency(ctx context.Context, p auth.Principal, idem *Idempotency,
	fn func(store.Tx) (store.ContentRequest, error)) (store.ContentRequest, *Replay, error) {
	var out store.ContentRequest
	var replay *Replay
	err := s.Store.Update(ctx, func(tx store.Tx) error {
		now := s.Now()
		if idem != nil {
			prev, err := tx.Idempotency(IdempotencyScope(p), idem.Key, now.Add(-IdempotencyTTL))
			if err == nil {
				if !bytes.Equal(prev.RequestHash, idem.Hash) {
					return fault.New(fault.IdempotencyConflict,
						"Idempotency-Key %q was already used with a different request in the last 24 hours", idem.Key)
				}
				replay = &Replay{Status: prev.Status, Body: prev.Body}
				return nil
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		cr, err := fn(tx)
		if err != nil {
			return err
		}
		out = cr
		if idem != nil {
			status, body, err := idem.Render(cr)
			if err != nil {
				return err
			}
			return tx.PutIdempotency(store.Idempotency{Scope: IdempotencyScope(p), Key: idem.Key, RequestHash: idem.Hash,
				Status: status, Body: body, CreatedAt: now})
		}
		return nil
	})
	return out, replay, err
}

// Create validates a new request, checks the tier's limits and the month's
// budget, reserves the budget and queues the request, all in one transaction.
func (s *Service) Create(ctx context.Context, p auth.Principal, in client.CreateContentRequest, idem *Idempotency) (store.ContentRequest, *Replay, error) {
	if err := validate(&in); err != nil {
		return store.ContentRequest{}, nil, err
	}
	cr, replay, err := s.create(ctx, p, in, idem)
	if err == nil && replay == nil {
		s.Metrics.State(client.StatusQueued)
		s.Metrics.Reserved(cr.Budget)
	}
	if err == nil && replay == nil && s.Queued != nil {
		s.Queued()
	}
	return cr, replay, err
}

func (s *Service) create(ctx context.Context, p auth.Principal, in client.CreateContentRequest, idem *Idempotency) (store.ContentRequest, *Replay, error) {
	// A repeat of a request that succeeded replays its response, whatever
	// has changed since (a lower tier, say), so the limits are checked
	// after the idempotency record is looked up.
	return s.withIdempotency(ctx, p, idem, func(tx store.Tx) (store.ContentRequest, error) {
		t, err := tierOf(p)
		if err != nil {
			return store.ContentRequest{}, err
		}
		if err := t.CheckRequestBudget(int64(in.Budget)); err != nil {
			return store.ContentRequest{}, err
		}
		clientID, err := accounts.Owner(ctx, s.Store, p, in.ClientID)
		if err != nil {
			return store.ContentRequest{}, err
		}
		now := s.Now().UTC()
		month := limits.Month(now)
		active, err := tx.ActiveContentRequests(p.AccountID())
		if err != nil {
			return store.ContentRequest{}, err
		}
		b, err := tx.BudgetMonth(p.AccountID(), month)
		if err != nil {
			return store.ContentRequest{}, err
		}
		if err := t.CheckNewRequest(active, b.Spent+b.Reserved, int64(in.Budget)); err != nil {
			return store.ContentRequest{}, err
		}
		cr := store.ContentRequest{
			ID: randid.New("cr"), AccountID: p.AccountID(), ClientID: clientID, KeyID: p.Key.ID,
			Type: in.Type, Status: client.StatusQueued, Domain: in.Domain, URL: in.URL, Content: in.Content,
			TargetQueries: in.TargetQueries, Metadata: in.Metadata, Budget: int64(in.Budget), BudgetMonth: month,
			CreatedAt: now, UpdatedAt: now,
		}
		if err := tx.InsertContentRequest(cr); err != nil {
			return store.ContentRequest{}, err
		}
		if err := tx.AddToBudgetMonth(p.AccountID(), month, 0, cr.Budget); err != nil {
			return cr, err
		}
		return cr, Emit(ctx, tx, events.ContentRequestCreated, now, cr)
	})
}

// visible hides another client's request behind NOT_FOUND.
func visible(p auth.Principal, cr store.ContentRequest, err error) (store.ContentRequest, error) {
	if errors.Is(err, store.ErrNotFound) || (err == nil && p.ClientID() != "" && cr.ClientID != p.ClientID()) {
		return store.ContentRequest{}, fault.New(fault.NotFound, "no content request %s", cr.ID)
	}
	return cr, err
}

// Get reads one request the principal may see.
func (s *Service) Get(ctx context.Context, p auth.Principal, id string) (store.ContentRequest, error) {
	cr, err := s.Store.ContentRequest(ctx, p.AccountID(), id)
	cr.ID = id
	return visible(p, cr, err)
}

// List returns a page of the principal's requests, newest first.
func (s *Service) List(ctx context.Context, p auth.Principal, f store.ContentFilter) ([]store.ContentRequest, string, error) {
	var fs fault.Fields
	switch f.Status {
	case "", client.StatusQueued, client.StatusProcessing, client.StatusCompleted, client.StatusFailed, client.StatusCancelled:
	default:
		fs.Add("status", "must be one of queued, processing, completed, failed, cancelled")
	}
	if f.Domain != "" {
		d, err := domains.Normalize(f.Domain)
		if err != nil {
			fs.Add("domain", "%s", err.Error())
		}
		f.Domain = d
	}
	if err := fs.Err(); err != nil {
		return nil, "", err
	}
	owner, _, ok := accounts.ListScope(p, f.ClientID)
	if !ok {
		return nil, "", nil
	}
	f.AccountID, f.ClientID = p.AccountID(), owner
	items, next, err := s.Store.ListContentRequests(ctx, f)
	return items, next, accounts.CursorError(err)
}

// transitions is the state machine: the states each state may move to.
var transitions = map[string][]string{
	client.StatusQueued:     {client.StatusProcessing, client.StatusCancelled},
	client.StatusProcessing: {client.StatusCompleted, client.StatusFailed, client.StatusCancelled},
}

// Transition checks that a request may move from one state to another.
func Transition(cr store.ContentRequest, to string) error {
	if slices.Contains(transitions[cr.Status], to) {
		return nil
	}
	if to == client.StatusCancelled {
		return fault.New(fault.InvalidState, "content request %s is %s; only queued or processing requests can be cancelled", cr.ID, cr.Status)
	}
	return fault.New(fault.InvalidState, "content request %s cannot go from %s to %s", cr.ID, cr.Status, to)
}

// Ended reports whether a state is final: no transition leaves it.
func Ended(status string) bool { return len(transitions[status]) == 0 }

// Cancel ends a queued or processing request and releases its unspent budget.
func (s *Service) Cancel(ctx context.Context, p auth.Principal, id string, idem *Idempotency) (store.ContentRequest, *Replay, error) {
	cr, replay, err := s.withIdempotency(ctx, p, idem, func(tx store.Tx) (store.ContentRequest, error) {
		cr, err := tx.ContentRequest(p.AccountID(), id)
		cr.ID = id
		if cr, err = visible(p, cr, err); err != nil {
			return cr, err
		}
		if err := Transition(cr, client.StatusCancelled); err != nil {
			return cr, err
		}
		now := s.Now().UTC()
		if cr, err = end(tx, cr, client.StatusCancelled, now, 0); err != nil {
			return cr, err
		}
		return cr, Emit(ctx, tx, events.ContentRequestCancelled, now, cr)
	})
	if err == nil && replay == nil {
		s.Metrics.State(client.StatusCancelled)
	}
	return cr, replay, err
}

// end moves a request to a final state in tx and releases what it did not
// spend to its month: the one way a request ends (cancelled, completed or
// failed). claim is the worker's claim that ends it (0 for a cancel): a
// claim taken over meanwhile gets store.ErrLost. The caller emits the
// event in the same transaction.
func end(tx store.Tx, cr store.ContentRequest, to string, now time.Time, claim int) (store.ContentRequest, error) {
	if err := Transition(cr, to); err != nil {
		return cr, err
	}
	unspent := cr.Budget - cr.Spent
	// The work between steps is of no use once the request has ended.
	cr.Status, cr.UpdatedAt, cr.EndedAt, cr.LeaseUntil, cr.Work = to, now, now, time.Time{}, nil
	if err := tx.UpdateContentRequest(cr, claim); err != nil {
		return cr, err
	}
	if err := tx.AddToBudgetMonth(cr.AccountID, cr.BudgetMonth, 0, -unspent); err != nil {
		return cr, err
	}
	return cr, nil
}

// Emit publishes a content request's event in the transaction of its
// change: content_request_created, _failed or _cancelled; ctx is what
// changed it (a request, the engine's work), whose trace the event joins.
func Emit(ctx context.Context, tx store.Tx, kind string, at time.Time, cr store.ContentRequest) error {
	ev, err := events.New(kind, at, cr.AccountID, cr.ClientID, cr.Domain, events.ContentRequestData{
		ID: cr.ID, Status: cr.Status, Type: cr.Type, Domain: cr.Domain, URL: events.Optional(cr.URL),
		Budget: client.USD(cr.Budget), Spent: client.USD(cr.Spent), FailureReason: events.Optional(cr.FailureReason),
		ClientID: events.Optional(cr.ClientID)})
	if err != nil {
		return err
	}
	return events.Publish(ctx, tx, ev)
}

// Reserved is what an active request still holds of its budget.
func Reserved(cr store.ContentRequest) int64 {
	if Ended(cr.Status) {
		return 0
	}
	return cr.Budget - cr.Spent
}

// PruneIdempotency forgets, every interval until ctx ends, the idempotency
// records older than IdempotencyTTL.
func (s *Service) PruneIdempotency(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := s.Store.DeleteIdempotencyBefore(ctx, s.Now().Add(-IdempotencyTTL)); err != nil && ctx.Err() == nil {
			log.Warn("pruning idempotency keys failed", "err", err)
		} else if n > 0 {
			log.Debug("pruned idempotency keys", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
