package mcp_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/internal/servetest"
)

type key struct {
	Key    string `json:"key"`
	Secret string `json:"secret"`
}

// env is a running aivis serve with the accounts and keys the tests use.
type env struct {
	URL  string
	CA   string // the server's certificate file
	pool *x509.CertPool
	// Key holds every scope of an Enterprise account; ReadKey, of the
	// same account, visibility:read, content:read and budget:read only.
	Key, ReadKey key
	// StarterKey is a Starter account's (60 requests a minute).
	StarterKey key
	// AgencyKey is an agency's; ClientKey its client ClientID's;
	// OtherClientID is another client of it, with OtherDomain.
	AgencyKey, ClientKey    key
	ClientID, OtherClientID string
	// Domain is monitored by the Enterprise account (brand Acme),
	// OtherDomain by the agency for OtherClientID.
	Domain, OtherDomain string
}

// serve starts aivis serve with a fake answer engine for scans and no
// content workers (content requests stay queued), makes the accounts,
// keys and domains, and returns them.
func serve(t *testing.T) *env {
	t.Helper()
	bin, data := servetest.Build(t)[0], t.TempDir()
	e := &env{Domain: "acme.example", OtherDomain: "other-client.example"}
	var acct, starter, agency, cl, other struct {
		ID string `json:"id"`
	}
	servetest.CLI(t, bin, data, &acct, "account", "create", "--name", "Acme", "--tier", "enterprise")
	servetest.CLI(t, bin, data, &starter, "account", "create", "--name", "Small", "--tier", "starter")
	servetest.CLI(t, bin, data, &agency, "account", "create", "--name", "Agency", "--tier", "professional", "--agency")
	servetest.CLI(t, bin, data, &cl, "client", "create", "--account", agency.ID, "--name", "Client A")
	servetest.CLI(t, bin, data, &other, "client", "create", "--account", agency.ID, "--name", "Client B")
	e.ClientID, e.OtherClientID = cl.ID, other.ID
	servetest.CLI(t, bin, data, &e.Key, "key", "create", "--account", acct.ID, "--name", "mcp")
	servetest.CLI(t, bin, data, &e.ReadKey, "key", "create", "--account", acct.ID, "--name", "mcp read",
		"--scopes", "visibility:read,content:read,budget:read")
	servetest.CLI(t, bin, data, &e.StarterKey, "key", "create", "--account", starter.ID, "--name", "mcp")
	servetest.CLI(t, bin, data, &e.AgencyKey, "key", "create", "--account", agency.ID, "--name", "mcp")
	servetest.CLI(t, bin, data, &e.ClientKey, "key", "create", "--account", agency.ID, "--client", cl.ID, "--name", "mcp")

	engine := probefake.New()
	t.Cleanup(engine.Close)
	engine.Key = "sk-test"
	engine.Answer("fake-model", "The best options are Acme (https://acme.example/skates) and Globex.", "I recommend Globex.")
	cfg, err := json.Marshal(map[string]any{"engines": []map[string]any{{"label": "Fake", "base_url": engine.URL(),
		"model": "fake-model", "api_key_env": "AIVIS_TEST_ENGINE_KEY", "concurrency": 2}}})
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(data, "aivis.json")
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AIVIS_TEST_ENGINE_KEY", "sk-test")
	e.URL = servetest.Serve(t, bin, data, "--config", cfgFile, "--content-workers", "0")
	e.CA = filepath.Join(data, "tls", "cert.pem")
	pem, err := os.ReadFile(e.CA)
	if err != nil {
		t.Fatal(err)
	}
	e.pool = x509.NewCertPool()
	e.pool.AppendCertsFromPEM(pem)

	e.api(t, e.Key, http.MethodPost, "/v1/domains", map[string]any{"domain": e.Domain, "brands": []string{"Acme"},
		"competitors": []string{"Globex"}, "prompts": []string{"Which rocket skates should I buy?"}}, http.StatusCreated)
	e.api(t, e.AgencyKey, http.MethodPost, "/v1/domains", map[string]any{"domain": e.OtherDomain, "client_id": e.OtherClientID},
		http.StatusCreated)
	return e
}

// transport trusts the server's certificate; rec, when set, sees every
// exchange.
func (e *env) transport(rec *exchanges) http.RoundTripper {
	var rt http.RoundTripper = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.pool}}
	if rec != nil {
		rt = &recording{next: rt, rec: rec}
	}
	return rt
}

// api makes an API request with key's bearer and checks its status.
func (e *env) api(t *testing.T, k key, method, path string, body any, want int) []byte {
	t.Helper()
	b, _ := json.Marshal(body)
	r, _ := http.NewRequest(method, e.URL+path, bytes.NewReader(b))
	r.Header.Set("Authorization", "Bearer "+k.Key)
	r.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: e.transport(nil)}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s; want %d", method, path, resp.StatusCode, out.Bytes(), want)
	}
	return out.Bytes()
}

// exchange is an HTTP request to the server and its answer's status and
// headers, as the client's transport saw them.
type exchange struct {
	Method         string
	ReqHeader      http.Header
	Status         int
	RespHeader     http.Header
	ProtocolHeader string
}

type exchanges struct {
	mu  sync.Mutex
	all []exchange
}

func (x *exchanges) list() []exchange {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]exchange(nil), x.all...)
}

type recording struct {
	next http.RoundTripper
	rec  *exchanges
}

func (r *recording) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	r.rec.mu.Lock()
	r.rec.all = append(r.rec.all, exchange{Method: req.Method, ReqHeader: req.Header.Clone(), Status: resp.StatusCode,
		RespHeader: resp.Header.Clone(), ProtocolHeader: req.Header.Get("Mcp-Protocol-Version")})
	r.rec.mu.Unlock()
	return resp, nil
}
