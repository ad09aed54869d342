package store

import (
	"context"
	"crypto/sha256"
	"strings"
)

// Record is one row an account owns, as an export gives it: Kind is the
// table that holds it (accounts, clients, api_keys, users, sessions,
// invitations, webhooks, webhook_deliveries, webhook_attempts, event_log,
// monitored_domains, scans, scan_answers, visibility_readings,
// content_requests, budget_months, usage_hourly, rate_windows,
// idempotency_keys, ingest_tokens, traffic_batches, crawler_hits,
// referral_visits, domain_changes), Data its columns by name: a time as
// RFC 3339 text in UTC to the nanosecond, a JSON column as its JSON, bytes
// that are not JSON as base64 (encoding/json's []byte). No secret is in
// it (see Erasure).
type Record struct {
	Kind string         `json:"kind"`
	Data map[string]any `json:"data"`
}

// Kinds are the kinds of Record, in the order of an export: each table
// that holds rows of an account.
var Kinds = []string{"accounts", "clients", "api_keys", "users", "sessions", "invitations", "webhooks",
	"webhook_deliveries", "webhook_attempts", "event_log", "monitored_domains", "scans", "scan_answers",
	"visibility_readings", "content_requests", "budget_months", "usage_hourly", "rate_windows", "idempotency_keys",
	"ingest_tokens", "traffic_batches", "crawler_hits", "referral_visits", "domain_changes"}

// Erasure exports and deletes an account with everything it owns.
type Erasure interface {
	// ExportAccount calls emit with every row the account owns, in one
	// consistent read (a snapshot of the store), kind by kind in the order
	// of Kinds, the account first. Secrets are left out, their columns dropped:
	// sealed values (a webhook's or a connection's secret and sealed
	// settings, an ingest token's signing secret), the hashes of keys and
	// secrets, of passwords, of session, invitation and ingest tokens, and
	// sessions' CSRF tokens. It stops at
	// emit's first error and returns it; ErrNotFound when there is no
	// such account.
	ExportAccount(ctx context.Context, accountID string, emit func(Record) error) error
	// DeleteAccount deletes the account and every row it owns, in every
	// table: a first transaction deletes its keys, ingest tokens, users
	// (their sessions) and invitations and marks its webhooks and connections deleted, so
	// that from its commit on no key of the account authenticates on any
	// handle and none of its deliveries is attempted; then the rows of
	// the big kinds (answers, readings, deliveries and their attempts,
	// events, usage, traffic aggregates) go in transactions of at most batch rows each (0 or
	// less: DeleteBatch), and a last transaction deletes the rest with the
	// account itself. Until that last commit the account is still there,
	// so a delete that stopped (an error, a crash) is taken up by calling
	// it again. ErrNotFound when there is no such account.
	DeleteAccount(ctx context.Context, accountID string, batch int) error
}

type deleteStepKey struct{}

// WithDeleteSteps returns a context under which DeleteAccount calls step
// after each of its transactions commits, with what it deleted: "stop"
// (the first), a big kind's name (each of its batches) and "account" (the
// last). It is for watching a delete's progress, and for tests that stop
// one midway.
func WithDeleteSteps(ctx context.Context, step func(what string)) context.Context {
	return context.WithValue(ctx, deleteStepKey{}, step)
}

// DeleteStep is what an engine's DeleteAccount calls after each of its
// transactions commits (WithDeleteSteps).
func DeleteStep(ctx context.Context, what string) {
	if step, ok := ctx.Value(deleteStepKey{}).(func(string)); ok {
		step(what)
	}
}

// DeleteBatch is DeleteAccount's default batch: the rows of one kind one
// of its transactions deletes.
const DeleteBatch = 5000

// SecretColumns are the columns of each kind ExportAccount leaves out.
var SecretColumns = map[string][]string{
	"api_keys":      {"key_hash", "secret_hash"},
	"users":         {"password_hash"},
	"sessions":      {"token_hash", "csrf"},
	"invitations":   {"token_hash"},
	"webhooks":      {"secret", "prev_secret", "settings"},
	"ingest_tokens": {"token_hash", "signing_secret"},
}

// Secret says whether kind's column is one ExportAccount leaves out.
func Secret(kind, column string) bool {
	for _, c := range SecretColumns[kind] {
		if c == column {
			return true
		}
	}
	return false
}

// KeyGuardSubject is a key's subject in the guard windows (guard_windows,
// core/limits' KeySubject as the shared guards keep it): its kind, then
// the key's SHA-256, which is the key's hash.
func KeyGuardSubject(keyHash []byte) []byte { return append([]byte{1}, keyHash...) }

// EmailGuardSubject is an email address's subject in the guard windows
// (core/limits' EmailSubject as the shared guards keep it).
func EmailGuardSubject(email string) []byte {
	h := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(email))))
	return append([]byte{2}, h[:]...)
}

// IdempotencyScopePrefix is what the scopes of an account's idempotency
// records begin with (core/content: the account's id, a slash, the
// client's id).
func IdempotencyScopePrefix(accountID string) string { return accountID + "/" }

// DeleteOrder is the order in which DeleteAccount's last transaction
// deletes an account's rows, each kind before what it references.
var DeleteOrder = []string{"sessions", "scan_answers", "webhook_attempts", "webhook_deliveries", "scans",
	"crawler_hits", "referral_visits", "traffic_batches", "ingest_tokens", "domain_changes", "monitored_domains", "webhooks", "content_requests", "visibility_readings", "event_log", "usage_hourly",
	"rate_windows", "budget_months", "idempotency_keys", "invitations", "users", "api_keys", "clients", "accounts"}

// BigKinds are the kinds DeleteAccount deletes in batches before its
// last transaction, each before what it references. A delivery's
// attempts go with it (ON DELETE CASCADE): a batch of deliveries finds
// them by their key, where a batch of attempts would look through every
// delivery of the account for those that have some left.
var BigKinds = []string{"scan_answers", "webhook_deliveries", "event_log", "visibility_readings", "usage_hourly",
	"crawler_hits", "referral_visits"}
