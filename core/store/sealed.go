package store

import (
	"context"
	"fmt"
)

// SealedValue is one secret as the store keeps it, sealed with the master
// key (core/secrets): the field of a webhook or connection that holds it
// (SealedSecret, SealedPrevSecret or SealedSettings) and its stored text.
type SealedValue struct {
	WebhookID string
	Field     string
	Value     string
}

// The fields that hold sealed values.
const (
	SealedSecret     = "secret"
	SealedPrevSecret = "prev_secret"
	SealedSettings   = "settings"
	// SealedSigningSecret is an ingest token's (a Vercel drain's signature
	// secret); the SealedValue's WebhookID is then the token's id.
	SealedSigningSecret = "signing_secret"
)

// Resealed is a sealed value and what replaces it.
type Resealed struct {
	SealedValue
	With string
}

// Sealed lets the master key be rotated while servers run: the sealed
// values are read as stored, without opening them, and each is replaced
// only if it is still what was read.
type Sealed interface {
	// SealedValues returns the sealed values of up to limit webhooks and
	// connections after cursor ("" for the first), by webhook id and then
	// field, and the next page's cursor ("" after the last); empty fields
	// are not values. The cursor is a webhook id.
	SealedValues(ctx context.Context, cursor string, limit int) ([]SealedValue, string, error)
	// ReplaceSealed replaces, in one short write transaction, each value
	// of rs that its field still holds (compare-and-set on the value read,
	// so that a change made meanwhile wins) and says how many it replaced.
	// It changes nothing else of the webhook (updated_at stays).
	ReplaceSealed(ctx context.Context, rs []Resealed) (int, error)
}

// SealedColumn is the table and column of a field that holds sealed
// values, which an engine puts in its statements; an error for any other
// field.
func SealedColumn(field string) (table, column string, err error) {
	switch field {
	case SealedSecret, SealedPrevSecret, SealedSettings:
		return "webhooks", field, nil
	case SealedSigningSecret:
		return "ingest_tokens", field, nil
	}
	return "", "", fmt.Errorf("store: %q holds no sealed value", field)
}

// SealedValuesQuery is the query of a page of SealedValues: the
// webhooks' and the ingest tokens' rows after a cursor, by id (the two
// kinds of ids never meet), at most a limit; the engine gives its own
// placeholders for the cursor (twice) and the limit.
func SealedValuesQuery(cursor1, cursor2, limit string) string {
	return `SELECT id, secret, COALESCE(prev_secret, ''), settings, '' FROM webhooks WHERE id > ` + cursor1 + `
		UNION ALL SELECT id, '', '', '', signing_secret FROM ingest_tokens WHERE id > ` + cursor2 + ` AND signing_secret <> ''
		ORDER BY id LIMIT ` + limit
}

// SealedRows are the rows an engine's query of SealedValues gives: the
// id, secret, prev_secret and settings of webhooks, by id (database/sql's
// and pgx's rows both are).
type SealedRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanSealed reads the page of SealedValues from rows of at most limit
// webhooks: their set fields, and the next cursor ("" when fewer than
// limit came).
func ScanSealed(rows SealedRows, limit int) ([]SealedValue, string, error) {
	var out []SealedValue
	n, last := 0, ""
	for rows.Next() {
		var id, secret, prev, settings, signing string
		if err := rows.Scan(&id, &secret, &prev, &settings, &signing); err != nil {
			return nil, "", err
		}
		for _, v := range []SealedValue{{id, SealedPrevSecret, prev}, {id, SealedSecret, secret}, {id, SealedSettings, settings},
			{id, SealedSigningSecret, signing}} {
			if v.Value != "" {
				out = append(out, v)
			}
		}
		n, last = n+1, id
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	if n < limit {
		last = ""
	}
	return out, last, nil
}
