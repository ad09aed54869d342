package store

import (
	"context"
	"time"
)

// Account types.
const (
	AccountStandard = "standard"
	AccountAgency   = "agency"
)

// Account is a customer of aivis.
type Account struct {
	ID   string
	Name string
	Tier string // a limits.Tier name
	Type string // AccountStandard or AccountAgency
	// Market is the market a domain of the account is scanned in when it
	// names none, as its language and country ("de-DE"); "" none.
	Market    string
	CreatedAt time.Time
}

// Client is one of an agency account's clients.
type Client struct {
	ID        string
	AccountID string
	Name      string
	CreatedAt time.Time
}

// Key is an API key record. The key and secret themselves are never stored:
// only their SHA-256 hashes and a display hint.
type Key struct {
	ID         string
	AccountID  string
	ClientID   string // empty for an account-level key
	Name       string
	KeyHash    []byte
	SecretHash []byte
	Hint       string
	Scopes     []string
	ExpiresAt  time.Time // zero: never
	RevokedAt  time.Time // zero: not revoked
	CreatedAt  time.Time
	LastUsedAt time.Time
}

// Principal is a key with its account, as authentication needs it.
type Principal struct {
	Key     Key
	Account Account
}

// Accounts reads and writes accounts and agency clients. Ids are unique
// (ErrConflict on a second create); a client belongs to one account, and
// Client answers ErrNotFound for another account's.
type Accounts interface {
	CreateAccount(ctx context.Context, a Account) error
	Account(ctx context.Context, id string) (Account, error)
	// ListAccounts lists every account, oldest first (then by id).
	ListAccounts(ctx context.Context) ([]Account, error)
	SetTier(ctx context.Context, id, tier string) error
	// SetMarket sets an account's default market ("" none).
	SetMarket(ctx context.Context, id, market string) error
	CreateClient(ctx context.Context, c Client) error
	Client(ctx context.Context, accountID, id string) (Client, error)
	// ListClients lists an account's clients, oldest first (then by id).
	ListClients(ctx context.Context, accountID string) ([]Client, error)
}

// Keys reads and writes API keys. A key's id and hash are unique
// (ErrConflict); a client key needs its client. CreateKey leaves
// LastUsedAt out: SaveCounts moves it.
// A change to a key, its account or its tier is seen by the next
// PrincipalByKeyHash of every handle on the store, whatever made it (the
// server, the CLI, another instance).
type Keys interface {
	CreateKey(ctx context.Context, k Key) error
	// PrincipalByKeyHash finds a key, revoked or not, with its account:
	// of the key, what authentication reads (its id, account, client,
	// secret hash, scopes, expiry and revocation), not its name, hint,
	// hashes or times of creation and last use.
	PrincipalByKeyHash(ctx context.Context, hash []byte) (Principal, error)
	Key(ctx context.Context, id string) (Key, error)
	// ListKeys lists an account's keys, oldest first (then by id).
	ListKeys(ctx context.Context, accountID string) ([]Key, error)
	// RevokeKey sets the key's revocation time to the earlier of at and
	// the time it has, so that a revocation is never postponed, and
	// returns the key (ErrNotFound when there is none).
	RevokeKey(ctx context.Context, id string, at time.Time) (Key, error)
}
