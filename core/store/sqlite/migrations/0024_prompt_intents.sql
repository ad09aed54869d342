-- +goose Up
-- Each of an owner's prompts carries an intent tag: prompt_intents is a
-- JSON array of them beside prompts, one per prompt. The prompts kept
-- before are the owner's own ('custom').
ALTER TABLE monitored_domains ADD COLUMN prompt_intents TEXT NOT NULL DEFAULT '[]';
UPDATE monitored_domains SET prompt_intents = (SELECT json_group_array('custom') FROM json_each(monitored_domains.prompts));

-- +goose Down
ALTER TABLE monitored_domains DROP COLUMN prompt_intents;
