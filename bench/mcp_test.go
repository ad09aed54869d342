package bench

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/store"
)

var (
	mcpCalls    = flag.Int("mcp-calls", 3000, "BenchmarkMCPToolCall: calls of each kind timed, in turn")
	mcpCPUCalls = flag.Int("mcp-cpu-calls", 1000, "BenchmarkMCPToolCall: calls of each kind made alone, to read the server's CPU a call")
	mcpPprof    = flag.String("mcp-pprof", "", "BenchmarkMCPToolCall: a directory where the server's CPU profile (the first 2 s) and allocations over the calls of each kind made alone are written ({api,tool-2026,tool-2025}-1-{cpu,allocs}.pb.gz; read the allocations with go tool pprof -base)")
)

// mcpAccounts is how many enterprise accounts BenchmarkMCPToolCall
// spreads its calls over, so that no account's rate limits (300 a minute)
// refuse one.
const mcpAccounts = 100

// BenchmarkMCPToolCall: what an MCP tool call costs over the API call it
// wraps, through `aivis serve` on SQLite with its client in this process,
// on loopback, as an assistant's MCP client calls a server. Each round is
// GET /v1/visibility over HTTPS and a call of the get_visibility tool
// (which makes that GET in process) in each revision: a 2026-07-28
// request (stateless) and a call of a 2025-11-25 session, in turn, the
// first of the round rotating, with the key of the round's account. It
// reports each one's p50 and p99 and the tool's p99 over the API's, then
// the server's CPU a call of each kind, made alone. It runs its rounds
// once whatever b.N is; run it with -benchtime=1x.
func BenchmarkMCPToolCall(b *testing.B) {
	ctx := context.Background()
	bin := buildServer(b, b.TempDir())
	d := newDeployment(b, "sqlite")
	svc := d.open(b)
	keys := make([]string, mcpAccounts)
	for i := range keys {
		a, err := svc.Accounts.Create(ctx, fmt.Sprintf("MCP %d", i), "enterprise", false)
		if err != nil {
			b.Fatal(err)
		}
		k, err := svc.Auth.CreateKey(ctx, auth.NewKey{AccountID: a.ID, Name: "mcp"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := svc.Store.AddReading(ctx, store.Reading{AccountID: a.ID, Domain: "example.com", VisibilityScore: 61,
			Sentiment: "positive", SentimentScore: 0.3, Source: "bench", MeasuredAt: time.Now().UTC()}); err != nil {
			b.Fatal(err)
		}
		keys[i] = k.APIKey
	}
	svc.Close()
	admin := freeAddr(b)
	args := []string{"--admin-addr", admin}
	if *mcpPprof != "" {
		args = append(args, "--admin-pprof")
	}
	inst := d.start(b, bin, 1, listening, args...)[0]
	base := "https://127.0.0.1:" + inst.port
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS(b, inst.cert(b).Cert), MaxIdleConnsPerHost: 4}}
	b.Cleanup(hc.CloseIdleConnections)

	apiCall := func(key string) func() {
		return func() {
			r, _ := http.NewRequest(http.MethodGet, base+"/v1/visibility?domain=example.com", nil)
			r.Header.Set("Authorization", "Bearer "+key)
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
	}
	toolCall := func(key, version string) func() {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{key, hc.Transport}}},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_visibility", Arguments: map[string]any{"domain": "example.com"}})
			if err != nil || res.IsError {
				b.Fatalf("get_visibility: %v %+v", err, res)
			}
		}
	}
	names := []string{"GET /v1/visibility", "the tool, 2026-07-28 (stateless)", "the tool, a 2025-11-25 session"}
	tags := []string{"api", "tool-2026", "tool-2025"}
	calls := make([][]func(), len(keys)) // per account: the API, the modern tool, the session's tool
	for i, key := range keys {
		calls[i] = []func(){apiCall(key), toolCall(key, ""), toolCall(key, "2025-11-25")}
		for _, c := range calls[i] {
			c()
		}
	}

	b.ResetTimer()
	times := make([][]time.Duration, len(names))
	for i := range *mcpCalls {
		for j := range names {
			k := (i + j) % len(names)
			start := time.Now()
			calls[i%len(calls)][k]()
			times[k] = append(times[k], time.Since(start))
		}
	}
	m := meter{{"aivis", pidCPU(inst.cmd.Process.Pid)}}
	cpu, alloc := make([]time.Duration, len(names)), make([]float64, len(names))
	for k := range names {
		from, allocFrom := m.sample(), allocated(b, admin)
		stopPprof := recordPprof(b, *mcpPprof, []string{admin}, tags[k], 2)
		for i := range *mcpCPUCalls {
			calls[i%len(calls)][k]()
		}
		stopPprof()
		cpu[k] = m.spent(from, m.sample()).get("aivis") / time.Duration(*mcpCPUCalls)
		alloc[k] = (allocated(b, admin) - allocFrom) / float64(*mcpCPUCalls)
	}
	b.StopTimer()

	p := func(ds []time.Duration, q float64) time.Duration {
		slices.Sort(ds)
		return ds[min(len(ds)-1, int(q*float64(len(ds))))]
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\nBenchmarkMCPToolCall: `aivis serve` on SQLite, %d calls of each kind in turn over %d accounts; then %d of each alone for the server's CPU\n\n",
		*mcpCalls, len(keys), *mcpCPUCalls)
	fmt.Fprintf(&out, "| call | p50 µs | p99 µs | p99 over the API's µs | aivis CPU µs a call | aivis allocated KB a call |\n|---|---:|---:|---:|---:|---:|\n")
	b.ReportMetric(0, "ns/op")
	for k, name := range names {
		over, tag := "", tags[k]
		p50, p99 := p(times[k], 0.50), p(times[k], 0.99)
		if k > 0 {
			over = fmt.Sprintf("%.0f", us(p99-p(times[0], 0.99)))
			b.ReportMetric(us(p99-p(times[0], 0.99)), tag+"-overhead-p99-µs")
		}
		fmt.Fprintf(&out, "| %s | %.0f | %.0f | %s | %.0f | %.0f |\n", name, us(p50), us(p99), over, us(cpu[k]), alloc[k]/1024)
		b.ReportMetric(us(p50), tag+"-p50-µs")
		b.ReportMetric(us(p99), tag+"-p99-µs")
		b.ReportMetric(us(cpu[k]), tag+"-aivis-cpu-µs")
		b.ReportMetric(alloc[k]/1024, tag+"-aivis-alloc-KB")
	}
	fmt.Fprintln(os.Stdout, out.String())
}

// bearer sends its key in the Authorization header of every request.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.key)
	return t.next.RoundTrip(r)
}

// freeAddr is a loopback address with a port free now.
func freeAddr(tb testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// allocated is go_memstats_alloc_bytes_total of the server whose admin
// listener is at addr: the bytes it has allocated since it started.
func allocated(tb testing.TB, addr string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_alloc_bytes_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return f
		}
	}
	tb.Fatal("the server's /metrics has no go_memstats_alloc_bytes_total")
	return 0
}
