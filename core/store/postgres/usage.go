package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/store"
)

// UsageSince lists an account's per-key hourly counts from since on.
func (db *DB) UsageSince(ctx context.Context, accountID string, since time.Time) ([]store.KeyUsage, error) {
	t, n := bound(since)
	out, err := collect(ctx, db.pool, func(s scanner) (store.KeyUsage, error) {
		u := store.KeyUsage{AccountID: accountID}
		var hour tcol
		err := s.Scan(&u.KeyID, &hour.t, &hour.ns, &u.ClientID, &u.Count)
		u.Hour = hour.time()
		return u, err
	}, `SELECT key_id, hour, hour_ns, client_id, count FROM usage_hourly
		WHERE account_id = $1 AND (hour, hour_ns) >= ($2, $3) ORDER BY hour, hour_ns, key_id`, accountID, t, n)
	if err != nil {
		return nil, fmt.Errorf("postgres: usage: %w", err)
	}
	return out, nil
}

// ListUsage reads a page of the counts f selects, oldest hour first.
func (db *DB) ListUsage(ctx context.Context, f store.UsageFilter) ([]store.KeyUsage, string, error) {
	var w where
	from, fromNS := bound(f.From)
	w.and("account_id = ?", f.AccountID)
	w.and("(hour, hour_ns) >= (?, ?)", from, fromNS)
	if !f.To.IsZero() {
		to, toNS := bound(f.To)
		w.and("(hour, hour_ns) < (?, ?)", to, toNS)
	}
	if !f.AllClients {
		w.and("client_id = ?", f.ClientID)
	}
	if f.KeyID != "" {
		w.and("key_id = ?", f.KeyID)
	}
	if f.Cursor != "" {
		hour, key, err := store.UsageAfter(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		t, n := bound(hour)
		w.and("(hour, hour_ns, key_id) > (?, ?, ?)", t, n, key)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 20
	}
	return queryPage(ctx, db.pool, "usage", `SELECT key_id, hour, hour_ns, client_id, count FROM usage_hourly WHERE `+w.String()+
		fmt.Sprintf(` ORDER BY hour, hour_ns, key_id LIMIT %d`, limit+1), w.args, limit,
		func(s scanner) (store.KeyUsage, error) {
			u := store.KeyUsage{AccountID: f.AccountID}
			var hour tcol
			err := s.Scan(&u.KeyID, &hour.t, &hour.ns, &u.ClientID, &u.Count)
			u.Hour = hour.time()
			return u, err
		}, func(u store.KeyUsage) string { return store.UsageCursor(u.Hour, u.KeyID) })
}

// LoadWindows reads the saved rate-limit windows that started at since or
// later.
func (db *DB) LoadWindows(ctx context.Context, since time.Time) ([]store.Window, error) {
	t, n := bound(since)
	out, err := collect(ctx, db.pool, func(s scanner) (store.Window, error) {
		var w store.Window
		var start tcol
		err := s.Scan(&w.AccountID, &w.Window, &start.t, &start.ns, &w.Count)
		w.Start = start.time()
		return w, err
	}, `SELECT account_id, "window", start, start_ns, count FROM rate_windows WHERE (start, start_ns) >= ($1, $2)`, t, n)
	if err != nil {
		return nil, fmt.Errorf("postgres: load windows: %w", err)
	}
	return out, nil
}

// SaveCounts writes windows and adds usage in one transaction at READ
// COMMITTED, a statement a table, each a column an array (however many
// keys and accounts a flush holds, four statements in one round trip).
// Each row is an upsert, which takes the row's lock and then reads its
// latest version, so a window is replaced only by a later start or a
// higher count and usage adds up, however many instances save at once.
// Rows are written in key order, so that two saves never wait for each
// other in a circle; a statement touches a row once, so what the call
// holds twice is merged first.
func (db *DB) SaveCounts(ctx context.Context, windows []store.Window, usage []store.KeyUsage) error {
	var b pgx.Batch
	var w, u, k columns
	for _, x := range latestWindows(windows) {
		w.row()
		w.text(x.AccountID, x.Window)
		w.time(x.Start)
		w.int64(x.Count)
	}
	if len(windows) > 0 {
		b.Queue(`INSERT INTO rate_windows AS r (account_id, "window", start, start_ns, count)
			SELECT * FROM unnest(`+w.params("text", "text", "timestamptz", "int2", "int8")+`)
			ON CONFLICT (account_id, "window") DO UPDATE SET start = excluded.start, start_ns = excluded.start_ns, count = excluded.count
			WHERE (excluded.start, excluded.start_ns, excluded.count) > (r.start, r.start_ns, r.count)`, w.args()...)
	}
	hours, keys := summedUsage(usage)
	for _, x := range hours {
		u.row()
		u.text(x.KeyID)
		u.time(x.Hour)
		u.text(x.AccountID, x.ClientID)
		u.int64(x.Count)
	}
	for _, x := range keys {
		k.row()
		k.text(x.KeyID)
		k.time(x.LastUsed)
	}
	if len(usage) > 0 {
		b.Queue(`INSERT INTO usage_hourly AS h (key_id, hour, hour_ns, account_id, client_id, count)
			SELECT * FROM unnest(`+u.params("text", "timestamptz", "int2", "text", "text", "int8")+`)
			ON CONFLICT (key_id, hour, hour_ns) DO UPDATE SET count = h.count + excluded.count`, u.args()...)
		// An UPDATE's join has no order of its own: the keys are locked in
		// theirs first (LockRows above the sort).
		b.Queue(`SELECT 1 FROM api_keys WHERE id = ANY($1) ORDER BY id FOR UPDATE`, k.cols[0])
		b.Queue(`UPDATE api_keys k SET last_used_at = u.at, last_used_at_ns = u.ns
			FROM unnest(`+k.params("text", "timestamptz", "int2")+`) AS u (id, at, ns)
			WHERE k.id = u.id AND (k.last_used_at IS NULL OR (k.last_used_at, k.last_used_at_ns) < (u.at, u.ns))`, k.args()...)
	}
	if err := cmp.Or(w.err, u.err, k.err); err != nil {
		return fmt.Errorf("postgres: save counts: %w", err)
	}
	if b.Len() == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, &b).Close() })
	if err != nil {
		return fmt.Errorf("postgres: save counts: %w", err)
	}
	return nil
}

// latestWindows is each account's window once, the latest of what ws
// holds of it (by start, then count), in key order.
func latestWindows(ws []store.Window) []store.Window {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b store.Window) int {
		return cmp.Or(cmp.Compare(a.AccountID, b.AccountID), cmp.Compare(a.Window, b.Window),
			b.Start.Compare(a.Start), cmp.Compare(b.Count, a.Count))
	})
	return slices.CompactFunc(ws, func(a, b store.Window) bool { return a.AccountID == b.AccountID && a.Window == b.Window })
}

// summedUsage is each key's hour once, its counts added up, in key order;
// and each key once, with its latest use.
func summedUsage(us []store.KeyUsage) (hours, keys []store.KeyUsage) {
	us = slices.Clone(us)
	slices.SortFunc(us, func(a, b store.KeyUsage) int { return cmp.Or(cmp.Compare(a.KeyID, b.KeyID), a.Hour.Compare(b.Hour)) })
	for _, u := range us {
		if n := len(hours); n > 0 && hours[n-1].KeyID == u.KeyID && hours[n-1].Hour.Equal(u.Hour) {
			hours[n-1].Count += u.Count
		} else {
			hours = append(hours, u)
		}
		if n := len(keys); n > 0 && keys[n-1].KeyID == u.KeyID {
			if u.LastUsed.After(keys[n-1].LastUsed) {
				keys[n-1].LastUsed = u.LastUsed
			}
		} else {
			keys = append(keys, u)
		}
	}
	return hours, keys
}

// TakeWindows counts one request in an account's windows, as the contract
// says PostgreSQL does, at READ COMMITTED: one INSERT ... ON CONFLICT DO
// UPDATE makes the account's three windows where they are missing and
// locks all three (the kinds in one order, so that takes never wait for
// each other in a circle) and returns them as they are; if each has room,
// the take counts in them and in its key's usage, and commits. No other
// take of the account reads its windows between this one's read and its
// commit: it waits for the lock, and then reads the committed counts.
func (db *DB) TakeWindows(ctx context.Context, t store.WindowTake) (bool, store.WindowCounts, error) {
	var counted bool
	var w store.WindowCounts
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var err error
		w, err = windowCounts(ctx, tx, t.AccountID, t.Starts, `INSERT INTO rate_windows AS r (account_id, "window", start, start_ns, count)
			VALUES ($1, 'minute', $2, $3, 0), ($1, 'hour', $4, $5, 0), ($1, 'day', $6, $7, 0)
			ON CONFLICT (account_id, "window") DO UPDATE SET count = r.count RETURNING "window", start, start_ns, count`,
			t.AccountID, ts(t.Starts[0]), ns(t.Starts[0]), ts(t.Starts[1]), ns(t.Starts[1]), ts(t.Starts[2]), ns(t.Starts[2]))
		if err != nil {
			return err
		}
		counted = true
		for i := range 3 {
			counted = counted && w.Counts[i] < t.Limits[i]
		}
		if !counted {
			return nil
		}
		args := []any{t.AccountID}
		for i := range 3 {
			w.Counts[i]++
			args = append(args, ts(w.Starts[i]), ns(w.Starts[i]), w.Counts[i])
		}
		if _, err := tx.Exec(ctx, `UPDATE rate_windows r SET start = v.start, start_ns = v.start_ns, count = v.count
			FROM (VALUES ('minute', $2::timestamptz, $3::smallint, $4::bigint), ('hour', $5, $6, $7), ('day', $8, $9, $10))
				AS v (kind, start, start_ns, count)
			WHERE r.account_id = $1 AND r."window" = v.kind`, args...); err != nil {
			return err
		}
		u := t.Usage
		if u.KeyID == "" {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO usage_hourly AS h (key_id, hour, hour_ns, account_id, client_id, count)
			VALUES ($1, $2, $3, $4, $5, 1) ON CONFLICT (key_id, hour, hour_ns) DO UPDATE SET count = h.count + 1`,
			u.KeyID, ts(u.Hour), ns(u.Hour), t.AccountID, u.ClientID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE api_keys SET last_used_at = $2, last_used_at_ns = $3
			WHERE id = $1 AND (last_used_at IS NULL OR (last_used_at, last_used_at_ns) < ($2, $3))`, u.KeyID, ts(u.LastUsed), ns(u.LastUsed))
		return err
	})
	if err != nil {
		return false, store.WindowCounts{}, fmt.Errorf("postgres: take windows: %w", err)
	}
	return counted, w, nil
}

// PeekWindows reads the account's windows as TakeWindows finds them.
func (db *DB) PeekWindows(ctx context.Context, accountID string, starts [3]time.Time) (store.WindowCounts, error) {
	w, err := windowCounts(ctx, db.pool, accountID, starts,
		`SELECT "window", start, start_ns, count FROM rate_windows WHERE account_id = $1`, accountID)
	if err != nil {
		return store.WindowCounts{}, fmt.Errorf("postgres: peek windows: %w", err)
	}
	return w, nil
}

// windowCounts reads an account's windows (q returns each one's kind,
// start and count) against the starts of a request: a window that starts
// earlier holds none, at the request's start; one that starts at the same
// time or later keeps its start and count.
func windowCounts(ctx context.Context, qr querier, accountID string, starts [3]time.Time, q string, args ...any) (store.WindowCounts, error) {
	w := store.WindowCounts{Starts: starts}
	for i := range 3 {
		w.Starts[i] = starts[i].UTC()
	}
	found, err := collect(ctx, qr, func(s scanner) (store.Window, error) {
		var win store.Window
		var start tcol
		err := s.Scan(&win.Window, &start.t, &start.ns, &win.Count)
		win.Start = start.time()
		return win, err
	}, q, args...)
	if err != nil {
		return w, err
	}
	for _, win := range found {
		i := slices.Index(store.WindowKinds[:], win.Window)
		if i < 0 || win.Start.Before(starts[i]) {
			continue
		}
		w.Starts[i], w.Counts[i] = win.Start, win.Count
	}
	return w, nil
}

// TakeGuard counts a failure as the contract says PostgreSQL does: the
// upsert decides and writes, locking the row, and the SELECT after it, in
// the same implicit transaction (one batch, one round trip), reads the
// window it left, counted or refused.
func (db *DB) TakeGuard(ctx context.Context, t store.GuardTake) (bool, store.GuardWindow, error) {
	if t.Limit < 1 {
		w, err := db.PeekGuard(ctx, t.Guard, t.Subject, t.Start)
		return false, w, err
	}
	var b pgx.Batch
	b.Queue(`INSERT INTO guard_windows AS g (guard, subject, start, ends, count) VALUES ($1, $2, $3, $4, 1)
		ON CONFLICT (guard, subject) DO UPDATE SET start = greatest(g.start, excluded.start), ends = greatest(g.ends, excluded.ends),
			count = CASE WHEN g.start < excluded.start THEN 1 ELSE g.count + 1 END
		WHERE g.start < excluded.start OR g.count < $5`, t.Guard, t.Subject, t.Start, t.End, t.Limit)
	b.Queue(`SELECT start, count FROM guard_windows WHERE guard = $1 AND subject = $2`, t.Guard, t.Subject)
	br := db.pool.SendBatch(ctx, &b)
	tag, err := br.Exec()
	var w store.GuardWindow
	if err == nil {
		err = br.QueryRow().Scan(&w.Start, &w.Count)
	}
	if err = errors.Join(err, br.Close()); err != nil {
		return false, store.GuardWindow{}, fmt.Errorf("postgres: take guard: %w", err)
	}
	return tag.RowsAffected() == 1, w, nil
}

// PeekGuard reads the subject's window as TakeGuard finds it.
func (db *DB) PeekGuard(ctx context.Context, guard string, subject []byte, start int64) (store.GuardWindow, error) {
	w := store.GuardWindow{Start: start}
	err := db.pool.QueryRow(ctx, `SELECT start, count FROM guard_windows WHERE guard = $1 AND subject = $2 AND start >= $3`,
		guard, subject, start).Scan(&w.Start, &w.Count)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return store.GuardWindow{}, fmt.Errorf("postgres: peek guard: %w", err)
	}
	return w, nil
}

// GiveGuard takes back a failure of the window that starts at start.
func (db *DB) GiveGuard(ctx context.Context, guard string, subject []byte, start int64) error {
	if _, err := db.pool.Exec(ctx, `UPDATE guard_windows SET count = count - 1
		WHERE guard = $1 AND subject = $2 AND start = $3 AND count > 0`, guard, subject, start); err != nil {
		return fmt.Errorf("postgres: give guard: %w", err)
	}
	return nil
}

// PruneGuards deletes the windows that ended before before, limit at a
// time.
func (db *DB) PruneGuards(ctx context.Context, before int64, limit int) (int64, error) {
	var n int64
	for {
		tag, err := db.pool.Exec(ctx, `DELETE FROM guard_windows WHERE ctid IN
			(SELECT ctid FROM guard_windows WHERE ends < $1 LIMIT $2)`, before, limit)
		if err != nil {
			return n, fmt.Errorf("postgres: prune guards: %w", err)
		}
		if n += tag.RowsAffected(); tag.RowsAffected() < int64(limit) {
			return n, nil
		}
	}
}
