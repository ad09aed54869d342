-- +goose Up

-- The guards of failed authentications of the store counter (counter:
-- store), shared by every instance on the database: a subject's window of
-- a guard (its start and end, Unix seconds) and the failures it counted.
-- Windows that have ended are pruned along guard_windows_ends.
CREATE TABLE guard_windows (
  guard   text COLLATE "C" NOT NULL,
  subject bytea NOT NULL,
  start   bigint NOT NULL,
  ends    bigint NOT NULL,
  count   bigint NOT NULL,
  PRIMARY KEY (guard, subject)
);
CREATE INDEX guard_windows_ends ON guard_windows (ends);

-- +goose Down
DROP TABLE guard_windows;
