package visibility

import (
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/store"
)

// Store is what readings, monitored domains and scans need of the storage
// engine.
type Store interface {
	store.Domains
	store.Scans
	store.Updater
	accounts.Clients
}
