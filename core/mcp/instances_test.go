package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aivis/aivis/core/api"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/limits"
	aivismcp "github.com/aivis/aivis/core/mcp"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/store/sqlite"
)

// inProcess is the API with its MCP endpoint on a TLS listener over a
// SQLite file, in this process, with an Enterprise account's key and a
// reading of example.com. The server's clock moves a second each time it
// is read, so that the tier's rate limits never refuse its requests.
func inProcess(tb testing.TB) (*httptest.Server, string) {
	tb.Helper()
	hs, key := instances(tb, nil)
	return hs[0], key
}

// instances are instances of the API and its MCP endpoint over one SQLite
// file, as inProcess's, one for each session key given.
func instances(tb testing.TB, sessionKeys ...[]byte) ([]*httptest.Server, string) {
	tb.Helper()
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ticks atomic.Int64
	now := func() time.Time { return base.Add(time.Duration(ticks.Add(1)) * time.Second) }
	db, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "aivis.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	log := slog.New(slog.DiscardHandler)
	// Read through the caches the server reads through (engines.Stores).
	st := cache.Wrap(db, db.Signal())
	as := &auth.Service{Keys: st, Accounts: st, Now: now}
	if err := db.CreateAccount(ctx, store.Account{ID: "acct_bench", Name: "Bench", Tier: "enterprise", Type: store.AccountStandard, CreatedAt: base}); err != nil {
		tb.Fatal(err)
	}
	k, err := as.CreateKey(ctx, auth.NewKey{AccountID: "acct_bench", Name: "bench"})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.AddReading(ctx, store.Reading{AccountID: "acct_bench", Domain: "example.com", VisibilityScore: 61,
		Sentiment: "positive", SentimentScore: 0.3, Source: "bench", MeasuredAt: base}); err != nil {
		tb.Fatal(err)
	}
	var hs []*httptest.Server
	for _, sessionKey := range sessionKeys {
		srv := api.New(api.Config{}, api.Deps{Store: st, Auth: as, Content: &content.Service{Store: st, Now: now},
			Counter: limits.NewMemory(nil, log), Guard: limits.NewAuthGuard(1<<30, time.Minute), Log: log, Now: now,
			MCP: func(a *api.Server) http.Handler {
				return aivismcp.New(a, aivismcp.Options{Log: log, SessionKey: sessionKey})
			}})
		s := httptest.NewTLSServer(srv.Handler())
		tb.Cleanup(s.Close)
		hs = append(hs, s)
	}
	return hs, k.APIKey
}

// TestConcurrentToolCalls: sessions of both revisions calling tools at
// once, in this process (so that the race detector sees the endpoint's
// side too), each getting its own answers.
func TestConcurrentToolCalls(t *testing.T) {
	hs, apiKey := inProcess(t)
	hc := hs.Client()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		version := "2025-11-25"
		if i%2 == 0 {
			version = "" // 2026-07-28
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "concurrent", Version: "1"}, nil).Connect(ctx,
				&mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{apiKey, hc.Transport}}},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				errs <- err
				return
			}
			defer cs.Close()
			for range 10 {
				for name, args := range map[string]any{"get_visibility": map[string]any{"domain": "example.com"}, "get_budget_status": map[string]any{}} {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
					if err == nil && res.IsError {
						err = fmt.Errorf("%s: %s", name, res.Content[0].(*mcp.TextContent).Text)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// roundRobin sends each request to the next of servers, as a load
// balancer without affinity does: the client sees one address.
type roundRobin struct {
	servers []*httptest.Server
	next    atomic.Int64
	sent    []atomic.Int64
}

func (rr *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	i := int(rr.next.Add(1)-1) % len(rr.servers)
	rr.sent[i].Add(1)
	u, _ := url.Parse(rr.servers[i].URL)
	r = r.Clone(r.Context())
	r.URL.Host, r.Host = u.Host, u.Host
	return rr.servers[i].Client().Transport.RoundTrip(r)
}

// TestSessionsAcrossInstances: a 2025-11-25 session is served by every
// instance with the same session key, whichever made it (a load balancer
// without affinity, a restart); an id changed, or sent with another key,
// is no session (404); an instance with another key serves none of them.
func TestSessionsAcrossInstances(t *testing.T) {
	ctx := context.Background()
	shared := bytes.Repeat([]byte{7}, 32)
	all, apiKey := instances(t, shared, shared, bytes.Repeat([]byte{8}, 32))
	hs := all[:2]
	rr := &roundRobin{servers: hs, sent: make([]atomic.Int64, 2)}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "balanced", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: hs[0].URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{apiKey, rr}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	id := cs.ID()
	if _, mac, ok := strings.Cut(id, "."); !ok || mac == "" {
		t.Fatalf("the session id %q is not signed", id)
	}
	for i := range 6 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_visibility", Arguments: map[string]any{"domain": "example.com"}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
	if rr.sent[0].Load() < 3 || rr.sent[1].Load() < 3 {
		t.Fatalf("requests per instance %d and %d: the balancer did not spread them", rr.sent[0].Load(), rr.sent[1].Load())
	}
	post := func(s *httptest.Server, session string) int {
		r, _ := http.NewRequest(http.MethodPost, s.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		r.Header.Set("Authorization", "Bearer "+apiKey)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		r.Header.Set("Mcp-Session-Id", session)
		resp, err := s.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, s := range hs {
		if code := post(s, id); code != http.StatusOK {
			t.Errorf("the session at %s: %d", s.URL, code)
		}
	}
	raw, _, _ := strings.Cut(id, ".")
	for _, forged := range []string{raw, raw + ".AAAAAAAAAAAAAAAAAAAAAAAA", id + "x"} {
		if code := post(hs[1], forged); code != http.StatusNotFound {
			t.Errorf("the session id %q: %d, want 404", forged, code)
		}
	}
	if code := post(all[2], id); code != http.StatusNotFound {
		t.Errorf("an instance of another key: %d, want 404", code)
	}
}
