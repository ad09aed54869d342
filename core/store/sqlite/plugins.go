package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/aivis/aivis/core/store"
)

// PutPlugin registers a plugin, replacing one of the same name.
func (db *DB) PutPlugin(ctx context.Context, p store.PluginRecord) error {
	_, err := db.w.ExecContext(ctx, `INSERT INTO plugins (name, path, sha256, kind, version, display_name, registered_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET path = excluded.path, sha256 = excluded.sha256,
		kind = excluded.kind, version = excluded.version, display_name = excluded.display_name, registered_at = excluded.registered_at`,
		p.Name, p.Path, p.SHA256, p.Kind, p.Version, p.DisplayName, stamp(p.RegisteredAt))
	if err != nil {
		return fmt.Errorf("sqlite: put plugin: %w", err)
	}
	return nil
}

// ListPlugins lists the registered plugins by name.
func (db *DB) ListPlugins(ctx context.Context) ([]store.PluginRecord, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT name, path, sha256, kind, version, display_name, registered_at FROM plugins ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list plugins: %w", err)
	}
	defer rows.Close()
	var out []store.PluginRecord
	for rows.Next() {
		var p store.PluginRecord
		var at int64
		if err := rows.Scan(&p.Name, &p.Path, &p.SHA256, &p.Kind, &p.Version, &p.DisplayName, &at); err != nil {
			return nil, fmt.Errorf("sqlite: list plugins: %w", err)
		}
		p.RegisteredAt = time.Unix(0, at).UTC()
		out = append(out, p)
	}
	return out, rows.Err()
}

// RemovePlugin forgets a plugin.
func (db *DB) RemovePlugin(ctx context.Context, name string) error {
	res, err := db.w.ExecContext(ctx, `DELETE FROM plugins WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("sqlite: remove plugin: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: plugin %s: %w", name, store.ErrNotFound)
	}
	return nil
}
