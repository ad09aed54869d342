package hub_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/plugins/host"
	"github.com/aivis/aivis/plugins/sdk"
)

// open registers the host's test plugin in a real store and opens a hub
// on it.
func open(t *testing.T) *hub.Hub {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "testplugin")
	if out, err := exec.Command("go", "build", "-o", bin, "../../plugins/host/testdata/testplugin").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	db, err := sqlite.Open(ctx, filepath.Join(dir, "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sum, err := host.Checksum(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutPlugin(ctx, store.PluginRecord{Name: "test", Path: bin, SHA256: sum, Kind: "other", RegisteredAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h, err := hub.Open(ctx, db, dir, netguard.Policy{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
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
