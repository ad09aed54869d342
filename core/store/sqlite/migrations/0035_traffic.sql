-- +goose Up
-- AI crawler and referral analytics: the tokens log sources deliver with,
-- the batches they delivered (kept to refuse one twice) and the daily
-- aggregates the batches add up to. No log line, client address or query
-- string is kept. Days are days since 1970-01-01 (UTC).

-- A token's secret is kept as its SHA-256; signing_secret is sealed (a
-- Vercel drain's), '' for the other sources.
CREATE TABLE ingest_tokens (
  id                TEXT PRIMARY KEY,
  account_id        TEXT NOT NULL REFERENCES accounts(id),
  client_id         TEXT REFERENCES clients(id),
  domain_id         TEXT NOT NULL REFERENCES monitored_domains(id) ON DELETE CASCADE,
  name              TEXT NOT NULL,
  source            TEXT NOT NULL CHECK (source IN ('cloudflare', 'vercel', 'fastly', 'file')),
  token_hash        BLOB NOT NULL UNIQUE,
  prefix            TEXT NOT NULL,
  signing_secret    TEXT NOT NULL,
  fastly_service_id TEXT NOT NULL,
  created_at        INTEGER NOT NULL,
  last_used_at      INTEGER,
  revoked_at        INTEGER
) STRICT;
CREATE INDEX ingest_tokens_domain ON ingest_tokens(domain_id, created_at);

-- One delivery of logs: its content's SHA-256 is unique per domain.
-- samples are the first malformed lines, a JSON array.
CREATE TABLE traffic_batches (
  id          TEXT PRIMARY KEY,
  domain_id   TEXT NOT NULL REFERENCES monitored_domains(id) ON DELETE CASCADE,
  token_id    TEXT,
  source      TEXT NOT NULL,
  hash        BLOB NOT NULL,
  lines       INTEGER NOT NULL,
  malformed   INTEGER NOT NULL,
  samples     TEXT NOT NULL,
  received_at INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX traffic_batches_hash ON traffic_batches(domain_id, hash);
CREATE INDEX traffic_batches_received ON traffic_batches(domain_id, received_at);

-- A day's requests of one AI agent, as one verification found it, to
-- one page: the key is the table (no rowid), the counts by status class
-- s2xx to s5xx and nostatus (none).
CREATE TABLE crawler_hits (
  domain_id    TEXT NOT NULL REFERENCES monitored_domains(id) ON DELETE CASCADE,
  day          INTEGER NOT NULL,
  page         TEXT NOT NULL,
  agent        TEXT NOT NULL,
  verification TEXT NOT NULL,
  hits         INTEGER NOT NULL,
  s2xx         INTEGER NOT NULL,
  s3xx         INTEGER NOT NULL,
  s4xx         INTEGER NOT NULL,
  s5xx         INTEGER NOT NULL,
  nostatus     INTEGER NOT NULL,
  bytes        INTEGER NOT NULL,
  PRIMARY KEY (domain_id, day, page, agent, verification)
) STRICT, WITHOUT ROWID;

-- A day's visits to one page that an AI assistant sent.
CREATE TABLE referral_visits (
  domain_id TEXT NOT NULL REFERENCES monitored_domains(id) ON DELETE CASCADE,
  day       INTEGER NOT NULL,
  page      TEXT NOT NULL,
  assistant TEXT NOT NULL,
  visits    INTEGER NOT NULL,
  PRIMARY KEY (domain_id, day, page, assistant)
) STRICT, WITHOUT ROWID;

-- The IP range lists of the crawlers that replaced the binary's
-- snapshot, by name; saved all at once.
CREATE TABLE crawler_ranges (
  name       TEXT PRIMARY KEY,
  data       BLOB NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;

-- +goose Down
DROP TABLE crawler_ranges;
DROP TABLE referral_visits;
DROP TABLE crawler_hits;
DROP TABLE traffic_batches;
DROP TABLE ingest_tokens;
