-- +goose Up
-- cache_epoch gets a counter for webhooks and connections, which the
-- fan-out's match of an event's targets is cached under. It moves when a
-- target is added or removed, or when what matching and delivering read
-- changes; not on the failure counts and success times the dispatcher
-- writes after attempts (UpdateWebhook sets every column, hence WHEN).
ALTER TABLE cache_epoch ADD COLUMN webhooks INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER webhooks_epoch_i AFTER INSERT ON webhooks BEGIN UPDATE cache_epoch SET webhooks = webhooks + 1; END;
CREATE TRIGGER webhooks_epoch_d AFTER DELETE ON webhooks BEGIN UPDATE cache_epoch SET webhooks = webhooks + 1; END;
CREATE TRIGGER webhooks_epoch_u AFTER UPDATE ON webhooks
  WHEN OLD.id IS NOT NEW.id OR OLD.account_id IS NOT NEW.account_id OR OLD.client_id IS NOT NEW.client_id
    OR OLD.domain IS NOT NEW.domain OR OLD.url IS NOT NEW.url OR OLD.events IS NOT NEW.events
    OR OLD.min_score_change IS NOT NEW.min_score_change OR OLD.enabled IS NOT NEW.enabled
    OR OLD.disabled_reason IS NOT NEW.disabled_reason OR OLD.disabled_at IS NOT NEW.disabled_at
    OR OLD.secret IS NOT NEW.secret OR OLD.prev_secret IS NOT NEW.prev_secret OR OLD.prev_secret_end IS NOT NEW.prev_secret_end
    OR OLD.connector IS NOT NEW.connector OR OLD.name IS NOT NEW.name OR OLD.domains IS NOT NEW.domains
    OR OLD.settings IS NOT NEW.settings OR OLD.public_settings IS NOT NEW.public_settings
    OR OLD.secret_fields IS NOT NEW.secret_fields OR OLD.subscription IS NOT NEW.subscription
  BEGIN UPDATE cache_epoch SET webhooks = webhooks + 1; END;

-- +goose Down
DROP TRIGGER webhooks_epoch_i;
DROP TRIGGER webhooks_epoch_d;
DROP TRIGGER webhooks_epoch_u;
ALTER TABLE cache_epoch DROP COLUMN webhooks;
