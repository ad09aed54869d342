-- +goose Up
-- The store writes every column of a content request on each update, so
-- "UPDATE OF status" fired on every lease renewal, step and charge of a
-- processing request and emptied the server's read caches (keys, budgets)
-- each time. What the caches read of content_requests is an account's
-- count of active requests: the epoch now moves only when a request's
-- status or account really changes.
DROP TRIGGER content_requests_epoch_u;
CREATE TRIGGER content_requests_epoch_u AFTER UPDATE OF status, account_id ON content_requests
  WHEN OLD.status IS NOT NEW.status OR OLD.account_id IS NOT NEW.account_id
  BEGIN UPDATE cache_epoch SET n = n + 1; END;

-- +goose Down
DROP TRIGGER content_requests_epoch_u;
CREATE TRIGGER content_requests_epoch_u AFTER UPDATE OF status, account_id ON content_requests BEGIN UPDATE cache_epoch SET n = n + 1; END;
