package postgres

import (
	"context"
	"fmt"

	"github.com/aivis/aivis/core/store"
)

// PutPlugin registers a plugin, replacing one of the same name.
func (db *DB) PutPlugin(ctx context.Context, p store.PluginRecord) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO plugins (name, path, sha256, kind, version, display_name, registered_at, registered_at_ns)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (name) DO UPDATE SET path = excluded.path, sha256 = excluded.sha256,
		kind = excluded.kind, version = excluded.version, display_name = excluded.display_name,
		registered_at = excluded.registered_at, registered_at_ns = excluded.registered_at_ns`,
		p.Name, p.Path, p.SHA256, p.Kind, p.Version, p.DisplayName, ts(p.RegisteredAt), ns(p.RegisteredAt))
	if err != nil {
		return fmt.Errorf("postgres: put plugin: %w", err)
	}
	return nil
}

// ListPlugins lists the registered plugins by name.
func (db *DB) ListPlugins(ctx context.Context) ([]store.PluginRecord, error) {
	out, err := collect(ctx, db.pool, func(s scanner) (store.PluginRecord, error) {
		var p store.PluginRecord
		var at tcol
		err := s.Scan(&p.Name, &p.Path, &p.SHA256, &p.Kind, &p.Version, &p.DisplayName, &at.t, &at.ns)
		p.RegisteredAt = at.time()
		return p, err
	}, `SELECT name, path, sha256, kind, version, display_name, registered_at, registered_at_ns FROM plugins ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list plugins: %w", err)
	}
	return out, nil
}

// RemovePlugin forgets a plugin.
func (db *DB) RemovePlugin(ctx context.Context, name string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM plugins WHERE name = $1`, name)
	if err != nil {
		return fmt.Errorf("postgres: remove plugin: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: plugin %s: %w", name, store.ErrNotFound)
	}
	return nil
}
