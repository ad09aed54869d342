package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store/storetest"
)

// FuzzCursors runs storetest's cursors of every list on a file of its own.
func FuzzCursors(f *testing.F) {
	dir := f.TempDir()
	box, _, err := secrets.Load(filepath.Join(dir, secrets.KeyFile), true)
	must(f, err)
	db := open(f, filepath.Join(dir, "aivis.db"))
	db.SetSecrets(box)
	storetest.FuzzCursors(f, db)
}
