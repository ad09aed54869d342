-- +goose Up
-- AI crawler and referral analytics: the tokens log sources deliver with,
-- the batches they delivered (kept to refuse one twice) and the daily
-- aggregates the batches add up to. No log line, client address or query
-- string is kept.

-- A token's secret is kept as its SHA-256; signing_secret is sealed (a
-- Vercel drain's), '' for the other sources.
CREATE TABLE ingest_tokens (
  id                text COLLATE "C" PRIMARY KEY,
  account_id        text COLLATE "C" NOT NULL REFERENCES accounts (id),
  client_id         text COLLATE "C" REFERENCES clients (id),
  domain_id         text COLLATE "C" NOT NULL REFERENCES monitored_domains (id) ON DELETE CASCADE,
  name              text NOT NULL,
  source            text NOT NULL CHECK (source IN ('cloudflare', 'vercel', 'fastly', 'file')),
  token_hash        bytea NOT NULL UNIQUE,
  prefix            text NOT NULL,
  signing_secret    text NOT NULL,
  fastly_service_id text NOT NULL,
  created_at        timestamptz NOT NULL,
  created_at_ns     smallint NOT NULL,
  last_used_at      timestamptz,
  last_used_at_ns   smallint,
  revoked_at        timestamptz,
  revoked_at_ns     smallint
);
CREATE INDEX ingest_tokens_domain ON ingest_tokens (domain_id, created_at, created_at_ns);

-- One delivery of logs: its content's SHA-256 is unique per domain.
-- samples are the first malformed lines.
CREATE TABLE traffic_batches (
  id             text COLLATE "C" PRIMARY KEY,
  domain_id      text COLLATE "C" NOT NULL REFERENCES monitored_domains (id) ON DELETE CASCADE,
  token_id       text COLLATE "C",
  source         text NOT NULL,
  hash           bytea NOT NULL,
  lines          bigint NOT NULL,
  malformed      bigint NOT NULL,
  samples        json NOT NULL,
  received_at    timestamptz NOT NULL,
  received_at_ns smallint NOT NULL
);
CREATE UNIQUE INDEX traffic_batches_hash ON traffic_batches (domain_id, hash);
CREATE INDEX traffic_batches_received ON traffic_batches (domain_id, received_at, received_at_ns);

-- A day's requests of one AI agent, as one verification found it, to
-- one page: the counts by status class s2xx to s5xx and nostatus (none).
-- The counts come first, where they need no padding. Each batch of a day
-- adds to the same keys: a fifth of each page is left free (fillfactor)
-- so that the new version of a row stays on its page, its index entry
-- unchanged (a HOT update): 20 merges into a day's 4,000 keys grew the
-- table 175 bytes an update at 100, 37 at 80.
CREATE TABLE crawler_hits (
  hits         bigint NOT NULL,
  s2xx         bigint NOT NULL,
  s3xx         bigint NOT NULL,
  s4xx         bigint NOT NULL,
  s5xx         bigint NOT NULL,
  nostatus     bigint NOT NULL,
  bytes        bigint NOT NULL,
  day          date NOT NULL,
  domain_id    text COLLATE "C" NOT NULL REFERENCES monitored_domains (id) ON DELETE CASCADE,
  page         text COLLATE "C" NOT NULL,
  agent        text COLLATE "C" NOT NULL,
  verification text COLLATE "C" NOT NULL,
  PRIMARY KEY (domain_id, day, page, agent, verification)
) WITH (fillfactor = 80);

-- A day's visits to one page that an AI assistant sent.
-- Merged into as crawler_hits are.
CREATE TABLE referral_visits (
  visits    bigint NOT NULL,
  day       date NOT NULL,
  domain_id text COLLATE "C" NOT NULL REFERENCES monitored_domains (id) ON DELETE CASCADE,
  page      text COLLATE "C" NOT NULL,
  assistant text COLLATE "C" NOT NULL,
  PRIMARY KEY (domain_id, day, page, assistant)
) WITH (fillfactor = 80);

-- The IP range lists of the crawlers that replaced the binary's
-- snapshot, by name; saved all at once.
CREATE TABLE crawler_ranges (
  name          text COLLATE "C" PRIMARY KEY,
  data          bytea NOT NULL,
  updated_at    timestamptz NOT NULL,
  updated_at_ns smallint NOT NULL
);

-- +goose Down
DROP TABLE crawler_ranges;
DROP TABLE referral_visits;
DROP TABLE crawler_hits;
DROP TABLE traffic_batches;
DROP TABLE ingest_tokens;
