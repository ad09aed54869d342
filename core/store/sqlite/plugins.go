package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/aivis/aivis/core/store"
)

// PutPlugin registers a build of a plugin beside its others; a plugin new
// to the registry gets its row (whose path and SHA-256, the first build's,
// a previous version reads), an orphan build of the name (a previous
// version removed the plugin) forgotten first.
func (db *DB) PutPlugin(ctx context.Context, p store.PluginRecord) error {
	err := inTx(ctx, db.w, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE plugins SET kind = ?, display_name = ? WHERE name = ?`, p.Kind, p.DisplayName, p.Name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM plugin_builds WHERE plugin = ?`, p.Name); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO plugins (name, path, sha256, kind, version, display_name, registered_at)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, p.Name, p.Path, p.SHA256, p.Kind, p.Version, p.DisplayName, stamp(p.RegisteredAt)); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO plugin_builds (plugin, sha256, path, version, registered_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (plugin, sha256) DO UPDATE SET path = excluded.path, version = excluded.version, registered_at = excluded.registered_at`,
			p.Name, p.SHA256, p.Path, p.Version, stamp(p.RegisteredAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: put plugin: %w", err)
	}
	return nil
}

// ListPlugins lists the registered plugins by name, with their builds.
func (db *DB) ListPlugins(ctx context.Context) ([]store.PluginRecord, error) {
	var out []store.PluginRecord
	var builds []store.PluginBuildOf
	err := func() error {
		tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		rows, err := tx.QueryContext(ctx, `SELECT name, path, sha256, kind, version, display_name, registered_at FROM plugins ORDER BY name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p store.PluginRecord
			var at int64
			if err := rows.Scan(&p.Name, &p.Path, &p.SHA256, &p.Kind, &p.Version, &p.DisplayName, &at); err != nil {
				return err
			}
			p.RegisteredAt = time.Unix(0, at).UTC()
			out = append(out, p)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		brows, err := tx.QueryContext(ctx, `SELECT plugin, sha256, path, version, registered_at FROM plugin_builds`)
		if err != nil {
			return err
		}
		defer brows.Close()
		for brows.Next() {
			var b store.PluginBuildOf
			var at int64
			if err := brows.Scan(&b.Plugin, &b.SHA256, &b.Path, &b.Version, &at); err != nil {
				return err
			}
			b.RegisteredAt = time.Unix(0, at).UTC()
			builds = append(builds, b)
		}
		return brows.Err()
	}()
	if err != nil {
		return nil, fmt.Errorf("sqlite: list plugins: %w", err)
	}
	return store.JoinPluginBuilds(out, builds), nil
}

// RemovePlugin forgets a plugin and its builds.
func (db *DB) RemovePlugin(ctx context.Context, name string) error {
	var n int64
	err := inTx(ctx, db.w, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM plugins WHERE name = ?`, name)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = tx.ExecContext(ctx, `DELETE FROM plugin_builds WHERE plugin = ?`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: remove plugin: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: plugin %s: %w", name, store.ErrNotFound)
	}
	return nil
}

// RemovePluginBuild forgets one build of a plugin, never its last; the
// plugins row, which a previous version reads, then names the first
// build left if it named this one.
func (db *DB) RemovePluginBuild(ctx context.Context, name string, sum []byte) error {
	err := inTx(ctx, db.w, func(tx *sql.Tx) error {
		var first []byte
		if err := tx.QueryRowContext(ctx, `SELECT sha256 FROM plugins WHERE name = ?`, name).Scan(&first); errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		} else if err != nil {
			return err
		}
		var builds, this int
		if err := tx.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE sha256 = ?) FROM plugin_builds WHERE plugin = ?`,
			sum, name).Scan(&builds, &this); err != nil {
			return err
		}
		if err := store.CheckBuildRemoval(name, first, sum, builds, this); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM plugin_builds WHERE plugin = ? AND sha256 = ?`, name, sum); err != nil {
			return err
		}
		if !bytes.Equal(first, sum) {
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE plugins SET (path, sha256, version, registered_at) =
			(SELECT path, sha256, version, registered_at FROM plugin_builds WHERE plugin = ?1 ORDER BY registered_at, sha256 LIMIT 1)
			WHERE name = ?1`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: remove build %x of plugin %s: %w", sum, name, err)
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
			if _, err := tx.ExecContext(ctx, `INSERT INTO plugin_health (instance, plugin, state, restarts, problem, sha256, checked_at)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, instance, h.Plugin, h.State, h.Restarts, h.Problem, h.StoredSHA256(), stamp(h.CheckedAt)); err != nil {
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
	rows, err := db.r.QueryContext(ctx, `SELECT instance, plugin, state, restarts, problem, sha256, checked_at FROM plugin_health
		WHERE checked_at >= ? ORDER BY plugin, instance`, bound(since))
	if err != nil {
		return nil, fmt.Errorf("sqlite: list plugin health: %w", err)
	}
	defer rows.Close()
	var out []store.PluginHealth
	for rows.Next() {
		var h store.PluginHealth
		var at int64
		if err := rows.Scan(&h.Instance, &h.Plugin, &h.State, &h.Restarts, &h.Problem, &h.SHA256, &at); err != nil {
			return nil, fmt.Errorf("sqlite: list plugin health: %w", err)
		}
		h.CheckedAt = time.Unix(0, at).UTC()
		if len(h.SHA256) == 0 {
			h.SHA256 = nil
		}
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
