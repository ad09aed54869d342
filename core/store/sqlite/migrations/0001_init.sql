-- +goose Up
CREATE TABLE accounts (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL,
  tier       TEXT NOT NULL,
  type       TEXT NOT NULL CHECK (type IN ('standard', 'agency')),
  created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE clients (
  id         TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  name       TEXT NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX clients_account ON clients(account_id, created_at);

CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL REFERENCES accounts(id),
  client_id    TEXT REFERENCES clients(id),
  name         TEXT NOT NULL,
  key_hash     BLOB NOT NULL UNIQUE,
  secret_hash  BLOB NOT NULL,
  hint         TEXT NOT NULL,
  scopes       TEXT NOT NULL,
  expires_at   INTEGER,
  revoked_at   INTEGER,
  created_at   INTEGER NOT NULL,
  last_used_at INTEGER
) STRICT;
CREATE INDEX api_keys_account ON api_keys(account_id, created_at);

-- The current fixed window of each kind per account.
CREATE TABLE rate_windows (
  account_id TEXT NOT NULL,
  window     TEXT NOT NULL,
  start      INTEGER NOT NULL,
  count      INTEGER NOT NULL,
  PRIMARY KEY (account_id, window)
) STRICT, WITHOUT ROWID;

CREATE TABLE usage_hourly (
  key_id     TEXT NOT NULL,
  hour       INTEGER NOT NULL,
  account_id TEXT NOT NULL,
  client_id  TEXT,
  count      INTEGER NOT NULL,
  PRIMARY KEY (key_id, hour)
) STRICT, WITHOUT ROWID;
CREATE INDEX usage_hourly_account ON usage_hourly(account_id, hour);

CREATE TABLE content_requests (
  id             TEXT PRIMARY KEY,
  account_id     TEXT NOT NULL REFERENCES accounts(id),
  client_id      TEXT,
  key_id         TEXT,
  type           TEXT NOT NULL,
  status         TEXT NOT NULL CHECK (status IN ('queued', 'processing', 'completed', 'failed', 'cancelled')),
  domain         TEXT NOT NULL,
  url            TEXT,
  content        TEXT,
  target_queries TEXT NOT NULL,
  metadata       TEXT NOT NULL,
  budget         INTEGER NOT NULL CHECK (budget > 0),
  spent          INTEGER NOT NULL CHECK (spent >= 0 AND spent <= budget),
  budget_month   TEXT NOT NULL,
  failure_reason TEXT,
  result         TEXT,
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL,
  started_at     INTEGER,
  ended_at       INTEGER
) STRICT;
CREATE INDEX content_requests_page ON content_requests(account_id, created_at DESC, id DESC);
CREATE INDEX content_requests_active ON content_requests(account_id, status)
  WHERE status IN ('queued', 'processing');

CREATE TABLE budget_months (
  account_id TEXT NOT NULL,
  month      TEXT NOT NULL,
  spent      INTEGER NOT NULL CHECK (spent >= 0),
  reserved   INTEGER NOT NULL CHECK (reserved >= 0),
  PRIMARY KEY (account_id, month)
) STRICT, WITHOUT ROWID;

CREATE TABLE idempotency_keys (
  scope        TEXT NOT NULL,
  key          TEXT NOT NULL,
  request_hash BLOB NOT NULL,
  status       INTEGER NOT NULL,
  body         BLOB NOT NULL,
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
) STRICT;
CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);

CREATE TABLE visibility_readings (
  id               INTEGER PRIMARY KEY,
  account_id       TEXT NOT NULL REFERENCES accounts(id),
  client_id        TEXT,
  domain           TEXT NOT NULL,
  visibility_score INTEGER NOT NULL CHECK (visibility_score BETWEEN 0 AND 100),
  sentiment        TEXT NOT NULL,
  sentiment_score  REAL NOT NULL CHECK (sentiment_score BETWEEN -1 AND 1),
  source           TEXT NOT NULL,
  measured_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX visibility_readings_latest ON visibility_readings(account_id, domain, measured_at DESC);

-- +goose Down
-- Irreversible: it makes the schema: undoing it would empty the database
