-- +goose Up

-- The answers of completed scans, the evidence of their figures, each
-- written with its scan's end and kept until the retention of answers
-- (answer_retention) forgets it: what the list filters on as columns, the
-- rest (sources, citations, queries, the sentences naming the brand) as
-- JSON in detail.
CREATE TABLE scan_answers (
  scan_id          text COLLATE "C" NOT NULL REFERENCES scans (id) ON DELETE CASCADE,
  seq              integer NOT NULL,
  prompt_index     integer NOT NULL,
  prompt           text NOT NULL,
  intent           text NOT NULL,
  run              integer NOT NULL,
  engine           text NOT NULL,
  kind             text NOT NULL,
  text             text NOT NULL,
  error            text,
  sources_reported boolean NOT NULL,
  mentioned        boolean NOT NULL,
  cited            boolean NOT NULL,
  position         integer NOT NULL,
  detail           json NOT NULL,
  recorded_at      timestamptz NOT NULL,
  recorded_at_ns   smallint NOT NULL,
  PRIMARY KEY (scan_id, seq)
);
CREATE INDEX scan_answers_recorded ON scan_answers (recorded_at, recorded_at_ns);

-- +goose Down
DROP TABLE scan_answers;
