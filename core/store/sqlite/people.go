package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/aivis/aivis/core/store"
)

var (
	_ store.People = (*DB)(nil)
	_ store.Usage  = (*DB)(nil)
)

const userColumns = `u.id, u.account_id, u.email, u.role, u.password_hash, u.created_at, u.password_at`

func scanUser(s scanner, extra ...any) (store.User, error) {
	var u store.User
	var created, pw sql.NullInt64
	err := s.Scan(append([]any{&u.ID, &u.AccountID, &u.Email, &u.Role, &u.PasswordHash, &created, &pw}, extra...)...)
	u.CreatedAt, u.PasswordAt = fromNS(created), fromNS(pw)
	return u, err
}

// CountUsers counts every dashboard user.
func (db *DB) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM users`).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count users: %w", err)
	}
	return n, nil
}

// User reads one user.
func (db *DB) User(ctx context.Context, id string) (store.User, error) {
	u, err := scanUser(db.r.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users u WHERE u.id = ?`, id))
	if err != nil {
		return u, fmt.Errorf("sqlite: user: %w", notFound(err))
	}
	return u, nil
}

// UserByEmail finds a user by email, case-insensitively.
func (db *DB) UserByEmail(ctx context.Context, email string) (store.User, error) {
	u, err := scanUser(db.r.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users u WHERE u.email = ?`, email))
	if err != nil {
		return u, fmt.Errorf("sqlite: user by email: %w", notFound(err))
	}
	return u, nil
}

// ListUsers lists an account's users, oldest first.
func (db *DB) ListUsers(ctx context.Context, accountID string) ([]store.User, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+userColumns+` FROM users u WHERE u.account_id = ? ORDER BY u.created_at, u.id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list users: %w", err)
	}
	defer rows.Close()
	var out []store.User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// SetPassword sets a password and ends the user's other sessions.
func (db *DB) SetPassword(ctx context.Context, userID, hash string, at time.Time, keep []byte) error {
	return inTx(ctx, db.w, func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE users SET password_hash = ?, password_at = ? WHERE id = ?`, hash, stamp(at), userID)
		if err != nil {
			return fmt.Errorf("sqlite: set password: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlite: user %s: %w", userID, store.ErrNotFound)
		}
		if keep == nil {
			keep = []byte{}
		}
		_, err = tx.Exec(`DELETE FROM sessions WHERE user_id = ? AND token_hash != ?`, userID, keep)
		return err
	})
}

// SetRole changes a user's role and ends their sessions.
func (db *DB) SetRole(ctx context.Context, accountID, userID, role string) error {
	return inTx(ctx, db.w, func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE users SET role = ? WHERE account_id = ? AND id = ?`, role, accountID, userID)
		if err != nil {
			return fmt.Errorf("sqlite: set role: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlite: user %s: %w", userID, store.ErrNotFound)
		}
		_, err = tx.Exec(`DELETE FROM sessions WHERE user_id = ?`, userID)
		return err
	})
}

// DeleteUser removes a user and, by cascade, their sessions.
func (db *DB) DeleteUser(ctx context.Context, accountID, userID string) error {
	res, err := db.w.ExecContext(ctx, `DELETE FROM users WHERE account_id = ? AND id = ?`, accountID, userID)
	if err != nil {
		return fmt.Errorf("sqlite: delete user: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: user %s: %w", userID, store.ErrNotFound)
	}
	return nil
}

// CreateSession keeps a new session.
func (db *DB) CreateSession(ctx context.Context, s store.Session) error {
	_, err := db.w.ExecContext(ctx, `INSERT INTO sessions (token_hash, user_id, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
		s.TokenHash, s.UserID, s.CSRF, stamp(s.CreatedAt), stamp(s.ExpiresAt))
	if err != nil {
		return fmt.Errorf("sqlite: create session: %w", conflict(err))
	}
	return nil
}

// SessionByHash finds an unexpired session with its user.
func (db *DB) SessionByHash(ctx context.Context, hash []byte, now time.Time) (store.Session, store.User, error) {
	var s store.Session
	var created, expires sql.NullInt64
	u, err := scanUser(db.r.QueryRowContext(ctx, `SELECT `+userColumns+`, s.token_hash, s.user_id, s.csrf, s.created_at, s.expires_at
		FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ? AND s.expires_at > ?`, hash, bound(now)),
		&s.TokenHash, &s.UserID, &s.CSRF, &created, &expires)
	if err != nil {
		return s, u, fmt.Errorf("sqlite: session: %w", notFound(err))
	}
	s.CreatedAt, s.ExpiresAt = fromNS(created), fromNS(expires)
	return s, u, nil
}

// DeleteSession ends a session.
func (db *DB) DeleteSession(ctx context.Context, hash []byte) error {
	if _, err := db.w.ExecContext(ctx, `DELETE FROM sessions WHERE token_hash = ?`, hash); err != nil {
		return fmt.Errorf("sqlite: delete session: %w", err)
	}
	return nil
}

// DeleteExpired forgets expired sessions and invitations.
func (db *DB) DeleteExpired(ctx context.Context, now time.Time) error {
	return inTx(ctx, db.w, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`DELETE FROM sessions WHERE expires_at <= ?`, bound(now)); err != nil {
			return fmt.Errorf("sqlite: delete expired sessions: %w", err)
		}
		if _, err := tx.Exec(`DELETE FROM invitations WHERE expires_at <= ?`, bound(now)); err != nil {
			return fmt.Errorf("sqlite: delete expired invitations: %w", err)
		}
		return nil
	})
}

const invitationColumns = `token_hash, account_id, email, role, invited_by, created_at, expires_at`

func scanInvitation(s scanner) (store.Invitation, error) {
	var inv store.Invitation
	var acct, by sql.NullString
	var created, expires sql.NullInt64
	err := s.Scan(&inv.TokenHash, &acct, &inv.Email, &inv.Role, &by, &created, &expires)
	inv.AccountID, inv.InvitedBy = acct.String, by.String
	inv.CreatedAt, inv.ExpiresAt = fromNS(created), fromNS(expires)
	return inv, err
}

// CreateInvitation keeps an invitation.
func (db *DB) CreateInvitation(ctx context.Context, inv store.Invitation) error {
	_, err := db.w.ExecContext(ctx, `INSERT INTO invitations (`+invitationColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		inv.TokenHash, nullStr(inv.AccountID), inv.Email, inv.Role, nullStr(inv.InvitedBy), stamp(inv.CreatedAt), stamp(inv.ExpiresAt))
	if err != nil {
		return fmt.Errorf("sqlite: create invitation: %w", conflict(err))
	}
	return nil
}

// Invitation finds an unexpired invitation.
func (db *DB) Invitation(ctx context.Context, hash []byte, now time.Time) (store.Invitation, error) {
	inv, err := scanInvitation(db.r.QueryRowContext(ctx, `SELECT `+invitationColumns+` FROM invitations
		WHERE token_hash = ? AND expires_at > ? AND (account_id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM users))`, hash, bound(now)))
	if err != nil {
		return inv, fmt.Errorf("sqlite: invitation: %w", notFound(err))
	}
	return inv, nil
}

// ListInvitations lists an account's unexpired invitations, oldest first.
func (db *DB) ListInvitations(ctx context.Context, accountID string, now time.Time) ([]store.Invitation, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+invitationColumns+` FROM invitations
		WHERE account_id = ? AND expires_at > ? ORDER BY created_at`, accountID, bound(now))
	if err != nil {
		return nil, fmt.Errorf("sqlite: list invitations: %w", err)
	}
	defer rows.Close()
	var out []store.Invitation
	for rows.Next() {
		inv, err := scanInvitation(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, inv)
	}
	return out, rows.Err()
}

// DeleteInvitation withdraws an account's invitation.
func (db *DB) DeleteInvitation(ctx context.Context, accountID string, hash []byte) error {
	res, err := db.w.ExecContext(ctx, `DELETE FROM invitations WHERE account_id = ? AND token_hash = ?`, accountID, hash)
	if err != nil {
		return fmt.Errorf("sqlite: delete invitation: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: invitation: %w", store.ErrNotFound)
	}
	return nil
}

// DeleteBootstrapInvitations forgets the bootstrap invitations.
func (db *DB) DeleteBootstrapInvitations(ctx context.Context) error {
	if _, err := db.w.ExecContext(ctx, `DELETE FROM invitations WHERE account_id IS NULL`); err != nil {
		return fmt.Errorf("sqlite: delete bootstrap invitations: %w", err)
	}
	return nil
}

// AcceptInvitation consumes an invitation and adds its user (and account).
// An account-less (bootstrap) invitation is taken only while no user
// exists: the first user, however made, ends every bootstrap link.
func (db *DB) AcceptInvitation(ctx context.Context, hash []byte, u store.User, a *store.Account) error {
	return inTx(ctx, db.w, func(tx *sql.Tx) error {
		// Expired at the user's creation, it is refused even if it was
		// live when read (a password hash may take a while in between).
		res, err := tx.Exec(`DELETE FROM invitations WHERE token_hash = ? AND expires_at > ?
			AND (account_id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM users))`, hash, bound(u.CreatedAt))
		if err != nil {
			return fmt.Errorf("sqlite: accept invitation: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlite: invitation: %w", store.ErrNotFound)
		}
		if a != nil {
			if _, err := tx.Exec(`INSERT INTO accounts (id, name, tier, type, created_at) VALUES (?, ?, ?, ?, ?)`,
				a.ID, a.Name, a.Tier, a.Type, stamp(a.CreatedAt)); err != nil {
				return fmt.Errorf("sqlite: create account: %w", conflict(err))
			}
			// The bootstrap link is used: no other may create an account.
			if _, err := tx.Exec(`DELETE FROM invitations WHERE account_id IS NULL`); err != nil {
				return err
			}
		}
		_, err = tx.Exec(`INSERT INTO users (id, account_id, email, role, password_hash, created_at, password_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			u.ID, u.AccountID, u.Email, u.Role, u.PasswordHash, stamp(u.CreatedAt), stamp(u.PasswordAt))
		if err != nil {
			return fmt.Errorf("sqlite: create user: %w", conflict(err))
		}
		return nil
	})
}
