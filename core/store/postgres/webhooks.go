package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aivis/aivis/core/store"
)

// Webhooks and connections. Their secrets (signing secrets, a connection's
// settings) are sealed with the master key before they are written and
// opened when read. The cap of an account's webhooks or connections is
// CountWebhooks then InsertWebhook in one SERIALIZABLE Update. An edit, a
// delete and a health write are each one UPDATE of the row, within Update.

func (db *DB) seal(s string) (string, error) { return db.box.Seal(s), nil }

// webhookColumns are those written; webhookSelect, those read: a webhook
// is marked deleted only by DeleteWebhook.
const (
	webhookColumns = `id, account_id, client_id, domain, url, events, min_score_change, enabled, disabled_reason,
	disabled_at, disabled_at_ns, secret, prev_secret, prev_secret_end, prev_secret_end_ns, failing_since, failing_since_ns,
	failures, last_success_at, last_success_at_ns, created_at, created_at_ns, updated_at, updated_at_ns,
	connector, name, domains, settings, public_settings, secret_fields, subscription, min_citation_change, min_crawler_errors`
	webhookSelect = webhookColumns + `, deleted_at, deleted_at_ns`
)

func (db *DB) scanWebhook(s scanner) (store.Webhook, error) {
	var w store.Webhook
	var client, reason, prev, connector *string
	var public []byte
	var disabled, prevEnd, failing, success, created, updated, deleted tcol
	err := s.Scan(&w.ID, &w.AccountID, &client, &w.Domain, &w.URL, &w.Events, &w.MinScoreChange, &w.Enabled, &reason,
		&disabled.t, &disabled.ns, &w.Secret, &prev, &prevEnd.t, &prevEnd.ns, &failing.t, &failing.ns,
		&w.Failures, &success.t, &success.ns, &created.t, &created.ns, &updated.t, &updated.ns,
		&connector, &w.Name, &w.Domains, &w.Settings, &public, &w.SecretFields, &w.Subscription,
		&w.MinCitationChange, &w.MinCrawlerErrors, &deleted.t, &deleted.ns)
	if err != nil {
		return w, err
	}
	w.ClientID, w.DisabledReason, w.PrevSecret, w.Connector = str(client), str(reason), str(prev), str(connector)
	if public != nil {
		w.PublicSettings = json.RawMessage(public)
	}
	w.DisabledAt, w.PrevSecretEnd, w.FailingSince = disabled.time(), prevEnd.time(), failing.time()
	w.LastSuccessAt, w.CreatedAt, w.UpdatedAt, w.DeletedAt = success.time(), created.time(), updated.time(), deleted.time()
	return w.WithSecrets(db.box.Open)
}

// webhookArgs are the values of webhookColumns, the secrets sealed.
func (db *DB) webhookArgs(w store.Webhook) ([]any, error) {
	w, err := w.WithSecrets(db.seal)
	if err != nil {
		return nil, err
	}
	var public []byte
	if len(w.PublicSettings) > 0 {
		public = w.PublicSettings
	}
	return []any{w.ID, w.AccountID, null(w.ClientID), w.Domain, w.URL, nonNil(w.Events), w.MinScoreChange, w.Enabled,
		null(w.DisabledReason), tsz(w.DisabledAt), nsz(w.DisabledAt), w.Secret, null(w.PrevSecret),
		tsz(w.PrevSecretEnd), nsz(w.PrevSecretEnd), tsz(w.FailingSince), nsz(w.FailingSince),
		w.Failures, tsz(w.LastSuccessAt), nsz(w.LastSuccessAt), ts(w.CreatedAt), ns(w.CreatedAt), ts(w.UpdatedAt), ns(w.UpdatedAt),
		null(w.Connector), w.Name, nonNil(w.Domains), string(w.Settings), public, nonNil(w.SecretFields), w.Subscription,
		w.MinCitationChange, w.MinCrawlerErrors}, nil
}

func (t *txn) InsertWebhook(w store.Webhook) error {
	args, err := t.db.webhookArgs(w)
	if err != nil {
		return err
	}
	tag, err := t.tx.Exec(t.ctx, `INSERT INTO webhooks (`+webhookColumns+`) VALUES (`+params(1, len(args))+`) ON CONFLICT (id) DO NOTHING`, args...)
	if err != nil {
		return fmt.Errorf("postgres: insert webhook: %w", conflict(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: webhook %s exists: %w", w.ID, store.ErrConflict)
	}
	return nil
}

func (t *txn) Webhook(accountID, id string) (store.Webhook, error) {
	return t.db.webhook(t.ctx, t.tx, accountID, id)
}

// Webhook reads a webhook of an account.
func (db *DB) Webhook(ctx context.Context, accountID, id string) (store.Webhook, error) {
	return db.webhook(ctx, db.pool, accountID, id)
}

func (db *DB) webhook(ctx context.Context, q querier, accountID, id string) (store.Webhook, error) {
	w, err := db.scanWebhook(q.QueryRow(ctx, `SELECT `+webhookSelect+` FROM webhooks WHERE account_id = $1 AND id = $2`, accountID, id))
	if err != nil {
		return w, fmt.Errorf("postgres: webhook %s: %w", id, notFound(err))
	}
	return w, nil
}

// webhookEdits are the columns UpdateWebhook writes: the settings, the
// state and the health, not the owner, the domain, the connector or the
// creation.
var webhookEdits = []string{"url", "events", "min_score_change", "enabled", "disabled_reason", "disabled_at", "disabled_at_ns",
	"secret", "prev_secret", "prev_secret_end", "prev_secret_end_ns", "failing_since", "failing_since_ns", "failures",
	"last_success_at", "last_success_at_ns", "updated_at", "updated_at_ns", "name", "domains", "settings", "public_settings",
	"secret_fields", "subscription", "min_citation_change", "min_crawler_errors"}

func (t *txn) UpdateWebhook(w store.Webhook) error {
	args, err := t.db.webhookArgs(w)
	if err != nil {
		return err
	}
	set, vals := pick(webhookColumns, args, webhookEdits)
	tag, err := t.tx.Exec(t.ctx, `UPDATE webhooks SET `+set+` WHERE id = $1 AND account_id = $2`, append([]any{w.ID, w.AccountID}, vals...)...)
	if err != nil {
		return fmt.Errorf("postgres: update webhook: %w", conflict(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: webhook %s: %w", w.ID, store.ErrNotFound)
	}
	return nil
}

// pick is "a = $3, b = $4, ..." for the named columns of a column list,
// and their values from args (those of the whole list), numbered after
// two parameters of the caller's.
func pick(columns string, args []any, names []string) (string, []any) {
	at := map[string]int{}
	for i, c := range strings.Split(columns, ",") {
		at[strings.TrimSpace(c)] = i
	}
	set := make([]string, len(names))
	vals := make([]any, len(names))
	for i, n := range names {
		set[i] = fmt.Sprintf("%s = $%d", n, i+3)
		vals[i] = args[at[n]]
	}
	return strings.Join(set, ", "), vals
}

// UpdateWebhookHealth writes only what attempts change.
func (t *txn) UpdateWebhookHealth(w store.Webhook) error {
	tag, err := t.tx.Exec(t.ctx, `UPDATE webhooks SET failing_since = $3, failing_since_ns = $4, failures = $5,
		last_success_at = $6, last_success_at_ns = $7 WHERE id = $1 AND account_id = $2`,
		w.ID, w.AccountID, tsz(w.FailingSince), nsz(w.FailingSince), w.Failures, tsz(w.LastSuccessAt), nsz(w.LastSuccessAt))
	if err != nil {
		return fmt.Errorf("postgres: update webhook health: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: webhook %s: %w", w.ID, store.ErrNotFound)
	}
	return nil
}

// DeleteWebhook keeps the webhook, without its secrets, for its delivery
// log, and fails its pending deliveries, ending their leases: an outcome
// recorded under one of them later is ErrLost.
func (t *txn) DeleteWebhook(accountID, id, reason string, at time.Time) error {
	tag, err := t.tx.Exec(t.ctx, `UPDATE webhooks SET deleted_at = $3, deleted_at_ns = $4, enabled = false, disabled_reason = $5,
		disabled_at = $3, disabled_at_ns = $4, updated_at = $3, updated_at_ns = $4,
		secret = '', prev_secret = NULL, prev_secret_end = NULL, prev_secret_end_ns = NULL, settings = ''
		WHERE account_id = $1 AND id = $2 AND deleted_at IS NULL`, accountID, id, ts(at), ns(at), reason)
	if err != nil {
		return fmt.Errorf("postgres: delete webhook: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: webhook %s: %w", id, store.ErrNotFound)
	}
	_, err = t.tx.Exec(t.ctx, `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, next_attempt_at_ns = NULL,
		last_error = $2, updated_at = $3, updated_at_ns = $4, lease = NULL, lease_until = NULL, lease_until_ns = NULL
		WHERE webhook_id = $1 AND status = 'pending'`, id, reason, ts(at), ns(at))
	if err != nil {
		return fmt.Errorf("postgres: delete webhook: %w", err)
	}
	return nil
}

const countWebhooks = `SELECT count(*) FROM webhooks WHERE account_id = $1 AND (connector IS NOT NULL) = $2 AND deleted_at IS NULL`

func (t *txn) CountWebhooks(accountID string, connections bool) (int, error) {
	return count(t.ctx, t.tx, "webhooks", countWebhooks, accountID, connections)
}

// CountWebhooks counts an account's webhooks or connections, its clients'
// included, deleted ones not.
func (db *DB) CountWebhooks(ctx context.Context, accountID string, connections bool) (int, error) {
	return count(ctx, db.pool, "webhooks", countWebhooks, accountID, connections)
}

func count(ctx context.Context, q querier, what, sql string, args ...any) (int, error) {
	var n int
	if err := q.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count %s: %w", what, err)
	}
	return n, nil
}

// ListWebhooks returns one page of an owner's webhooks, newest first.
func (db *DB) ListWebhooks(ctx context.Context, f store.WebhookFilter) ([]store.Webhook, string, error) {
	var w where
	w.and("account_id = ? AND (connector IS NOT NULL) = ? AND (deleted_at IS NOT NULL) = ?", f.AccountID, f.Connections, f.Deleted)
	if !f.AllClients {
		w.owner("client_id", f.ClientID)
	}
	return listPage(ctx, db, "webhooks", `SELECT `+webhookSelect+` FROM webhooks`, w, "created_at", f.Cursor, f.Limit, db.scanWebhook,
		func(w store.Webhook) (time.Time, string) { return w.CreatedAt, w.ID })
}

// MatchWebhooks lists the webhooks, enabled or not, of exactly one owner
// for a domain, and the owner's connections.
func (db *DB) MatchWebhooks(ctx context.Context, accountID, clientID, domain string) ([]store.Webhook, error) {
	var w where
	w.and("account_id = ? AND deleted_at IS NULL AND (domain = ? OR connector IS NOT NULL)", accountID, domain)
	w.owner("client_id", clientID)
	out, err := collect(ctx, db.pool, db.scanWebhook, `SELECT `+webhookSelect+` FROM webhooks WHERE `+w.String(), w.args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: match webhooks: %w", err)
	}
	return out, nil
}

// DefaultWebhookURL is the owner's default endpoint, "" when unset.
func (db *DB) DefaultWebhookURL(ctx context.Context, accountID, clientID string) (string, error) {
	var u *string
	var err error
	if clientID == "" {
		err = db.pool.QueryRow(ctx, `SELECT default_webhook_url FROM accounts WHERE id = $1`, accountID).Scan(&u)
	} else {
		err = db.pool.QueryRow(ctx, `SELECT default_webhook_url FROM clients WHERE account_id = $1 AND id = $2`, accountID, clientID).Scan(&u)
	}
	if err != nil {
		return "", fmt.Errorf("postgres: default webhook url: %w", notFound(err))
	}
	return str(u), nil
}

// SetDefaultWebhookURL sets the owner's default endpoint ("" clears it).
func (db *DB) SetDefaultWebhookURL(ctx context.Context, accountID, clientID, url string) error {
	q, args := `UPDATE accounts SET default_webhook_url = $1 WHERE id = $2`, []any{null(url), accountID}
	if clientID != "" {
		q, args = `UPDATE clients SET default_webhook_url = $1 WHERE account_id = $2 AND id = $3`, append(args, clientID)
	}
	tag, err := db.pool.Exec(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("postgres: set default webhook url: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: default webhook url: %w", store.ErrNotFound)
	}
	return nil
}
