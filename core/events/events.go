// Package events is aivis's event catalog: the kinds, the body every
// receiver sees ({id, event, timestamp, data}), the data of each kind, and
// the mapping to Watermill messages that carry them on the bus.
//
// An event is written in the transaction of the change that causes it
// (store.Tx.Publish: the transactional outbox), so it is never lost and
// never emitted for a change that rolled back. Consumers are ordinary
// Watermill subscribers of Topic.
package events

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/tracing"
	"github.com/aivis/aivis/internal/jsonstr"
)

// Topic is the bus topic every event is published on.
const Topic = "aivis.events"

// The event kinds.
const (
	VisibilityChange        = "ai_visibility_change"
	ContentOptimized        = "content_optimized"
	WebhookTest             = "webhook_test"
	ContentRequestCreated   = "content_request_created"
	ContentRequestFailed    = "content_request_failed"
	ContentRequestCancelled = "content_request_cancelled"
	ScanCompleted           = "scan_completed"
	WebhookDisabled         = "webhook_disabled"
	ConnectionDisabled      = "connection_disabled"
	CitationChange          = "citation_change"
	CrawlerErrors           = "crawler_errors"
	LiftMeasured            = "lift_measured"
)

// Kinds lists every kind a webhook may subscribe to.
var Kinds = []string{VisibilityChange, ContentOptimized, WebhookTest, ContentRequestCreated,
	ContentRequestFailed, ContentRequestCancelled, ScanCompleted, WebhookDisabled, ConnectionDisabled, CitationChange,
	CrawlerErrors, LiftMeasured}

// Known reports whether kind is in the catalog.
func Known(kind string) bool { return slices.Contains(Kinds, kind) }

// Body is what a receiver gets: the JSON body of every delivery.
type Body struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// AppendJSON appends the body as json.Marshal writes it, without its
// reflection: an event is encoded in the transaction that records it.
// Data goes in as it is (New and FromMessage give it compact); empty, it
// is null.
func (b Body) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonstr.Append(dst, b.ID)
	dst = append(dst, `,"event":`...)
	dst = jsonstr.Append(dst, b.Event)
	dst = append(dst, `,"timestamp":"`...)
	dst = b.Timestamp.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","data":`...)
	if len(b.Data) == 0 {
		dst = append(dst, "null"...)
	}
	dst = append(dst, b.Data...)
	return append(dst, '}')
}

// Event is a body with where it belongs: routing facts that travel as
// message metadata and never reach a receiver.
type Event struct {
	Body
	AccountID string
	ClientID  string // "" for an account's own event
	Domain    string // "" when the event concerns no domain
	// ScoreChange is the absolute change of visibility score an
	// ai_visibility_change carries; -1 when there is no previous reading
	// (every webhook hears of the first reading of a domain).
	ScoreChange int
	// CitationChange is the absolute change of an engine's citation rate,
	// in percentage points, that a citation_change carries (its data's
	// citation_change without the sign).
	CitationChange float64
	// CrawlerErrors is the count of AI crawlers' error hits on cited
	// pages that a crawler_errors carries (its data's errors).
	CrawlerErrors int64
	// WebhookID targets one webhook or connection (webhook_test); "" for
	// every match.
	WebhookID string
}

// New makes an event with a fresh id. data is marshalled as the body's data.
func New(kind string, at time.Time, accountID, clientID, domain string, data any) (Event, error) {
	if !Known(kind) {
		return Event{}, fmt.Errorf("events: unknown kind %q", kind)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("events: %s data: %w", kind, err)
	}
	return Event{
		Body:      Body{ID: randid.Sorted(idPrefix, at), Event: kind, Timestamp: at.UTC().Truncate(time.Microsecond), Data: raw},
		AccountID: accountID, ClientID: clientID, Domain: domain,
	}, nil
}

const idPrefix = "evt"

// IDFloor is where the ids of events at t or later begin: an event id
// begins with the event's time, so that ids sort as times do, and the
// floors of two times bound the ids of the events between them.
func IDFloor(t time.Time) string { return randid.SortedFloor(idPrefix, t) }

// Metadata keys of a message.
const (
	metaEvent          = "event"
	metaAccount        = "account_id"
	metaClient         = "client_id"
	metaDomain         = "domain"
	metaScoreChange    = "score_change"
	metaCitationChange = "citation_change"
	metaCrawlerErrors  = "crawler_errors"
	metaWebhook        = "webhook_id"
)

// Message is the event as a Watermill message: its UUID is the event id,
// its payload the body receivers get.
func (e Event) Message() (*message.Message, error) {
	if y := e.Timestamp.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("events: %s: timestamp %v out of range", e.ID, e.Timestamp)
	}
	m := message.NewMessage(e.ID, e.AppendJSON(make([]byte, 0, 128+len(e.Data))))
	m.Metadata.Set(metaEvent, e.Event)
	m.Metadata.Set(metaAccount, e.AccountID)
	if e.ClientID != "" {
		m.Metadata.Set(metaClient, e.ClientID)
	}
	if e.Domain != "" {
		m.Metadata.Set(metaDomain, e.Domain)
	}
	if e.Event == VisibilityChange {
		m.Metadata.Set(metaScoreChange, strconv.Itoa(e.ScoreChange))
	}
	if e.Event == CitationChange {
		m.Metadata.Set(metaCitationChange, strconv.FormatFloat(e.CitationChange, 'f', -1, 64))
	}
	if e.Event == CrawlerErrors {
		m.Metadata.Set(metaCrawlerErrors, strconv.FormatInt(e.CrawlerErrors, 10))
	}
	if e.WebhookID != "" {
		m.Metadata.Set(metaWebhook, e.WebhookID)
	}
	return m, nil
}

// Outbox is where events are written: a store transaction (store.Tx),
// whose commit makes them visible on the bus.
type Outbox interface {
	Publish(topic string, msgs ...*message.Message) error
}

// Publish writes events to the outbox, on Topic. ctx is what caused them
// (a request, a scan, a delivery's outcome): when tracing is on, the
// publish is a span of its trace, whose context the messages carry to
// the spans that handle them (tracing.Inject).
func Publish(ctx context.Context, tx Outbox, evs ...Event) error {
	msgs := make([]*message.Message, len(evs))
	for i, ev := range evs {
		m, err := ev.Message()
		if err != nil {
			return err
		}
		msgs[i] = m
	}
	if !tracing.Enabled() {
		return tx.Publish(Topic, msgs...)
	}
	attrs := []attribute.KeyValue{semconv.MessagingOperationTypeKey.String("send"),
		semconv.MessagingDestinationNameKey.String(Topic), semconv.MessagingBatchMessageCountKey.Int(len(evs))}
	if len(evs) == 1 {
		attrs = append(attrs, semconv.MessagingMessageIDKey.String(evs[0].ID), tracing.EventKind.String(evs[0].Event))
	}
	ctx, span := tracing.Start(ctx, "publish "+Topic, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	defer span.End()
	for _, m := range msgs {
		tracing.Inject(ctx, m)
	}
	err := tx.Publish(Topic, msgs...)
	if err != nil {
		tracing.Fail(span, "outbox")
	}
	return err
}

// Consumed is the Watermill middleware of a consumer group's handler of
// Topic: with tracing on, each event is handled in a span of the trace
// that published it (tracing.Consume).
func Consumed(group string) message.HandlerMiddleware {
	return tracing.Consume(Topic, group, metaEvent)
}

// KindOf is the kind of the event a message carries, without reading its
// body.
func KindOf(m *message.Message) string { return m.Metadata.Get(metaEvent) }

// FromMessage reads an event back from its message.
func FromMessage(m *message.Message) (Event, error) {
	var e Event
	if b, ok := parseBody(m.Payload, m.UUID, m.Metadata.Get(metaEvent)); ok {
		e.Body = b
	} else if err := json.Unmarshal(m.Payload, &e.Body); err != nil {
		return e, fmt.Errorf("events: message %s: %w", m.UUID, err)
	}
	if e.ID != m.UUID || e.Event != m.Metadata.Get(metaEvent) {
		return e, fmt.Errorf("events: message %s: body and metadata disagree", m.UUID)
	}
	e.AccountID = m.Metadata.Get(metaAccount)
	e.ClientID = m.Metadata.Get(metaClient)
	e.Domain = m.Metadata.Get(metaDomain)
	e.WebhookID = m.Metadata.Get(metaWebhook)
	e.ScoreChange = -1
	if s := m.Metadata.Get(metaScoreChange); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return e, fmt.Errorf("events: message %s: score change %q", m.UUID, s)
		}
		e.ScoreChange = n
	}
	if s := m.Metadata.Get(metaCitationChange); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return e, fmt.Errorf("events: message %s: citation change %q", m.UUID, s)
		}
		e.CitationChange = f
	}
	if s := m.Metadata.Get(metaCrawlerErrors); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return e, fmt.Errorf("events: message %s: crawler errors %q", m.UUID, s)
		}
		e.CrawlerErrors = n
	}
	return e, nil
}

// parseBody reads a body without encoding/json's reflection when it is
// what AppendJSON writes for that id and kind; otherwise (ok false) the
// caller decodes it in full.
func parseBody(p []byte, id, kind string) (b Body, ok bool) {
	var head [128]byte
	h := append(head[:0], `{"id":`...)
	h = jsonstr.Append(h, id)
	h = append(h, `,"event":`...)
	h = jsonstr.Append(h, kind)
	h = append(h, `,"timestamp":"`...)
	rest, found := bytes.CutPrefix(p, h)
	if !found {
		return b, false
	}
	ts, data, found := bytes.Cut(rest, []byte(`","data":`))
	if !found || len(data) < 2 || data[len(data)-1] != '}' {
		return b, false
	}
	data = data[:len(data)-1]
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil || !json.Valid(data) {
		return b, false
	}
	return Body{ID: id, Event: kind, Timestamp: t, Data: data}, true
}
