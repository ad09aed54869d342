package mcp_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
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
	"github.com/aivis/aivis/core/store/sqlite"
)

// inProcess is the API with its MCP endpoint on a TLS listener over a
// SQLite file, in this process, with an Enterprise account's key and a
// reading of example.com. The server's clock moves a second each time it
// is read, so that the tier's rate limits never refuse its requests.
func inProcess(tb testing.TB) (*httptest.Server, string) {
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
	as := &auth.Service{Keys: db, Accounts: db, Now: now}
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
	srv := api.New(api.Config{}, api.Deps{Store: db, Auth: as, Content: &content.Service{Store: db, Now: now},
		Counter: limits.NewMemory(nil, log), Guard: limits.NewAuthGuard(1<<30, time.Minute), Log: log, Now: now,
		MCP: func(a *api.Server) http.Handler { return aivismcp.New(a, aivismcp.Options{Log: log}) }})
	hs := httptest.NewTLSServer(srv.Handler())
	tb.Cleanup(hs.Close)
	return hs, k.APIKey
}

// BenchmarkMCPToolCall: what a tool call costs over the API call it
// wraps. Each op is one GET /v1/visibility over HTTPS and one call of the
// get_visibility tool (a 2026-07-28 request to /mcp, which makes that
// GET in process), both with the same key, against the API and its MCP
// endpoint on a TLS listener over a SQLite file (inProcess). It reports
// each one's p50 and p99 and the difference of the p99s.
func BenchmarkMCPToolCall(b *testing.B) {
	ctx := context.Background()
	hs, apiKey := inProcess(b)
	hc := hs.Client()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{apiKey, hc.Transport}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	apiCall := func() {
		r, _ := http.NewRequest(http.MethodGet, hs.URL+"/v1/visibility?domain=example.com", nil)
		r.Header.Set("Authorization", "Bearer "+apiKey)
		resp, err := hc.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET /v1/visibility: %d", resp.StatusCode)
		}
	}
	toolCall := func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_visibility", Arguments: map[string]any{"domain": "example.com"}})
		if err != nil || res.IsError {
			b.Fatalf("get_visibility: %v %+v", err, res)
		}
	}
	apiCall()
	toolCall()

	var apiTimes, toolTimes []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		// Alternate which goes first, so neither always finds the
		// connection and the caches warmed by the other.
		for j := range 2 {
			start := time.Now()
			if (i+j)%2 == 0 {
				apiCall()
				apiTimes = append(apiTimes, time.Since(start))
			} else {
				toolCall()
				toolTimes = append(toolTimes, time.Since(start))
			}
		}
	}
	b.StopTimer()
	p := func(ds []time.Duration, q float64) float64 {
		slices.Sort(ds)
		return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))].Microseconds())
	}
	b.ReportMetric(p(apiTimes, 0.50), "api-p50-µs")
	b.ReportMetric(p(apiTimes, 0.99), "api-p99-µs")
	b.ReportMetric(p(toolTimes, 0.50), "tool-p50-µs")
	b.ReportMetric(p(toolTimes, 0.99), "tool-p99-µs")
	b.ReportMetric(p(toolTimes, 0.99)-p(apiTimes, 0.99), "overhead-p99-µs")
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
