-- +goose Up
-- A webhook's or connection's least count of AI crawlers' error hits on
-- cited pages that a crawler_errors must carry to reach it.
-- Expand: the trigger dropped is made again at once, over the same
-- columns and min_crawler_errors; an earlier aivis writes none of it (the
-- default, 1, is every crawler_errors) and keeps working.
ALTER TABLE webhooks ADD COLUMN min_crawler_errors INTEGER NOT NULL DEFAULT 1
  CHECK (min_crawler_errors BETWEEN 0 AND 1000000);
-- The fan-out reads it: the webhooks counter of cache_epoch moves with it.
DROP TRIGGER webhooks_epoch_u;
CREATE TRIGGER webhooks_epoch_u AFTER UPDATE ON webhooks
  WHEN OLD.id IS NOT NEW.id OR OLD.account_id IS NOT NEW.account_id OR OLD.client_id IS NOT NEW.client_id
    OR OLD.domain IS NOT NEW.domain OR OLD.url IS NOT NEW.url OR OLD.events IS NOT NEW.events
    OR OLD.min_score_change IS NOT NEW.min_score_change OR OLD.min_citation_change IS NOT NEW.min_citation_change
    OR OLD.min_crawler_errors IS NOT NEW.min_crawler_errors
    OR OLD.enabled IS NOT NEW.enabled
    OR OLD.disabled_reason IS NOT NEW.disabled_reason OR OLD.disabled_at IS NOT NEW.disabled_at
    OR OLD.secret IS NOT NEW.secret OR OLD.prev_secret IS NOT NEW.prev_secret OR OLD.prev_secret_end IS NOT NEW.prev_secret_end
    OR OLD.connector IS NOT NEW.connector OR OLD.name IS NOT NEW.name OR OLD.domains IS NOT NEW.domains
    OR OLD.settings IS NOT NEW.settings OR OLD.public_settings IS NOT NEW.public_settings
    OR OLD.secret_fields IS NOT NEW.secret_fields OR OLD.subscription IS NOT NEW.subscription
    OR OLD.deleted_at IS NOT NEW.deleted_at
  BEGIN UPDATE cache_epoch SET webhooks = webhooks + 1; END;


-- +goose Down
DROP TRIGGER webhooks_epoch_u;
ALTER TABLE webhooks DROP COLUMN min_crawler_errors;
CREATE TRIGGER webhooks_epoch_u AFTER UPDATE ON webhooks
  WHEN OLD.id IS NOT NEW.id OR OLD.account_id IS NOT NEW.account_id OR OLD.client_id IS NOT NEW.client_id
    OR OLD.domain IS NOT NEW.domain OR OLD.url IS NOT NEW.url OR OLD.events IS NOT NEW.events
    OR OLD.min_score_change IS NOT NEW.min_score_change OR OLD.min_citation_change IS NOT NEW.min_citation_change
    OR OLD.enabled IS NOT NEW.enabled
    OR OLD.disabled_reason IS NOT NEW.disabled_reason OR OLD.disabled_at IS NOT NEW.disabled_at
    OR OLD.secret IS NOT NEW.secret OR OLD.prev_secret IS NOT NEW.prev_secret OR OLD.prev_secret_end IS NOT NEW.prev_secret_end
    OR OLD.connector IS NOT NEW.connector OR OLD.name IS NOT NEW.name OR OLD.domains IS NOT NEW.domains
    OR OLD.settings IS NOT NEW.settings OR OLD.public_settings IS NOT NEW.public_settings
    OR OLD.secret_fields IS NOT NEW.secret_fields OR OLD.subscription IS NOT NEW.subscription
    OR OLD.deleted_at IS NOT NEW.deleted_at
  BEGIN UPDATE cache_epoch SET webhooks = webhooks + 1; END;

