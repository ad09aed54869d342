-- +goose Up
-- The claims of a content request handed back by a server that stopped
-- gracefully: they do not count against the engine's attempts, while each
-- claim keeps its own number (attempts never goes down).
ALTER TABLE content_requests ADD COLUMN handbacks INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE content_requests DROP COLUMN handbacks;
