package delivery

import (
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/store"
)

// Store is what the delivery engine and the webhook and connection
// services need of the storage engine: targets, their deliveries, the
// event log, and an account's clients.
type Store interface {
	store.Webhooks
	store.Deliveries
	store.Events
	store.Updater
	accounts.Clients
}
