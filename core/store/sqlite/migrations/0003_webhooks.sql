-- +goose Up
-- Webhooks, their deliveries and attempts. The event bus's own tables are
-- created by core/bus/sqlite (InitializeSchema) in the same file.
ALTER TABLE accounts ADD COLUMN default_webhook_url TEXT;
ALTER TABLE clients ADD COLUMN default_webhook_url TEXT;

CREATE TABLE webhooks (
  id               TEXT PRIMARY KEY,
  account_id       TEXT NOT NULL REFERENCES accounts(id),
  client_id        TEXT REFERENCES clients(id),
  domain           TEXT NOT NULL,
  url              TEXT NOT NULL,
  events           TEXT NOT NULL,            -- space-separated kinds
  min_score_change INTEGER NOT NULL DEFAULT 0 CHECK (min_score_change BETWEEN 0 AND 100),
  enabled          INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  disabled_reason  TEXT,
  disabled_at      INTEGER,
  secret           TEXT NOT NULL,
  prev_secret      TEXT,
  prev_secret_end  INTEGER,
  failing_since    INTEGER,
  failures         INTEGER NOT NULL DEFAULT 0,
  last_success_at  INTEGER,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
) STRICT;
CREATE INDEX webhooks_owner ON webhooks(account_id, client_id, created_at);
CREATE INDEX webhooks_match ON webhooks(account_id, domain);

CREATE TABLE webhook_deliveries (
  id              TEXT PRIMARY KEY,
  webhook_id      TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  account_id      TEXT NOT NULL,
  event_id        TEXT NOT NULL,
  event           TEXT NOT NULL,
  payload         BLOB NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  step            INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  last_attempt_at INTEGER,
  last_status     INTEGER,
  last_error      TEXT,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  UNIQUE (webhook_id, event_id)
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_list ON webhook_deliveries(webhook_id, created_at DESC, id DESC);

CREATE TABLE webhook_attempts (
  delivery_id   TEXT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  n             INTEGER NOT NULL,
  at            INTEGER NOT NULL,
  status_code   INTEGER NOT NULL,
  latency_us    INTEGER NOT NULL,
  response_body TEXT NOT NULL,
  error         TEXT NOT NULL,
  PRIMARY KEY (delivery_id, n)
) STRICT, WITHOUT ROWID;

CREATE INDEX visibility_readings_owner ON visibility_readings(account_id, client_id, domain, measured_at DESC, id DESC);

-- +goose Down
DROP INDEX visibility_readings_owner;
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
ALTER TABLE clients DROP COLUMN default_webhook_url;
ALTER TABLE accounts DROP COLUMN default_webhook_url;
