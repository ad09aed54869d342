package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/store"
)

// SealedValues reads the sealed values of up to limit webhooks and ingest
// tokens after cursor, by id, as stored.
func (db *DB) SealedValues(ctx context.Context, cursor string, limit int) ([]store.SealedValue, string, error) {
	if limit <= 0 {
		limit = 20
	}
	rows, err := db.pool.Query(ctx, store.SealedValuesQuery("$1", "$1", "$2"), cursor, limit)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: sealed values: %w", err)
	}
	defer rows.Close()
	vs, next, err := store.ScanSealed(rows, limit)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: sealed values: %w", err)
	}
	return vs, next, nil
}

// ReplaceSealed replaces each value of rs still stored, in one
// transaction: each UPDATE compares with the value read and takes the
// row's lock, so a concurrent change of the secret either commits first
// (and this one replaces nothing) or waits for this transaction.
func (db *DB) ReplaceSealed(ctx context.Context, rs []store.Resealed) (int, error) {
	replaced := 0
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		replaced = 0
		for _, r := range rs {
			table, col, err := store.SealedColumn(r.Field)
			if err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, `UPDATE `+table+` SET `+col+` = $1 WHERE id = $2 AND `+col+` = $3`, r.With, r.WebhookID, r.Value)
			if err != nil {
				return err
			}
			replaced += int(tag.RowsAffected())
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: replace sealed values: %w", err)
	}
	return replaced, nil
}
