package hub

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/plugins/host"
)

// inspectTimeout bounds the run of a binary that registering asks what it
// is.
const inspectTimeout = 30 * time.Second

// Registrar is what registering writes: the plugin registry.
type Registrar interface {
	ListPlugins(ctx context.Context) ([]store.PluginRecord, error)
	PutPlugin(ctx context.Context, p store.PluginRecord) error
}

// Register runs the plugin binary at path once, asks it what it is, and
// records it with its SHA-256 (aivis plugin register): the servers start
// it while the file is unchanged.
func Register(ctx context.Context, reg Registrar, path string) (store.PluginRecord, error) {
	rec, err := inspect(ctx, path)
	if err != nil {
		return rec, err
	}
	return rec, reg.PutPlugin(ctx, rec)
}

// inspect runs the plugin binary at path once and makes its record.
func inspect(ctx context.Context, path string) (store.PluginRecord, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return store.PluginRecord{}, err
	}
	ictx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	info, sum, err := host.Inspect(ictx, abs, nil)
	if err != nil {
		return store.PluginRecord{}, fmt.Errorf("%s is not a working aivis connector plugin: %w", path, err)
	}
	return store.PluginRecord{Name: info.Name, Path: abs, SHA256: sum, Kind: info.Kind, Version: info.Version,
		DisplayName: info.DisplayName, RegisteredAt: time.Now().UTC()}, nil
}

// RegisterDir registers every executable file of dir, a directory of
// plugins as trusted as the server itself (trusted_plugins_dir: the
// container image's connectors), as Register does, at each start: a file
// registered from there before is registered again only if it changed (a
// new image: its build is added beside the others, so that the previous
// image's instances run on; no binary is run when none did); a plugin of the same name registered
// from elsewhere by the operator is kept. A file that is not a working
// plugin is logged and passed over; a directory that cannot be read is an
// error.
func RegisterDir(ctx context.Context, reg Registrar, dir string, log *slog.Logger) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	recs, err := reg.ListPlugins(ctx)
	if err != nil {
		return err
	}
	byName := map[string]store.PluginRecord{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	for _, de := range ents {
		path := filepath.Join(dir, de.Name())
		if !executable(path) {
			continue
		}
		if unchanged(recs, path) {
			continue
		}
		rec, err := inspect(ctx, path)
		if err != nil {
			log.Error("a file of the trusted plugins directory is not registered", "err", err)
			continue
		}
		if old, ok := byName[rec.Name]; ok && filepath.Dir(old.Path) != dir {
			log.Info("connector plugin registered from elsewhere kept; the trusted plugins directory's is not registered", "plugin", rec.Name, "path", path)
			continue
		}
		if err := reg.PutPlugin(ctx, rec); err != nil {
			return err
		}
		log.Info("connector plugin registered from the trusted plugins directory", "plugin", rec.Name, "version", rec.Version, "path", path)
	}
	return nil
}

// unchanged says whether the plugin at path is registered from there with
// the SHA-256 it has, as any of its builds.
func unchanged(recs []store.PluginRecord, path string) bool {
	var sum []byte
	for _, r := range recs {
		for _, b := range r.Builds {
			if b.Path != path {
				continue
			}
			if sum == nil {
				var err error
				if sum, err = host.Checksum(path); err != nil {
					return false
				}
			}
			if bytes.Equal(sum, b.SHA256) {
				return true
			}
		}
	}
	return false
}
