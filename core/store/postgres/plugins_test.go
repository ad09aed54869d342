package postgres_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/internal/testsvc"
)

var t0 = time.Date(2025, 6, 10, 14, 20, 30, 123456789, time.UTC)

// TestPluginBuildsBesideThePreviousVersion: a plugin's builds live beside
// the previous version's registry (expand/contract): the plugins row keeps
// the first build, which that version reads and starts, while builds are
// added; what that version registers (its row replaced) is one of the
// builds this one lists.
func TestPluginBuildsBesideThePreviousVersion(t *testing.T) {
	url := testsvc.Postgres(t)
	db := open(t, url, box(t))
	c := conn(t, url)
	v1 := store.PluginRecord{Name: "slack", Path: "/opt/v1/slack", SHA256: []byte{1}, Kind: "chat", Version: "1", RegisteredAt: t0}
	v2 := store.PluginRecord{Name: "slack", Path: "/opt/v2/slack", SHA256: []byte{2}, Kind: "chat", Version: "2", RegisteredAt: t0.Add(time.Hour)}
	must(t, db.PutPlugin(ctx, v1))
	must(t, db.PutPlugin(ctx, v2))
	var p, ver string
	var sum []byte
	must(t, c.QueryRow(ctx, `SELECT path, sha256, version FROM plugins WHERE name = 'slack'`).Scan(&p, &sum, &ver))
	if p != v1.Path || !bytes.Equal(sum, v1.SHA256) || ver != "1" {
		t.Fatalf("the previous version reads %s %x %s, want the first build", p, sum, ver)
	}
	_, err := c.Exec(ctx, `INSERT INTO plugins (name, path, sha256, kind, version, display_name, registered_at, registered_at_ns)
		VALUES ('slack', '/opt/v3/slack', '\x03', 'chat', '3', '', $1, 0) ON CONFLICT (name) DO UPDATE SET path = excluded.path,
		sha256 = excluded.sha256, kind = excluded.kind, version = excluded.version, display_name = excluded.display_name,
		registered_at = excluded.registered_at, registered_at_ns = excluded.registered_at_ns`, t0.Add(2*time.Hour).Truncate(time.Microsecond))
	must(t, err)
	ps, err := db.ListPlugins(ctx)
	must(t, err)
	if len(ps) != 1 || len(ps[0].Builds) != 3 || !ps[0].Trusts([]byte{1}) || !ps[0].Trusts([]byte{2}) || !ps[0].Trusts([]byte{3}) ||
		ps[0].Version != "3" || ps[0].Path != "/opt/v3/slack" {
		t.Fatalf("after the previous version registered a build: %+v", ps)
	}
	must(t, db.RemovePluginBuild(ctx, "slack", []byte{3}))
	must(t, c.QueryRow(ctx, `SELECT path, sha256 FROM plugins WHERE name = 'slack'`).Scan(&p, &sum))
	if p != v1.Path || !bytes.Equal(sum, v1.SHA256) {
		t.Fatalf("after the row's build was removed, the row names %s %x", p, sum)
	}
}
