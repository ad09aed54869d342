-- +goose Up
-- The claims of a scan handed back by a server that stopped gracefully:
-- they do not count against the scans' attempts, while each claim keeps
-- its own number (attempts never goes down).
ALTER TABLE scans ADD COLUMN handbacks INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE scans DROP COLUMN handbacks;
