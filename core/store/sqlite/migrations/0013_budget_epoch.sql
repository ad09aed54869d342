-- +goose Up
-- The budget ledger and the active content requests get their own counter
-- in cache_epoch: the content engine changes them at every step of every
-- request (a charge, a claim, an end), and with one counter each change
-- emptied the key cache too, which every API request reads. n now moves on
-- keys, accounts and clients; budgets on budget_months and on the inserts,
-- deletes and changes of status or account of content_requests (0011).
ALTER TABLE cache_epoch ADD COLUMN budgets INTEGER NOT NULL DEFAULT 0;
DROP TRIGGER budget_months_epoch_i;
DROP TRIGGER budget_months_epoch_u;
DROP TRIGGER content_requests_epoch_i;
DROP TRIGGER content_requests_epoch_u;
DROP TRIGGER content_requests_epoch_d;
CREATE TRIGGER budget_months_epoch_i AFTER INSERT ON budget_months BEGIN UPDATE cache_epoch SET budgets = budgets + 1; END;
CREATE TRIGGER budget_months_epoch_u AFTER UPDATE ON budget_months BEGIN UPDATE cache_epoch SET budgets = budgets + 1; END;
CREATE TRIGGER content_requests_epoch_i AFTER INSERT ON content_requests BEGIN UPDATE cache_epoch SET budgets = budgets + 1; END;
CREATE TRIGGER content_requests_epoch_u AFTER UPDATE OF status, account_id ON content_requests
  WHEN OLD.status IS NOT NEW.status OR OLD.account_id IS NOT NEW.account_id
  BEGIN UPDATE cache_epoch SET budgets = budgets + 1; END;
CREATE TRIGGER content_requests_epoch_d AFTER DELETE ON content_requests BEGIN UPDATE cache_epoch SET budgets = budgets + 1; END;

-- +goose Down
DROP TRIGGER budget_months_epoch_i;
DROP TRIGGER budget_months_epoch_u;
DROP TRIGGER content_requests_epoch_i;
DROP TRIGGER content_requests_epoch_u;
DROP TRIGGER content_requests_epoch_d;
ALTER TABLE cache_epoch DROP COLUMN budgets;
CREATE TRIGGER budget_months_epoch_i AFTER INSERT ON budget_months BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER budget_months_epoch_u AFTER UPDATE ON budget_months BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER content_requests_epoch_i AFTER INSERT ON content_requests BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER content_requests_epoch_u AFTER UPDATE OF status, account_id ON content_requests
  WHEN OLD.status IS NOT NEW.status OR OLD.account_id IS NOT NEW.account_id
  BEGIN UPDATE cache_epoch SET n = n + 1; END;
CREATE TRIGGER content_requests_epoch_d AFTER DELETE ON content_requests BEGIN UPDATE cache_epoch SET n = n + 1; END;
