-- +goose Up
-- A webhook's or connection's due deliveries, for the dispatcher's refill of
-- one endpoint's queue while a backlog waits in the store.
CREATE INDEX webhook_deliveries_due_by_webhook ON webhook_deliveries(webhook_id, next_attempt_at) WHERE status = 'pending';

-- +goose Down
DROP INDEX webhook_deliveries_due_by_webhook;
