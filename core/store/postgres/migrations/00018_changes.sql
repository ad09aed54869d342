-- +goose Up
-- The changes made to a monitored domain's site (a rewritten page, new
-- FAQ markup), marked on its charts and measured for the lift they
-- caused. live_at is when the change went live; pages and prompts are
-- the URLs or paths and the prompts' texts it targets.
-- content_request_id is the content request whose published result made
-- it (NULL for one made by hand): an account has one change of a request.
CREATE TABLE domain_changes (
  id                 text COLLATE "C" PRIMARY KEY,
  account_id         text COLLATE "C" NOT NULL REFERENCES accounts (id),
  client_id          text COLLATE "C" REFERENCES clients (id),
  domain_id          text COLLATE "C" NOT NULL REFERENCES monitored_domains (id) ON DELETE CASCADE,
  title              text NOT NULL,
  notes              text NOT NULL,
  live_at            timestamptz NOT NULL,
  live_at_ns         smallint NOT NULL,
  pages              text[] NOT NULL,
  prompts            text[] NOT NULL,
  content_request_id text COLLATE "C",
  created_at         timestamptz NOT NULL,
  created_at_ns      smallint NOT NULL
);
-- A domain's changes, the latest first.
CREATE INDEX domain_changes_domain ON domain_changes (domain_id, live_at, live_at_ns, id);
CREATE UNIQUE INDEX domain_changes_content_request ON domain_changes (account_id, content_request_id)
  WHERE content_request_id IS NOT NULL;

-- +goose Down
DROP TABLE domain_changes;
