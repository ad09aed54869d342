package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// A plugin registration keeps every field; PutPlugin replaces the one of
// the same name; ListPlugins lists them by name; RemovePlugin forgets one,
// ErrNotFound for a name not registered.
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
	if ps, err := s.ListPlugins(ctx); err != nil || !reflect.DeepEqual(ps, []store.PluginRecord{ga4, slack}) {
		t.Errorf("ListPlugins (every field, by name):\n got  %+v, %v\n want %+v", ps, err, []store.PluginRecord{ga4, slack})
	}
	slack2 := store.PluginRecord{Name: "slack", Path: "/new/slack", SHA256: []byte{7, 7}, Kind: "notification", Version: "2.0.0",
		DisplayName: "Slack 2", RegisteredAt: t0.Add(2 * time.Hour)}
	must(t, s.PutPlugin(ctx, slack2), "PutPlugin")
	if ps, err := s.ListPlugins(ctx); err != nil || !reflect.DeepEqual(ps, []store.PluginRecord{ga4, slack2}) {
		t.Errorf("ListPlugins after registering slack again: %+v, %v; want it replaced", ps, err)
	}
	must(t, s.RemovePlugin(ctx, "ga4"), "RemovePlugin")
	if err := s.RemovePlugin(ctx, "ga4"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RemovePlugin of a name not registered: %v, want ErrNotFound", err)
	}
	if ps, err := s.ListPlugins(ctx); err != nil || len(ps) != 1 || ps[0].Name != "slack" {
		t.Errorf("ListPlugins after RemovePlugin: %+v, %v", ps, err)
	}
}

// Each instance's health of the plugins: PutPluginHealth replaces the
// rows of its instance alone (stored under it, whatever their Instance),
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
		{Instance: "ignored", Plugin: "slack", State: "running", Restarts: 2, Problem: "", CheckedAt: t0.In(elsewhere)},
		{Plugin: "ga4", State: "stopped", Problem: "the binary is not on this instance ✓", CheckedAt: t0.Add(time.Nanosecond)},
	}
	b := []store.PluginHealth{{Plugin: "slack", State: "restarting", Restarts: 1, CheckedAt: t0.Add(time.Minute)}}
	must(t, s.PutPluginHealth(ctx, "proc_a", a), "PutPluginHealth(proc_a)")
	must(t, s.PutPluginHealth(ctx, "proc_b", b), "PutPluginHealth(proc_b)")
	ga4A := store.PluginHealth{Instance: "proc_a", Plugin: "ga4", State: "stopped", Problem: a[1].Problem, CheckedAt: t0.Add(time.Nanosecond)}
	slackA := store.PluginHealth{Instance: "proc_a", Plugin: "slack", State: "running", Restarts: 2, CheckedAt: t0}
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
