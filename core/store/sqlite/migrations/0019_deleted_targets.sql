-- +goose Up
-- A deleted webhook or connection stays, without its secrets, as long as
-- its deliveries: its delivery log is readable until retention removes it
-- (then the row goes too). deleted_at marks it; it is neither matched,
-- listed, claimed nor changed any more.
ALTER TABLE webhooks ADD COLUMN deleted_at INTEGER;
CREATE INDEX webhooks_deleted ON webhooks(deleted_at) WHERE deleted_at IS NOT NULL;
-- Deleting is a change of what the fan-out matches: the webhooks counter
-- of cache_epoch moves with deleted_at as with the other columns it reads.
DROP TRIGGER webhooks_epoch_u;
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

-- +goose Down
-- Irreversible: webhooks and connections deleted since are rows marked deleted_at, which the schema before it would take for live ones
