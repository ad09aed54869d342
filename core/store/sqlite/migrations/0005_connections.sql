-- +goose Up
-- Connections: an owner's configured connector (a plugin) with its
-- settings, kept in the webhooks table beside signed webhooks so that both
-- share one delivery log, one retry schedule and one dispatcher. A row with
-- a connector is a connection; its domain is '' and its domains list (empty:
-- every domain of the owner) says which events it wants.
ALTER TABLE webhooks ADD COLUMN connector TEXT;
ALTER TABLE webhooks ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE webhooks ADD COLUMN domains TEXT NOT NULL DEFAULT '';        -- space-separated
ALTER TABLE webhooks ADD COLUMN settings TEXT NOT NULL DEFAULT '';       -- sealed JSON, secrets included
ALTER TABLE webhooks ADD COLUMN public_settings TEXT NOT NULL DEFAULT ''; -- JSON without the secret fields
ALTER TABLE webhooks ADD COLUMN secret_fields TEXT NOT NULL DEFAULT '';  -- space-separated
-- 1 when the destination created it (a Zapier REST Hook subscription): it
-- is deleted, not disabled, when the destination says it is gone.
ALTER TABLE webhooks ADD COLUMN subscription INTEGER NOT NULL DEFAULT 0 CHECK (subscription IN (0, 1));
CREATE INDEX webhooks_connections ON webhooks(account_id, client_id) WHERE connector IS NOT NULL;

-- What a connector answered on an attempt: delivered, retry, failed, gone.
-- '' for a signed webhook's attempt, whose status code says it.
ALTER TABLE webhook_attempts ADD COLUMN result TEXT NOT NULL DEFAULT '';

-- The recent events of each owner, for lists (Zapier's sample data, the
-- dashboard); kept as long as the bus keeps its messages.
CREATE TABLE event_log (
  id         TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  client_id  TEXT,
  event      TEXT NOT NULL,
  domain     TEXT NOT NULL,
  payload    BLOB NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX event_log_owner ON event_log(account_id, client_id, event, created_at DESC);
CREATE INDEX event_log_age ON event_log(created_at);

-- +goose Down
DROP TABLE event_log;
ALTER TABLE webhook_attempts DROP COLUMN result;
DROP INDEX webhooks_connections;
ALTER TABLE webhooks DROP COLUMN subscription;
ALTER TABLE webhooks DROP COLUMN secret_fields;
ALTER TABLE webhooks DROP COLUMN public_settings;
ALTER TABLE webhooks DROP COLUMN settings;
ALTER TABLE webhooks DROP COLUMN domains;
ALTER TABLE webhooks DROP COLUMN name;
ALTER TABLE webhooks DROP COLUMN connector;
