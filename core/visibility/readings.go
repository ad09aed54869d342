// Package visibility records how AI systems see a domain: visibility
// readings, and the ai_visibility_change events a changed reading causes.
package visibility

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/domains"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
)

// Sentiments a reading may carry.
var Sentiments = []string{client.SentimentPositive, client.SentimentNeutral, client.SentimentNegative, client.SentimentMixed}

// Source of readings recorded through the API.
const SourceAPI = "api"

// A reading's measured_at may be from Earliest to MaxSkew in the future:
// a reading dated before any AI answer engine existed is a mistake, and one
// from the future would stay the latest until that time came.
var Earliest = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

const MaxSkew = 5 * time.Minute

// Recorder stores readings and detects changes. Its zero value (with a
// Store and Now) is ready to use.
type Recorder struct {
	Store Store
	Now   func() time.Time

	mu      sync.Mutex
	queue   []*adding // readings waiting for a transaction
	running bool      // a goroutine commits the queue
}

// Record validates and stores a reading from the API. The reading and its
// event, if it changed the domain's latest score or sentiment, commit
// together; a reading older than the latest is kept as history and changes
// nothing.
func (r *Recorder) Record(ctx context.Context, p auth.Principal, in client.RecordReading) (store.Reading, *events.Event, error) {
	now := r.Now()
	var f fault.Fields
	d, err := domains.Normalize(in.Domain)
	if err != nil {
		f.Add("domain", "%s", err.Error())
	}
	if in.VisibilityScore == nil {
		f.Add("visibility_score", "is required: an integer from 0 to 100")
	} else if *in.VisibilityScore < 0 || *in.VisibilityScore > 100 {
		f.Add("visibility_score", "must be an integer from 0 to 100")
	}
	if !contains(Sentiments, in.Sentiment) {
		f.Add("sentiment", "must be one of positive, neutral, negative, mixed")
	}
	score := 0.0
	if in.SentimentScore != nil {
		score = *in.SentimentScore
		if math.IsNaN(score) || score < -1 || score > 1 {
			f.Add("sentiment_score", "must be a number from -1 to 1")
		}
	}
	measured := now
	if in.MeasuredAt != nil {
		measured = *in.MeasuredAt
		if measured.Before(Earliest) || measured.After(now.Add(MaxSkew)) {
			f.Add("measured_at", "must be from 2000-01-01T00:00:00Z to at most 5 minutes from now")
		}
	}
	if err := f.Err(); err != nil {
		return store.Reading{}, nil, err
	}
	clientID, err := accounts.Owner(ctx, r.Store, p, in.ClientID)
	if err != nil {
		return store.Reading{}, nil, err
	}
	rd := store.Reading{AccountID: p.AccountID(), ClientID: clientID, Domain: d, VisibilityScore: *in.VisibilityScore,
		Sentiment: in.Sentiment, SentimentScore: score, Source: SourceAPI, MeasuredAt: measured.UTC()}
	return r.Add(ctx, rd)
}

// Add stores a reading (from the API or an engine) and emits
// ai_visibility_change when it changes the latest score or sentiment.
//
// Readings added at once share a transaction (group commit): the first to
// come is written at once, and those that come while its transaction runs
// go together in the next, up to maxGroup. Each costs the store one commit
// the fewer, on PostgreSQL a flush of its log; on SQLite the store's writer
// groups Updates anyway. A group the store refuses is written again one
// reading a transaction, so that a reading fails only for itself. The
// write goes on when ctx ends while it waits: Add returns at once, and the
// reading may yet be stored.
func (r *Recorder) Add(ctx context.Context, rd store.Reading) (store.Reading, *events.Event, error) {
	a := &adding{ctx: ctx, rd: rd, done: make(chan struct{})}
	r.mu.Lock()
	r.queue = append(r.queue, a)
	if !r.running {
		r.running = true
		go r.commit()
	}
	r.mu.Unlock()
	select {
	case <-a.done:
		return a.rd, a.ev, a.err
	case <-ctx.Done():
		return rd, nil, ctx.Err()
	}
}

// maxGroup bounds the readings of one transaction.
const maxGroup = 64

// adding is a reading waiting for its transaction, and what came of it.
type adding struct {
	ctx  context.Context // the caller's, whose trace the event joins
	rd   store.Reading
	ev   *events.Event
	err  error
	done chan struct{}
}

// commit writes the queue a group at a time until it is empty.
func (r *Recorder) commit() {
	for {
		r.mu.Lock()
		group := r.queue[:min(len(r.queue), maxGroup)]
		r.queue = r.queue[len(group):]
		if len(group) == 0 {
			r.queue, r.running = nil, false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		if err := r.write(group); err != nil && len(group) > 1 {
			for _, a := range group {
				r.write([]*adding{a})
			}
		}
		for _, a := range group {
			close(a.done)
		}
	}
}

// write adds a group's readings in one transaction (InsertReadings);
// each says what came of it.
func (r *Recorder) write(group []*adding) error {
	rds := make([]store.Reading, len(group))
	evs := make([]*events.Event, len(group))
	err := r.Store.Update(context.Background(), func(tx store.Tx) error {
		for i, a := range group {
			rds[i] = a.rd
		}
		added, before, err := tx.InsertReadings(rds)
		if err != nil {
			return err
		}
		// Each reading is compared with its owner's newest before it:
		// the store's, or an earlier one of the group's.
		type owner struct{ account, client, domain string }
		newest := make(map[owner]store.Reading, len(group))
		for i, a := range group {
			rd := added[i]
			k := owner{rd.AccountID, rd.ClientID, rd.Domain}
			prev, ok := newest[k]
			if !ok {
				prev = before[i]
			}
			if prev.ID == 0 || rd.NewerThan(prev) {
				newest[k] = rd
			} else {
				newest[k] = prev
			}
			rds[i] = rd
			if evs[i], err = r.change(a.ctx, tx, rd, prev, prev.ID != 0); err != nil {
				return err
			}
			// The request's Idempotency-Key, if it holds one, is
			// marked acted with its reading: the group's context is
			// no request's.
			if err := store.MarkActed(a.ctx, tx); err != nil {
				return err
			}
		}
		return nil
	})
	for i, a := range group {
		if a.err = err; err == nil {
			a.rd, a.ev = rds[i], evs[i]
		}
	}
	return err
}

// AddTx is Add in the caller's transaction; ctx is what made the reading
// (a request, a scan), whose trace its event joins.
func (r *Recorder) AddTx(ctx context.Context, tx store.Tx, rd store.Reading) (store.Reading, *events.Event, error) {
	prev, err := tx.LatestReading(store.ReadingFilter{AccountID: rd.AccountID, ClientID: rd.ClientID, Domain: rd.Domain})
	found := !errors.Is(err, store.ErrNotFound)
	if err != nil && found {
		return rd, nil, err
	}
	if rd, err = tx.InsertReading(rd); err != nil {
		return rd, nil, err
	}
	ev, err := r.change(ctx, tx, rd, prev, found)
	return rd, ev, err
}

// change publishes, in tx, the ai_visibility_change of rd, added after
// prev (its owner's newest before it, when found), if it changed the
// score or the sentiment; a reading measured before prev changes nothing.
func (r *Recorder) change(ctx context.Context, tx store.Tx, rd, prev store.Reading, found bool) (*events.Event, error) {
	if found && (rd.MeasuredAt.Before(prev.MeasuredAt) ||
		(prev.VisibilityScore == rd.VisibilityScore && prev.Sentiment == rd.Sentiment)) {
		return nil, nil
	}
	data := events.VisibilityChangeData{Domain: rd.Domain, VisibilityScore: rd.VisibilityScore, Sentiment: rd.Sentiment,
		SentimentScore: rd.SentimentScore, MeasuredAt: rd.MeasuredAt, Source: rd.Source, ClientID: events.Optional(rd.ClientID)}
	change := -1
	if found {
		change = abs(rd.VisibilityScore - prev.VisibilityScore)
		ps, pm := prev.Sentiment, prev.MeasuredAt.Format(time.RFC3339Nano)
		data.PreviousVisibilityScore, data.PreviousSentiment = &prev.VisibilityScore, &ps
		data.PreviousSentimentScore, data.PreviousMeasuredAt = &prev.SentimentScore, &pm
		delta := rd.VisibilityScore - prev.VisibilityScore
		data.ScoreChange = &delta
	}
	e, err := events.New(events.VisibilityChange, r.Now(), rd.AccountID, rd.ClientID, rd.Domain, data)
	if err != nil {
		return nil, err
	}
	e.ScoreChange = change
	return &e, events.Publish(ctx, tx, e)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
