-- +goose Up
-- Scans of monitored domains: a durable job queue. A running scan holds a
-- lease; one whose lease ended (its process died) is claimed again.
CREATE TABLE scans (
  id          TEXT PRIMARY KEY,
  account_id  TEXT NOT NULL REFERENCES accounts(id),
  client_id   TEXT REFERENCES clients(id),
  domain_id   TEXT NOT NULL,
  domain      TEXT NOT NULL,
  trigger     TEXT NOT NULL CHECK (trigger IN ('scheduled', 'manual')),
  status      TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  attempts    INTEGER NOT NULL DEFAULT 0,
  lease_until INTEGER,
  result      TEXT,            -- JSON: the reading's figures and breakdown
  error       TEXT,
  created_at  INTEGER NOT NULL,
  started_at  INTEGER,
  finished_at INTEGER
) STRICT;
CREATE INDEX scans_queue ON scans(status, created_at);
CREATE INDEX scans_domain ON scans(domain_id, status);
CREATE INDEX scans_owner ON scans(account_id, created_at DESC, id DESC);

-- +goose Down
DROP TABLE scans;
