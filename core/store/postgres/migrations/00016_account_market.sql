-- +goose Up

-- An account's default market ("de-DE"), that of its domains that name
-- none; '' for none (the engines' own default). Authentication reads it
-- with the account: a change of it is a change of what the key caches
-- hold.
-- Expand: the trigger dropped is made again at once, over the same
-- columns and market; an earlier aivis writes none of market and keeps
-- working on it.
ALTER TABLE accounts ADD COLUMN market text NOT NULL DEFAULT '';
DROP TRIGGER accounts_bump_u ON accounts;
CREATE TRIGGER accounts_bump_u AFTER UPDATE ON accounts
  FOR EACH ROW WHEN ((OLD.id, OLD.name, OLD.tier, OLD.type, OLD.created_at, OLD.created_at_ns, OLD.market)
    IS DISTINCT FROM (NEW.id, NEW.name, NEW.tier, NEW.type, NEW.created_at, NEW.created_at_ns, NEW.market))
  EXECUTE FUNCTION cache_bump('keys');

-- +goose Down
DROP TRIGGER accounts_bump_u ON accounts;
CREATE TRIGGER accounts_bump_u AFTER UPDATE ON accounts
  FOR EACH ROW WHEN ((OLD.id, OLD.name, OLD.tier, OLD.type, OLD.created_at, OLD.created_at_ns)
    IS DISTINCT FROM (NEW.id, NEW.name, NEW.tier, NEW.type, NEW.created_at, NEW.created_at_ns))
  EXECUTE FUNCTION cache_bump('keys');
ALTER TABLE accounts DROP COLUMN market;
