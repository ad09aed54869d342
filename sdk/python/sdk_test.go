// Package python tests the Python client (sdk/python/aivis): its tests,
// python3 -m unittest, run against a real aivis serve started here, with
// accounts and keys made by the CLI and passed by the environment.
package python

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/internal/servetest"
)

type key struct {
	Key    string `json:"key"`
	Secret string `json:"secret"`
}

// TestUnittest runs every test of sdk/python/tests. The server has the
// partner connector and the Zapier connector registered, a fake answer
// engine for scans, no content workers (content requests stay queued
// until cancelled) and loopback targets allowed (the tests' receiver).
// A second account, of the Starter tier, is the one the tests exhaust
// the rate limit of; a third, an agency, has a client with a key.
func TestUnittest(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not found: the Python client's tests need it (make deps installs it)")
	}
	bins := servetest.Build(t, "examples/partner-connector", "connectors/zapier")
	bin, data := bins[0], t.TempDir()
	for _, plugin := range bins[1:] {
		servetest.CLI(t, bin, data, nil, "plugin", "register", plugin)
	}
	var acct, limited struct {
		ID string `json:"id"`
	}
	servetest.CLI(t, bin, data, &acct, "account", "create", "--name", "Acme", "--tier", "enterprise")
	servetest.CLI(t, bin, data, &limited, "account", "create", "--name", "Small", "--tier", "starter")
	var k, lk key
	servetest.CLI(t, bin, data, &k, "key", "create", "--account", acct.ID, "--name", "python")
	servetest.CLI(t, bin, data, &lk, "key", "create", "--account", limited.ID, "--name", "python")
	// An agency with a client: the account's key and the client's.
	var agency, cl struct {
		ID string `json:"id"`
	}
	servetest.CLI(t, bin, data, &agency, "account", "create", "--name", "Agency", "--tier", "professional", "--agency")
	servetest.CLI(t, bin, data, &cl, "client", "create", "--account", agency.ID, "--name", "Client A")
	var ak, ck key
	servetest.CLI(t, bin, data, &ak, "key", "create", "--account", agency.ID, "--name", "python")
	servetest.CLI(t, bin, data, &ck, "key", "create", "--account", agency.ID, "--client", cl.ID, "--name", "python")

	engine := probefake.New()
	defer engine.Close()
	engine.Key = "sk-test"
	engine.Answer("fake-model", "The best options are Acme (https://acme.example/skates) and Globex.", "I recommend Globex.")
	cfg, err := json.Marshal(map[string]any{"engines": []map[string]any{{"label": "Fake", "base_url": engine.URL(),
		"model": "fake-model", "api_key_env": "AIVIS_TEST_ENGINE_KEY", "concurrency": 2,
		"input_price_per_mtok": 1, "output_price_per_mtok": 2}}})
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(data, "aivis.json")
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AIVIS_TEST_ENGINE_KEY", "sk-test")
	url := servetest.Serve(t, bin, data, "--config", cfgFile, "--content-workers", "0",
		"--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "5s")

	openapi, err := filepath.Abs(filepath.Join("..", "..", "core", "api", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1",
		"AIVIS_URL="+url, "AIVIS_CA_FILE="+filepath.Join(data, "tls", "cert.pem"),
		"AIVIS_KEY="+k.Key, "AIVIS_SECRET="+k.Secret,
		"AIVIS_LIMITED_KEY="+lk.Key, "AIVIS_LIMITED_SECRET="+lk.Secret,
		"AIVIS_AGENCY_KEY="+ak.Key, "AIVIS_AGENCY_SECRET="+ak.Secret,
		"AIVIS_CLIENT_KEY="+ck.Key, "AIVIS_CLIENT_SECRET="+ck.Secret, "AIVIS_CLIENT_ID="+cl.ID,
		"AIVIS_OPENAPI="+openapi)
	out, err := cmd.CombinedOutput()
	t.Logf("python3 -m unittest:\n%s", out)
	if err != nil {
		t.Fatalf("python3 -m unittest: %v", err)
	}
	// The tests against the server skip without it: here none may.
	if bytes.Contains(out, []byte("skipped")) {
		t.Fatal("python3 -m unittest skipped tests")
	}
	// unittest shows warnings (a file or response left open, a deprecation).
	if bytes.Contains(out, []byte("Warning:")) {
		t.Fatal("python3 -m unittest printed warnings")
	}
}

// TestPipInstall: pip installs the package from the tree with no package
// index (the build backend is in build_backend/, on the standard library),
// and what it installed imports, elsewhere, as the client.
func TestPipInstall(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not found (make deps installs it)")
	}
	if out, err := exec.Command(python, "-m", "pip", "--version").CombinedOutput(); err != nil {
		t.Fatalf("pip not found: %v\n%s(make deps installs python3-pip)", err, out)
	}
	// A copy of the tree, so that the build leaves nothing in the checkout.
	src := t.TempDir()
	if out, err := exec.Command("cp", "-r", "aivis", "build_backend", "pyproject.toml", "README.md", src).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	target := t.TempDir()
	cmd := exec.Command(python, "-m", "pip", "install", "--no-index", "--no-deps", "--no-cache-dir",
		"--disable-pip-version-check", "--target", target, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pip install: %v\n%s", err, out)
	}
	check := exec.Command(python, "-c", "import aivis, sys; c = aivis.Client('https://localhost:8443', 'k'); "+
		"print(aivis.__file__, aivis.__version__, type(c).__name__)")
	check.Dir = t.TempDir()
	check.Env = append(os.Environ(), "PYTHONPATH="+target, "PYTHONDONTWRITEBYTECODE=1")
	out, err := check.CombinedOutput()
	if err != nil {
		t.Fatalf("the installed package: %v\n%s", err, out)
	}
	if want := filepath.Join(target, "aivis", "__init__.py") + " 0.1.0 Client\n"; string(out) != want {
		t.Fatalf("the installed package says %q; want %q", out, want)
	}
}
