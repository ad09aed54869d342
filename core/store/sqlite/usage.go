package sqlite

import (
	"context"
	"database/sql"
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
