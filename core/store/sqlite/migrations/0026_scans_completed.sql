-- +goose Up
-- The last completed scan of an owner's domain (LatestScan, and
-- LatestScans for every domain of the dashboard's overview at once) is a
-- search of this index, where it was a walk of every completed scan.
CREATE INDEX scans_completed ON scans(account_id, domain, client_id, finished_at DESC, id DESC) WHERE status = 'completed';

-- +goose Down
DROP INDEX scans_completed;
