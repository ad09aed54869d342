-- +goose Up
-- The claim of the next content request (content_queue.go) ranks the
-- accounts, then the clients, with queued requests: by their requests
-- processing, their last start and their oldest queued request. The
-- partial index of 0008 (status IN (...)) cannot serve "status = 'queued'",
-- so each claim walked every request the accounts ever made, under the
-- write lock (160 ms a claim with 200,000 ended requests). These make
-- each part of the claim a search: the queued and processing requests by
-- owner in queue order, and an account's last start.
CREATE INDEX content_requests_waiting ON content_requests(status, account_id, client_id, created_at, id);
CREATE INDEX content_requests_account_start ON content_requests(account_id, started_at);

-- +goose Down
DROP INDEX content_requests_account_start;
DROP INDEX content_requests_waiting;
