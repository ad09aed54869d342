package store

import "encoding/json"

// Connection is what a connection adds to a delivery target (Webhook): the
// connector plugin's name, a label, the domains it wants (none: every
// domain of the owner), its settings with secrets (sealed at rest), the
// same without the secret fields, and their names. Connections are listed
// and counted apart from webhooks (WebhookFilter.Connections,
// CountWebhooks) and share their deliveries.
type Connection struct {
	Connector      string
	Name           string
	Domains        []string
	Settings       json.RawMessage
	PublicSettings json.RawMessage
	SecretFields   []string
	// Subscription marks a connection the destination created (a Zapier
	// REST Hook): deleted, not disabled, when the destination is gone.
	Subscription bool
}

// IsConnection reports whether w delivers through a connector plugin.
func (w Webhook) IsConnection() bool { return w.Connector != "" }
