package sqlite

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

// idsPerQuery bounds the scan ids one statement binds.
const idsPerQuery = 500

// ScansAround returns the completed scans of one owner's domain around
// w.At, each side in the order they finished.
func (db *DB) ScansAround(ctx context.Context, w store.ScanWindows) (before, after []store.Scan, err error) {
	columns := strings.Replace(scanColumns, "result", "NULL", 1)
	q := `SELECT ` + columns + ` FROM scans WHERE account_id = ? AND domain = ? AND client_id IS ? AND status = 'completed'`
	args := []any{w.AccountID, w.Domain, nullStr(w.ClientID), bound(w.At)}
	if w.Before > 0 {
		before, _, err = queryPage(ctx, db.r, "scans before", q+` AND finished_at < ? ORDER BY finished_at DESC, id DESC LIMIT ?`,
			append(args, w.Before), w.Before, scanScan, func(store.Scan) string { return "" })
		if err != nil {
			return nil, nil, err
		}
		slices.Reverse(before)
	}
	if w.After > 0 {
		after, _, err = queryPage(ctx, db.r, "scans after", q+` AND finished_at >= ? ORDER BY finished_at, id LIMIT ?`,
			append(args, w.After), w.After, scanScan, func(store.Scan) string { return "" })
	}
	return before, after, err
}

// ScanEngines finds the engines that answered in each of an account's
// scans.
func (db *DB) ScanEngines(ctx context.Context, accountID string, scanIDs []string) (map[string][]string, error) {
	out := map[string][]string{}
	for ids := range slices.Chunk(scanIDs, idsPerQuery) {
		err := db.forScans(ctx, `SELECT scan_id, engine FROM scan_answers INDEXED BY scan_answers_engines`, accountID, ids,
			`GROUP BY scan_id, engine ORDER BY scan_id, engine`, func(s scanner) error {
				var id, engine string
				if err := s.Scan(&id, &engine); err != nil {
					return err
				}
				out[id] = append(out[id], engine)
				return nil
			})
		if err != nil {
			return nil, fmt.Errorf("sqlite: scan engines: %w", err)
		}
	}
	return out, nil
}

// AnswerFacts returns the kept answers of an account's scans, failures
// left out, without their text.
func (db *DB) AnswerFacts(ctx context.Context, accountID string, scanIDs []string) ([]store.ScanAnswer, error) {
	var out []store.ScanAnswer
	columns := strings.Replace(answerColumns, "text,", "'',", 1)
	for ids := range slices.Chunk(scanIDs, idsPerQuery) {
		err := db.forScans(ctx, `SELECT `+columns+` FROM scan_answers`, accountID, ids, `ORDER BY scan_id, seq`, func(s scanner) error {
			a, err := scanAnswer(s)
			out = append(out, a)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("sqlite: answer facts: %w", err)
		}
	}
	slices.SortStableFunc(out, func(a, b store.ScanAnswer) int {
		return strings.Compare(a.ScanID, b.ScanID)
	})
	return out, nil
}

// forScans runs selectFrom over the kept answers (error IS NULL) of the
// account's scans among ids, then tail, and hands each row to each. Each
// scan is found by its key (+account_id keeps the planner from walking
// every scan of the account along scans_owner instead), its answers along
// an index in the order tail asks, with no sort.
func (db *DB) forScans(ctx context.Context, selectFrom, accountID string, ids []string, tail string, each func(scanner) error) error {
	if len(ids) == 0 {
		return nil
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, accountID)
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := db.r.QueryContext(ctx, selectFrom+` WHERE error IS NULL AND scan_id IN (
		SELECT id FROM scans WHERE id IN (`+placeholders(len(ids))+`) AND +account_id = ?) `+tail, append(args[1:], accountID)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
