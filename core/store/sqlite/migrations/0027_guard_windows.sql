-- +goose Up
-- The guards of failed authentications of the store counter (counter:
-- store), shared by every process on the file: a subject's window of a
-- guard (its start and end, Unix seconds) and the failures it counted.
-- Windows that have ended are pruned along guard_windows_ends.
CREATE TABLE guard_windows (
  guard   TEXT NOT NULL,
  subject BLOB NOT NULL,
  start   INTEGER NOT NULL,
  ends    INTEGER NOT NULL,
  count   INTEGER NOT NULL,
  PRIMARY KEY (guard, subject)
) STRICT, WITHOUT ROWID;
CREATE INDEX guard_windows_ends ON guard_windows (ends);

-- +goose Down
DROP TABLE guard_windows;
