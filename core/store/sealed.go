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

// SealedColumn is the column of a field that holds sealed values, which
// an engine puts in its statements; an error for any other field.
func SealedColumn(field string) (string, error) {
	switch field {
	case SealedSecret, SealedPrevSecret, SealedSettings:
		return field, nil
	}
	return "", fmt.Errorf("store: %q holds no sealed value", field)
}

// AppendSealed appends to vs the values of one webhook's fields that
// are set, in the order of SealedValues.
func AppendSealed(vs []SealedValue, webhookID, secret, prevSecret, settings string) []SealedValue {
	for _, v := range []SealedValue{{webhookID, SealedPrevSecret, prevSecret}, {webhookID, SealedSecret, secret}, {webhookID, SealedSettings, settings}} {
		if v.Value != "" {
			vs = append(vs, v)
		}
	}
	return vs
}
