-- +goose Up
-- Work is claimed in the store, so that several processes on one database
-- never hold one item at once. A delivery's lease is the claim that holds
-- it (a token unique per claim) and when the lease ends; its outcome is
-- recorded only under that claim. A scan and a content request record
-- which process holds them; their claim's number (attempts) fences what a
-- late holder would write.
ALTER TABLE webhook_deliveries ADD COLUMN lease TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN lease_until INTEGER;
ALTER TABLE scans ADD COLUMN holder TEXT;
ALTER TABLE content_requests ADD COLUMN holder TEXT;

-- One active scan per monitored domain (its owner's): a second queued
-- while one is queued or running is refused. Any pair an older race left
-- is settled first: the oldest stays, the others fail.
UPDATE scans SET status = 'failed', error = 'superseded by an earlier scan of the domain', lease_until = NULL,
  finished_at = coalesce(finished_at, created_at)
  WHERE status IN ('queued', 'running') AND EXISTS (
    SELECT 1 FROM scans o WHERE o.domain_id = scans.domain_id AND o.status IN ('queued', 'running')
      AND (o.created_at < scans.created_at OR (o.created_at = scans.created_at AND o.id < scans.id)));
CREATE UNIQUE INDEX scans_active ON scans(domain_id) WHERE status IN ('queued', 'running');

-- +goose Down
-- Irreversible: it failed every queued or running scan superseded by an earlier one of its domain, and what they were is not kept
