-- +goose Up

-- Each of an owner's prompts carries an intent tag: prompt_intents beside
-- prompts, one per prompt. The prompts kept before are the owner's own
-- ('custom').
ALTER TABLE monitored_domains ADD COLUMN prompt_intents text[] NOT NULL DEFAULT '{}';
UPDATE monitored_domains SET prompt_intents = array_fill('custom'::text, ARRAY[cardinality(prompts)]);
ALTER TABLE monitored_domains ALTER COLUMN prompt_intents DROP DEFAULT;

-- +goose Down
ALTER TABLE monitored_domains DROP COLUMN prompt_intents;
