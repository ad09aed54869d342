package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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

// PutPluginHealth replaces the health an instance reported, in one
// transaction at READ COMMITTED: an instance's rows are written by that
// instance alone, and a prune deletes only rows no live instance writes.
func (db *DB) PutPluginHealth(ctx context.Context, instance string, hs []store.PluginHealth) error {
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM plugin_health WHERE instance = $1`, instance); err != nil {
			return err
		}
		for _, h := range hs {
			if _, err := tx.Exec(ctx, `INSERT INTO plugin_health (instance, plugin, state, restarts, problem, checked_at, checked_at_ns)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, instance, h.Plugin, h.State, h.Restarts, h.Problem, ts(h.CheckedAt), ns(h.CheckedAt)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: put plugin health: %w", err)
	}
	return nil
}

// ListPluginHealth lists the health checked at or after since.
func (db *DB) ListPluginHealth(ctx context.Context, since time.Time) ([]store.PluginHealth, error) {
	at, n := bound(since)
	out, err := collect(ctx, db.pool, func(s scanner) (store.PluginHealth, error) {
		var h store.PluginHealth
		var c tcol
		err := s.Scan(&h.Instance, &h.Plugin, &h.State, &h.Restarts, &h.Problem, &c.t, &c.ns)
		h.CheckedAt = c.time()
		return h, err
	}, `SELECT instance, plugin, state, restarts, problem, checked_at, checked_at_ns FROM plugin_health
		WHERE (checked_at, checked_at_ns) >= ($1, $2) ORDER BY plugin, instance`, at, n)
	if err != nil {
		return nil, fmt.Errorf("postgres: list plugin health: %w", err)
	}
	return out, nil
}

// PrunePluginHealth forgets the health checked before before.
func (db *DB) PrunePluginHealth(ctx context.Context, before time.Time) error {
	at, n := bound(before)
	if _, err := db.pool.Exec(ctx, `DELETE FROM plugin_health WHERE (checked_at, checked_at_ns) < ($1, $2)`, at, n); err != nil {
		return fmt.Errorf("postgres: prune plugin health: %w", err)
	}
	return nil
}
