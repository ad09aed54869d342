package sqlite_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// TestPluginBuildsBesideThePreviousVersion: a plugin's builds live beside
// the previous version's registry (expand/contract): the plugins row keeps
// the first build, which that version reads and starts, while builds are
// added; what that version registers (its row replaced) is one of the
// builds this one lists.
func TestPluginBuildsBesideThePreviousVersion(t *testing.T) {
	db, path := newDB(t)
	r := raw(t, path)
	v1 := store.PluginRecord{Name: "slack", Path: "/opt/v1/slack", SHA256: []byte{1}, Kind: "chat", Version: "1", RegisteredAt: t0}
	v2 := store.PluginRecord{Name: "slack", Path: "/opt/v2/slack", SHA256: []byte{2}, Kind: "chat", Version: "2", RegisteredAt: t0.Add(time.Hour)}
	must(t, db.PutPlugin(ctx, v1))
	must(t, db.PutPlugin(ctx, v2))
	// What the previous version reads.
	var p, sum []byte
	var ver string
	must(t, r.QueryRow(`SELECT path, sha256, version FROM plugins WHERE name = 'slack'`).Scan(&p, &sum, &ver))
	if string(p) != v1.Path || !bytes.Equal(sum, v1.SHA256) || ver != "1" {
		t.Fatalf("the previous version reads %s %x %s, want the first build", p, sum, ver)
	}
	// What it writes when it registers a build.
	_, err := r.Exec(`INSERT INTO plugins (name, path, sha256, kind, version, display_name, registered_at)
		VALUES ('slack', '/opt/v3/slack', x'03', 'chat', '3', '', ?) ON CONFLICT (name) DO UPDATE SET path = excluded.path, sha256 = excluded.sha256,
		kind = excluded.kind, version = excluded.version, display_name = excluded.display_name, registered_at = excluded.registered_at`,
		t0.Add(2*time.Hour).UnixNano())
	must(t, err)
	ps, err := db.ListPlugins(ctx)
	must(t, err)
	if len(ps) != 1 || len(ps[0].Builds) != 3 || !ps[0].Trusts([]byte{1}) || !ps[0].Trusts([]byte{2}) || !ps[0].Trusts([]byte{3}) ||
		ps[0].Version != "3" || ps[0].Path != "/opt/v3/slack" {
		t.Fatalf("after the previous version registered a build: %+v", ps)
	}
	// Its build, the row's, removed: the row names the first left.
	must(t, db.RemovePluginBuild(ctx, "slack", []byte{3}))
	must(t, r.QueryRow(`SELECT path, sha256 FROM plugins WHERE name = 'slack'`).Scan(&p, &sum))
	if string(p) != v1.Path || !bytes.Equal(sum, v1.SHA256) {
		t.Fatalf("after the row's build was removed, the row names %s %x", p, sum)
	}
}
