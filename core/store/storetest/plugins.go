package storetest

import (
	"errors"
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
