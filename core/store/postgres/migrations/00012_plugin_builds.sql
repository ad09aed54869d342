-- +goose Up
-- The trusted builds of each registered plugin, by the SHA-256 of its
-- binary: an instance starts the one it finds, so that instances of two
-- versions each run their own. The plugins row keeps the first build's
-- path and SHA-256, which a previous version reads.
CREATE TABLE plugin_builds (
  plugin           text COLLATE "C" NOT NULL,
  sha256           bytea NOT NULL,
  path             text NOT NULL,
  version          text NOT NULL,
  registered_at    timestamptz NOT NULL,
  registered_at_ns smallint NOT NULL,
  PRIMARY KEY (plugin, sha256)
);
INSERT INTO plugin_builds (plugin, sha256, path, version, registered_at, registered_at_ns)
  SELECT name, sha256, path, version, registered_at, registered_at_ns FROM plugins;
-- The build an instance has of a plugin (empty when it found none).
ALTER TABLE plugin_health ADD COLUMN sha256 bytea NOT NULL DEFAULT '\x';

-- +goose Down
ALTER TABLE plugin_health DROP COLUMN sha256;
DROP TABLE plugin_builds;
