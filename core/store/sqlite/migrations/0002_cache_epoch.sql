-- +goose Up
-- cache_epoch moves on every change to what the server caches (keys,
-- accounts, clients, budgets, active requests), and not on the writes of
-- request counts, so those do not empty the caches every second.
CREATE TABLE cache_epoch (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  n  INTEGER NOT NULL
) STRICT;
INSERT INTO cache_epoch (id, n) VALUES (1, 0);

CREATE TRIGGER accounts_epoch_i AFTER INSERT ON accounts BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER accounts_epoch_u AFTER UPDATE ON accounts BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER accounts_epoch_d AFTER DELETE ON accounts BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER clients_epoch_u AFTER UPDATE ON clients BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER clients_epoch_d AFTER DELETE ON clients BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER api_keys_epoch_i AFTER INSERT ON api_keys BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER api_keys_epoch_u AFTER UPDATE OF account_id, client_id, key_hash, secret_hash, scopes, expires_at, revoked_at ON api_keys
  BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER api_keys_epoch_d AFTER DELETE ON api_keys BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER budget_months_epoch_i AFTER INSERT ON budget_months BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER budget_months_epoch_u AFTER UPDATE ON budget_months BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER content_requests_epoch_i AFTER INSERT ON content_requests BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER content_requests_epoch_u AFTER UPDATE OF status, account_id ON content_requests BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER content_requests_epoch_d AFTER DELETE ON content_requests BEGIN UPDATE cache_epoch SET n = n + 1; END;

-- +goose Down
DROP TRIGGER accounts_epoch_i;
DROP TRIGGER accounts_epoch_u;
DROP TRIGGER accounts_epoch_d;
DROP TRIGGER clients_epoch_u;
DROP TRIGGER clients_epoch_d;
DROP TRIGGER api_keys_epoch_i;
DROP TRIGGER api_keys_epoch_u;
DROP TRIGGER api_keys_epoch_d;
DROP TRIGGER budget_months_epoch_i;
DROP TRIGGER budget_months_epoch_u;
DROP TRIGGER content_requests_epoch_i;
DROP TRIGGER content_requests_epoch_u;
DROP TRIGGER content_requests_epoch_d;
DROP TABLE cache_epoch;
