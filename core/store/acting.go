package store

import (
	"context"
	"errors"
)

// IdempotencyActed is the Status of an idempotency record whose request's
// action committed while its answer is not kept yet: the mark is written
// in the action's own transaction, so that a retry after the holder
// stopped finds it and does not act again.
const IdempotencyActed = 1

// actingKey is the context key of the idempotency record a request holds.
type actingKey struct{}

// Acting is ctx carrying rec, the idempotency record a request holds while
// it runs: an Update under it (through Acted) or a write that calls
// MarkActed marks the key acted in its transaction.
func Acting(ctx context.Context, rec Idempotency) context.Context {
	return context.WithValue(ctx, actingKey{}, rec)
}

// HoldsKey reports whether ctx carries a held key (Acting).
func HoldsKey(ctx context.Context) bool {
	_, ok := ctx.Value(actingKey{}).(Idempotency)
	return ok
}

// MarkActed writes in tx, when ctx carries a held key (Acting), the key's
// record as acted (Status IdempotencyActed, no body), so that the mark
// commits or rolls back with the action tx holds. A record of the key
// that is no longer the holder's (another request's, made later) or that
// keeps an answer already is left as it is. Without a key it does nothing
// but look ctx up.
func MarkActed(ctx context.Context, tx Tx) error {
	rec, ok := ctx.Value(actingKey{}).(Idempotency)
	if !ok {
		return nil
	}
	cur, err := tx.Idempotency(rec.Scope, rec.Key, rec.CreatedAt)
	switch {
	case err == nil && (cur.Status > IdempotencyActed || !cur.CreatedAt.Equal(rec.CreatedAt)):
		return nil
	case err != nil && !errors.Is(err, ErrNotFound):
		return err
	}
	rec.Status, rec.Body = IdempotencyActed, []byte{}
	return tx.PutIdempotency(rec)
}

// Acted is s whose Update, under a context that carries a held key
// (Acting), marks the key acted (MarkActed) in the transaction of fn,
// after fn: the mark commits with what fn wrote, and rolls back with it.
// An Update without a key costs a context lookup.
func Acted(s Store) Store { return acted{s} }

type acted struct{ Store }

func (s acted) Update(ctx context.Context, fn func(Tx) error) error {
	if !HoldsKey(ctx) {
		return s.Store.Update(ctx, fn)
	}
	return s.Store.Update(ctx, func(tx Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return MarkActed(ctx, tx)
	})
}
