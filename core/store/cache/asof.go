package cache

import (
	"context"
	"time"
)

type asOfKey struct{}

// AsOf returns a context whose cached reads may be served by a check of
// the store made at t or later: a request that began at t gets every
// commit made before it, and one check serves all its reads and those of
// the requests that began before it. Without it every read checks.
func AsOf(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, asOfKey{}, t)
}

// asOfTime is the time given to AsOf, if any.
func asOfTime(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(asOfKey{}).(time.Time)
	return t, ok
}
