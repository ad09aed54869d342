-- +goose Up
-- A webhook's deliveries are listed, and replayed by time, along the
-- unique index of (webhook_id, event_id): event ids begin with the event's
-- time, so that index orders them by it. The index of (webhook_id,
-- created_at, id) that did the same went: each index ordered by webhook
-- writes a page of its own per delivery, the hot path's dearest cost.
DROP INDEX webhook_deliveries_list;

-- +goose Down
CREATE INDEX webhook_deliveries_list ON webhook_deliveries(webhook_id, created_at DESC, id DESC);
