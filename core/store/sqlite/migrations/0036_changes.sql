-- +goose Up
-- The changes made to a monitored domain's site (a rewritten page, new
-- FAQ markup), marked on its charts and measured for the lift they
-- caused. live_at is when the change went live; pages and prompts are
-- JSON arrays of the URLs or paths and of the prompts' texts it targets.
-- content_request_id is the content request whose published result made
-- it (NULL for one made by hand): an account has one change of a request.
CREATE TABLE domain_changes (
  id                 TEXT PRIMARY KEY,
  account_id         TEXT NOT NULL REFERENCES accounts(id),
  client_id          TEXT REFERENCES clients(id),
  domain_id          TEXT NOT NULL REFERENCES monitored_domains(id) ON DELETE CASCADE,
  title              TEXT NOT NULL,
  notes              TEXT NOT NULL,
  live_at            INTEGER NOT NULL,
  pages              TEXT NOT NULL,
  prompts            TEXT NOT NULL,
  content_request_id TEXT,
  created_at         INTEGER NOT NULL
) STRICT;
-- A domain's changes, the latest first.
CREATE INDEX domain_changes_domain ON domain_changes(domain_id, live_at, id);
CREATE UNIQUE INDEX domain_changes_content_request ON domain_changes(account_id, content_request_id)
  WHERE content_request_id IS NOT NULL;

-- +goose Down
DROP TABLE domain_changes;
