-- +goose Up
-- Connector plugins an operator registered: the binary is started only if
-- its SHA-256 still matches.
CREATE TABLE plugins (
  name          TEXT PRIMARY KEY,
  path          TEXT NOT NULL,
  sha256        BLOB NOT NULL,
  kind          TEXT NOT NULL,
  version       TEXT NOT NULL,
  display_name  TEXT NOT NULL,
  registered_at INTEGER NOT NULL
) STRICT;

-- +goose Down
DROP TABLE plugins;
