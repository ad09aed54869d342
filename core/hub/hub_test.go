package hub_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/plugins/host"
	"github.com/aivis/aivis/plugins/sdk"
)

// build builds the host's test plugin at path, with version as the
// version it says it is.
func build(t *testing.T, path, version string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", path, "-ldflags", "-X main.version="+version, "../../plugins/host/testdata/testplugin")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
}

// newStore opens a real store in a directory of its own.
func newStore(t *testing.T) *sqlite.DB {
	t.Helper()
	return openStore(t, filepath.Join(t.TempDir(), "aivis.db"))
}

// openStore opens a handle on the store at path, as another instance.
func openStore(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// register registers the plugin at path under the name "test", with the
// SHA-256 of the file there now.
func register(t *testing.T, db *sqlite.DB, path string) store.PluginRecord {
	t.Helper()
	sum, err := host.Checksum(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := store.PluginRecord{Name: "test", Path: path, SHA256: sum, Kind: "other", RegisteredAt: time.Now()}
	if err := db.PutPlugin(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// openHub opens a hub on db that reads the registry and reports health
// every 50 ms.
func openHub(t *testing.T, db *sqlite.DB, opt hub.Options) *hub.Hub {
	t.Helper()
	opt.Refresh, opt.Health = 50*time.Millisecond, 50*time.Millisecond
	h, err := hub.Open(context.Background(), db, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// open registers the host's test plugin in a real store and opens a hub
// on it.
func open(t *testing.T) *hub.Hub {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "testplugin")
	build(t, bin, "0")
	db := newStore(t)
	register(t, db, bin)
	return openHub(t, db, hub.Options{})
}

// Whatever a connector writes in a reason, the hub passes on none of the
// connection's secret settings, in any of their forms, nor the query or
// user information of any URL, nor the path of a secret URL.
func TestHubRedactsWhatConnectorsSay(t *testing.T) {
	h := open(t)
	const secret = "Sekr3t+/ value&more"
	hook := "https://hooks.example.com/services/T0AAA/B0BBB/Zk9vYmFy?sig=S1G"
	settings, _ := json.Marshal(map[string]string{"mode": "leak", "secret": secret, "url": hook})
	ev := sdk.Event{ID: "evt_1", Kind: "webhook_test", Timestamp: time.Now(), Body: []byte(`{}`)}

	rs, err := h.Deliver(context.Background(), "test", settings, []sdk.Event{ev})
	if err != nil || len(rs) != 1 {
		t.Fatalf("deliver: %+v %v", rs, err)
	}
	res, err := h.Test(context.Background(), "test", settings, ev)
	if err != nil {
		t.Fatalf("test: %v", err)
	}
	forbidden := []string{secret, url.QueryEscape(secret), url.PathEscape(secret), "Sekr3t",
		"/services/T0AAA/B0BBB/Zk9vYmFy", "%2Fservices%2FT0AAA", "Zk9vYmFy", "S1G", "user:pw", "pw@", "t0k3n", "frag"}
	for _, reason := range []string{rs[0].Reason, res.Reason} {
		if !strings.Contains(reason, `Post "[redacted]": refused`) || !strings.Contains(reason, "elsewhere https://other.example/p") {
			t.Errorf("the reason says too little of what happened: %s", reason)
		}
		for _, f := range forbidden {
			if strings.Contains(reason, f) {
				t.Errorf("the reason carries %q: %s", f, reason)
			}
		}
	}
}
