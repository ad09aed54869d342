package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/aivis/aivis/core/store"
)

// Scan answers: written with their scan's end, listed by scan in the
// order of seq, pruned by recorded_at. The text search folds case with
// fold, Go's strings.ToLower registered on every connection (SQLite's
// lower knows ASCII only).

const answerColumns = `scan_id, seq, prompt_index, prompt, intent, run, engine, kind, text, error, sources_reported, mentioned,
	cited, position, detail, recorded_at, market`

// answersPerInsert bounds the rows of one INSERT (17 values each).
const answersPerInsert = 64

func scanAnswer(s scanner) (store.ScanAnswer, error) {
	var a store.ScanAnswer
	var errText sql.NullString
	var detail string
	var recorded int64
	err := s.Scan(&a.ScanID, &a.Seq, &a.PromptIndex, &a.Prompt, &a.Intent, &a.Run, &a.Engine, &a.Kind, &a.Text, &errText,
		&a.SourcesReported, &a.Mentioned, &a.Cited, &a.Position, &detail, &recorded, &a.Market)
	a.Error, a.Detail, a.RecordedAt = errText.String, []byte(detail), time.Unix(0, recorded).UTC()
	return a, err
}

func (t *txn) InsertScanAnswers(answers []store.ScanAnswer) error {
	for len(answers) > 0 {
		n := min(len(answers), answersPerInsert)
		rows := make([]string, n)
		args := make([]any, 0, 17*n)
		for i, a := range answers[:n] {
			rows[i] = "(" + placeholders(17) + ")"
			args = append(args, a.ScanID, a.Seq, a.PromptIndex, a.Prompt, a.Intent, a.Run, a.Engine, a.Kind, a.Text, nullStr(a.Error),
				a.SourcesReported, a.Mentioned, a.Cited, a.Position, string(a.Detail), stamp(a.RecordedAt), a.Market)
		}
		if _, err := t.tx.Exec(`INSERT INTO scan_answers (`+answerColumns+`) VALUES `+strings.Join(rows, ", "), args...); err != nil {
			return fmt.Errorf("sqlite: insert scan answers: %w", conflict(err))
		}
		answers = answers[n:]
	}
	return nil
}

// ListScanAnswers returns one page of a scan's answers, by seq.
func (db *DB) ListScanAnswers(ctx context.Context, f store.AnswerFilter) ([]store.ScanAnswer, string, error) {
	if f.Limit <= 0 {
		f.Limit = 20
	}
	q := `SELECT ` + answerColumns + ` FROM scan_answers
		WHERE scan_id = ? AND EXISTS (SELECT 1 FROM scans WHERE id = scan_answers.scan_id AND account_id = ?)`
	args := []any{f.ScanID, f.AccountID}
	if f.Cursor != "" {
		seq, err := store.AnswerSeq(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		q, args = q+` AND seq > ?`, append(args, seq)
	}
	for _, c := range []struct {
		cond string
		set  bool
		arg  any
	}{
		{"engine = ?", f.Engine != "", f.Engine},
		{"market = ?", f.Market != "", f.Market},
		{"prompt_index = ?", f.Prompt != nil, deref(f.Prompt)},
		{"mentioned = ?", f.Mentioned != nil, deref(f.Mentioned)},
		{"cited = ?", f.Cited != nil, deref(f.Cited)},
		{"instr(fold(text), fold(?)) > 0", f.Query != "", f.Query},
	} {
		if c.set {
			q, args = q+` AND `+c.cond, append(args, c.arg)
		}
	}
	return queryPage(ctx, db.r, "scan answers", q+` ORDER BY seq LIMIT ?`, append(args, f.Limit+1), f.Limit, scanAnswer,
		func(a store.ScanAnswer) string { return store.AnswerCursor(a.Seq) })
}

// deref is what p points at, or its type's zero value.
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// PruneScanAnswers forgets up to limit answers recorded before t, oldest
// first.
func (db *DB) PruneScanAnswers(ctx context.Context, t time.Time, limit int) (int, error) {
	return db.prune(ctx, "scan answers", pruneAnswers, bound(t), limit)
}
