package store

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"
)

// PluginRecord is a registered connector plugin: its name and what it
// says it is, and the builds of it the servers may start (Builds), each
// by its SHA-256. Path, SHA256, Version and RegisteredAt are those of the
// build registered last.
type PluginRecord struct {
	Name         string
	Path         string
	SHA256       []byte
	Kind         string
	Version      string
	DisplayName  string
	RegisteredAt time.Time
	// Builds are the trusted builds, by the time they were registered: an
	// instance starts the binary it finds whose SHA-256 is one of them, so
	// that instances of two versions (a rolling upgrade) each run their
	// own. ListPlugins fills it; PutPlugin reads the fields above.
	Builds []PluginBuild
}

// PluginBuild is one trusted build of a plugin: the SHA-256 of its binary,
// where it was registered from, the version it said it was, and when.
type PluginBuild struct {
	SHA256       []byte
	Path         string
	Version      string
	RegisteredAt time.Time
}

// Trusts says whether sum is the SHA-256 of one of the plugin's builds.
func (p PluginRecord) Trusts(sum []byte) bool {
	if len(p.Builds) == 0 {
		return bytes.Equal(p.SHA256, sum)
	}
	return slices.ContainsFunc(p.Builds, func(b PluginBuild) bool { return bytes.Equal(b.SHA256, sum) })
}

// PluginHealth is how one instance of the server found one of the
// registered plugins when it last checked.
type PluginHealth struct {
	Instance string // the process that checked (its holder name)
	Plugin   string // the registered name
	State    string // starting, running, restarting, unavailable, stopped
	Restarts int
	Problem  string // why it is unavailable there, "" when it runs
	// SHA256 is the build the instance has of it (the binary it found and
	// starts); nil when it found none.
	SHA256    []byte
	CheckedAt time.Time
}

// StoredSHA256 is SHA256 as the engines keep it: empty, not NULL, when
// there is none.
func (h PluginHealth) StoredSHA256() []byte {
	if h.SHA256 == nil {
		return []byte{}
	}
	return h.SHA256
}

// Plugins keeps the registry of connector plugins, which every instance
// runs, and the health each instance reports of them.
type Plugins interface {
	// PutPlugin registers a build of a plugin (p's path, SHA-256, version
	// and time): it is added to the plugin's builds, the others kept (one
	// of the same SHA-256 replaced), and the plugin's kind and display name
	// become p's. A plugin not registered yet is registered with it.
	PutPlugin(ctx context.Context, p PluginRecord) error
	// ListPlugins lists the registered plugins by name, each with its
	// builds.
	ListPlugins(ctx context.Context) ([]PluginRecord, error)
	// RemovePlugin forgets a plugin and its builds (ErrNotFound when none
	// has the name).
	RemovePlugin(ctx context.Context, name string) error
	// RemovePluginBuild forgets one build of a plugin: ErrNotFound when the
	// plugin has no build of that SHA-256, ErrConflict (and nothing
	// changes) when it is the plugin's last.
	RemovePluginBuild(ctx context.Context, name string, sha256 []byte) error

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

// PluginBuildOf is a build as an engine reads it, with the name of its
// plugin.
type PluginBuildOf struct {
	Plugin string
	PluginBuild
}

// JoinPluginBuilds gives each plugin its builds, by the time they were
// registered (then SHA-256), and the fields of the last: the build a
// plugin's row names is one of them even when its builds do not hold it
// (a previous version registered it).
func JoinPluginBuilds(recs []PluginRecord, builds []PluginBuildOf) []PluginRecord {
	for i := range recs {
		p := &recs[i]
		own := PluginBuild{SHA256: p.SHA256, Path: p.Path, Version: p.Version, RegisteredAt: p.RegisteredAt}
		p.Builds = nil
		for _, b := range builds {
			if b.Plugin == p.Name {
				p.Builds = append(p.Builds, b.PluginBuild)
			}
		}
		if !p.Trusts(own.SHA256) || len(p.Builds) == 0 {
			p.Builds = append(p.Builds, own)
		}
		slices.SortFunc(p.Builds, func(a, b PluginBuild) int {
			if c := a.RegisteredAt.Compare(b.RegisteredAt); c != 0 {
				return c
			}
			return bytes.Compare(a.SHA256, b.SHA256)
		})
		last := p.Builds[len(p.Builds)-1]
		p.Path, p.SHA256, p.Version, p.RegisteredAt = last.Path, last.SHA256, last.Version, last.RegisteredAt
	}
	return recs
}

// CheckBuildRemoval says whether the build sum of a plugin may be removed,
// its row naming the build first and builds of its builds kept beside the
// row, this of them of sum: ErrNotFound when it has no such build,
// ErrConflict when it is the last.
func CheckBuildRemoval(name string, first, sum []byte, builds, this int) error {
	own := bytes.Equal(first, sum)
	switch {
	case this == 0 && !own:
		return ErrNotFound
	case this == 0:
		builds++ // the row's own build, registered by a previous version
	}
	if builds <= 1 {
		return fmt.Errorf("%w: the last build of plugin %s", ErrConflict, name)
	}
	return nil
}
