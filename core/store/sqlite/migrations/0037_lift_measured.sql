-- +goose Up
-- lift_measured_at is when a change first had a full window of scans
-- after it and its lift was measured (the lift_measured event), NULL
-- until then: set once, in the transaction that publishes the event.
ALTER TABLE domain_changes ADD COLUMN lift_measured_at INTEGER;
-- The engines that answered in each scan, read for the scans before a
-- change's window (a lift counts them) without reading their answers.
CREATE INDEX scan_answers_engines ON scan_answers(scan_id, engine) WHERE error IS NULL;

-- +goose Down
DROP INDEX scan_answers_engines;
ALTER TABLE domain_changes DROP COLUMN lift_measured_at;
