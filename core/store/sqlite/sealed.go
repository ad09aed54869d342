package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/aivis/aivis/core/store"
)

// SealedValues reads the sealed values of up to limit webhooks and ingest
// tokens after cursor, by id, as stored.
func (db *DB) SealedValues(ctx context.Context, cursor string, limit int) ([]store.SealedValue, string, error) {
	if limit <= 0 {
		limit = 20
	}
	rows, err := db.r.QueryContext(ctx, store.SealedValuesQuery("?", "?", "?"), cursor, cursor, limit)
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: sealed values: %w", err)
	}
	defer rows.Close()
	vs, next, err := store.ScanSealed(rows, limit)
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: sealed values: %w", err)
	}
	return vs, next, nil
}

// ReplaceSealed replaces each value of rs still stored, in one write
// transaction.
func (db *DB) ReplaceSealed(ctx context.Context, rs []store.Resealed) (int, error) {
	replaced := 0
	err := inTx(ctx, db.w, func(tx *sql.Tx) error {
		replaced = 0
		for _, r := range rs {
			table, col, err := store.SealedColumn(r.Field)
			if err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, `UPDATE `+table+` SET `+col+` = ? WHERE id = ? AND `+col+` = ?`, r.With, r.WebhookID, r.Value)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			replaced += int(n)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: replace sealed values: %w", err)
	}
	return replaced, nil
}
