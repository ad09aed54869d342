-- +goose Up
-- Monitored domains: what the visibility engine scans for an owner (an
-- account, or one agency client), with the brand names, competitors,
-- topics and prompts its probes use. JSON arrays of strings.
CREATE TABLE monitored_domains (
  id           TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL REFERENCES accounts(id),
  client_id    TEXT REFERENCES clients(id),
  domain       TEXT NOT NULL,
  brands       TEXT NOT NULL,
  aliases      TEXT NOT NULL,
  competitors  TEXT NOT NULL,
  topics       TEXT NOT NULL,
  prompts      TEXT NOT NULL,
  next_scan_at INTEGER,
  last_scan_at INTEGER,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX monitored_domains_owner_domain ON monitored_domains(account_id, coalesce(client_id, ''), domain);
CREATE INDEX monitored_domains_list ON monitored_domains(account_id, client_id, created_at DESC, id DESC);
CREATE INDEX monitored_domains_due ON monitored_domains(next_scan_at);

-- +goose Down
DROP TABLE monitored_domains;
