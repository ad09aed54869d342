package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aivis/aivis/core/store"
)

// owned is the condition on an account's rows of a kind, ?1 its id (the
// idempotency records: ?1 its scopes' prefix), along an index of the kind
// or of what it references.
func owned(kind, accountID string) (string, []any) {
	switch kind {
	case "accounts":
		return "id = ?1", []any{accountID}
	case "sessions":
		return "user_id IN (SELECT id FROM users WHERE account_id = ?1)", []any{accountID}
	case "webhook_deliveries":
		return "webhook_id IN (SELECT id FROM webhooks WHERE account_id = ?1)", []any{accountID}
	case "webhook_attempts":
		return `delivery_id IN (SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
			WHERE w.account_id = ?1)`, []any{accountID}
	case "scan_answers":
		return "scan_id IN (SELECT id FROM scans WHERE account_id = ?1)", []any{accountID}
	case "idempotency_keys":
		p := store.IdempotencyScopePrefix(accountID)
		return "substr(scope, 1, length(?1)) = ?1", []any{p}
	case "ingest_tokens", "traffic_batches", "crawler_hits", "referral_visits", "domain_changes":
		return "domain_id IN (SELECT id FROM monitored_domains WHERE account_id = ?1)", []any{accountID}
	}
	return "account_id = ?1", []any{accountID}
}

// keyOf is the kind's primary key, which a batch deletes by.
var keyOf = map[string]string{"usage_hourly": "(key_id, hour)",
	"crawler_hits": "(domain_id, day, page, agent, verification)", "referral_visits": "(domain_id, day, page, assistant)"}

// exportTime says whether a column holds a time (Unix nanoseconds).
func exportTime(column string) bool {
	switch column {
	case "lease_until", "prev_secret_end", "hour", "start":
		return true
	}
	return strings.HasSuffix(column, "_at")
}

// ExportAccount reads every row of the account in one read transaction.
func (db *DB) ExportAccount(ctx context.Context, accountID string, emit func(store.Record) error) error {
	tx, err := db.r.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: export: %w", err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM accounts WHERE id = ?`, accountID).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: export: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: account %s: %w", accountID, store.ErrNotFound)
	}
	for _, kind := range store.Kinds {
		if err := exportKind(ctx, tx, kind, accountID, emit); err != nil {
			return err
		}
	}
	return nil
}

func exportKind(ctx context.Context, tx *sql.Tx, kind, accountID string, emit func(store.Record) error) error {
	cond, args := owned(kind, accountID)
	rows, err := tx.QueryContext(ctx, `SELECT * FROM `+kind+` WHERE `+cond, args...)
	if err != nil {
		return fmt.Errorf("sqlite: export %s: %w", kind, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("sqlite: export %s: %w", kind, err)
		}
		data := make(map[string]any, len(cols))
		for i, c := range cols {
			if !store.Secret(kind, c) {
				data[c] = exportValue(c, vals[i])
			}
		}
		if err := emit(store.Record{Kind: kind, Data: data}); err != nil {
			return err
		}
	}
	return rows.Err()
}

// exportValue is a column's value as a Record holds it.
func exportValue(column string, v any) any {
	switch v := v.(type) {
	case int64:
		if column == "day" { // days since 1970-01-01
			return fromDay(v).Format(time.RFC3339Nano)
		}
		if exportTime(column) {
			return time.Unix(0, v).UTC().Format(time.RFC3339Nano)
		}
	case []byte:
		b := append([]byte(nil), v...)
		if json.Valid(b) {
			return json.RawMessage(b)
		}
		return b
	}
	return v
}

// DeleteAccount deletes the account's credentials and stops its targets
// in one transaction, its big kinds in batches, then the rest with the
// account.
func (db *DB) DeleteAccount(ctx context.Context, accountID string, batch int) error {
	if batch <= 0 {
		batch = store.DeleteBatch
	}
	err := inTx(ctx, db.w, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM accounts WHERE id = ?`, accountID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("sqlite: account %s: %w", accountID, store.ErrNotFound)
		}
		return stopAccount(ctx, tx, accountID, time.Now())
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete account: %w", err)
	}
	store.DeleteStep(ctx, "stop")
	for _, kind := range store.BigKinds {
		cond, args := owned(kind, accountID)
		key := keyOf[kind]
		if key == "" {
			key = "rowid"
		}
		q := `DELETE FROM ` + kind + ` WHERE ` + key + ` IN (SELECT ` + strings.Trim(key, "()") + ` FROM ` + kind +
			` WHERE ` + cond + ` LIMIT ` + fmt.Sprint(batch) + `)`
		for {
			var gone int64
			err := inTx(ctx, db.w, func(tx *sql.Tx) error {
				res, err := tx.ExecContext(ctx, q, args...)
				if err != nil {
					return err
				}
				gone, err = res.RowsAffected()
				return err
			})
			if err != nil {
				return fmt.Errorf("sqlite: delete account's %s: %w", kind, err)
			}
			store.DeleteStep(ctx, kind)
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("sqlite: delete account: %w", err)
			}
			if gone < int64(batch) {
				break
			}
		}
	}
	err = inTx(ctx, db.w, func(tx *sql.Tx) error {
		// What was added since the first transaction (a key, a user) is
		// stopped too.
		if err := stopAccount(ctx, tx, accountID, time.Now()); err != nil {
			return err
		}
		for _, kind := range store.DeleteOrder {
			cond, args := owned(kind, accountID)
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+kind+` WHERE `+cond, args...); err != nil {
				return fmt.Errorf("%s: %w", kind, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete account: %w", err)
	}
	store.DeleteStep(ctx, "account")
	return nil
}

// stopAccount deletes an account's keys, ingest tokens, users, sessions, invitations and
// their guard windows and its events in the bus's table, and marks its webhooks and connections deleted,
// their pending deliveries failed.
func stopAccount(ctx context.Context, tx *sql.Tx, accountID string, now time.Time) error {
	var subjects [][]byte
	rows, err := tx.QueryContext(ctx, `SELECT key_hash, NULL FROM api_keys WHERE account_id = ?1
		UNION ALL SELECT NULL, email FROM users WHERE account_id = ?1`, accountID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var hash []byte
		var email sql.NullString
		if err := rows.Scan(&hash, &email); err != nil {
			rows.Close()
			return err
		}
		if email.Valid {
			subjects = append(subjects, store.EmailGuardSubject(email.String))
		} else {
			subjects = append(subjects, store.KeyGuardSubject(hash))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range subjects {
		if _, err := tx.ExecContext(ctx, `DELETE FROM guard_windows WHERE subject = ?`, s); err != nil {
			return err
		}
	}
	for _, kind := range []string{"sessions", "invitations", "users", "api_keys", "ingest_tokens"} {
		cond, args := owned(kind, accountID)
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+kind+` WHERE `+cond, args...); err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
	}
	// Its events on their way in the bus's table: no fan-out of them
	// follows.
	if _, err := tx.ExecContext(ctx, `DELETE FROM bus_messages WHERE json_extract(metadata, '$.account_id') = ?`, accountID); err != nil {
		return err
	}
	const reason = "account deleted"
	at := stamp(now)
	if _, err := tx.ExecContext(ctx, `UPDATE webhooks SET deleted_at = ?2, enabled = 0, disabled_reason = ?3, disabled_at = ?2,
		updated_at = ?2, secret = '', prev_secret = NULL, prev_secret_end = NULL, settings = ''
		WHERE account_id = ?1 AND deleted_at IS NULL`, accountID, at, reason); err != nil {
		return err
	}
	cond, _ := owned("webhook_deliveries", accountID)
	_, err = tx.ExecContext(ctx, `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = ?2,
		updated_at = ?3, lease = NULL, lease_until = NULL WHERE status = 'pending' AND `+cond, accountID, reason, at)
	return err
}
