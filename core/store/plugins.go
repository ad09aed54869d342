package store

import (
	"context"
	"time"
)

// PluginRecord is a registered connector plugin.
type PluginRecord struct {
	Name         string
	Path         string
	SHA256       []byte
	Kind         string
	Version      string
	DisplayName  string
	RegisteredAt time.Time
}

// PluginHealth is how one instance of the server found one of the
// registered plugins when it last checked.
type PluginHealth struct {
	Instance  string // the process that checked (its holder name)
	Plugin    string // the registered name
	State     string // starting, running, restarting, stopped
	Restarts  int
	Problem   string // why it is unavailable there, "" when it runs
	CheckedAt time.Time
}

// Plugins keeps the registry of connector plugins, which every instance
// runs, and the health each instance reports of them.
type Plugins interface {
	// PutPlugin registers a plugin, replacing one of the same name.
	PutPlugin(ctx context.Context, p PluginRecord) error
	// ListPlugins lists the registered plugins by name.
	ListPlugins(ctx context.Context) ([]PluginRecord, error)
	// RemovePlugin forgets a plugin (ErrNotFound when none has the name).
	RemovePlugin(ctx context.Context, name string) error

	// PutPluginHealth replaces, in one transaction, the health instance
	// reported with hs, stored under instance whatever their Instance: a
	// plugin not in hs has none of instance's afterwards (nil forgets the
	// instance). Two rows of one plugin are refused, and nothing changes.
	PutPluginHealth(ctx context.Context, instance string, hs []PluginHealth) error
	// ListPluginHealth lists the health checked at or after since, of
	// every instance, by plugin and then instance.
	ListPluginHealth(ctx context.Context, since time.Time) ([]PluginHealth, error)
	// PrunePluginHealth forgets the health checked before before, of
	// instances that stopped reporting.
	PrunePluginHealth(ctx context.Context, before time.Time) error
}
