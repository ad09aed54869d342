package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/store"
)

// owned is the condition on an account's rows of a kind, $1 its id (the
// idempotency records: $1 its scopes' prefix), along an index of the kind
// or of what it references.
func owned(kind, accountID string) (string, []any) {
	switch kind {
	case "accounts":
		return "id = $1", []any{accountID}
	case "sessions":
		return "user_id IN (SELECT id FROM users WHERE account_id = $1)", []any{accountID}
	case "webhook_deliveries":
		return "webhook_id IN (SELECT id FROM webhooks WHERE account_id = $1)", []any{accountID}
	case "webhook_attempts":
		return `delivery_id IN (SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
			WHERE w.account_id = $1)`, []any{accountID}
	case "scan_answers":
		return "scan_id IN (SELECT id FROM scans WHERE account_id = $1)", []any{accountID}
	case "idempotency_keys":
		return "left(scope, length($1)) = $1", []any{store.IdempotencyScopePrefix(accountID)}
	case "ingest_tokens", "traffic_batches", "crawler_hits", "referral_visits", "domain_changes":
		return "domain_id IN (SELECT id FROM monitored_domains WHERE account_id = $1)", []any{accountID}
	}
	return "account_id = $1", []any{accountID}
}

// ExportAccount reads every row of the account in one read-only
// REPEATABLE READ transaction: one snapshot.
func (db *DB) ExportAccount(ctx context.Context, accountID string, emit func(store.Record) error) error {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("postgres: export: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM accounts WHERE id = $1`, accountID).Scan(&n); err != nil {
		return fmt.Errorf("postgres: export: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("postgres: account %s: %w", accountID, store.ErrNotFound)
	}
	for _, kind := range store.Kinds {
		if err := exportKind(ctx, tx, kind, accountID, emit); err != nil {
			return err
		}
	}
	return nil
}

func exportKind(ctx context.Context, tx pgx.Tx, kind, accountID string, emit func(store.Record) error) error {
	cond, args := owned(kind, accountID)
	rows, err := tx.Query(ctx, `SELECT * FROM `+kind+` WHERE `+cond, args...)
	if err != nil {
		return fmt.Errorf("postgres: export %s: %w", kind, err)
	}
	defer rows.Close()
	fields := rows.FieldDescriptions()
	index := make(map[string]int, len(fields))
	for i, f := range fields {
		index[f.Name] = i
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return fmt.Errorf("postgres: export %s: %w", kind, err)
		}
		data := make(map[string]any, len(fields))
		for i, f := range fields {
			c := f.Name
			if store.Secret(kind, c) {
				continue
			}
			if base, ok := strings.CutSuffix(c, "_ns"); ok {
				if _, ok := index[base]; ok {
					continue // added to its time's column
				}
			}
			v := vals[i]
			if t, ok := v.(time.Time); ok {
				if j, ok := index[c+"_ns"]; ok {
					if n, ok := vals[j].(int16); ok {
						t = t.Add(time.Duration(n))
					}
				}
				v = t.UTC().Format(time.RFC3339Nano)
			} else if b, ok := v.([]byte); ok && json.Valid(b) {
				v = json.RawMessage(b)
			}
			data[c] = v
		}
		if err := emit(store.Record{Kind: kind, Data: data}); err != nil {
			return err
		}
	}
	return rows.Err()
}

// DeleteAccount deletes the account's credentials and stops its targets
// in one transaction, its big kinds in batches, then the rest with the
// account.
func (db *DB) DeleteAccount(ctx context.Context, accountID string, batch int) error {
	if batch <= 0 {
		batch = store.DeleteBatch
	}
	err := db.serializable(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM accounts WHERE id = $1`, accountID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("postgres: account %s: %w", accountID, store.ErrNotFound)
		}
		return stopAccount(ctx, tx, accountID, time.Now())
	})
	if err != nil {
		return fmt.Errorf("postgres: delete account: %w", err)
	}
	store.DeleteStep(ctx, "stop")
	for _, kind := range store.BigKinds {
		cond, args := owned(kind, accountID)
		q := `DELETE FROM ` + kind + ` WHERE ctid IN (SELECT ctid FROM ` + kind + ` WHERE ` + cond +
			` LIMIT ` + fmt.Sprint(batch) + `)`
		for {
			var gone int64
			err := db.serializable(ctx, func(ctx context.Context, tx pgx.Tx) error {
				tag, err := tx.Exec(ctx, q, args...)
				gone = tag.RowsAffected()
				return err
			})
			if err != nil {
				return fmt.Errorf("postgres: delete account's %s: %w", kind, err)
			}
			store.DeleteStep(ctx, kind)
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("postgres: delete account: %w", err)
			}
			if gone < int64(batch) {
				break
			}
		}
	}
	err = db.serializable(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// What was added since the first transaction (a key, a user) is
		// stopped too.
		if err := stopAccount(ctx, tx, accountID, time.Now()); err != nil {
			return err
		}
		for _, kind := range store.DeleteOrder {
			cond, args := owned(kind, accountID)
			if _, err := tx.Exec(ctx, `DELETE FROM `+kind+` WHERE `+cond, args...); err != nil {
				return fmt.Errorf("%s: %w", kind, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: delete account: %w", err)
	}
	store.DeleteStep(ctx, "account")
	return nil
}

// stopAccount deletes an account's keys, ingest tokens, users, sessions, invitations and
// their guard windows and its events in the bus's tables, and marks its webhooks and connections deleted,
// their pending deliveries failed.
func stopAccount(ctx context.Context, tx pgx.Tx, accountID string, now time.Time) error {
	var subjects [][]byte
	rows, err := tx.Query(ctx, `SELECT key_hash, NULL FROM api_keys WHERE account_id = $1
		UNION ALL SELECT NULL, email FROM users WHERE account_id = $1`, accountID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var hash []byte
		var email *string
		if err := rows.Scan(&hash, &email); err != nil {
			rows.Close()
			return err
		}
		if email != nil {
			subjects = append(subjects, store.EmailGuardSubject(*email))
		} else {
			subjects = append(subjects, store.KeyGuardSubject(hash))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(subjects) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM guard_windows WHERE subject = ANY($1)`, subjects); err != nil {
			return err
		}
	}
	for _, kind := range []string{"sessions", "invitations", "users", "api_keys", "ingest_tokens"} {
		cond, args := owned(kind, accountID)
		if _, err := tx.Exec(ctx, `DELETE FROM `+kind+` WHERE `+cond, args...); err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
	}
	// Its events on their way in the bus's tables (one a topic: the
	// outbox's, bus postgres's): no fan-out of them follows.
	rows, err = tx.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()
		AND table_name LIKE 'watermill\_%' AND table_name NOT LIKE 'watermill\_offsets\_%'`)
	if err != nil {
		return err
	}
	topics, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, table := range topics {
		if _, err := tx.Exec(ctx, `DELETE FROM `+pgx.Identifier{table}.Sanitize()+` WHERE metadata->>'account_id' = $1`, accountID); err != nil {
			return err
		}
	}
	const reason = "account deleted"
	if _, err := tx.Exec(ctx, `UPDATE webhooks SET deleted_at = $2, deleted_at_ns = $3, enabled = false, disabled_reason = $4,
		disabled_at = $2, disabled_at_ns = $3, updated_at = $2, updated_at_ns = $3,
		secret = '', prev_secret = NULL, prev_secret_end = NULL, prev_secret_end_ns = NULL, settings = ''
		WHERE account_id = $1 AND deleted_at IS NULL`, accountID, ts(now), ns(now), reason); err != nil {
		return err
	}
	cond, _ := owned("webhook_deliveries", accountID)
	_, err = tx.Exec(ctx, `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, next_attempt_at_ns = NULL,
		last_error = $2, updated_at = $3, updated_at_ns = $4, lease = NULL, lease_until = NULL, lease_until_ns = NULL
		WHERE status = 'pending' AND `+cond, accountID, reason, ts(now), ns(now))
	return err
}
