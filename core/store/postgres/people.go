package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/store"
)

// People. An email is unique in any case of its ASCII letters: a unique
// index of lower(email), email being "C" text (lower folds ASCII only).
// Accepting an invitation is one SERIALIZABLE transaction: of two accepts
// of one invitation, or of two bootstrap invitations while no user
// exists, one commits and the other runs again and finds it gone.

const userColumns = `u.id, u.account_id, u.email, u.role, u.password_hash, u.created_at, u.created_at_ns, u.password_at, u.password_at_ns`

func scanUser(s scanner, extra ...any) (store.User, error) {
	var u store.User
	var created, pw tcol
	err := s.Scan(append([]any{&u.ID, &u.AccountID, &u.Email, &u.Role, &u.PasswordHash, &created.t, &created.ns, &pw.t, &pw.ns}, extra...)...)
	u.CreatedAt, u.PasswordAt = created.time(), pw.time()
	return u, err
}

// CountUsers counts every dashboard user.
func (db *DB) CountUsers(ctx context.Context) (int, error) {
	return count(ctx, db.pool, "users", `SELECT count(*) FROM users`)
}

// User reads one user.
func (db *DB) User(ctx context.Context, id string) (store.User, error) {
	u, err := scanUser(db.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users u WHERE u.id = $1`, id))
	if err != nil {
		return u, fmt.Errorf("postgres: user: %w", notFound(err))
	}
	return u, nil
}

// UserByEmail finds a user by email, in any case of its ASCII letters.
func (db *DB) UserByEmail(ctx context.Context, email string) (store.User, error) {
	u, err := scanUser(db.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users u WHERE lower(u.email) = lower($1::text COLLATE "C")`, email))
	if err != nil {
		return u, fmt.Errorf("postgres: user by email: %w", notFound(err))
	}
	return u, nil
}

// ListUsers lists an account's users, oldest first.
func (db *DB) ListUsers(ctx context.Context, accountID string) ([]store.User, error) {
	out, err := collect(ctx, db.pool, func(s scanner) (store.User, error) { return scanUser(s) },
		`SELECT `+userColumns+` FROM users u WHERE u.account_id = $1 ORDER BY u.created_at, u.created_at_ns, u.id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("postgres: list users: %w", err)
	}
	return out, nil
}

// SetPassword sets a password and ends the user's other sessions.
func (db *DB) SetPassword(ctx context.Context, userID, hash string, at time.Time, keep []byte) error {
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE users SET password_hash = $1, password_at = $2, password_at_ns = $3 WHERE id = $4`,
			hash, ts(at), ns(at), userID)
		if err != nil {
			return fmt.Errorf("postgres: set password: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("postgres: user %s: %w", userID, store.ErrNotFound)
		}
		if keep == nil {
			keep = []byte{}
		}
		_, err = tx.Exec(ctx, `DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2`, userID, keep)
		return err
	})
}

// SetRole changes a user's role and ends their sessions.
func (db *DB) SetRole(ctx context.Context, accountID, userID, role string) error {
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE users SET role = $1 WHERE account_id = $2 AND id = $3`, role, accountID, userID)
		if err != nil {
			return fmt.Errorf("postgres: set role: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("postgres: user %s: %w", userID, store.ErrNotFound)
		}
		_, err = tx.Exec(ctx, `DELETE FROM sessions WHERE user_id = $1`, userID)
		return err
	})
}

// DeleteUser removes a user and, by cascade, their sessions.
func (db *DB) DeleteUser(ctx context.Context, accountID, userID string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM users WHERE account_id = $1 AND id = $2`, accountID, userID)
	if err != nil {
		return fmt.Errorf("postgres: delete user: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: user %s: %w", userID, store.ErrNotFound)
	}
	return nil
}

// CreateSession keeps a new session.
func (db *DB) CreateSession(ctx context.Context, s store.Session) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO sessions (token_hash, user_id, csrf, created_at, created_at_ns, expires_at, expires_at_ns)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, s.TokenHash, s.UserID, s.CSRF, ts(s.CreatedAt), ns(s.CreatedAt), ts(s.ExpiresAt), ns(s.ExpiresAt))
	if err != nil {
		return fmt.Errorf("postgres: create session: %w", conflict(err))
	}
	return nil
}

// SessionByHash finds an unexpired session with its user.
func (db *DB) SessionByHash(ctx context.Context, hash []byte, now time.Time) (store.Session, store.User, error) {
	var s store.Session
	var created, expires tcol
	at, n := bound(now)
	u, err := scanUser(db.pool.QueryRow(ctx, `SELECT `+userColumns+`, s.token_hash, s.user_id, s.csrf,
		s.created_at, s.created_at_ns, s.expires_at, s.expires_at_ns
		FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1 AND (s.expires_at, s.expires_at_ns) > ($2, $3)`, hash, at, n),
		&s.TokenHash, &s.UserID, &s.CSRF, &created.t, &created.ns, &expires.t, &expires.ns)
	if err != nil {
		return s, u, fmt.Errorf("postgres: session: %w", notFound(err))
	}
	s.CreatedAt, s.ExpiresAt = created.time(), expires.time()
	return s, u, nil
}

// DeleteSession ends a session.
func (db *DB) DeleteSession(ctx context.Context, hash []byte) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM sessions WHERE token_hash = $1`, hash); err != nil {
		return fmt.Errorf("postgres: delete session: %w", err)
	}
	return nil
}

// DeleteExpired forgets expired sessions and invitations.
func (db *DB) DeleteExpired(ctx context.Context, now time.Time) error {
	at, n := bound(now)
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE (expires_at, expires_at_ns) <= ($1, $2)`, at, n); err != nil {
			return fmt.Errorf("postgres: delete expired sessions: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM invitations WHERE (expires_at, expires_at_ns) <= ($1, $2)`, at, n); err != nil {
			return fmt.Errorf("postgres: delete expired invitations: %w", err)
		}
		return nil
	})
}

const invitationColumns = `token_hash, account_id, email, role, invited_by, created_at, created_at_ns, expires_at, expires_at_ns`

func scanInvitation(s scanner) (store.Invitation, error) {
	var inv store.Invitation
	var acct, by *string
	var created, expires tcol
	err := s.Scan(&inv.TokenHash, &acct, &inv.Email, &inv.Role, &by, &created.t, &created.ns, &expires.t, &expires.ns)
	inv.AccountID, inv.InvitedBy = str(acct), str(by)
	inv.CreatedAt, inv.ExpiresAt = created.time(), expires.time()
	return inv, err
}

// CreateInvitation keeps an invitation.
func (db *DB) CreateInvitation(ctx context.Context, inv store.Invitation) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO invitations (`+invitationColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		inv.TokenHash, null(inv.AccountID), inv.Email, inv.Role, null(inv.InvitedBy),
		ts(inv.CreatedAt), ns(inv.CreatedAt), ts(inv.ExpiresAt), ns(inv.ExpiresAt))
	if err != nil {
		return fmt.Errorf("postgres: create invitation: %w", conflict(err))
	}
	return nil
}

// Invitation finds an unexpired invitation.
func (db *DB) Invitation(ctx context.Context, hash []byte, now time.Time) (store.Invitation, error) {
	at, n := bound(now)
	inv, err := scanInvitation(db.pool.QueryRow(ctx, `SELECT `+invitationColumns+` FROM invitations
		WHERE token_hash = $1 AND (expires_at, expires_at_ns) > ($2, $3)
		AND (account_id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM users))`, hash, at, n))
	if err != nil {
		return inv, fmt.Errorf("postgres: invitation: %w", notFound(err))
	}
	return inv, nil
}

// ListInvitations lists an account's unexpired invitations, oldest first.
func (db *DB) ListInvitations(ctx context.Context, accountID string, now time.Time) ([]store.Invitation, error) {
	at, n := bound(now)
	out, err := collect(ctx, db.pool, scanInvitation, `SELECT `+invitationColumns+` FROM invitations
		WHERE account_id = $1 AND (expires_at, expires_at_ns) > ($2, $3) ORDER BY created_at, created_at_ns, token_hash`, accountID, at, n)
	if err != nil {
		return nil, fmt.Errorf("postgres: list invitations: %w", err)
	}
	return out, nil
}

// DeleteInvitation withdraws an account's invitation.
func (db *DB) DeleteInvitation(ctx context.Context, accountID string, hash []byte) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM invitations WHERE account_id = $1 AND token_hash = $2`, accountID, hash)
	if err != nil {
		return fmt.Errorf("postgres: delete invitation: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: invitation: %w", store.ErrNotFound)
	}
	return nil
}

// DeleteBootstrapInvitations forgets the bootstrap invitations.
func (db *DB) DeleteBootstrapInvitations(ctx context.Context) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM invitations WHERE account_id IS NULL`); err != nil {
		return fmt.Errorf("postgres: delete bootstrap invitations: %w", err)
	}
	return nil
}

// AcceptInvitation consumes an invitation and adds its user (and account).
// An account-less (bootstrap) invitation is taken only while no user
// exists: the first user, however made, ends every bootstrap link.
func (db *DB) AcceptInvitation(ctx context.Context, hash []byte, u store.User, a *store.Account) error {
	return db.serializable(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// Expired at the user's creation, it is refused even if it was
		// live when read (a password hash may take a while in between).
		at, n := bound(u.CreatedAt)
		tag, err := tx.Exec(ctx, `DELETE FROM invitations WHERE token_hash = $1 AND (expires_at, expires_at_ns) > ($2, $3)
			AND (account_id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM users))`, hash, at, n)
		if err != nil {
			return fmt.Errorf("postgres: accept invitation: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("postgres: invitation: %w", store.ErrNotFound)
		}
		if a != nil {
			if err := createAccount(ctx, tx, *a); err != nil {
				return err
			}
			// The bootstrap link is used: no other may create an account.
			if _, err := tx.Exec(ctx, `DELETE FROM invitations WHERE account_id IS NULL`); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO users (id, account_id, email, role, password_hash, created_at, created_at_ns, password_at, password_at_ns)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			u.ID, u.AccountID, u.Email, u.Role, u.PasswordHash, ts(u.CreatedAt), ns(u.CreatedAt), ts(u.PasswordAt), ns(u.PasswordAt))
		if err != nil {
			return fmt.Errorf("postgres: create user: %w", conflict(err))
		}
		return nil
	})
}
