// Package people holds the dashboard's users: passwords (argon2id),
// sessions, invitations, the bootstrap owner and what each role may do.
package people

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
)

// Roles, from the most to the least allowed.
var Roles = []string{store.RoleOwner, store.RoleAdmin, store.RoleDeveloper, store.RoleViewer}

// Action is something a role may be allowed to do.
type Action int

// Actions, each allowed to a role and every role above it.
const (
	// Read: every page.
	Read Action = iota
	// Build: keys, webhooks, connections, domains and scans.
	Build
	// Manage: members (not owners), agency clients and default endpoints.
	Manage
	// Own: owners and the account itself.
	Own
)

var least = map[Action]string{Read: store.RoleViewer, Build: store.RoleDeveloper, Manage: store.RoleAdmin, Own: store.RoleOwner}

func rank(role string) int {
	i := slices.Index(Roles, role)
	if i < 0 {
		return len(Roles) // unknown: below viewer
	}
	return i
}

// Can reports whether role may do a.
func Can(role string, a Action) bool { return rank(role) <= rank(least[a]) }

// Require fails with PERMISSION_DENIED unless role may do a.
func Require(role string, a Action) error {
	if Can(role, a) {
		return nil
	}
	return ErrForbidden
}

// ErrForbidden is the error of an action the user's role does not allow.
var ErrForbidden = errors.New("people: your role does not allow this")

// ErrSignIn is the one answer to a failed sign-in, whatever was wrong.
var ErrSignIn = errors.New("people: the email or password is wrong")

// Durations.
const (
	SessionLifetime    = 12 * time.Hour
	InvitationLifetime = 7 * 24 * time.Hour
	MinPassword        = 12
	MaxPassword        = 256
)

// Service manages users, sessions and invitations.
type Service struct {
	Store    store.People
	Accounts *accounts.Service
	Now      func() time.Time
	// dummy is a hash checked when the email is unknown, so that a
	// sign-in takes as long whether or not the account exists.
	dummyOnce sync.Once
	dummy     string
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Principal is the account-level principal a user acts as: every scope,
// so that the services apply their own rules; what the role allows is
// checked before a service is called.
func Principal(a store.Account) auth.Principal {
	return auth.Principal{Principal: store.Principal{Account: a,
		Key: store.Key{AccountID: a.ID, Scopes: slices.Clone(auth.Scopes)}}}
}

func newToken() (token string, hash []byte) {
	token = randid.String(43)
	return token, auth.Hash(token)
}

// CheckPassword checks a new password's length.
func checkPassword(f *fault.Fields, field, pw string) {
	if n := utf8.RuneCountInString(pw); n < MinPassword || len(pw) > MaxPassword {
		f.Add(field, "must be %d to %d characters", MinPassword, MaxPassword)
	}
}

func normalEmail(f *fault.Fields, email string) string {
	email = strings.TrimSpace(email)
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || len(email) > 254 {
		f.Add("email", "must be an email address")
		return ""
	}
	return strings.ToLower(email)
}

// Bootstrap makes a one-time link token for the first owner when no user
// exists yet ("" when one does). Each call replaces the last link.
func (s *Service) Bootstrap(ctx context.Context) (string, error) {
	n, err := s.Store.CountUsers(ctx)
	if err != nil || n > 0 {
		return "", err
	}
	if err := s.Store.DeleteBootstrapInvitations(ctx); err != nil {
		return "", err
	}
	token, hash := newToken()
	now := s.now()
	err = s.Store.CreateInvitation(ctx, store.Invitation{TokenHash: hash, Role: store.RoleOwner, CreatedAt: now, ExpiresAt: now.Add(InvitationLifetime)})
	if err != nil {
		return "", err
	}
	return token, nil
}

// Invitation reads the invitation of a token (NOT_FOUND when it is used,
// withdrawn, expired or never was).
func (s *Service) Invitation(ctx context.Context, token string) (store.Invitation, error) {
	inv, err := s.Store.Invitation(ctx, auth.Hash(token), s.now())
	if errors.Is(err, store.ErrNotFound) {
		return inv, fault.New(fault.NotFound, "this invitation link is used, withdrawn or expired")
	}
	return inv, err
}

// Accept is what accepting an invitation needs. AccountName, Tier and
// Agency are for the bootstrap owner, who creates the account.
type Accept struct {
	Token       string
	Email       string
	Password    string
	AccountName string
	Tier        string
	Agency      bool
}

// AcceptInvitation consumes an invitation and makes its user.
func (s *Service) AcceptInvitation(ctx context.Context, in Accept) (store.User, error) {
	inv, err := s.Invitation(ctx, in.Token)
	if err != nil {
		return store.User{}, err
	}
	var f fault.Fields
	email := normalEmail(&f, in.Email)
	if inv.Email != "" && email != "" && email != inv.Email {
		f.Add("email", "must be the address the invitation was sent to (%s)", inv.Email)
	}
	checkPassword(&f, "password", in.Password)
	var acct *store.Account
	if inv.AccountID == "" {
		a, err := s.Accounts.New(in.AccountName, in.Tier, in.Agency)
		if err != nil {
			var fe *fault.Error
			if errors.As(err, &fe) {
				for _, d := range fe.Details {
					if d.Field == "name" {
						d.Field = "account_name"
					}
					f.Add(d.Field, "%s", d.Message)
				}
			} else {
				return store.User{}, err
			}
		}
		acct = &a
	}
	if err := f.Err(); err != nil {
		return store.User{}, err
	}
	hash, err := HashPassword(in.Password)
	if err != nil {
		return store.User{}, err
	}
	now := s.now()
	u := store.User{ID: randid.New("usr"), AccountID: inv.AccountID, Email: email, Role: inv.Role, PasswordHash: hash, CreatedAt: now, PasswordAt: now}
	if acct != nil {
		u.AccountID = acct.ID
	}
	err = s.Store.AcceptInvitation(ctx, auth.Hash(in.Token), u, acct)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return u, fault.New(fault.NotFound, "this invitation link is used, withdrawn or expired")
	case errors.Is(err, store.ErrConflict):
		return u, fault.Invalid(fault.FieldError{Field: "email", Message: "already has a user"})
	}
	return u, err
}

// SignedIn is a new session: its token goes to the browser, once.
type SignedIn struct {
	Token   string
	Session store.Session
	User    store.User
}

// SignIn checks an email and password and starts a new session.
func (s *Service) SignIn(ctx context.Context, email, password string) (SignedIn, error) {
	s.dummyOnce.Do(func() { s.dummy, _ = HashPassword(randid.String(20)) })
	u, err := s.Store.UserByEmail(ctx, strings.TrimSpace(email))
	if errors.Is(err, store.ErrNotFound) {
		_, _ = CheckPassword(s.dummy, password)
		return SignedIn{}, ErrSignIn
	} else if err != nil {
		return SignedIn{}, err
	}
	ok, err := CheckPassword(u.PasswordHash, password)
	if err != nil || !ok {
		return SignedIn{}, ErrSignIn
	}
	return s.startSession(ctx, u)
}

func (s *Service) startSession(ctx context.Context, u store.User) (SignedIn, error) {
	token, hash := newToken()
	now := s.now()
	// Expired records go as new sessions come: no other sweeper is needed.
	if err := s.Store.DeleteExpired(ctx, now); err != nil {
		return SignedIn{}, fmt.Errorf("people: %w", err)
	}
	sess := store.Session{TokenHash: hash, UserID: u.ID, CSRF: randid.String(43), CreatedAt: now, ExpiresAt: now.Add(SessionLifetime)}
	if err := s.Store.CreateSession(ctx, sess); err != nil {
		return SignedIn{}, fmt.Errorf("people: %w", err)
	}
	return SignedIn{Token: token, Session: sess, User: u}, nil
}

// Session finds the live session of a token.
func (s *Service) Session(ctx context.Context, token string) (store.Session, store.User, error) {
	if token == "" {
		return store.Session{}, store.User{}, store.ErrNotFound
	}
	return s.Store.SessionByHash(ctx, auth.Hash(token), s.now())
}

// SignOut ends a session on the server.
func (s *Service) SignOut(ctx context.Context, token string) error {
	return s.Store.DeleteSession(ctx, auth.Hash(token))
}

// ChangePassword checks the current password, sets the new one and ends
// every other session of the user.
func (s *Service) ChangePassword(ctx context.Context, u store.User, sessionToken, current, next string) error {
	var f fault.Fields
	if ok, err := CheckPassword(u.PasswordHash, current); err != nil || !ok {
		f.Add("current_password", "is not your current password")
	}
	checkPassword(&f, "new_password", next)
	if err := f.Err(); err != nil {
		return err
	}
	hash, err := HashPassword(next)
	if err != nil {
		return err
	}
	return s.Store.SetPassword(ctx, u.ID, hash, s.now(), auth.Hash(sessionToken))
}

// Invite makes an invitation to the actor's account; its token is in the
// link, shown once.
func (s *Service) Invite(ctx context.Context, actor store.User, email, role string) (string, error) {
	if err := s.mayGrant(actor, role); err != nil {
		return "", err
	}
	var f fault.Fields
	email = normalEmail(&f, email)
	if err := f.Err(); err != nil {
		return "", err
	}
	// Only this account's members are looked at: whether an address signs
	// in to another account is not this account's business.
	us, err := s.Store.ListUsers(ctx, actor.AccountID)
	if err != nil {
		return "", err
	}
	for _, u := range us {
		if u.Email == email {
			return "", fault.Invalid(fault.FieldError{Field: "email", Message: "is already a member"})
		}
	}
	token, hash := newToken()
	now := s.now()
	err = s.Store.CreateInvitation(ctx, store.Invitation{TokenHash: hash, AccountID: actor.AccountID, Email: email, Role: role,
		InvitedBy: actor.ID, CreatedAt: now, ExpiresAt: now.Add(InvitationLifetime)})
	return token, err
}

// mayGrant: admins manage every role but owner; owners every role.
func (s *Service) mayGrant(actor store.User, role string) error {
	if !slices.Contains(Roles, role) {
		return fault.Invalid(fault.FieldError{Field: "role", Message: "must be one of " + strings.Join(Roles, ", ")})
	}
	if err := Require(actor.Role, Manage); err != nil {
		return err
	}
	if role == store.RoleOwner {
		return Require(actor.Role, Own)
	}
	return nil
}

// member reads a user of the actor's account that the actor may manage.
func (s *Service) member(ctx context.Context, actor store.User, userID string) (store.User, error) {
	u, err := s.Store.User(ctx, userID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.AccountID != actor.AccountID) {
		return u, fault.New(fault.NotFound, "no user %s", userID)
	} else if err != nil {
		return u, err
	}
	if u.ID == actor.ID {
		return u, fault.New(fault.InvalidState, "you cannot change your own role or remove yourself")
	}
	return u, s.mayGrant(actor, u.Role)
}

// SetRole changes a member's role; their sessions end.
func (s *Service) SetRole(ctx context.Context, actor store.User, userID, role string) error {
	if _, err := s.member(ctx, actor, userID); err != nil {
		return err
	}
	if err := s.mayGrant(actor, role); err != nil {
		return err
	}
	return s.Store.SetRole(ctx, actor.AccountID, userID, role)
}

// Remove removes a member.
func (s *Service) Remove(ctx context.Context, actor store.User, userID string) error {
	if _, err := s.member(ctx, actor, userID); err != nil {
		return err
	}
	return s.Store.DeleteUser(ctx, actor.AccountID, userID)
}

// Withdraw deletes an invitation of the actor's account.
func (s *Service) Withdraw(ctx context.Context, actor store.User, tokenHash []byte) error {
	if err := Require(actor.Role, Manage); err != nil {
		return err
	}
	return s.Store.DeleteInvitation(ctx, actor.AccountID, tokenHash)
}

// OperatorInvite is an invitation made by the operator (aivis user
// invite), with any role, to an account that exists.
func (s *Service) OperatorInvite(ctx context.Context, accountID, email, role string) (string, error) {
	if _, err := s.Accounts.Store.Account(ctx, accountID); errors.Is(err, store.ErrNotFound) {
		return "", fault.New(fault.NotFound, "no account %s", accountID)
	} else if err != nil {
		return "", err
	}
	return s.Invite(ctx, store.User{AccountID: accountID, Role: store.RoleOwner}, email, role)
}
