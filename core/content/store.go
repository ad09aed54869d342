package content

import (
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/store"
)

// Store is what content requests need of the storage engine: the requests
// with their budgets and idempotency records, and an account's clients.
type Store interface {
	store.Content
	store.ContentRetention
	store.Updater
	accounts.Clients
}
