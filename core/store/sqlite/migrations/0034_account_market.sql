-- +goose Up
-- An account's default market ("de-DE"), that of its domains that name
-- none; '' for none (the engines' own default).
ALTER TABLE accounts ADD COLUMN market TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE accounts DROP COLUMN market;
