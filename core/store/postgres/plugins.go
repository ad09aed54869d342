package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/store"
)

// PutPlugin registers a build of a plugin beside its others; a plugin new
// to the registry gets its row (whose path and SHA-256, the first build's,
// a previous version reads), an orphan build of the name (a previous
// version removed the plugin) forgotten first.
func (db *DB) PutPlugin(ctx context.Context, p store.PluginRecord) error {
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE plugins SET kind = $2, display_name = $3 WHERE name = $1`, p.Name, p.Kind, p.DisplayName)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM plugin_builds WHERE plugin = $1`, p.Name); err != nil {
				return err
			}
			// Two registrations of a new plugin at once: the second updates.
			if _, err := tx.Exec(ctx, `INSERT INTO plugins (name, path, sha256, kind, version, display_name, registered_at, registered_at_ns)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, display_name = excluded.display_name`,
				p.Name, p.Path, p.SHA256, p.Kind, p.Version, p.DisplayName, ts(p.RegisteredAt), ns(p.RegisteredAt)); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO plugin_builds (plugin, sha256, path, version, registered_at, registered_at_ns)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (plugin, sha256) DO UPDATE SET path = excluded.path, version = excluded.version,
			registered_at = excluded.registered_at, registered_at_ns = excluded.registered_at_ns`,
			p.Name, p.SHA256, p.Path, p.Version, ts(p.RegisteredAt), ns(p.RegisteredAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: put plugin: %w", err)
	}
	return nil
}

// ListPlugins lists the registered plugins by name, with their builds, in
// one snapshot.
func (db *DB) ListPlugins(ctx context.Context) ([]store.PluginRecord, error) {
	var out []store.PluginRecord
	var builds []store.PluginBuildOf
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		out, err = collect(ctx, tx, func(s scanner) (store.PluginRecord, error) {
			var p store.PluginRecord
			var at tcol
			err := s.Scan(&p.Name, &p.Path, &p.SHA256, &p.Kind, &p.Version, &p.DisplayName, &at.t, &at.ns)
			p.RegisteredAt = at.time()
			return p, err
		}, `SELECT name, path, sha256, kind, version, display_name, registered_at, registered_at_ns FROM plugins ORDER BY name`)
		if err != nil {
			return err
		}
		builds, err = collect(ctx, tx, func(s scanner) (store.PluginBuildOf, error) {
			var b store.PluginBuildOf
			var at tcol
			err := s.Scan(&b.Plugin, &b.SHA256, &b.Path, &b.Version, &at.t, &at.ns)
			b.RegisteredAt = at.time()
			return b, err
		}, `SELECT plugin, sha256, path, version, registered_at, registered_at_ns FROM plugin_builds`)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list plugins: %w", err)
	}
	return store.JoinPluginBuilds(out, builds), nil
}

// RemovePlugin forgets a plugin and its builds.
func (db *DB) RemovePlugin(ctx context.Context, name string) error {
	var n int64
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM plugins WHERE name = $1`, name)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `DELETE FROM plugin_builds WHERE plugin = $1`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: remove plugin: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("postgres: plugin %s: %w", name, store.ErrNotFound)
	}
	return nil
}

// RemovePluginBuild forgets one build of a plugin, never its last; the
// plugins row, which a previous version reads, then names the first
// build left if it named this one. The row is locked meanwhile: two
// removals at once cannot leave the plugin without a build.
func (db *DB) RemovePluginBuild(ctx context.Context, name string, sum []byte) error {
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var first []byte
		if err := tx.QueryRow(ctx, `SELECT sha256 FROM plugins WHERE name = $1 FOR UPDATE`, name).Scan(&first); errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		} else if err != nil {
			return err
		}
		var builds, this int
		if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE sha256 = $2) FROM plugin_builds WHERE plugin = $1`,
			name, sum).Scan(&builds, &this); err != nil {
			return err
		}
		if err := store.CheckBuildRemoval(name, first, sum, builds, this); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM plugin_builds WHERE plugin = $1 AND sha256 = $2`, name, sum); err != nil {
			return err
		}
		if !bytes.Equal(first, sum) {
			return nil
		}
		_, err := tx.Exec(ctx, `UPDATE plugins SET (path, sha256, version, registered_at, registered_at_ns) =
			(SELECT path, sha256, version, registered_at, registered_at_ns FROM plugin_builds WHERE plugin = $1
			ORDER BY registered_at, registered_at_ns, sha256 LIMIT 1) WHERE name = $1`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: remove build %x of plugin %s: %w", sum, name, err)
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
			if _, err := tx.Exec(ctx, `INSERT INTO plugin_health (instance, plugin, state, restarts, problem, sha256, checked_at, checked_at_ns)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, instance, h.Plugin, h.State, h.Restarts, h.Problem, h.StoredSHA256(), ts(h.CheckedAt), ns(h.CheckedAt)); err != nil {
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
		err := s.Scan(&h.Instance, &h.Plugin, &h.State, &h.Restarts, &h.Problem, &h.SHA256, &c.t, &c.ns)
		h.CheckedAt = c.time()
		if len(h.SHA256) == 0 {
			h.SHA256 = nil
		}
		return h, err
	}, `SELECT instance, plugin, state, restarts, problem, sha256, checked_at, checked_at_ns FROM plugin_health
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
