package accounts

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
)

// ExportEnd is the kind of an export's last line, {"kind": "end", "data":
// {"records": N}}: an export without it was cut short.
const ExportEnd = "end"

// Exporter is the store's part Export reads.
type Exporter interface {
	ExportAccount(ctx context.Context, accountID string, emit func(store.Record) error) error
}

// Export writes everything the account owns to w as JSON lines, one
// store.Record a line ({"kind": table, "data": {column: value}}), the
// account first, read in one consistent snapshot, then the end line
// (ExportEnd). No secret is in it (store.Erasure). An account that does
// not exist is NOT_FOUND, before anything is written.
func Export(ctx context.Context, st Exporter, accountID string, w io.Writer) error {
	enc := json.NewEncoder(w) // a value a line
	n := 0
	err := st.ExportAccount(ctx, accountID, func(r store.Record) error {
		n++
		return enc.Encode(r)
	})
	if errors.Is(err, store.ErrNotFound) {
		return fault.New(fault.NotFound, "no account %s", accountID)
	}
	if err != nil {
		return err
	}
	return enc.Encode(store.Record{Kind: ExportEnd, Data: map[string]any{"records": n}})
}

// Deleter is the store's part Delete calls.
type Deleter interface {
	DeleteAccount(ctx context.Context, accountID string, batch int) error
}

// Delete deletes the account and everything it owns (store.Erasure): its
// keys are refused from the first transaction's commit on, by every
// instance. A delete that stopped midway is finished by calling it again.
// It cannot be undone. An account that does not exist is NOT_FOUND.
func Delete(ctx context.Context, st Deleter, accountID string) error {
	err := st.DeleteAccount(ctx, accountID, 0)
	if errors.Is(err, store.ErrNotFound) {
		return fault.New(fault.NotFound, "no account %s", accountID)
	}
	return err
}
