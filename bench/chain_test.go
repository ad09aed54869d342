package bench

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/limits"
)

var (
	chainRequests = flag.Int("chain-requests", 60_000, "BenchmarkHandlerChain: requests a round for each protocol")
	chainRounds   = flag.Int("chain-rounds", 3, "BenchmarkHandlerChain: rounds, the protocols alternated in each")
)

// BenchmarkHandlerChain measures budget-status's handler chain in process,
// without the network: GET /api/v1/ai/budget-status through the whole
// chain (request id, authentication, rate limit, scope, the budget read,
// the answer) into a recorder, for the 2,000 accounts' keys in turn, one
// request at a time: HTTP/1.1 requests on the benchmark's goroutine, as
// HTTP/1.1 serves a connection's requests on one goroutine whose stack
// has grown; then HTTP/1.1 and HTTP/2 requests each on a goroutine of its
// own, as HTTP/2 serves every request. Those two differ in one thing: the
// chain grows an HTTP/2 request's stack in one step at its top (api's
// growStack), where an HTTP/1.1 request's grows as the chain goes deeper.
// The three alternate in each round; the figures are the medians. It runs
// its rounds once whatever b.N is; run it with -benchtime=1x.
func BenchmarkHandlerChain(b *testing.B) {
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	svc := openServices(b, cfg)
	creds := newAccounts(b, svc)
	h := apiHandler(svc, limits.NewMemory(nil, quiet()))
	requests := func(proto string) []*http.Request {
		var rs []*http.Request
		for _, c := range creds {
			r := httptest.NewRequest(http.MethodGet, "https://localhost/api/v1/ai/budget-status", nil)
			r.Proto = proto
			r.ProtoMajor, r.ProtoMinor, _ = http.ParseHTTPVersion(proto)
			copyHeader(r.Header, c)
			r.RemoteAddr = "127.0.0.1:5555"
			rs = append(rs, r)
		}
		return rs
	}
	// A round of n requests, one at a time, each on a new goroutine unless
	// inline: CPU, allocations and bytes a request.
	round := func(rs []*http.Request, n int, inline bool) (cpuNs, allocs, bytes float64) {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		c0 := cpuTime()
		done := make(chan int, 1)
		serve := func(r *http.Request) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			done <- w.Code
		}
		for i := range n {
			r := rs[i%len(rs)]
			if inline {
				serve(r)
			} else {
				go serve(r)
			}
			if code := <-done; code != http.StatusOK {
				b.Fatalf("%s: budget-status answered %d", r.Proto, code)
			}
		}
		cpuNs = float64(cpuTime()-c0) / float64(n)
		runtime.ReadMemStats(&m1)
		return cpuNs, float64(m1.Mallocs-m0.Mallocs) / float64(n), float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n)
	}
	h1, h2 := requests("HTTP/1.1"), requests("HTTP/2.0")
	protos := []struct {
		name   string
		rs     []*http.Request
		inline bool
	}{
		{"HTTP/1.1 on one goroutine", h1, true},
		{"HTTP/1.1 on a new goroutine each", h1, false},
		{"HTTP/2 on a new goroutine each", h2, false},
	}
	// Each key takes 300 requests a minute (enterprise): the rounds
	// together must stay under that.
	if total := len(protos) * *chainRounds * *chainRequests; total > 300*len(creds) {
		b.Fatalf("%d requests exceed the keys' minute (%d): lower -chain-requests or raise -accounts", total, 300*len(creds))
	}
	cpus := make([][]float64, len(protos))
	allocs := make([][]float64, len(protos))
	bytes := make([][]float64, len(protos))
	b.ResetTimer()
	for range *chainRounds {
		for i, p := range protos {
			c, a, by := round(p.rs, *chainRequests, p.inline)
			cpus[i], allocs[i], bytes[i] = append(cpus[i], c), append(allocs[i], a), append(bytes[i], by)
		}
	}
	b.StopTimer()
	for i, p := range protos {
		b.Logf("%s: CPU a request %.0f ns (rounds %.0f), %.1f allocations and %.0f bytes", p.name, median(cpus[i]), cpus[i], median(allocs[i]), median(bytes[i]))
	}
	b.ReportMetric(median(cpus[0]), "h1-inline-cpu-ns/req")
	b.ReportMetric(median(cpus[1]), "h1-cpu-ns/req")
	b.ReportMetric(median(cpus[2]), "h2-cpu-ns/req")
	b.ReportMetric(median(allocs[2]), "allocs/req")
	b.ReportMetric(median(bytes[2]), "B/req")
}
