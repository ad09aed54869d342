-- +goose Up

-- The processes that hold work claimed in the store (deliveries, scans,
-- content requests), each named by its holder id. A live one writes seen
-- every few seconds (the database's clock); one unseen for longer than a
-- sweep allows is dead, and the first survivor to notice ends its leases
-- and forgets it (holders.go).
CREATE TABLE holders (
  id      text COLLATE "C" PRIMARY KEY,
  started timestamptz NOT NULL DEFAULT now(),
  seen    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE holders;
