-- +goose Up
-- The health of the registered plugins as each instance of the server
-- found them at its last check; rows of an instance that stopped
-- reporting are pruned.
CREATE TABLE plugin_health (
  instance   TEXT NOT NULL,
  plugin     TEXT NOT NULL,
  state      TEXT NOT NULL,
  restarts   INTEGER NOT NULL,
  problem    TEXT NOT NULL,
  checked_at INTEGER NOT NULL,
  PRIMARY KEY (plugin, instance)
) STRICT;

-- +goose Down
DROP TABLE plugin_health;
