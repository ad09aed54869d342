-- +goose Up
-- The content engine. A processing request holds a lease, renewed while it
-- runs; one whose process died is claimed again when the lease ends, and
-- its attempts count the claims. step is the step it is at; work holds
-- what its paid steps produced (JSON), so that a retry pays for none twice.
ALTER TABLE content_requests ADD COLUMN step TEXT;
ALTER TABLE content_requests ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE content_requests ADD COLUMN lease_until INTEGER;
ALTER TABLE content_requests ADD COLUMN work TEXT;
CREATE INDEX content_requests_queue ON content_requests(status, created_at)
  WHERE status IN ('queued', 'processing');
CREATE INDEX content_requests_owner ON content_requests(account_id, client_id, started_at);

-- +goose Down
DROP INDEX content_requests_owner;
DROP INDEX content_requests_queue;
ALTER TABLE content_requests DROP COLUMN work;
ALTER TABLE content_requests DROP COLUMN lease_until;
ALTER TABLE content_requests DROP COLUMN attempts;
ALTER TABLE content_requests DROP COLUMN step;
