-- +goose Up
-- The trace context of the span that made a delivery (a W3C traceparent,
-- '' when tracing was off): its attempts, the first and every retry, are
-- spans of that trace.
ALTER TABLE webhook_deliveries ADD COLUMN trace TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE webhook_deliveries DROP COLUMN trace;
