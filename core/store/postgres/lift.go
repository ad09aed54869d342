package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aivis/aivis/core/store"
)

// What a change's lift reads: the completed scans around the change (the
// scans_completed index), the engines that answered in each (the
// scan_answers_engines index, no answer read) and the answers of its
// windows without their text.

// ScansAround returns the completed scans of one owner's domain around
// w.At, each side in the order they finished.
func (db *DB) ScansAround(ctx context.Context, w store.ScanWindows) (before, after []store.Scan, err error) {
	columns := strings.Replace(scanColumns, "result", "NULL::json", 1)
	side := func(cond, order string, limit int) ([]store.Scan, error) {
		if limit <= 0 {
			return nil, nil
		}
		var wh where
		wh.and("account_id = ? AND domain = ? AND status = 'completed'", w.AccountID, w.Domain)
		wh.owner("client_id", w.ClientID)
		t, n := bound(w.At)
		wh.and(cond, t, n)
		scans, err := collect(ctx, db.pool, func(s scanner) (store.Scan, error) { return scanScan(s) },
			`SELECT `+columns+` FROM scans WHERE `+wh.String()+fmt.Sprintf(` ORDER BY %s LIMIT %d`, order, limit), wh.args...)
		if err != nil {
			return nil, fmt.Errorf("postgres: scans around: %w", err)
		}
		return scans, nil
	}
	if before, err = side("(finished_at, finished_at_ns) < (?, ?)", "finished_at DESC, finished_at_ns DESC, id DESC", w.Before); err != nil {
		return nil, nil, err
	}
	slices.Reverse(before)
	after, err = side("(finished_at, finished_at_ns) >= (?, ?)", "finished_at, finished_at_ns, id", w.After)
	return before, after, err
}

// ScanEngines finds the engines that answered in each of an account's
// scans.
func (db *DB) ScanEngines(ctx context.Context, accountID string, scanIDs []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(scanIDs) == 0 {
		return out, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT a.scan_id, a.engine FROM scan_answers a JOIN scans s ON s.id = a.scan_id
		WHERE s.account_id = $1 AND s.id = ANY($2) AND a.error IS NULL
		GROUP BY a.scan_id, a.engine ORDER BY a.scan_id, a.engine`, accountID, scanIDs)
	if err != nil {
		return nil, fmt.Errorf("postgres: scan engines: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, engine string
		if err := rows.Scan(&id, &engine); err != nil {
			return nil, fmt.Errorf("postgres: scan engines: %w", err)
		}
		out[id] = append(out[id], engine)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: scan engines: %w", err)
	}
	return out, nil
}

// AnswerFacts returns the kept answers of an account's scans, failures
// left out, without their text.
func (db *DB) AnswerFacts(ctx context.Context, accountID string, scanIDs []string) ([]store.ScanAnswer, error) {
	if len(scanIDs) == 0 {
		return nil, nil
	}
	q := strings.Replace(answerSelect, "text,", "''::text,", 1)
	out, err := collect(ctx, db.pool, scanAnswer, q+` WHERE error IS NULL AND scan_id = ANY($2)
		AND scan_id IN (SELECT id FROM scans WHERE account_id = $1 AND id = ANY($2)) ORDER BY scan_id, seq`, accountID, scanIDs)
	if err != nil {
		return nil, fmt.Errorf("postgres: answer facts: %w", err)
	}
	return out, nil
}
