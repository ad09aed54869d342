-- +goose Up
-- A monitored domain's markets: a JSON array of "language-COUNTRY" tags,
-- none for the domains kept before (scanned in the engines' default).
ALTER TABLE monitored_domains ADD COLUMN markets TEXT NOT NULL DEFAULT '[]';

-- +goose Down
ALTER TABLE monitored_domains DROP COLUMN markets;
