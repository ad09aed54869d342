package store

import (
	"context"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/aivis/aivis/core/tracing"
)

// Traced is s with each Update inside a trace (a request's, a work
// item's: its context carries a span) a span of its own, "store update",
// whose attributes are the engine (db.system.name: sqlite, postgresql)
// and whether it committed (aivis.outcome: committed, rolled back; a
// refusal, a conflict or a lost lease rolls back as the caller asked); a
// store out of reach is an error. An Update outside any trace (a
// background batch) starts none.
func Traced(s Store, system string) Store { return traced{s, system} }

type traced struct {
	Store
	system string
}

func (s traced) Update(ctx context.Context, fn func(Tx) error) error {
	ctx, span := tracing.StartChild(ctx, "store update", trace.WithAttributes(semconv.DBSystemNameKey.String(s.system)))
	defer span.End()
	err := s.Store.Update(ctx, fn)
	outcome := "committed"
	if err != nil {
		outcome = "rolled back"
	}
	span.SetAttributes(tracing.Outcome.String(outcome))
	if _, down := Unavailable(err); down {
		tracing.Fail(span, "unavailable")
	}
	return err
}
