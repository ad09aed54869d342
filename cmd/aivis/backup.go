package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/app"
	"github.com/aivis/aivis/core/engines"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/internal/buildinfo"
	"github.com/aivis/aivis/internal/sqlitefile"
)

// A backup is a gzip-compressed tar of two files: manifest.json (a
// backupManifest), first, then the database (aivis.db), a consistent copy
// of a SQLite data directory's database made by VACUUM INTO while servers
// write to it. The master key is never in it: restoring needs the key
// file the backup names by id (docs/operations.md, "Backing up and
// restoring").

// backupFormat names the layout above, for a later aivis to tell it.
const backupFormat = "aivis-backup/1"

// manifestName is the manifest's name in the archive.
const manifestName = "manifest.json"

// backupManifest says what a backup holds.
type backupManifest struct {
	Format        string `json:"format"`
	Engine        string `json:"engine"`
	SchemaVersion int64  `json:"schema_version"`
	AivisVersion  string `json:"aivis_version"`
	AivisCommit   string `json:"aivis_commit,omitempty"`
	CreatedAt     string `json:"created_at"`
	// MasterKeyID is the id of the key that sealed when the backup was
	// made; SealedWith counts the database's sealed values per key id (v1:
	// of version 1, which name no key). The key itself is never here.
	MasterKeyID    string         `json:"master_key_id"`
	SealedWith     map[string]int `json:"sealed_with"`
	Database       string         `json:"database"`
	DatabaseBytes  int64          `json:"database_bytes"`
	DatabaseSHA256 string         `json:"database_sha256"`
}

func backupCmd() *cobra.Command {
	var out string
	c := withConfig(&cobra.Command{
		Use:   "backup",
		Short: "Write a consistent copy of a SQLite data directory's database",
		Long: `Write to --out a consistent copy of the SQLite database of the data directory,
while servers run on it, with a manifest: the schema version, this aivis's
version, the time and the master key's id (never the key). FILE is a
gzip-compressed tar of manifest.json and aivis.db, mode 0600. Keep the master
key file apart from the backups: "aivis restore" needs it. On PostgreSQL,
back up with pg_dump or WAL archiving (docs/operations.md).`,
		Args: takes(0, "no arguments"),
	}, func(ctx context.Context, in *invocation, _ []string) error {
		m, err := backup(ctx, in.cfg, out)
		if err != nil {
			return err
		}
		return in.out.value(m, fmt.Sprintf("backed up %s (schema %d, %d bytes, master key %s) to %s\n",
			filepath.Join(in.cfg.DataDir, engines.DBFile), m.SchemaVersion, m.DatabaseBytes, m.MasterKeyID, out))
	})
	c.Flags().StringVar(&out, "out", "", "the backup file to write (it must not exist)")
	required(c, "out")
	return c
}

func restoreCmd() *cobra.Command {
	var from string
	c := withConfig(&cobra.Command{
		Use:   "restore",
		Short: "Restore a backup into an empty data directory",
		Long: `Restore the backup --from into the data directory (--data-dir), which must be
empty or hold the master key file alone. The master key the backup names must
be in the key file: master_key_file, else master.key in the data directory,
put there first. A backup of a schema newer than this aivis knows is refused,
and so is one whose secrets need a key the key file does not hold. Then
"aivis serve" on the directory migrates it if it is older and serves it.`,
		Args: takes(0, "no arguments"),
	}, func(ctx context.Context, in *invocation, _ []string) error {
		m, err := restore(ctx, in.cfg, from)
		if err != nil {
			return err
		}
		return in.out.value(m, fmt.Sprintf("restored the backup of %s (schema %d, aivis %s) into %s\n",
			m.CreatedAt, m.SchemaVersion, m.AivisVersion, in.cfg.DataDir))
	})
	c.Flags().StringVar(&from, "from", "", "the backup file")
	required(c, "from")
	return c
}

// errPostgresBackup is the refusal of a backup of PostgreSQL.
var errPostgresBackup = errors.New("aivis backup copies a SQLite data directory; back up PostgreSQL with pg_dump or base backups and WAL archiving (docs/operations.md, \"Backing up and restoring\")")

// backup writes the backup of cfg's SQLite database to out, which must
// not exist; it is written to a file of its own first and renamed.
func backup(ctx context.Context, cfg config.Config, out string) (backupManifest, error) {
	var m backupManifest
	if cfg.Store != "sqlite" {
		return m, errPostgresBackup
	}
	if out == "" {
		return m, usageError("--out names the backup file")
	}
	if _, err := os.Lstat(out); err == nil {
		return m, fmt.Errorf("%s exists: a backup is written to a new file", out)
	}
	src := filepath.Join(cfg.DataDir, engines.DBFile)
	if _, err := os.Stat(src); err != nil {
		return m, fmt.Errorf("no database to back up at %s", src)
	}
	box, _, err := secrets.Load(app.MasterKeyPath(cfg), false)
	if err != nil {
		return m, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".aivis-backup-")
	if err != nil {
		return m, err
	}
	defer os.RemoveAll(tmp)
	copyPath := filepath.Join(tmp, engines.DBFile)
	if err := vacuumInto(ctx, src, copyPath); err != nil {
		return m, err
	}
	version, _, sealed, err := inspect(ctx, copyPath)
	if err != nil {
		return m, err
	}
	st, err := os.Stat(copyPath)
	if err != nil {
		return m, err
	}
	sum, err := fileSHA256(copyPath)
	if err != nil {
		return m, err
	}
	bi := buildinfo.Get()
	m = backupManifest{Format: backupFormat, Engine: "sqlite", SchemaVersion: version, AivisVersion: bi.Version, AivisCommit: bi.Commit,
		CreatedAt: time.Now().UTC().Format(time.RFC3339), MasterKeyID: box.ID(), SealedWith: countByKey(sealed),
		Database: engines.DBFile, DatabaseBytes: st.Size(), DatabaseSHA256: sum}
	archive := filepath.Join(tmp, "backup.tar.gz")
	if err := writeArchive(archive, m, copyPath); err != nil {
		return m, err
	}
	// Link, not rename: a file made at out meanwhile is not replaced.
	if err := os.Link(archive, out); err != nil {
		return m, fmt.Errorf("backup: %w", err)
	}
	return m, nil
}

// vacuumInto copies the database at src to dst (a new file) in one read
// transaction: a consistent copy, which writers on src do not wait for.
func vacuumInto(ctx context.Context, src, dst string) error {
	db, err := sql.Open("sqlite3", sqlitefile.DSN(src, sqlitefile.Params()))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, dst); err != nil {
		return fmt.Errorf("backup: copy %s: %w", src, err)
	}
	return nil
}

// inspect reads a database copy: its schema version, the highest this
// aivis knows, and its sealed values, as stored.
func inspect(ctx context.Context, path string) (version, known int64, sealed []store.SealedValue, err error) {
	db, err := sql.Open("sqlite3", sqlitefile.DSN(path, sqlitefile.Params()))
	if err != nil {
		return 0, 0, nil, err
	}
	defer db.Close()
	var ok string
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&ok); err != nil || ok != "ok" {
		return 0, 0, nil, fmt.Errorf("the database is damaged: %v%s", err, ok)
	}
	r, err := sqlite.Migrations(db, path)
	if err != nil {
		return 0, 0, nil, err
	}
	if version, err = r.Version(ctx); err != nil {
		return 0, 0, nil, err
	}
	if version == 0 {
		return 0, 0, nil, errors.New("the database has no schema version: start aivis serve on it once, then back it up")
	}
	if version > r.Known() {
		return version, r.Known(), nil, nil // its tables may not be this aivis's
	}
	// The sealed values as the store pages them; a database of a version
	// before ingest tokens has only its webhooks'.
	query := store.SealedValuesQuery("''", "''", "-1")
	var tokens int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'ingest_tokens'`).Scan(&tokens); err != nil {
		return 0, 0, nil, err
	} else if tokens == 0 {
		query = `SELECT id, secret, COALESCE(prev_secret, ''), settings, '' FROM webhooks ORDER BY id`
	}
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return 0, 0, nil, err
	}
	defer rows.Close()
	sealed, _, err = store.ScanSealed(rows, math.MaxInt)
	return version, r.Known(), sealed, err
}

func countByKey(vs []store.SealedValue) map[string]int {
	n := map[string]int{}
	for _, v := range vs {
		if id, err := secrets.KeyOf(v.Value); err == nil {
			n[id]++
		}
	}
	return n
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeArchive writes the backup file at path: the manifest, then the
// database.
func writeArchive(path string, m backupManifest, db string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	manifest, _ := json.MarshalIndent(m, "", "  ")
	now := time.Now()
	if err := tw.WriteHeader(&tar.Header{Name: manifestName, Mode: 0o600, Size: int64(len(manifest)), ModTime: now}); err != nil {
		return err
	}
	if _, err := tw.Write(manifest); err != nil {
		return err
	}
	src, err := os.Open(db)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := tw.WriteHeader(&tar.Header{Name: m.Database, Mode: 0o600, Size: m.DatabaseBytes, ModTime: now}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, src); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// restore puts the backup from into cfg's data directory, which must be
// empty but for the master key file. What it refuses leaves the directory
// as it was.
func restore(ctx context.Context, cfg config.Config, from string) (m backupManifest, err error) {
	if cfg.Store != "sqlite" {
		return m, errors.New("aivis restore restores a SQLite data directory; restore PostgreSQL with pg_restore or its point-in-time recovery (docs/operations.md)")
	}
	keyPath := app.MasterKeyPath(cfg)
	if ents, err := os.ReadDir(cfg.DataDir); errors.Is(err, os.ErrNotExist) {
		defer func() {
			if err != nil { // made here: gone again
				os.RemoveAll(cfg.DataDir)
			}
		}()
	} else if err != nil {
		return m, err
	} else {
		for _, e := range ents {
			if filepath.Join(cfg.DataDir, e.Name()) != keyPath {
				return m, fmt.Errorf("the data directory %s is not empty (it holds %s): restore into a new one", cfg.DataDir, e.Name())
			}
		}
	}
	box, _, err := secrets.Load(keyPath, false)
	if errors.Is(err, os.ErrNotExist) {
		return m, fmt.Errorf("no master key file at %s: put there the key file the backup's secrets were sealed with (or set master_key_file)", keyPath)
	} else if err != nil {
		return m, err
	}
	f, err := os.Open(from)
	if err != nil {
		return m, fmt.Errorf("backup: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return m, fmt.Errorf("%s is not an aivis backup (not gzip)", from)
	}
	tr := tar.NewReader(zr)
	h, err := tr.Next()
	if err != nil || h.Name != manifestName {
		return m, fmt.Errorf("%s is not an aivis backup (no manifest first)", from)
	}
	if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m); err != nil || m.Format != backupFormat {
		return m, fmt.Errorf("%s is not an aivis backup of format %s", from, backupFormat)
	}
	if m.Engine != "sqlite" || m.Database != engines.DBFile {
		return m, fmt.Errorf("the backup holds %s of engine %s, not a SQLite %s", m.Database, m.Engine, engines.DBFile)
	}
	if err := keysHeld(m, box, keyPath); err != nil {
		return m, err
	}
	if h, err = tr.Next(); err != nil || h.Name != m.Database {
		return m, fmt.Errorf("the backup %s holds no %s after its manifest", from, m.Database)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return m, fmt.Errorf("data directory: %w", err)
	}
	tmp, err := os.MkdirTemp(cfg.DataDir, ".restore-")
	if err != nil {
		return m, err
	}
	defer os.RemoveAll(tmp)
	db := filepath.Join(tmp, engines.DBFile)
	if err := extract(tr, db, m); err != nil {
		return m, err
	}
	version, known, sealed, err := inspect(ctx, db)
	if err != nil {
		return m, err
	}
	if version > known {
		return m, fmt.Errorf("the backup's schema version %d is newer than this aivis knows (%d): restore it with aivis %s or later", version, known, m.AivisVersion)
	}
	if version != m.SchemaVersion {
		return m, fmt.Errorf("the backup's database is at schema %d, its manifest says %d: the backup is damaged", version, m.SchemaVersion)
	}
	for _, v := range sealed {
		if _, err := box.Open(v.Value); err != nil && !errors.Is(err, secrets.ErrNotSealed) {
			return m, fmt.Errorf("a secret of the backup does not open with the keys of %s: %w", keyPath, err)
		}
	}
	if err := os.Rename(db, filepath.Join(cfg.DataDir, engines.DBFile)); err != nil {
		return m, err
	}
	return m, nil
}

// keysHeld refuses a backup whose secrets need a key box does not hold,
// naming the ids.
func keysHeld(m backupManifest, box *secrets.Box, keyPath string) error {
	need := []string{m.MasterKeyID}
	for id := range m.SealedWith {
		if id != secrets.V1 && !slices.Contains(need, id) {
			need = append(need, id)
		}
	}
	var missing []string
	for _, id := range need {
		if !slices.Contains(box.IDs(), id) {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return fmt.Errorf("the backup's secrets are sealed with master key %s, which %s does not hold (it holds %s): restore with the key file the backup was made with",
		strings.Join(missing, ", "), keyPath, strings.Join(box.IDs(), ", "))
}

// extract writes the database of the archive to path and checks its size
// and SHA-256 against the manifest's.
func extract(r io.Reader, path string, m backupManifest) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err != nil {
		return fmt.Errorf("the backup is damaged: %w", err)
	}
	if n != m.DatabaseBytes || hex.EncodeToString(h.Sum(nil)) != m.DatabaseSHA256 {
		return errors.New("the backup is damaged: its database is not the one its manifest describes (size or SHA-256)")
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}
