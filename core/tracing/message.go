package tracing

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The trace context travels from the span that published an event to the
// spans that forward and handle it in the message's metadata, as the W3C
// traceparent: every bus keeps metadata as it was published (the SQLite
// and PostgreSQL buses as JSON, NATS as headers, the forwarder's envelope
// as it is). A caller's tracestate is not carried: it is the caller's,
// of any size, and would travel with every event of theirs.

// Traceparent is the metadata key, and the HTTP header, of the trace
// context.
const Traceparent = "traceparent"

// Parent is the W3C traceparent of ctx's span, "" when ctx carries none.
func Parent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(trace.ContextWithSpanContext(context.Background(), sc.WithTraceState(trace.TraceState{})), c)
	return c[Traceparent]
}

// FromParent is ctx with the remote span context of a W3C traceparent as
// its span's (ctx as it is when tp is "" or not one).
func FromParent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{Traceparent: tp})
}

// SpanContext is the span context of a W3C traceparent (invalid when tp
// is "" or not one).
func SpanContext(tp string) trace.SpanContext {
	return trace.SpanContextFromContext(FromParent(context.Background(), tp))
}

// Inject writes ctx's trace context into a message's metadata, when ctx
// carries one.
func Inject(ctx context.Context, m *message.Message) {
	if tp := Parent(ctx); tp != "" {
		m.Metadata.Set(Traceparent, tp)
	}
}

// Consume is a Watermill router middleware: each message is handled in a
// consumer span ("process aivis.events") whose parent is the span that
// published or forwarded it (its metadata's traceparent), given to the
// handler as the message's context. Its attributes are the topic, the
// consumer group, the message's id (the event's) and the event's kind,
// the metadata's kindKey. Off, it is the handler itself.
func Consume(topic, group, kindKey string) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		if !Enabled() {
			return h
		}
		return func(msg *message.Message) ([]*message.Message, error) {
			ctx := FromParent(msg.Context(), msg.Metadata.Get(Traceparent))
			attrs := []attribute.KeyValue{semconv.MessagingOperationTypeKey.String("process"),
				semconv.MessagingDestinationNameKey.String(topic), semconv.MessagingConsumerGroupNameKey.String(group),
				semconv.MessagingMessageIDKey.String(msg.UUID)}
			if kind := msg.Metadata.Get(kindKey); kind != "" {
				attrs = append(attrs, EventKind.String(kind))
			}
			ctx, span := Start(ctx, "process "+topic, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
			defer span.End()
			msg.SetContext(ctx)
			out, err := h(msg)
			if err != nil {
				Fail(span, "handler")
			}
			return out, err
		}
	}
}

// aivis's own attributes.
const (
	EventKind       = attribute.Key("aivis.event.kind")
	TargetKind      = attribute.Key("aivis.target.kind") // webhook, connection
	Connector       = attribute.Key("aivis.connector")   // a registered plugin's name
	ConnectorCall   = attribute.Key("aivis.connector.call")
	EngineLabel     = attribute.Key("aivis.engine.label") // a configured engine's label
	EngineKind      = attribute.Key("aivis.engine.kind")
	Attempts        = attribute.Key("aivis.attempts")
	AttemptNumber   = attribute.Key("aivis.delivery.attempt")
	Claim           = attribute.Key("aivis.claim") // a scan's or content request's claim: 1 for the first
	Deliveries      = attribute.Key("aivis.deliveries")
	Outcome         = attribute.Key("aivis.outcome")
	FailureCategory = attribute.Key("aivis.failure.category")
)
