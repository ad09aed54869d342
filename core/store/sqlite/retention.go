package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
)

// The retention's statements, each bounded by its LIMIT. Scan answers go
// along their time; deliveries and logged events along their primary keys, whose ids begin with
// the time they were made; deliveries take their attempts with them (ON
// DELETE CASCADE). A deleted webhook goes once its deliveries have: they
// were made before it was deleted, so they are pruned first.
const (
	pruneDeliveries = `DELETE FROM webhook_deliveries WHERE id IN (
		SELECT id FROM webhook_deliveries WHERE id < ? ORDER BY id LIMIT ?)`
	pruneDeleted = `DELETE FROM webhooks WHERE id IN (
		SELECT id FROM webhooks w INDEXED BY webhooks_deleted WHERE deleted_at < ?
		AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = w.id) ORDER BY deleted_at LIMIT ?)`
	pruneEvents = `DELETE FROM event_log WHERE id IN (
		SELECT id FROM event_log WHERE id < ? AND created_at < ? ORDER BY id LIMIT ?)`
	pruneAnswers = `DELETE FROM scan_answers WHERE rowid IN (
		SELECT rowid FROM scan_answers WHERE recorded_at < ? ORDER BY recorded_at LIMIT ?)`
)

// PruneDeliveries forgets up to limit deliveries made before t, oldest
// first, with their attempts.
func (db *DB) PruneDeliveries(ctx context.Context, t time.Time, limit int) (int, error) {
	return db.prune(ctx, "deliveries", pruneDeliveries, store.DeliveryIDFloor(t), limit)
}

// PruneDeleted forgets up to limit webhooks and connections deleted before
// t whose deliveries have all gone.
func (db *DB) PruneDeleted(ctx context.Context, t time.Time, limit int) (int, error) {
	return db.prune(ctx, "deleted webhooks", pruneDeleted, bound(t), limit)
}

// prune runs one bounded DELETE on the writer connection: a short write
// transaction of its own, outside the group commit, which the writer's
// next group waits for.
func (db *DB) prune(ctx context.Context, what, q string, args ...any) (int, error) {
	res, err := db.w.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// PruneEvents forgets up to limit logged events made before t, oldest
// first.
func (db *DB) PruneEvents(ctx context.Context, t time.Time, limit int) (int, error) {
	return db.prune(ctx, "events", pruneEvents, events.IDFloor(t), bound(t), limit)
}
