package sqlite

import (
	"context"
	"database/sql"
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

// PutPluginHealth replaces the health an instance reported.
func (db *DB) PutPluginHealth(ctx context.Context, instance string, hs []store.PluginHealth) error {
	err := inTx(ctx, db.w, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM plugin_health WHERE instance = ?`, instance); err != nil {
			return err
		}
		for _, h := range hs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO plugin_health (instance, plugin, state, restarts, problem, checked_at)
				VALUES (?, ?, ?, ?, ?, ?)`, instance, h.Plugin, h.State, h.Restarts, h.Problem, stamp(h.CheckedAt)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: put plugin health: %w", err)
	}
	return nil
}

// ListPluginHealth lists the health checked at or after since.
func (db *DB) ListPluginHealth(ctx context.Context, since time.Time) ([]store.PluginHealth, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT instance, plugin, state, restarts, problem, checked_at FROM plugin_health
		WHERE checked_at >= ? ORDER BY plugin, instance`, bound(since))
	if err != nil {
		return nil, fmt.Errorf("sqlite: list plugin health: %w", err)
	}
	defer rows.Close()
	var out []store.PluginHealth
	for rows.Next() {
		var h store.PluginHealth
		var at int64
		if err := rows.Scan(&h.Instance, &h.Plugin, &h.State, &h.Restarts, &h.Problem, &at); err != nil {
			return nil, fmt.Errorf("sqlite: list plugin health: %w", err)
		}
		h.CheckedAt = time.Unix(0, at).UTC()
		out = append(out, h)
	}
	return out, rows.Err()
}

// PrunePluginHealth forgets the health checked before before.
func (db *DB) PrunePluginHealth(ctx context.Context, before time.Time) error {
	if _, err := db.w.ExecContext(ctx, `DELETE FROM plugin_health WHERE checked_at < ?`, bound(before)); err != nil {
		return fmt.Errorf("sqlite: prune plugin health: %w", err)
	}
	return nil
}
