package sqlite

import (
	"context"
	"database/sql"
	"fmt"
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
