-- +goose Up

-- Times. A timestamptz holds a time to the microsecond; the nanoseconds
-- past it (0 to 999) are kept beside it, in a smallint named after it with
-- _ns, so that every time comes back to the nanosecond. A query compares
-- and orders by both, (t, t_ns), as one value; an index has both. The
-- timestamptz alone reads, filters and groups as any other.
--
-- Ids, names that are compared or ordered, and emails are text in the "C"
-- collation: they order by their bytes, as the store's contracts (and
-- SQLite) order them, whatever the database's own collation is; lower() of
-- a "C" text folds ASCII letters only.
--
-- An owner is an account and, for an agency client's, the client's id: a
-- NULL client_id where it references clients, '' where nothing references
-- (so that an owner's rows are found by equality along an index).

CREATE TABLE accounts (
  id                  text COLLATE "C" PRIMARY KEY,
  name                text NOT NULL,
  tier                text NOT NULL,
  type                text NOT NULL CHECK (type IN ('standard', 'agency')),
  default_webhook_url text,
  created_at          timestamptz NOT NULL,
  created_at_ns       smallint NOT NULL
);
CREATE INDEX accounts_created ON accounts (created_at, created_at_ns, id);

CREATE TABLE clients (
  id                  text COLLATE "C" PRIMARY KEY,
  account_id          text COLLATE "C" NOT NULL REFERENCES accounts (id),
  name                text NOT NULL,
  default_webhook_url text,
  created_at          timestamptz NOT NULL,
  created_at_ns       smallint NOT NULL
);
CREATE INDEX clients_account ON clients (account_id, created_at, created_at_ns, id);

CREATE TABLE api_keys (
  id              text COLLATE "C" PRIMARY KEY,
  account_id      text COLLATE "C" NOT NULL REFERENCES accounts (id),
  client_id       text COLLATE "C" REFERENCES clients (id),
  name            text NOT NULL,
  key_hash        bytea NOT NULL UNIQUE,
  secret_hash     bytea NOT NULL,
  hint            text NOT NULL,
  scopes          text[] NOT NULL,
  expires_at      timestamptz,
  expires_at_ns   smallint,
  revoked_at      timestamptz,
  revoked_at_ns   smallint,
  created_at      timestamptz NOT NULL,
  created_at_ns   smallint NOT NULL,
  last_used_at    timestamptz,
  last_used_at_ns smallint
);
CREATE INDEX api_keys_account ON api_keys (account_id, created_at, created_at_ns, id);

-- The current fixed window of each kind per account, as the counter last
-- saved it.
CREATE TABLE rate_windows (
  account_id text COLLATE "C" NOT NULL,
  "window"   text NOT NULL,
  start      timestamptz NOT NULL,
  start_ns   smallint NOT NULL,
  count      bigint NOT NULL,
  PRIMARY KEY (account_id, "window")
);

CREATE TABLE usage_hourly (
  key_id     text COLLATE "C" NOT NULL,
  hour       timestamptz NOT NULL,
  hour_ns    smallint NOT NULL,
  account_id text COLLATE "C" NOT NULL,
  client_id  text COLLATE "C" NOT NULL,
  count      bigint NOT NULL,
  PRIMARY KEY (key_id, hour, hour_ns)
);
CREATE INDEX usage_hourly_account ON usage_hourly (account_id, hour, hour_ns, key_id);

-- Content requests. A processing request holds a lease, renewed while it
-- runs; one whose holder died is claimed again once the lease ends, and
-- its attempts count the claims (each claim's number fences its writes).
-- The content is any text a caller sent, NUL included, which text in
-- PostgreSQL cannot hold: it is kept as its bytes (as is an attempt's
-- response body, whatever an endpoint answered).
CREATE TABLE content_requests (
  id             text COLLATE "C" PRIMARY KEY,
  account_id     text COLLATE "C" NOT NULL REFERENCES accounts (id),
  client_id      text COLLATE "C" NOT NULL,
  key_id         text COLLATE "C",
  type           text NOT NULL,
  status         text NOT NULL CHECK (status IN ('queued', 'processing', 'completed', 'failed', 'cancelled')),
  domain         text NOT NULL,
  url            text,
  content        bytea,
  target_queries text[] NOT NULL,
  metadata       jsonb NOT NULL,
  budget         bigint NOT NULL CHECK (budget > 0),
  spent          bigint NOT NULL CHECK (spent >= 0 AND spent <= budget),
  budget_month   text NOT NULL,
  failure_reason text,
  result         json,
  step           text,
  attempts       integer NOT NULL DEFAULT 0,
  handbacks      integer NOT NULL DEFAULT 0,
  holder         text COLLATE "C",
  lease_until    timestamptz,
  lease_until_ns smallint,
  work           json,
  created_at     timestamptz NOT NULL,
  created_at_ns  smallint NOT NULL,
  updated_at     timestamptz NOT NULL,
  updated_at_ns  smallint NOT NULL,
  started_at     timestamptz,
  started_at_ns  smallint,
  ended_at       timestamptz,
  ended_at_ns    smallint
);
-- Pages of an account's requests, newest first.
CREATE INDEX content_requests_page ON content_requests (account_id, created_at, created_at_ns, id);
-- The claim (content_queue.go): the queued requests of an account, and of
-- one of its owners, in queue order; the processing ones by owner, and by
-- the end of their lease; an account's last start, and an owner's.
CREATE INDEX content_requests_queued ON content_requests (account_id, created_at, created_at_ns, id)
  WHERE status = 'queued';
CREATE INDEX content_requests_queued_by_owner ON content_requests (account_id, client_id, created_at, created_at_ns, id)
  WHERE status = 'queued';
CREATE INDEX content_requests_processing ON content_requests (account_id, client_id) WHERE status = 'processing';
CREATE INDEX content_requests_expiry ON content_requests (lease_until, lease_until_ns, id) WHERE status = 'processing';
CREATE INDEX content_requests_start ON content_requests (account_id, started_at, started_at_ns)
  WHERE started_at IS NOT NULL;
CREATE INDEX content_requests_start_by_owner ON content_requests (account_id, client_id, started_at, started_at_ns)
  WHERE started_at IS NOT NULL;

-- An account's budget ledger, one row per UTC month.
CREATE TABLE budget_months (
  account_id text COLLATE "C" NOT NULL,
  month      text NOT NULL,
  spent      bigint NOT NULL CHECK (spent >= 0),
  reserved   bigint NOT NULL CHECK (reserved >= 0),
  PRIMARY KEY (account_id, month)
);

CREATE TABLE idempotency_keys (
  scope         text COLLATE "C" NOT NULL,
  key           text COLLATE "C" NOT NULL,
  request_hash  bytea NOT NULL,
  status        integer NOT NULL,
  body          bytea NOT NULL,
  created_at    timestamptz NOT NULL,
  created_at_ns smallint NOT NULL,
  PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at, created_at_ns);

-- Readings. One index serves an owner's readings of a domain, newest first, and the owners that have
-- readings of it, found by skipping from one client_id to the next.
CREATE TABLE visibility_readings (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id       text COLLATE "C" NOT NULL REFERENCES accounts (id),
  client_id        text COLLATE "C" NOT NULL,
  domain           text COLLATE "C" NOT NULL,
  visibility_score integer NOT NULL CHECK (visibility_score BETWEEN 0 AND 100),
  sentiment        text NOT NULL,
  sentiment_score  double precision NOT NULL CHECK (sentiment_score BETWEEN -1 AND 1),
  source           text NOT NULL,
  measured_at      timestamptz NOT NULL,
  measured_at_ns   smallint NOT NULL
);
CREATE INDEX visibility_readings_owner ON visibility_readings (account_id, domain, client_id, measured_at, measured_at_ns, id);

-- Monitored domains: what the visibility engine scans for an owner (the
-- account, or one agency client), with the names its probes search for.
CREATE TABLE monitored_domains (
  id              text COLLATE "C" PRIMARY KEY,
  account_id      text COLLATE "C" NOT NULL REFERENCES accounts (id),
  client_id       text COLLATE "C" REFERENCES clients (id),
  domain          text COLLATE "C" NOT NULL,
  brands          text[] NOT NULL,
  aliases         text[] NOT NULL,
  competitors     text[] NOT NULL,
  topics          text[] NOT NULL,
  prompts         text[] NOT NULL,
  next_scan_at    timestamptz,
  next_scan_at_ns smallint,
  last_scan_at    timestamptz,
  last_scan_at_ns smallint,
  created_at      timestamptz NOT NULL,
  created_at_ns   smallint NOT NULL,
  updated_at      timestamptz NOT NULL,
  updated_at_ns   smallint NOT NULL
);
-- An owner monitors a name once.
CREATE UNIQUE INDEX monitored_domains_owner_domain ON monitored_domains (account_id, coalesce(client_id, ''), domain);
CREATE INDEX monitored_domains_page ON monitored_domains (account_id, created_at, created_at_ns, id);
CREATE INDEX monitored_domains_due ON monitored_domains (next_scan_at, next_scan_at_ns) WHERE next_scan_at IS NOT NULL;

-- Scans: a durable job queue. A running scan holds a lease; one whose
-- lease ended (its holder died) is claimed again.
CREATE TABLE scans (
  id             text COLLATE "C" PRIMARY KEY,
  account_id     text COLLATE "C" NOT NULL REFERENCES accounts (id),
  client_id      text COLLATE "C" REFERENCES clients (id),
  domain_id      text COLLATE "C" NOT NULL,
  domain         text COLLATE "C" NOT NULL,
  trigger        text NOT NULL CHECK (trigger IN ('scheduled', 'manual')),
  status         text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  attempts       integer NOT NULL DEFAULT 0,
  holder         text COLLATE "C",
  lease_until    timestamptz,
  lease_until_ns smallint,
  result         json,
  error          text,
  created_at     timestamptz NOT NULL,
  created_at_ns  smallint NOT NULL,
  started_at     timestamptz,
  started_at_ns  smallint,
  finished_at    timestamptz,
  finished_at_ns smallint
);
-- One active (queued or running) scan per monitored domain.
CREATE UNIQUE INDEX scans_active ON scans (domain_id) WHERE status IN ('queued', 'running');
CREATE INDEX scans_queued ON scans (created_at, created_at_ns, id) WHERE status = 'queued';
CREATE INDEX scans_expiry ON scans (lease_until, lease_until_ns, created_at, created_at_ns, id) WHERE status = 'running';
CREATE INDEX scans_completed ON scans (account_id, domain, finished_at, finished_at_ns, id) WHERE status = 'completed';

-- Webhooks and connections (a row with a connector: a connector plugin's
-- settings, sealed, delivering the events of its domains, or of every
-- domain of its owner when it lists none). Both share the delivery log.
-- A deleted one (deleted_at) stays, without its secrets, as long as its
-- deliveries do.
CREATE TABLE webhooks (
  id                 text COLLATE "C" PRIMARY KEY,
  account_id         text COLLATE "C" NOT NULL REFERENCES accounts (id),
  client_id          text COLLATE "C" REFERENCES clients (id),
  domain             text COLLATE "C" NOT NULL,
  url                text NOT NULL,
  events             text[] NOT NULL,
  min_score_change   integer NOT NULL CHECK (min_score_change BETWEEN 0 AND 100),
  enabled            boolean NOT NULL,
  disabled_reason    text,
  disabled_at        timestamptz,
  disabled_at_ns     smallint,
  secret             text NOT NULL,
  prev_secret        text,
  prev_secret_end    timestamptz,
  prev_secret_end_ns smallint,
  failing_since      timestamptz,
  failing_since_ns   smallint,
  failures           integer NOT NULL,
  last_success_at    timestamptz,
  last_success_at_ns smallint,
  connector          text,
  name               text NOT NULL,
  domains            text[] NOT NULL,
  settings           text NOT NULL,
  public_settings    json,
  secret_fields      text[] NOT NULL,
  subscription       boolean NOT NULL,
  created_at         timestamptz NOT NULL,
  created_at_ns      smallint NOT NULL,
  updated_at         timestamptz NOT NULL,
  updated_at_ns      smallint NOT NULL,
  deleted_at         timestamptz,
  deleted_at_ns      smallint
);
CREATE INDEX webhooks_page ON webhooks (account_id, created_at, created_at_ns, id);
CREATE INDEX webhooks_match ON webhooks (account_id, domain) WHERE deleted_at IS NULL;
CREATE INDEX webhooks_connections ON webhooks (account_id) WHERE connector IS NOT NULL AND deleted_at IS NULL;
CREATE INDEX webhooks_deleted ON webhooks (deleted_at, deleted_at_ns, id) WHERE deleted_at IS NOT NULL;

-- Deliveries: one per webhook and event. A delivery's id begins with the
-- time it was made, and an event's id with the event's: retention prunes
-- along the primary key, and a webhook's deliveries list along the unique
-- index by event. A leased delivery is held by the claim its lease names
-- until lease_until.
CREATE TABLE webhook_deliveries (
  id                 text COLLATE "C" PRIMARY KEY,
  webhook_id         text COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  account_id         text COLLATE "C" NOT NULL,
  event_id           text COLLATE "C" NOT NULL,
  event              text NOT NULL,
  payload            bytea NOT NULL,
  status             text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts           integer NOT NULL,
  step               integer NOT NULL,
  next_attempt_at    timestamptz,
  next_attempt_at_ns smallint,
  last_attempt_at    timestamptz,
  last_attempt_at_ns smallint,
  last_status        integer,
  last_error         text,
  lease              text COLLATE "C",
  lease_until        timestamptz,
  lease_until_ns     smallint,
  created_at         timestamptz NOT NULL,
  created_at_ns      smallint NOT NULL,
  updated_at         timestamptz NOT NULL,
  updated_at_ns      smallint NOT NULL,
  UNIQUE (webhook_id, event_id)
);
-- The claims: every pending delivery by when it is due, and one webhook's.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, next_attempt_at_ns) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_due_by_webhook ON webhook_deliveries (webhook_id, next_attempt_at, next_attempt_at_ns)
  WHERE status = 'pending';

CREATE TABLE webhook_attempts (
  delivery_id   text COLLATE "C" NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  n             integer NOT NULL,
  at            timestamptz NOT NULL,
  at_ns         smallint NOT NULL,
  status_code   integer NOT NULL,
  latency_us    bigint NOT NULL,
  response_body bytea NOT NULL,
  error         text NOT NULL,
  result        text NOT NULL,
  PRIMARY KEY (delivery_id, n)
);

-- The recent events of each owner, as the fan-out logged them. An event's
-- id begins with its time: retention prunes along the primary key.
CREATE TABLE event_log (
  id            text COLLATE "C" PRIMARY KEY,
  account_id    text COLLATE "C" NOT NULL,
  client_id     text COLLATE "C" NOT NULL,
  event         text NOT NULL,
  domain        text NOT NULL,
  payload       bytea NOT NULL,
  created_at    timestamptz NOT NULL,
  created_at_ns smallint NOT NULL
);
CREATE INDEX event_log_owner ON event_log (account_id, client_id, event, created_at, created_at_ns, id);

-- Connector plugins an operator registered: a binary is started only
-- while its SHA-256 matches.
CREATE TABLE plugins (
  name             text COLLATE "C" PRIMARY KEY,
  path             text NOT NULL,
  sha256           bytea NOT NULL,
  kind             text NOT NULL,
  version          text NOT NULL,
  display_name     text NOT NULL,
  registered_at    timestamptz NOT NULL,
  registered_at_ns smallint NOT NULL
);

-- The dashboard's people: an account's users, their sessions and
-- invitations (only a hash of each token is kept). An invitation without
-- an account is the bootstrap owner's: accepting it creates the account.
CREATE TABLE users (
  id             text COLLATE "C" PRIMARY KEY,
  account_id     text COLLATE "C" NOT NULL REFERENCES accounts (id),
  email          text COLLATE "C" NOT NULL,
  role           text NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
  password_hash  text NOT NULL,
  created_at     timestamptz NOT NULL,
  created_at_ns  smallint NOT NULL,
  password_at    timestamptz NOT NULL,
  password_at_ns smallint NOT NULL
);
-- An email is one user's, in any case of its ASCII letters.
CREATE UNIQUE INDEX users_email ON users (lower(email));
CREATE INDEX users_account ON users (account_id, created_at, created_at_ns, id);

CREATE TABLE sessions (
  token_hash    bytea PRIMARY KEY,
  user_id       text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  csrf          text NOT NULL,
  created_at    timestamptz NOT NULL,
  created_at_ns smallint NOT NULL,
  expires_at    timestamptz NOT NULL,
  expires_at_ns smallint NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expiry ON sessions (expires_at, expires_at_ns);

CREATE TABLE invitations (
  token_hash    bytea PRIMARY KEY,
  account_id    text COLLATE "C" REFERENCES accounts (id),
  email         text COLLATE "C" NOT NULL,
  role          text NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
  invited_by    text COLLATE "C",
  created_at    timestamptz NOT NULL,
  created_at_ns smallint NOT NULL,
  expires_at    timestamptz NOT NULL,
  expires_at_ns smallint NOT NULL
);
CREATE INDEX invitations_account ON invitations (account_id, created_at, created_at_ns);
CREATE INDEX invitations_expiry ON invitations (expires_at, expires_at_ns);

-- +goose Down
-- Irreversible: it makes the schema: undoing it would empty the database
DROP TABLE invitations, sessions, users, plugins, event_log, webhook_attempts, webhook_deliveries, webhooks,
  scans, monitored_domains, visibility_readings, idempotency_keys, budget_months, content_requests,
  usage_hourly, rate_windows, api_keys, clients, accounts;
