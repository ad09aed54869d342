package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/store/storetest"
)

// TestStore runs the suite every engine passes on a fresh file per case,
// each handle read through the caches the server uses (validated by the
// engine's signal), so that every contract holds of them too; its second
// handles open the same file, as the CLI does.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, func(*testing.T) store.Store) {
		dir := t.TempDir()
		box, _, err := secrets.Load(filepath.Join(dir, secrets.KeyFile), true)
		must(t, err)
		path := filepath.Join(dir, "aivis.db")
		reopen := func(t *testing.T) store.Store {
			db := open(t, path)
			db.SetSecrets(box)
			return cache.Wrap(db, db.Signal())
		}
		return reopen(t), reopen
	})
}
