-- +goose Up

-- A webhook's or connection's least count of AI crawlers' error hits on
-- cited pages that a crawler_errors must carry to reach it.
-- Expand: the trigger dropped is made again at once, over the same
-- columns and min_crawler_errors; an earlier aivis writes none of it (the
-- default, 1, is every crawler_errors) and keeps working.
ALTER TABLE webhooks ADD COLUMN min_crawler_errors integer NOT NULL DEFAULT 1
  CHECK (min_crawler_errors BETWEEN 0 AND 1000000);

-- The fan-out reads it: the targets' version moves with it.
DROP TRIGGER webhooks_bump_u ON webhooks;
CREATE TRIGGER webhooks_bump_u AFTER UPDATE ON webhooks
  FOR EACH ROW WHEN ((OLD.id, OLD.account_id, OLD.client_id, OLD.domain, OLD.url, OLD.events, OLD.min_score_change,
      OLD.min_citation_change, OLD.min_crawler_errors, OLD.enabled, OLD.disabled_reason, OLD.disabled_at, OLD.disabled_at_ns, OLD.secret,
      OLD.prev_secret, OLD.prev_secret_end, OLD.prev_secret_end_ns, OLD.connector, OLD.name, OLD.domains, OLD.settings,
      OLD.public_settings::text, OLD.secret_fields, OLD.subscription, OLD.created_at, OLD.created_at_ns,
      OLD.updated_at, OLD.updated_at_ns, OLD.deleted_at, OLD.deleted_at_ns)
    IS DISTINCT FROM (NEW.id, NEW.account_id, NEW.client_id, NEW.domain, NEW.url, NEW.events, NEW.min_score_change,
      NEW.min_citation_change, NEW.min_crawler_errors, NEW.enabled, NEW.disabled_reason, NEW.disabled_at, NEW.disabled_at_ns, NEW.secret,
      NEW.prev_secret, NEW.prev_secret_end, NEW.prev_secret_end_ns, NEW.connector, NEW.name, NEW.domains, NEW.settings,
      NEW.public_settings::text, NEW.secret_fields, NEW.subscription, NEW.created_at, NEW.created_at_ns,
      NEW.updated_at, NEW.updated_at_ns, NEW.deleted_at, NEW.deleted_at_ns))
  EXECUTE FUNCTION cache_bump('targets');


-- +goose Down
DROP TRIGGER webhooks_bump_u ON webhooks;
CREATE TRIGGER webhooks_bump_u AFTER UPDATE ON webhooks
  FOR EACH ROW WHEN ((OLD.id, OLD.account_id, OLD.client_id, OLD.domain, OLD.url, OLD.events, OLD.min_score_change,
      OLD.min_citation_change, OLD.enabled, OLD.disabled_reason, OLD.disabled_at, OLD.disabled_at_ns, OLD.secret,
      OLD.prev_secret, OLD.prev_secret_end, OLD.prev_secret_end_ns, OLD.connector, OLD.name, OLD.domains, OLD.settings,
      OLD.public_settings::text, OLD.secret_fields, OLD.subscription, OLD.created_at, OLD.created_at_ns,
      OLD.updated_at, OLD.updated_at_ns, OLD.deleted_at, OLD.deleted_at_ns)
    IS DISTINCT FROM (NEW.id, NEW.account_id, NEW.client_id, NEW.domain, NEW.url, NEW.events, NEW.min_score_change,
      NEW.min_citation_change, NEW.enabled, NEW.disabled_reason, NEW.disabled_at, NEW.disabled_at_ns, NEW.secret,
      NEW.prev_secret, NEW.prev_secret_end, NEW.prev_secret_end_ns, NEW.connector, NEW.name, NEW.domains, NEW.settings,
      NEW.public_settings::text, NEW.secret_fields, NEW.subscription, NEW.created_at, NEW.created_at_ns,
      NEW.updated_at, NEW.updated_at_ns, NEW.deleted_at, NEW.deleted_at_ns))
  EXECUTE FUNCTION cache_bump('targets');

ALTER TABLE webhooks DROP COLUMN min_crawler_errors;
