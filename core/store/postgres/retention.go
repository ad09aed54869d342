package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
)

// The retention's statements, each one DELETE bounded by its LIMIT. Scan
// answers go along their time; deliveries and logged events along their
// primary keys, whose
// ids begin with the time they were made; deliveries take their attempts
// with them (ON DELETE CASCADE). A deleted webhook goes once its
// deliveries have: they were made before it was deleted, so they are
// pruned first.
const (
	pruneDeliveries = `DELETE FROM webhook_deliveries WHERE id IN (
		SELECT id FROM webhook_deliveries WHERE id < $1 ORDER BY id LIMIT $2)`
	pruneDeleted = `DELETE FROM webhooks WHERE id IN (
		SELECT w.id FROM webhooks w WHERE w.deleted_at IS NOT NULL AND (w.deleted_at, w.deleted_at_ns) < ($1, $2)
		AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = w.id)
		ORDER BY w.deleted_at, w.deleted_at_ns, w.id LIMIT $3)`
	pruneEvents = `DELETE FROM event_log WHERE id IN (
		SELECT id FROM event_log WHERE id < $1 AND (created_at, created_at_ns) < ($2, $3) ORDER BY id LIMIT $4)`
	pruneAnswers = `DELETE FROM scan_answers WHERE (scan_id, seq) IN (
		SELECT scan_id, seq FROM scan_answers WHERE (recorded_at, recorded_at_ns) < ($1, $2)
		ORDER BY recorded_at, recorded_at_ns LIMIT $3)`
)

// PruneDeliveries forgets up to limit deliveries made before t, oldest
// first, with their attempts.
func (db *DB) PruneDeliveries(ctx context.Context, t time.Time, limit int) (int, error) {
	return db.prune(ctx, "deliveries", pruneDeliveries, store.DeliveryIDFloor(t), limit)
}

// PruneDeleted forgets up to limit webhooks and connections deleted before
// t whose deliveries have all gone.
func (db *DB) PruneDeleted(ctx context.Context, t time.Time, limit int) (int, error) {
	at, n := bound(t)
	return db.prune(ctx, "deleted webhooks", pruneDeleted, at, n, limit)
}

// PruneEvents forgets up to limit logged events made before t, oldest
// first.
func (db *DB) PruneEvents(ctx context.Context, t time.Time, limit int) (int, error) {
	at, n := bound(t)
	return db.prune(ctx, "events", pruneEvents, events.IDFloor(t), at, n, limit)
}

func (db *DB) prune(ctx context.Context, what, q string, args ...any) (int, error) {
	tag, err := db.pool.Exec(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune %s: %w", what, err)
	}
	return int(tag.RowsAffected()), nil
}
