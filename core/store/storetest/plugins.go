package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// A plugin registration keeps every field; ListPlugins lists the plugins
// by name, each with its one build; RemovePlugin forgets one, ErrNotFound
// for a name not registered.
func testPlugins(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	if ps, err := s.ListPlugins(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("ListPlugins of a new store: %+v, %v", ps, err)
	}
	slack := store.PluginRecord{Name: "slack", Path: "/opt/aivis/plugins/slack", SHA256: []byte{0, 1, 2, 0xfe, 0xff}, Kind: "notification",
		Version: "1.2.3", DisplayName: "Slack ✓", RegisteredAt: t0.In(elsewhere)}
	ga4 := store.PluginRecord{Name: "ga4", Path: "/opt/ga4", SHA256: []byte{9}, Kind: "analytics", Version: "0.1.0", DisplayName: "GA4",
		RegisteredAt: t0.Add(time.Hour)}
	for _, p := range []store.PluginRecord{slack, ga4} {
		must(t, s.PutPlugin(ctx, p), "PutPlugin(%s)", p.Name)
	}
	slack.RegisteredAt = t0
	want := []store.PluginRecord{withBuilds(ga4), withBuilds(slack)}
	if ps, err := s.ListPlugins(ctx); err != nil || !reflect.DeepEqual(ps, want) {
		t.Errorf("ListPlugins (every field, by name):\n got  %+v, %v\n want %+v", ps, err, want)
	}
	must(t, s.RemovePlugin(ctx, "ga4"), "RemovePlugin")
	if err := s.RemovePlugin(ctx, "ga4"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RemovePlugin of a name not registered: %v, want ErrNotFound", err)
	}
	if ps, err := s.ListPlugins(ctx); err != nil || len(ps) != 1 || ps[0].Name != "slack" {
		t.Errorf("ListPlugins after RemovePlugin: %+v, %v", ps, err)
	}
	// Registered again after its removal, a plugin has the new build alone.
	must(t, s.PutPlugin(ctx, ga4), "PutPlugin(ga4) again")
	if ps, err := s.ListPlugins(ctx); err != nil || len(ps) != 2 || !reflect.DeepEqual(ps[0], withBuilds(ga4)) {
		t.Errorf("ListPlugins after ga4 was registered again: %+v, %v", ps, err)
	}
}

// withBuilds is a plugin registered once, as ListPlugins lists it.
func withBuilds(p store.PluginRecord) store.PluginRecord {
	p.RegisteredAt = p.RegisteredAt.UTC()
	p.Builds = []store.PluginBuild{{SHA256: p.SHA256, Path: p.Path, Version: p.Version, RegisteredAt: p.RegisteredAt}}
	return p
}

// A plugin's builds: PutPlugin of another SHA-256 adds a build and keeps
// the others (the record's path, SHA-256 and version are then the last
// build's; kind and display name the last registration's), of the same
// SHA-256 replaces it; RemovePluginBuild forgets one, ErrNotFound for a
// SHA-256 or plugin it does not have, ErrConflict for the last, which is
// kept; the plugin's first build removed, the next is first.
func testPluginBuilds(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	v1 := store.PluginRecord{Name: "slack", Path: "/opt/v1/slack", SHA256: []byte{1, 1}, Kind: "notification", Version: "1.0.0",
		DisplayName: "Slack", RegisteredAt: t0}
	v2 := store.PluginRecord{Name: "slack", Path: "/opt/v2/slack", SHA256: []byte{2, 2}, Kind: "chat", Version: "2.0.0",
		DisplayName: "Slack 2", RegisteredAt: t0.Add(time.Hour)}
	b1 := store.PluginBuild{SHA256: v1.SHA256, Path: v1.Path, Version: v1.Version, RegisteredAt: v1.RegisteredAt}
	b2 := store.PluginBuild{SHA256: v2.SHA256, Path: v2.Path, Version: v2.Version, RegisteredAt: v2.RegisteredAt}
	must(t, s.PutPlugin(ctx, v1), "PutPlugin(v1)")
	must(t, s.PutPlugin(ctx, v2), "PutPlugin(v2)")
	one := func() store.PluginRecord {
		t.Helper()
		ps, err := s.ListPlugins(ctx)
		must(t, err, "ListPlugins")
		if len(ps) != 1 {
			t.Fatalf("ListPlugins: %+v", ps)
		}
		return ps[0]
	}
	want := v2
	want.Builds = []store.PluginBuild{b1, b2}
	if got := one(); !reflect.DeepEqual(got, want) {
		t.Errorf("ListPlugins after a second build:\n got  %+v\n want %+v", got, want)
	}
	if p := one(); !p.Trusts(v1.SHA256) || !p.Trusts(v2.SHA256) || p.Trusts([]byte{3}) {
		t.Errorf("Trusts: %+v", p)
	}

	// The first build registered again, from elsewhere: replaced, and last.
	v1b := v1
	v1b.Path, v1b.RegisteredAt = "/srv/slack", t0.Add(2*time.Hour)
	must(t, s.PutPlugin(ctx, v1b), "PutPlugin(v1 again)")
	want = v1b
	want.Builds = []store.PluginBuild{b2, {SHA256: v1.SHA256, Path: v1b.Path, Version: v1.Version, RegisteredAt: v1b.RegisteredAt}}
	if got := one(); !reflect.DeepEqual(got, want) {
		t.Errorf("ListPlugins after a build was registered again:\n got  %+v\n want %+v", got, want)
	}

	if err := s.RemovePluginBuild(ctx, "slack", []byte{3}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RemovePluginBuild of a SHA-256 not registered: %v, want ErrNotFound", err)
	}
	if err := s.RemovePluginBuild(ctx, "teams", v1.SHA256); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RemovePluginBuild of a plugin not registered: %v, want ErrNotFound", err)
	}
	must(t, s.RemovePluginBuild(ctx, "slack", v1.SHA256), "RemovePluginBuild(v1)")
	want = v2
	want.Kind, want.DisplayName = v1.Kind, v1.DisplayName // the last registration's
	want.Builds = []store.PluginBuild{b2}
	if got := one(); !reflect.DeepEqual(got, want) {
		t.Errorf("ListPlugins after the first build was removed:\n got  %+v\n want %+v", got, want)
	}
	if err := s.RemovePluginBuild(ctx, "slack", v2.SHA256); !errors.Is(err, store.ErrConflict) {
		t.Errorf("RemovePluginBuild of the last build: %v, want ErrConflict", err)
	}
	if got := one(); !reflect.DeepEqual(got, want) {
		t.Errorf("ListPlugins after the last build's removal was refused:\n got  %+v\n want %+v", got, want)
	}
	// Removed and registered again, the plugin has none of its old builds.
	must(t, s.RemovePlugin(ctx, "slack"), "RemovePlugin")
	must(t, s.PutPlugin(ctx, v1), "PutPlugin(v1) after the removal")
	if got := one(); !reflect.DeepEqual(got, withBuilds(v1)) {
		t.Errorf("ListPlugins after a removal and a registration:\n got  %+v\n want %+v", got, withBuilds(v1))
	}
}

// Each instance's health of the plugins: PutPluginHealth replaces the
// rows of its instance alone (stored under it, whatever their Instance;
// a row without a SHA-256 read back without one),
// nil forgets the instance, two rows of one plugin are refused and change
// nothing; ListPluginHealth lists those checked at or after since, by
// plugin and instance, every field kept; PrunePluginHealth forgets those
// checked before its cut, of any instance.
func testPluginHealth(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	list := func(since time.Time) []store.PluginHealth {
		t.Helper()
		hs, err := s.ListPluginHealth(ctx, since)
		must(t, err, "ListPluginHealth")
		return hs
	}
	if hs := list(store.MinTime); len(hs) != 0 {
		t.Fatalf("ListPluginHealth of a new store: %+v", hs)
	}
	a := []store.PluginHealth{
		{Instance: "ignored", Plugin: "slack", State: "running", Restarts: 2, Problem: "", SHA256: []byte{0, 0xff, 7}, CheckedAt: t0.In(elsewhere)},
		{Plugin: "ga4", State: "stopped", Problem: "the binary is not on this instance ✓", CheckedAt: t0.Add(time.Nanosecond)},
	}
	b := []store.PluginHealth{{Plugin: "slack", State: "restarting", Restarts: 1, CheckedAt: t0.Add(time.Minute)}}
	must(t, s.PutPluginHealth(ctx, "proc_a", a), "PutPluginHealth(proc_a)")
	must(t, s.PutPluginHealth(ctx, "proc_b", b), "PutPluginHealth(proc_b)")
	ga4A := store.PluginHealth{Instance: "proc_a", Plugin: "ga4", State: "stopped", Problem: a[1].Problem, CheckedAt: t0.Add(time.Nanosecond)}
	slackA := store.PluginHealth{Instance: "proc_a", Plugin: "slack", State: "running", Restarts: 2, SHA256: []byte{0, 0xff, 7}, CheckedAt: t0}
	slackB := store.PluginHealth{Instance: "proc_b", Plugin: "slack", State: "restarting", Restarts: 1, CheckedAt: t0.Add(time.Minute)}
	if hs, want := list(store.MinTime), []store.PluginHealth{ga4A, slackA, slackB}; !reflect.DeepEqual(hs, want) {
		t.Errorf("ListPluginHealth (every field, by plugin and instance, under the instance given):\n got  %+v\n want %+v", hs, want)
	}
	if hs, want := list(t0.Add(time.Nanosecond)), []store.PluginHealth{ga4A, slackB}; !reflect.DeepEqual(hs, want) {
		t.Errorf("ListPluginHealth since a time (at or after it):\n got  %+v\n want %+v", hs, want)
	}

	// A second report of proc_a replaces its rows, and only its.
	slackA2 := store.PluginHealth{Instance: "proc_a", Plugin: "slack", State: "running", Restarts: 3, CheckedAt: t0.Add(2 * time.Minute)}
	must(t, s.PutPluginHealth(ctx, "proc_a", []store.PluginHealth{slackA2}), "PutPluginHealth(proc_a) again")
	if hs, want := list(store.MinTime), []store.PluginHealth{slackA2, slackB}; !reflect.DeepEqual(hs, want) {
		t.Errorf("ListPluginHealth after proc_a reported again without ga4:\n got  %+v\n want %+v", hs, want)
	}
	twice := []store.PluginHealth{{Plugin: "ga4", State: "running", CheckedAt: t0}, {Plugin: "ga4", State: "stopped", CheckedAt: t0}}
	if err := s.PutPluginHealth(ctx, "proc_a", twice); err == nil {
		t.Errorf("PutPluginHealth with two rows of one plugin: no error")
	}
	if hs, want := list(store.MinTime), []store.PluginHealth{slackA2, slackB}; !reflect.DeepEqual(hs, want) {
		t.Errorf("ListPluginHealth after a refused report: %+v, want it unchanged %+v", hs, want)
	}

	// A prune forgets what was checked before its cut, of any instance.
	must(t, s.PrunePluginHealth(ctx, t0.Add(2*time.Minute)), "PrunePluginHealth")
	if hs, want := list(store.MinTime), []store.PluginHealth{slackA2}; !reflect.DeepEqual(hs, want) {
		t.Errorf("ListPluginHealth after a prune: %+v, want %+v", hs, want)
	}
	must(t, s.PutPluginHealth(ctx, "proc_a", nil), "PutPluginHealth(proc_a, nil)")
	if hs := list(store.MinTime); len(hs) != 0 {
		t.Errorf("ListPluginHealth after proc_a forgot itself: %+v", hs)
	}
}

// Instances report on handles of their own at once, over and over, while
// others prune what is older: every instance's last report is kept whole.
func testPluginHealthUnderConcurrency(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	const rounds = 10
	Together(concurrency, func(i int) {
		db := hs[i%2]
		for r := range rounds {
			at := t0.Add(time.Duration(r) * time.Second)
			report := []store.PluginHealth{{Plugin: "ga4", State: "running", Restarts: r, CheckedAt: at},
				{Plugin: "slack", State: "running", Restarts: r, CheckedAt: at}}
			if err := db.PutPluginHealth(ctx, fmt.Sprintf("proc_%02d", i), report); err != nil {
				t.Errorf("instance %d, report %d: %v", i, r, err)
				return
			}
			if err := db.PrunePluginHealth(ctx, t0.Add(-time.Hour)); err != nil {
				t.Errorf("instance %d, prune %d: %v", i, r, err)
				return
			}
		}
	})
	for h, db := range hs {
		got, err := db.ListPluginHealth(ctx, store.MinTime)
		must(t, err, "ListPluginHealth")
		if len(got) != 2*concurrency {
			t.Fatalf("handle %d: %d rows, want %d (two per instance)", h, len(got), 2*concurrency)
		}
		for _, g := range got {
			if g.Restarts != rounds-1 {
				t.Errorf("handle %d: %+v is not its instance's last report", h, g)
			}
		}
	}
}
