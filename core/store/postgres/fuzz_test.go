package postgres_test

import (
	"testing"

	"github.com/aivis/aivis/core/store/storetest"
	"github.com/aivis/aivis/internal/testsvc"
)

// FuzzCursors runs storetest's cursors of every list on a database of its
// own.
func FuzzCursors(f *testing.F) {
	storetest.FuzzCursors(f, open(f, testsvc.Postgres(f), box(f)))
}
