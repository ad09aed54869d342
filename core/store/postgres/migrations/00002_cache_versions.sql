-- +goose Up

-- The servers cache their hottest reads (core/store/cache) under a version
-- per topic: keys (keys, accounts and clients: what authentication reads),
-- budgets (budget ledgers and the states of content requests) and targets
-- (what the fan-out matches of webhooks and connections). A write that may
-- change what a cache of a topic holds adds a row to cache_bumps in its own
-- transaction (the triggers below); a topic's version is its n in
-- cache_versions plus its rows in cache_bumps, and grows with every commit
-- that changed the topic. Bumps are inserted, never updated: transactions
-- that change one topic at once neither wait for each other nor conflict
-- (one counter row would make every two SERIALIZABLE writers of a topic a
-- serialization failure). The servers fold the bumps into cache_versions
-- now and then (signal.go), which leaves every version as it was.
CREATE TABLE cache_versions (
  topic text PRIMARY KEY,
  n     bigint NOT NULL
);
INSERT INTO cache_versions (topic, n) VALUES ('keys', 0), ('budgets', 0), ('targets', 0);

CREATE TABLE cache_bumps (
  topic text NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION cache_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO cache_bumps (topic) VALUES (TG_ARGV[0]);
  RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER accounts_bump AFTER INSERT OR DELETE ON accounts
  FOR EACH ROW EXECUTE FUNCTION cache_bump('keys');
CREATE TRIGGER accounts_bump_u AFTER UPDATE ON accounts
  FOR EACH ROW WHEN ((OLD.id, OLD.name, OLD.tier, OLD.type, OLD.created_at, OLD.created_at_ns)
    IS DISTINCT FROM (NEW.id, NEW.name, NEW.tier, NEW.type, NEW.created_at, NEW.created_at_ns))
  EXECUTE FUNCTION cache_bump('keys');
CREATE TRIGGER clients_bump AFTER DELETE ON clients
  FOR EACH ROW EXECUTE FUNCTION cache_bump('keys');
CREATE TRIGGER clients_bump_u AFTER UPDATE ON clients
  FOR EACH ROW WHEN ((OLD.id, OLD.account_id) IS DISTINCT FROM (NEW.id, NEW.account_id))
  EXECUTE FUNCTION cache_bump('keys');
-- A key's last use is no change to what authentication reads.
CREATE TRIGGER api_keys_bump AFTER INSERT OR DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION cache_bump('keys');
CREATE TRIGGER api_keys_bump_u AFTER UPDATE ON api_keys
  FOR EACH ROW WHEN ((OLD.id, OLD.account_id, OLD.client_id, OLD.key_hash, OLD.secret_hash, OLD.scopes,
      OLD.expires_at, OLD.expires_at_ns, OLD.revoked_at, OLD.revoked_at_ns)
    IS DISTINCT FROM (NEW.id, NEW.account_id, NEW.client_id, NEW.key_hash, NEW.secret_hash, NEW.scopes,
      NEW.expires_at, NEW.expires_at_ns, NEW.revoked_at, NEW.revoked_at_ns))
  EXECUTE FUNCTION cache_bump('keys');

CREATE TRIGGER budget_months_bump AFTER INSERT OR UPDATE OR DELETE ON budget_months
  FOR EACH ROW EXECUTE FUNCTION cache_bump('budgets');
-- Of content requests, a budget's status reads how many are active: a
-- lease renewed, a step or a charge is no change.
CREATE TRIGGER content_requests_bump AFTER INSERT OR DELETE ON content_requests
  FOR EACH ROW EXECUTE FUNCTION cache_bump('budgets');
CREATE TRIGGER content_requests_bump_u AFTER UPDATE ON content_requests
  FOR EACH ROW WHEN ((OLD.status, OLD.account_id) IS DISTINCT FROM (NEW.status, NEW.account_id))
  EXECUTE FUNCTION cache_bump('budgets');

-- Of webhooks and connections, everything but the health an attempt
-- writes (failing_since, failures, last_success_at).
CREATE TRIGGER webhooks_bump AFTER INSERT OR DELETE ON webhooks
  FOR EACH ROW EXECUTE FUNCTION cache_bump('targets');
CREATE TRIGGER webhooks_bump_u AFTER UPDATE ON webhooks
  FOR EACH ROW WHEN ((OLD.id, OLD.account_id, OLD.client_id, OLD.domain, OLD.url, OLD.events, OLD.min_score_change,
      OLD.enabled, OLD.disabled_reason, OLD.disabled_at, OLD.disabled_at_ns, OLD.secret, OLD.prev_secret,
      OLD.prev_secret_end, OLD.prev_secret_end_ns, OLD.connector, OLD.name, OLD.domains, OLD.settings,
      OLD.public_settings::text, OLD.secret_fields, OLD.subscription, OLD.created_at, OLD.created_at_ns,
      OLD.updated_at, OLD.updated_at_ns, OLD.deleted_at, OLD.deleted_at_ns)
    IS DISTINCT FROM (NEW.id, NEW.account_id, NEW.client_id, NEW.domain, NEW.url, NEW.events, NEW.min_score_change,
      NEW.enabled, NEW.disabled_reason, NEW.disabled_at, NEW.disabled_at_ns, NEW.secret, NEW.prev_secret,
      NEW.prev_secret_end, NEW.prev_secret_end_ns, NEW.connector, NEW.name, NEW.domains, NEW.settings,
      NEW.public_settings::text, NEW.secret_fields, NEW.subscription, NEW.created_at, NEW.created_at_ns,
      NEW.updated_at, NEW.updated_at_ns, NEW.deleted_at, NEW.deleted_at_ns))
  EXECUTE FUNCTION cache_bump('targets');

-- +goose Down
DROP TRIGGER webhooks_bump_u ON webhooks;
DROP TRIGGER webhooks_bump ON webhooks;
DROP TRIGGER content_requests_bump_u ON content_requests;
DROP TRIGGER content_requests_bump ON content_requests;
DROP TRIGGER budget_months_bump ON budget_months;
DROP TRIGGER api_keys_bump_u ON api_keys;
DROP TRIGGER api_keys_bump ON api_keys;
DROP TRIGGER clients_bump_u ON clients;
DROP TRIGGER clients_bump ON clients;
DROP TRIGGER accounts_bump_u ON accounts;
DROP TRIGGER accounts_bump ON accounts;
DROP FUNCTION cache_bump();
DROP TABLE cache_bumps, cache_versions;
