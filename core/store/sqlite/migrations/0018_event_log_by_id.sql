-- +goose Up
-- The event log is pruned along its primary key: event ids begin with the
-- event's time (its created_at). The index of created_at that did it went:
-- every event wrote it.
DROP INDEX event_log_age;

-- +goose Down
CREATE INDEX event_log_age ON event_log(created_at);
