package webhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aivis/aivis/webhook"
)

// standardwebhooksVersion pins the npm package the deliveries are checked
// against.
const standardwebhooksVersion = "1.1.1"

// nodeModules installs the package once into the user's cache and returns
// the directory to run node in.
func nodeModules(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to check deliveries against the standardwebhooks npm package (apt-get install nodejs npm)", tool)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "aivis-test", "standardwebhooks-"+standardwebhooksVersion)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks", "package.json")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", dir, "standardwebhooks@"+standardwebhooksVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm install standardwebhooks@%s: %v\n%s", standardwebhooksVersion, err, out)
		}
	}
	script, err := os.ReadFile(filepath.Join("testdata", "standardwebhooks.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "check.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func node(t *testing.T, dir string, req map[string]any, out any) {
	t.Helper()
	in, _ := json.Marshal(req)
	cmd := exec.Command("node", "check.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v: %s", err, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("node answered %q: %v", b, err)
	}
}

// TestIndependentImplementation: deliveries signed here verify with the
// standardwebhooks npm package, and its signatures verify here.
func TestIndependentImplementation(t *testing.T) {
	dir := nodeModules(t)
	secret, _ := webhook.NewSecret()
	old, _ := webhook.NewSecret()
	body := `{"id":"evt_2fGh7JkL0qWe4RtY9uIo","event":"ai_visibility_change","timestamp":"2026-11-22T10:00:00Z","data":{"domain":"example.com","visibility_score":72}}`
	now := time.Now()

	for name, secrets := range map[string][]string{"one secret": {secret}, "during a rotation": {secret, old}} {
		s, _ := webhook.NewSigner(secrets...)
		h := http.Header{}
		s.Headers(h, "evt_2fGh7JkL0qWe4RtY9uIo", now, []byte(body))
		headers := map[string]string{"webhook-id": h.Get(webhook.HeaderID), "webhook-timestamp": h.Get(webhook.HeaderTimestamp),
			"webhook-signature": h.Get(webhook.HeaderSignature)}
		for _, receiver := range secrets {
			var res struct {
				OK    bool   `json:"ok"`
				ID    string `json:"id"`
				Error string `json:"error"`
			}
			node(t, dir, map[string]any{"op": "verify", "secret": receiver, "body": body, "headers": headers}, &res)
			if !res.OK || res.ID != "evt_2fGh7JkL0qWe4RtY9uIo" {
				t.Errorf("%s: standardwebhooks refused our delivery: %+v", name, res)
			}
		}
		// And a tampered body is refused there too.
		var res struct {
			OK bool `json:"ok"`
		}
		node(t, dir, map[string]any{"op": "verify", "secret": secret, "body": body + " ", "headers": headers}, &res)
		if res.OK {
			t.Errorf("%s: standardwebhooks accepted a tampered body", name)
		}
	}

	var signed struct {
		Signature string `json:"signature"`
	}
	node(t, dir, map[string]any{"op": "sign", "secret": secret, "id": "evt_x", "timestamp": now.Unix(), "body": body}, &signed)
	h := http.Header{}
	h.Set(webhook.HeaderID, "evt_x")
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(webhook.HeaderSignature, signed.Signature)
	v, _ := webhook.NewVerifier(secret)
	if err := v.Verify(h, []byte(body)); err != nil {
		t.Errorf("our verifier refused standardwebhooks' signature %q: %v", signed.Signature, err)
	}
}
