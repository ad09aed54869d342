-- +goose Up
-- The answers of completed scans, the evidence of their figures, each
-- written with its scan's end and kept until the retention of answers
-- (answer_retention) forgets it: what the list filters on as columns, the
-- rest (sources, citations, queries, the sentences naming the brand) as
-- JSON in detail.
CREATE TABLE scan_answers (
  scan_id          TEXT NOT NULL REFERENCES scans(id) ON DELETE CASCADE,
  seq              INTEGER NOT NULL,
  prompt_index     INTEGER NOT NULL,
  prompt           TEXT NOT NULL,
  intent           TEXT NOT NULL,
  run              INTEGER NOT NULL,
  engine           TEXT NOT NULL,
  kind             TEXT NOT NULL,
  text             TEXT NOT NULL,
  error            TEXT,
  sources_reported INTEGER NOT NULL,
  mentioned        INTEGER NOT NULL,
  cited            INTEGER NOT NULL,
  position         INTEGER NOT NULL,
  detail           TEXT NOT NULL,
  recorded_at      INTEGER NOT NULL,
  PRIMARY KEY (scan_id, seq)
) STRICT;
CREATE INDEX scan_answers_recorded ON scan_answers(recorded_at);

-- +goose Down
DROP TABLE scan_answers;
