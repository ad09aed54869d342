package store

import (
	"context"
	"time"
)

// Roles of a dashboard user, from the most to the least allowed.
const (
	RoleOwner     = "owner"
	RoleAdmin     = "admin"
	RoleDeveloper = "developer"
	RoleViewer    = "viewer"
)

// User is a person who signs in to the dashboard for one account.
type User struct {
	ID           string
	AccountID    string
	Email        string
	Role         string
	PasswordHash string // an argon2id PHC string
	CreatedAt    time.Time
	PasswordAt   time.Time // when the password was last set
}

// Session is a signed-in browser. Only the SHA-256 of its token is kept.
type Session struct {
	TokenHash []byte
	UserID    string
	CSRF      string // the synchroniser token of the session's forms
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Invitation lets whoever holds its token join an account with a role.
// AccountID "" is the bootstrap owner's: accepting it creates the account.
type Invitation struct {
	TokenHash []byte
	AccountID string
	Email     string
	Role      string
	InvitedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// People reads and writes dashboard users, sessions and invitations. A
// user's email is unique and found in any case (ASCII); a session's and
// an invitation's token hash are unique (ErrConflict). An unknown user,
// and for SetRole, DeleteUser and DeleteInvitation another account's, is
// ErrNotFound.
type People interface {
	CountUsers(ctx context.Context) (int, error)
	User(ctx context.Context, id string) (User, error)
	UserByEmail(ctx context.Context, email string) (User, error)
	// ListUsers lists an account's users, oldest first.
	ListUsers(ctx context.Context, accountID string) ([]User, error)
	// SetPassword sets a user's password and ends every session of theirs
	// but keep (nil: all).
	SetPassword(ctx context.Context, userID, hash string, at time.Time, keep []byte) error
	// SetRole changes the role of an account's user and ends their sessions.
	SetRole(ctx context.Context, accountID, userID, role string) error
	// DeleteUser removes an account's user with their sessions.
	DeleteUser(ctx context.Context, accountID, userID string) error

	CreateSession(ctx context.Context, s Session) error
	// SessionByHash finds a session that expires after now, with its user.
	SessionByHash(ctx context.Context, hash []byte, now time.Time) (Session, User, error)
	DeleteSession(ctx context.Context, hash []byte) error
	// DeleteExpired forgets sessions and invitations expired at now.
	DeleteExpired(ctx context.Context, now time.Time) error

	CreateInvitation(ctx context.Context, inv Invitation) error
	// Invitation finds an unexpired invitation at now; a bootstrap
	// (account-less) invitation only while no user exists.
	Invitation(ctx context.Context, hash []byte, now time.Time) (Invitation, error)
	// ListInvitations lists an account's invitations that expire after
	// now, oldest first.
	ListInvitations(ctx context.Context, accountID string, now time.Time) ([]Invitation, error)
	DeleteInvitation(ctx context.Context, accountID string, hash []byte) error
	// DeleteBootstrapInvitations forgets every bootstrap invitation.
	DeleteBootstrapInvitations(ctx context.Context) error
	// AcceptInvitation consumes an invitation and adds its user, and, when
	// account is not nil, creates that account first, in one transaction
	// (ErrNotFound when the invitation was consumed meanwhile, expired by
	// the user's CreatedAt, or is a bootstrap invitation and a user exists;
	// ErrConflict when the email is taken).
	AcceptInvitation(ctx context.Context, hash []byte, u User, account *Account) error
}
