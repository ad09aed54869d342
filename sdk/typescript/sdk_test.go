// Package typescript tests the TypeScript client: its generated types
// are those of core/api/openapi.json, and its tests (node --test) pass
// against a real aivis serve.
package typescript

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aivis/aivis/internal/servetest"
)

var (
	installOnce sync.Once
	installErr  string
)

// install runs npm ci (the pinned versions of package-lock.json into the
// git-ignored node_modules) once for the package's tests. Node.js and npm
// are required: make deps installs them.
func install(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: the TypeScript client's tests need Node.js and npm (make deps installs them)", tool)
		}
	}
	installOnce.Do(func() {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			installErr = "npm ci: " + err.Error() + "\n" + string(out)
		}
	})
	if installErr != "" {
		t.Fatal(installErr)
	}
}

// run runs a command in the package's directory and fails the test with
// its output when it fails.
func run(t *testing.T, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// TestSchemaFresh: src/schema.ts is what openapi-typescript makes of
// core/api/openapi.json now (npm run generate writes it).
func TestSchemaFresh(t *testing.T) {
	install(t)
	fresh := filepath.Join(t.TempDir(), "schema.ts")
	// As package.json's generate script.
	run(t, nil, "node", "node_modules/openapi-typescript/bin/cli.js", "../../core/api/openapi.json", "--empty-objects-unknown", "-o", fresh)
	want, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("src", "schema.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("src/schema.ts is stale: core/api/openapi.json changed since it was generated; run npm run generate in sdk/typescript")
	}
}

// TestNode compiles the client and its tests with the pinned tsc and runs
// them with node --test against an aivis serve started for them, with an
// account and its key made by the CLI, passed by the environment.
func TestNode(t *testing.T) {
	install(t)
	// The connections' tests use the Slack connector (its incoming-webhook
	// URL on the tests' loopback receiver) and Zapier's REST hooks.
	bins := servetest.Build(t, "connectors/slack", "connectors/zapier")
	bin, data := bins[0], t.TempDir()
	var acct struct {
		ID string `json:"id"`
	}
	servetest.CLI(t, bin, data, &acct, "account", "create", "--name", "Acme", "--tier", "enterprise")
	var k struct {
		Key    string `json:"key"`
		Secret string `json:"secret"`
	}
	servetest.CLI(t, bin, data, &k, "key", "create", "--account", acct.ID, "--name", "sdk")
	// A Starter account's key, whose 60 requests a minute a test spends.
	var starter struct {
		ID string `json:"id"`
	}
	servetest.CLI(t, bin, data, &starter, "account", "create", "--name", "Small", "--tier", "starter")
	var limited struct {
		Key string `json:"key"`
	}
	servetest.CLI(t, bin, data, &limited, "key", "create", "--account", starter.ID, "--name", "sdk")
	for _, plugin := range bins[1:] {
		servetest.CLI(t, bin, data, nil, "plugin", "register", plugin)
	}
	// Outbound deliveries may reach the tests' receiver (plain HTTP on
	// loopback); no content worker takes a request, so one can be cancelled.
	url := servetest.Serve(t, bin, data, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--content-workers", "0")

	run(t, nil, "node", "node_modules/typescript/bin/tsc", "-p", ".")
	cmd := exec.Command("node", "--test", "--test-reporter=spec", "dist/test/")
	cmd.Env = append(os.Environ(),
		"AIVIS_URL="+url, "AIVIS_KEY="+k.Key, "AIVIS_SECRET="+k.Secret, "AIVIS_LIMITED_KEY="+limited.Key,
		"NODE_EXTRA_CA_CERTS="+filepath.Join(data, "tls", "cert.pem"))
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("node --test: %v", err)
	}
}
