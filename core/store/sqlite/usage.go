package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aivis/aivis/core/store"
)

// UsageSince lists an account's per-key hourly counts from since on.
func (db *DB) UsageSince(ctx context.Context, accountID string, since time.Time) ([]store.KeyUsage, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT key_id, hour, client_id, count FROM usage_hourly
		WHERE account_id = ? AND hour >= ? ORDER BY hour, key_id`, accountID, bound(since))
	if err != nil {
		return nil, fmt.Errorf("sqlite: usage: %w", err)
	}
	defer rows.Close()
	var out []store.KeyUsage
	for rows.Next() {
		u := store.KeyUsage{AccountID: accountID}
		var hour sql.NullInt64
		var client sql.NullString
		if err := rows.Scan(&u.KeyID, &hour, &client, &u.Count); err != nil {
			return nil, err
		}
		u.Hour, u.ClientID = fromNS(hour), client.String
		out = append(out, u)
	}
	return out, rows.Err()
}

// ListUsage reads a page of the counts f selects, oldest hour first.
func (db *DB) ListUsage(ctx context.Context, f store.UsageFilter) ([]store.KeyUsage, string, error) {
	q := `SELECT key_id, hour, client_id, count FROM usage_hourly WHERE account_id = ? AND hour >= ?`
	args := []any{f.AccountID, bound(f.From)}
	if !f.To.IsZero() {
		q += ` AND hour < ?`
		args = append(args, bound(f.To))
	}
	switch {
	case f.AllClients:
	case f.ClientID == "":
		q += ` AND client_id IS NULL`
	default:
		q += ` AND client_id = ?`
		args = append(args, f.ClientID)
	}
	if f.KeyID != "" {
		q += ` AND key_id = ?`
		args = append(args, f.KeyID)
	}
	if f.Cursor != "" {
		hour, key, err := store.UsageAfter(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (hour, key_id) > (?, ?)`
		args = append(args, bound(hour), key)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 20
	}
	return queryPage(ctx, db.r, "usage", q+` ORDER BY hour, key_id LIMIT ?`, append(args, limit+1), limit,
		func(s scanner) (store.KeyUsage, error) {
			u := store.KeyUsage{AccountID: f.AccountID}
			var hour sql.NullInt64
			var client sql.NullString
			err := s.Scan(&u.KeyID, &hour, &client, &u.Count)
			u.Hour, u.ClientID = fromNS(hour), client.String
			return u, err
		}, func(u store.KeyUsage) string { return store.UsageCursor(u.Hour, u.KeyID) })
}

// LoadWindows reads the persisted rate-limit windows that started at or after since.
func (db *DB) LoadWindows(ctx context.Context, since time.Time) ([]store.Window, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT account_id, window, start, count FROM rate_windows WHERE start >= ?`, bound(since))
	if err != nil {
		return nil, fmt.Errorf("sqlite: load windows: %w", err)
	}
	defer rows.Close()
	var out []store.Window
	for rows.Next() {
		var w store.Window
		var start int64
		if err := rows.Scan(&w.AccountID, &w.Window, &start, &w.Count); err != nil {
			return nil, err
		}
		w.Start = time.Unix(0, start).UTC()
		out = append(out, w)
	}
	return out, rows.Err()
}

// SaveCounts writes window counts (absolute values) and adds per-key usage, in one transaction.
func (db *DB) SaveCounts(ctx context.Context, windows []store.Window, usage []store.KeyUsage) error {
	return inTx(ctx, db.w, func(tx *sql.Tx) error {
		if len(windows) > 0 {
			st, err := tx.Prepare(`INSERT INTO rate_windows (account_id, window, start, count) VALUES (?, ?, ?, ?)
				ON CONFLICT (account_id, window) DO UPDATE SET start = excluded.start, count = excluded.count
				WHERE excluded.start > start OR (excluded.start = start AND excluded.count > count)`)
			if err != nil {
				return err
			}
			defer st.Close()
			for _, w := range windows {
				if _, err := st.Exec(w.AccountID, w.Window, stamp(w.Start), w.Count); err != nil {
					return fmt.Errorf("sqlite: save window: %w", err)
				}
			}
		}
		if len(usage) > 0 {
			st, err := tx.Prepare(`INSERT INTO usage_hourly (key_id, hour, account_id, client_id, count) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (key_id, hour) DO UPDATE SET count = count + excluded.count`)
			if err != nil {
				return err
			}
			defer st.Close()
			last, err := tx.Prepare(`UPDATE api_keys SET last_used_at = max(coalesce(last_used_at, ?1), ?1) WHERE id = ?2`)
			if err != nil {
				return err
			}
			defer last.Close()
			for _, u := range usage {
				if _, err := st.Exec(u.KeyID, stamp(u.Hour), u.AccountID, nullStr(u.ClientID), u.Count); err != nil {
					return fmt.Errorf("sqlite: save usage: %w", err)
				}
				if _, err := last.Exec(stamp(u.LastUsed), u.KeyID); err != nil {
					return fmt.Errorf("sqlite: save last use: %w", err)
				}
			}
		}
		return nil
	})
}

// TakeWindows reads the account's windows, decides and counts, in one
// call of the group-commit writer: the writer's transaction holds the
// file's write lock, so no other take, of this process or another, reads
// the windows between this one's read and its commit.
func (db *DB) TakeWindows(ctx context.Context, t store.WindowTake) (bool, store.WindowCounts, error) {
	var counted bool
	var w store.WindowCounts
	err := db.Update(ctx, func(tx store.Tx) error {
		wt := tx.(*txn).tx
		var err error
		if w, err = windowCounts(ctx, wt, t.AccountID, t.Starts); err != nil {
			return err
		}
		counted = true
		for i := range 3 {
			counted = counted && w.Counts[i] < t.Limits[i]
		}
		if !counted {
			return nil
		}
		for i := range 3 {
			w.Counts[i]++
		}
		if _, err := wt.Exec(`INSERT INTO rate_windows (account_id, window, start, count)
			VALUES (?1, 'minute', ?2, ?5), (?1, 'hour', ?3, ?6), (?1, 'day', ?4, ?7)
			ON CONFLICT (account_id, window) DO UPDATE SET start = excluded.start, count = excluded.count`,
			t.AccountID, stamp(w.Starts[0]), stamp(w.Starts[1]), stamp(w.Starts[2]), w.Counts[0], w.Counts[1], w.Counts[2]); err != nil {
			return err
		}
		u := t.Usage
		if u.KeyID == "" {
			return nil
		}
		if _, err := wt.Exec(`INSERT INTO usage_hourly (key_id, hour, account_id, client_id, count) VALUES (?, ?, ?, ?, 1)
			ON CONFLICT (key_id, hour) DO UPDATE SET count = count + 1`, u.KeyID, stamp(u.Hour), t.AccountID, nullStr(u.ClientID)); err != nil {
			return err
		}
		_, err = wt.Exec(`UPDATE api_keys SET last_used_at = max(coalesce(last_used_at, ?1), ?1) WHERE id = ?2`, stamp(u.LastUsed), u.KeyID)
		return err
	})
	if err != nil {
		return false, store.WindowCounts{}, fmt.Errorf("sqlite: take windows: %w", err)
	}
	return counted, w, nil
}

// PeekWindows reads the account's windows as TakeWindows finds them.
func (db *DB) PeekWindows(ctx context.Context, accountID string, starts [3]time.Time) (store.WindowCounts, error) {
	w, err := windowCounts(ctx, db.r, accountID, starts)
	if err != nil {
		return store.WindowCounts{}, fmt.Errorf("sqlite: peek windows: %w", err)
	}
	return w, nil
}

// windowCounts reads an account's windows against the starts of a
// request: a window that starts earlier holds none, at the request's
// start; one that starts at the same time or later keeps its start and
// count.
func windowCounts(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, accountID string, starts [3]time.Time) (store.WindowCounts, error) {
	w := store.WindowCounts{Starts: starts}
	for i := range 3 {
		w.Starts[i] = starts[i].UTC()
	}
	rows, err := q.QueryContext(ctx, `SELECT window, start, count FROM rate_windows WHERE account_id = ?`, accountID)
	if err != nil {
		return w, err
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var start, count int64
		if err := rows.Scan(&kind, &start, &count); err != nil {
			return w, err
		}
		i := slices.Index(store.WindowKinds[:], kind)
		if i < 0 || start < bound(starts[i]) {
			continue
		}
		w.Starts[i], w.Counts[i] = time.Unix(0, start).UTC(), count
	}
	return w, rows.Err()
}

// TakeGuard decides and counts a failure in one statement, an upsert whose
// WHERE refuses a full window, in a call of the group-commit writer, which
// holds the file's write lock: no other take reads the window between this
// one's read and its commit. A refused take reads the window it left.
func (db *DB) TakeGuard(ctx context.Context, t store.GuardTake) (bool, store.GuardWindow, error) {
	if t.Limit < 1 {
		w, err := db.PeekGuard(ctx, t.Guard, t.Subject, t.Start)
		return false, w, err
	}
	var counted bool
	var w store.GuardWindow
	err := db.Update(ctx, func(tx store.Tx) error {
		wt := tx.(*txn).tx
		err := wt.QueryRowContext(ctx, `INSERT INTO guard_windows AS g (guard, subject, start, ends, count) VALUES (?1, ?2, ?3, ?4, 1)
			ON CONFLICT (guard, subject) DO UPDATE SET start = max(g.start, excluded.start), ends = max(g.ends, excluded.ends),
				count = CASE WHEN g.start < excluded.start THEN 1 ELSE g.count + 1 END
			WHERE g.start < excluded.start OR g.count < ?5
			RETURNING start, count`, t.Guard, t.Subject, t.Start, t.End, t.Limit).Scan(&w.Start, &w.Count)
		if counted = err == nil; !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		return wt.QueryRowContext(ctx, `SELECT start, count FROM guard_windows WHERE guard = ? AND subject = ?`, t.Guard, t.Subject).Scan(&w.Start, &w.Count)
	})
	if err != nil {
		return false, store.GuardWindow{}, fmt.Errorf("sqlite: take guard: %w", err)
	}
	return counted, w, nil
}

// PeekGuard reads the subject's window as TakeGuard finds it.
func (db *DB) PeekGuard(ctx context.Context, guard string, subject []byte, start int64) (store.GuardWindow, error) {
	w := store.GuardWindow{Start: start}
	err := db.r.QueryRowContext(ctx, `SELECT start, count FROM guard_windows WHERE guard = ? AND subject = ? AND start >= ?`,
		guard, subject, start).Scan(&w.Start, &w.Count)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return store.GuardWindow{}, fmt.Errorf("sqlite: peek guard: %w", err)
	}
	return w, nil
}

// GiveGuard takes back a failure of the window that starts at start.
func (db *DB) GiveGuard(ctx context.Context, guard string, subject []byte, start int64) error {
	err := db.Update(ctx, func(tx store.Tx) error {
		_, err := tx.(*txn).tx.ExecContext(ctx, `UPDATE guard_windows SET count = count - 1
			WHERE guard = ? AND subject = ? AND start = ? AND count > 0`, guard, subject, start)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: give guard: %w", err)
	}
	return nil
}

// PruneGuards deletes the windows that ended before before, limit at a
// time, each statement a write of its own.
func (db *DB) PruneGuards(ctx context.Context, before int64, limit int) (int64, error) {
	var n int64
	for {
		var deleted int64
		err := db.Update(ctx, func(tx store.Tx) error {
			res, err := tx.(*txn).tx.ExecContext(ctx, `DELETE FROM guard_windows WHERE (guard, subject) IN
				(SELECT guard, subject FROM guard_windows WHERE ends < ? LIMIT ?)`, before, limit)
			if err == nil {
				deleted, err = res.RowsAffected()
			}
			return err
		})
		if err != nil {
			return n, fmt.Errorf("sqlite: prune guards: %w", err)
		}
		if n += deleted; deleted < int64(limit) {
			return n, nil
		}
	}
}
