-- +goose Up
-- One index serves every read of the readings, in place of two: recording
-- a reading writes each of its indexes at its domain's place, a page of
-- its own per domain, so each index costs the hot path dearly. Leading
-- with (account_id, domain) it finds one owner's readings by the full
-- prefix and the owners that have readings of a domain by skipping from
-- one client_id to the next, which the account-wide reads merge.
DROP INDEX visibility_readings_latest;
DROP INDEX visibility_readings_owner;
CREATE INDEX visibility_readings_owner ON visibility_readings(account_id, domain, client_id, measured_at DESC, id DESC);

-- +goose Down
DROP INDEX visibility_readings_owner;
CREATE INDEX visibility_readings_latest ON visibility_readings(account_id, domain, measured_at DESC);
CREATE INDEX visibility_readings_owner ON visibility_readings(account_id, client_id, domain, measured_at DESC, id DESC);
