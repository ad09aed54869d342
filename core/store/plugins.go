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

// Plugins keeps the registry of connector plugins.
type Plugins interface {
	// PutPlugin registers a plugin, replacing one of the same name.
	PutPlugin(ctx context.Context, p PluginRecord) error
	// ListPlugins lists the registered plugins by name.
	ListPlugins(ctx context.Context) ([]PluginRecord, error)
	// RemovePlugin forgets a plugin (ErrNotFound when none has the name).
	RemovePlugin(ctx context.Context, name string) error
}
