-- +goose Up
-- The trusted builds of each registered plugin, by the SHA-256 of its
-- binary: an instance starts the one it finds, so that instances of two
-- versions each run their own. The plugins row keeps the first build's
-- path and SHA-256, which a previous version reads.
CREATE TABLE plugin_builds (
  plugin        TEXT NOT NULL,
  sha256        BLOB NOT NULL,
  path          TEXT NOT NULL,
  version       TEXT NOT NULL,
  registered_at INTEGER NOT NULL,
  PRIMARY KEY (plugin, sha256)
) STRICT;
INSERT INTO plugin_builds (plugin, sha256, path, version, registered_at)
  SELECT name, sha256, path, version, registered_at FROM plugins;
-- The build an instance has of a plugin ('' when it found none).
ALTER TABLE plugin_health ADD COLUMN sha256 BLOB NOT NULL DEFAULT x'';

-- +goose Down
ALTER TABLE plugin_health DROP COLUMN sha256;
DROP TABLE plugin_builds;
