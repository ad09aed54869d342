package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/store"
)

// Scan answers: written with their scan's end in one COPY, listed by scan
// in the order of seq, pruned by recorded_at. The text search folds case
// with lower under ICU's root collation ("und-x-icu"), which folds the
// letters of every script whatever the database's own locale (in the C
// locale lower folds ASCII only).

var answerColumns = []string{"scan_id", "seq", "prompt_index", "prompt", "intent", "run", "engine", "kind", "text", "error",
	"sources_reported", "mentioned", "cited", "position", "detail", "recorded_at", "recorded_at_ns", "market"}

const answerSelect = `SELECT scan_id, seq, prompt_index, prompt, intent, run, engine, kind, text, error, sources_reported, mentioned,
	cited, position, detail, recorded_at, recorded_at_ns, market FROM scan_answers`

func scanAnswer(s scanner) (store.ScanAnswer, error) {
	var a store.ScanAnswer
	var errText *string
	var recorded tcol
	err := s.Scan(&a.ScanID, &a.Seq, &a.PromptIndex, &a.Prompt, &a.Intent, &a.Run, &a.Engine, &a.Kind, &a.Text, &errText,
		&a.SourcesReported, &a.Mentioned, &a.Cited, &a.Position, &a.Detail, &recorded.t, &recorded.ns, &a.Market)
	a.Error, a.RecordedAt = str(errText), recorded.time()
	return a, err
}

func (t *txn) InsertScanAnswers(answers []store.ScanAnswer) error {
	_, err := t.tx.CopyFrom(t.ctx, pgx.Identifier{"scan_answers"}, answerColumns, pgx.CopyFromSlice(len(answers), func(i int) ([]any, error) {
		a := answers[i]
		return []any{a.ScanID, a.Seq, a.PromptIndex, a.Prompt, a.Intent, a.Run, a.Engine, a.Kind, a.Text, null(a.Error),
			a.SourcesReported, a.Mentioned, a.Cited, a.Position, []byte(a.Detail), ts(a.RecordedAt), ns(a.RecordedAt), a.Market}, nil
	}))
	if err != nil {
		return fmt.Errorf("postgres: insert scan answers: %w", conflict(err))
	}
	return nil
}

// ListScanAnswers returns one page of a scan's answers, by seq.
func (db *DB) ListScanAnswers(ctx context.Context, f store.AnswerFilter) ([]store.ScanAnswer, string, error) {
	if f.Limit <= 0 {
		f.Limit = 20
	}
	var w where
	w.and("scan_id = ? AND EXISTS (SELECT 1 FROM scans s WHERE s.id = scan_answers.scan_id AND s.account_id = ?)", f.ScanID, f.AccountID)
	if f.Cursor != "" {
		seq, err := store.AnswerSeq(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		w.and("seq > ?", seq)
	}
	if f.Engine != "" {
		w.and("engine = ?", f.Engine)
	}
	if f.Market != "" {
		w.and("market = ?", f.Market)
	}
	if f.Prompt != nil {
		w.and("prompt_index = ?", *f.Prompt)
	}
	if f.Mentioned != nil {
		w.and("mentioned = ?", *f.Mentioned)
	}
	if f.Cited != nil {
		w.and("cited = ?", *f.Cited)
	}
	if f.Query != "" {
		w.and(`strpos(lower(text COLLATE "und-x-icu"), lower(?::text COLLATE "und-x-icu")) > 0`, f.Query)
	}
	return queryPage(ctx, db.pool, "scan answers", answerSelect+` WHERE `+w.String()+` ORDER BY seq LIMIT `+strconv.Itoa(f.Limit+1),
		w.args, f.Limit, scanAnswer, func(a store.ScanAnswer) string { return store.AnswerCursor(a.Seq) })
}

// PruneScanAnswers forgets up to limit answers recorded before t, oldest
// first.
func (db *DB) PruneScanAnswers(ctx context.Context, t time.Time, limit int) (int, error) {
	at, n := bound(t)
	return db.prune(ctx, "scan answers", pruneAnswers, at, n, limit)
}
