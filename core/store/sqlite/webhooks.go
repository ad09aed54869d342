package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
)

// SetSecrets gives the store the master key that seals the secrets it
// keeps (webhook signing secrets); without it, they cannot be written.
func (db *DB) SetSecrets(b *secrets.Box) { db.box = b }

func (db *DB) seal(s string) (string, error) {
	if db.box == nil {
		return "", errors.New("sqlite: no master key to seal a secret with")
	}
	return db.box.Seal(s), nil
}

func (db *DB) open(s string) (string, error) {
	if db.box == nil {
		return "", errors.New("sqlite: no master key to open a secret with")
	}
	return db.box.Open(s)
}

// webhookColumns are those written; webhookSelect, those read: a webhook
// is marked deleted only by DeleteWebhook.
const (
	webhookColumns = `id, account_id, client_id, domain, url, events, min_score_change, enabled, disabled_reason, disabled_at,
	secret, prev_secret, prev_secret_end, failing_since, failures, last_success_at, created_at, updated_at,
	connector, name, domains, settings, public_settings, secret_fields, subscription, min_citation_change, min_crawler_errors`
	webhookSelect = webhookColumns + `, deleted_at`
)

func (db *DB) scanWebhook(s scanner) (store.Webhook, error) {
	var w store.Webhook
	var client, reason, prev, connector sql.NullString
	var events, doms, settings, public, secretFields string
	var enabled, subscription int
	var disabledAt, prevEnd, failing, success, created, updated, deleted sql.NullInt64
	err := s.Scan(&w.ID, &w.AccountID, &client, &w.Domain, &w.URL, &events, &w.MinScoreChange, &enabled, &reason, &disabledAt,
		&w.Secret, &prev, &prevEnd, &failing, &w.Failures, &success, &created, &updated,
		&connector, &w.Name, &doms, &settings, &public, &secretFields, &subscription, &w.MinCitationChange, &w.MinCrawlerErrors, &deleted)
	if err != nil {
		return w, err
	}
	w.Connector, w.Domains, w.SecretFields, w.Subscription = connector.String, strings.Fields(doms), strings.Fields(secretFields), subscription == 1
	if public != "" {
		w.PublicSettings = json.RawMessage(public)
	}
	w.Settings = json.RawMessage(settings)
	w.ClientID, w.DisabledReason, w.PrevSecret = client.String, reason.String, prev.String
	w.Events = strings.Fields(events)
	w.Enabled = enabled == 1
	w.DisabledAt, w.PrevSecretEnd, w.FailingSince = fromNS(disabledAt), fromNS(prevEnd), fromNS(failing)
	w.LastSuccessAt, w.CreatedAt, w.UpdatedAt, w.DeletedAt = fromNS(success), fromNS(created), fromNS(updated), fromNS(deleted)
	return w.WithSecrets(db.open)
}

func (db *DB) webhookArgs(w store.Webhook) ([]any, error) {
	w, err := w.WithSecrets(db.seal)
	if err != nil {
		return nil, err
	}
	return []any{w.ID, w.AccountID, nullStr(w.ClientID), w.Domain, w.URL, strings.Join(w.Events, " "), w.MinScoreChange, bit(w.Enabled),
		nullStr(w.DisabledReason), ns(w.DisabledAt), w.Secret, nullStr(w.PrevSecret), ns(w.PrevSecretEnd), ns(w.FailingSince),
		w.Failures, ns(w.LastSuccessAt), stamp(w.CreatedAt), stamp(w.UpdatedAt),
		nullStr(w.Connector), w.Name, strings.Join(w.Domains, " "), string(w.Settings), string(w.PublicSettings),
		strings.Join(w.SecretFields, " "), bit(w.Subscription), w.MinCitationChange, w.MinCrawlerErrors}, nil
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (t *txn) InsertWebhook(w store.Webhook) error {
	args, err := t.db.webhookArgs(w)
	if err != nil {
		return err
	}
	_, err = t.tx.Exec(`INSERT INTO webhooks (`+webhookColumns+`) VALUES (`+placeholders(len(args))+`)`, args...)
	if err != nil {
		return fmt.Errorf("sqlite: insert webhook: %w", conflict(err))
	}
	return nil
}

func (t *txn) Webhook(accountID, id string) (store.Webhook, error) {
	w, err := t.db.scanWebhook(t.tx.QueryRow(`SELECT `+webhookSelect+` FROM webhooks WHERE account_id = ? AND id = ?`, accountID, id))
	if err != nil {
		return w, fmt.Errorf("sqlite: webhook %s: %w", id, notFound(err))
	}
	return w, nil
}

func (t *txn) UpdateWebhook(w store.Webhook) error {
	args, err := t.db.webhookArgs(w)
	if err != nil {
		return err
	}
	res, err := t.tx.Exec(`UPDATE webhooks SET url = ?5, events = ?6, min_score_change = ?7, enabled = ?8, disabled_reason = ?9,
		disabled_at = ?10, secret = ?11, prev_secret = ?12, prev_secret_end = ?13, failing_since = ?14, failures = ?15,
		last_success_at = ?16, updated_at = ?18, name = ?20, domains = ?21, settings = ?22, public_settings = ?23,
		secret_fields = ?24, subscription = ?25, min_citation_change = ?26,
		min_crawler_errors = ?27 WHERE id = ?1 AND account_id = ?2`, args...)
	if err != nil {
		return fmt.Errorf("sqlite: update webhook: %w", conflict(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: webhook %s: %w", w.ID, store.ErrNotFound)
	}
	return nil
}

func (t *txn) UpdateWebhookHealth(w store.Webhook) error {
	res, err := t.tx.Exec(`UPDATE webhooks SET failing_since = ?, failures = ?, last_success_at = ?
		WHERE id = ? AND account_id = ?`, ns(w.FailingSince), w.Failures, ns(w.LastSuccessAt), w.ID, w.AccountID)
	if err != nil {
		return fmt.Errorf("sqlite: update webhook: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: webhook %s: %w", w.ID, store.ErrNotFound)
	}
	return nil
}

func (t *txn) DeleteWebhook(accountID, id, reason string, at time.Time) error {
	// Kept for its delivery log; its secrets are of no further use.
	res, err := t.tx.Exec(`UPDATE webhooks SET deleted_at = ?3, enabled = 0, disabled_reason = ?4, disabled_at = ?3, updated_at = ?3,
		secret = '', prev_secret = NULL, prev_secret_end = NULL, settings = ''
		WHERE account_id = ?1 AND id = ?2 AND deleted_at IS NULL`, accountID, id, stamp(at), reason)
	if err != nil {
		return fmt.Errorf("sqlite: delete webhook: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: webhook %s: %w", id, store.ErrNotFound)
	}
	// Along its due index: what is left to send will not be.
	_, err = t.tx.Exec(`UPDATE webhook_deliveries INDEXED BY webhook_deliveries_due_by_webhook
		SET status = 'failed', next_attempt_at = NULL, last_error = ?1, updated_at = ?2, lease = NULL, lease_until = NULL
		WHERE webhook_id = ?3 AND status = 'pending'`,
		reason, stamp(at), id)
	if err != nil {
		return fmt.Errorf("sqlite: delete webhook: %w", err)
	}
	return nil
}

func (t *txn) CountWebhooks(accountID string, connections bool) (int, error) {
	return countWebhooks(t.tx.QueryRow, accountID, connections)
}

// CountWebhooks counts an account's webhooks or connections, its clients'
// included, deleted ones not.
func (db *DB) CountWebhooks(ctx context.Context, accountID string, connections bool) (int, error) {
	return countWebhooks(func(q string, args ...any) *sql.Row { return db.r.QueryRowContext(ctx, q, args...) }, accountID, connections)
}

func countWebhooks(queryRow func(string, ...any) *sql.Row, accountID string, connections bool) (int, error) {
	var n int
	err := queryRow(`SELECT count(*) FROM webhooks WHERE account_id = ? AND (connector IS NOT NULL) = ? AND deleted_at IS NULL`,
		accountID, connections).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqlite: count webhooks: %w", err)
	}
	return n, nil
}

// Webhook reads a webhook of an account.
func (db *DB) Webhook(ctx context.Context, accountID, id string) (store.Webhook, error) {
	w, err := db.scanWebhook(db.r.QueryRowContext(ctx, `SELECT `+webhookSelect+` FROM webhooks WHERE account_id = ? AND id = ?`, accountID, id))
	if err != nil {
		return w, fmt.Errorf("sqlite: webhook %s: %w", id, notFound(err))
	}
	return w, nil
}

// ListWebhooks returns one page of an owner's webhooks, newest first.
func (db *DB) ListWebhooks(ctx context.Context, f store.WebhookFilter) ([]store.Webhook, string, error) {
	q := `SELECT ` + webhookSelect + ` FROM webhooks WHERE account_id = ? AND (connector IS NOT NULL) = ? AND (deleted_at IS NOT NULL) = ?`
	args := []any{f.AccountID, f.Connections, f.Deleted}
	if !f.AllClients {
		q += ` AND client_id IS ?`
		args = append(args, nullStr(f.ClientID))
	}
	return listPage(ctx, db.r, "webhooks", q, args, f.Cursor, f.Limit, db.scanWebhook,
		func(w store.Webhook) (time.Time, string) { return w.CreatedAt, w.ID })
}

// MatchWebhooks lists the webhooks, enabled or not, of exactly one owner
// for a domain, and the owner's connections.
func (db *DB) MatchWebhooks(ctx context.Context, accountID, clientID, domain string) ([]store.Webhook, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+webhookSelect+` FROM webhooks
		WHERE account_id = ?1 AND client_id IS ?3 AND (domain = ?2 OR connector IS NOT NULL) AND deleted_at IS NULL`,
		accountID, domain, nullStr(clientID))
	if err != nil {
		return nil, fmt.Errorf("sqlite: match webhooks: %w", err)
	}
	defer rows.Close()
	var out []store.Webhook
	for rows.Next() {
		w, err := db.scanWebhook(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: match webhooks: %w", err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: match webhooks: %w", err)
	}
	return out, nil
}

// DefaultWebhookURL is the owner's default endpoint, "" when unset.
func (db *DB) DefaultWebhookURL(ctx context.Context, accountID, clientID string) (string, error) {
	var u sql.NullString
	var err error
	if clientID == "" {
		err = db.r.QueryRowContext(ctx, `SELECT default_webhook_url FROM accounts WHERE id = ?`, accountID).Scan(&u)
	} else {
		err = db.r.QueryRowContext(ctx, `SELECT default_webhook_url FROM clients WHERE account_id = ? AND id = ?`, accountID, clientID).Scan(&u)
	}
	if err != nil {
		return "", fmt.Errorf("sqlite: default webhook url: %w", notFound(err))
	}
	return u.String, nil
}

// SetDefaultWebhookURL sets the owner's default endpoint ("" clears it).
func (db *DB) SetDefaultWebhookURL(ctx context.Context, accountID, clientID, url string) error {
	var res sql.Result
	var err error
	if clientID == "" {
		res, err = db.w.ExecContext(ctx, `UPDATE accounts SET default_webhook_url = ? WHERE id = ?`, nullStr(url), accountID)
	} else {
		res, err = db.w.ExecContext(ctx, `UPDATE clients SET default_webhook_url = ? WHERE account_id = ? AND id = ?`, nullStr(url), accountID, clientID)
	}
	if err != nil {
		return fmt.Errorf("sqlite: set default webhook url: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: default webhook url: %w", store.ErrNotFound)
	}
	return nil
}
