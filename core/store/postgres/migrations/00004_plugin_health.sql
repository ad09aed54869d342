-- +goose Up

-- The health of the registered plugins as each instance of the server
-- found them at its last check; rows of an instance that stopped
-- reporting are pruned.
CREATE TABLE plugin_health (
  instance      text COLLATE "C" NOT NULL,
  plugin        text COLLATE "C" NOT NULL,
  state         text NOT NULL,
  restarts      integer NOT NULL,
  problem       text NOT NULL,
  checked_at    timestamptz NOT NULL,
  checked_at_ns smallint NOT NULL,
  PRIMARY KEY (plugin, instance)
);

-- +goose Down
DROP TABLE plugin_health;
