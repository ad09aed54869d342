-- +goose Up
-- A webhook's or connection's least change of an engine's citation rate,
-- in percentage points, that a citation_change must carry to reach it.
ALTER TABLE webhooks ADD COLUMN min_citation_change INTEGER NOT NULL DEFAULT 10
  CHECK (min_citation_change BETWEEN 0 AND 100);
-- The fan-out reads it: the webhooks counter of cache_epoch moves with it.
DROP TRIGGER webhooks_epoch_u;
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

-- +goose Down
DROP TRIGGER webhooks_epoch_u;
ALTER TABLE webhooks DROP COLUMN min_citation_change;
CREATE TRIGGER webhooks_epoch_u AFTER UPDATE ON webhooks
  WHEN OLD.id IS NOT NEW.id OR OLD.account_id IS NOT NEW.account_id OR OLD.client_id IS NOT NEW.client_id
    OR OLD.domain IS NOT NEW.domain OR OLD.url IS NOT NEW.url OR OLD.events IS NOT NEW.events
    OR OLD.min_score_change IS NOT NEW.min_score_change OR OLD.enabled IS NOT NEW.enabled
    OR OLD.disabled_reason IS NOT NEW.disabled_reason OR OLD.disabled_at IS NOT NEW.disabled_at
    OR OLD.secret IS NOT NEW.secret OR OLD.prev_secret IS NOT NEW.prev_secret OR OLD.prev_secret_end IS NOT NEW.prev_secret_end
    OR OLD.connector IS NOT NEW.connector OR OLD.name IS NOT NEW.name OR OLD.domains IS NOT NEW.domains
    OR OLD.settings IS NOT NEW.settings OR OLD.public_settings IS NOT NEW.public_settings
    OR OLD.secret_fields IS NOT NEW.secret_fields OR OLD.subscription IS NOT NEW.subscription
    OR OLD.deleted_at IS NOT NEW.deleted_at
  BEGIN UPDATE cache_epoch SET webhooks = webhooks + 1; END;
