-- +goose Up

-- The market an answer's prompt was asked in ("de-DE"), '' for the
-- answers of a scan that asked none and those kept before markets.
ALTER TABLE scan_answers ADD COLUMN market text COLLATE "C" NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE scan_answers DROP COLUMN market;
