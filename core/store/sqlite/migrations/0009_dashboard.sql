-- +goose Up
-- The dashboard's people: users of an account with a role, their sessions
-- (only a hash of each token is kept) and invitations (one-time tokens,
-- hashed). An invitation without an account is the bootstrap owner's: its
-- acceptance creates the account.
CREATE TABLE users (
  id            TEXT PRIMARY KEY,
  account_id    TEXT NOT NULL REFERENCES accounts(id),
  email         TEXT NOT NULL COLLATE NOCASE UNIQUE,
  role          TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
  password_hash TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  password_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX users_account ON users(account_id, created_at);

CREATE TABLE sessions (
  token_hash   BLOB PRIMARY KEY,
  user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  csrf         TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_user ON sessions(user_id);

CREATE TABLE invitations (
  token_hash  BLOB PRIMARY KEY,
  account_id  TEXT REFERENCES accounts(id),
  email       TEXT NOT NULL,
  role        TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
  invited_by  TEXT,
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX invitations_account ON invitations(account_id, created_at);

-- +goose Down
DROP TABLE invitations;
DROP TABLE sessions;
DROP TABLE users;
