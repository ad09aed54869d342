-- +goose Up
-- A reading a scan recorded keeps the version of the score's formula it
-- was computed with, so that readings of different formulas are told
-- apart; readings of other sources have none (NULL).
ALTER TABLE visibility_readings ADD COLUMN formula_version INTEGER CHECK (formula_version > 0);

-- +goose Down
ALTER TABLE visibility_readings DROP COLUMN formula_version;
