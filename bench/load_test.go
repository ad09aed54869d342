package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/api"
	"github.com/aivis/aivis/core/app"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/engines"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/tlsconf"
)

var (
	phase       = flag.Duration("phase", 5*time.Second, "length of each measured load phase")
	warmup      = flag.Duration("warmup", time.Second, "unmeasured warm-up before each phase")
	workers     = flag.Int("workers", 32, "closed-loop workers, each with its own keep-alive connection (HTTP/1.1)")
	openWorkers = flag.Int("open-workers", 64, "connections available to the open-loop generator")
	openShare   = flag.Float64("open-share", 0.5, "open-loop rate as a share of the closed-loop peak")
	nAccounts   = flag.Int("accounts", 2000, "enterprise accounts (one key each) the budget-status load is spread over")
	withH2      = flag.Bool("h2", true, "also measure HTTP/2 (closed loop)")
	loadRounds  = flag.Int("load-rounds", 3, "rounds of the closed loops of the bare handler, its budget-status answer and budget-status, in turn, on HTTP/1.1 and on HTTP/2: the ratios are the rounds' medians")
	inProcess   = flag.Bool("load-in-process", true, "measure the phases served in the benchmark's process (the bare handler, each counter); false: only the `aivis serve` processes of -engines")
)

// quiet is the server's logger in the benchmarks: level error, discarded,
// as `aivis serve --log-level error` with its output thrown away. No
// access-log line is built at that level.
func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
}

// bareBody is what the bare handler answers: a constant JSON document.
var bareBody = []byte(`{"success":true,"data":{"status":"ok"}}`)

// bareHandler is the ceiling of the HTTP stack: a chi router with one route
// answering a constant JSON body, no middleware.
func bareHandler() http.Handler {
	r := chi.NewRouter()
	r.Get("/bare", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", "39")
		w.WriteHeader(http.StatusOK)
		w.Write(bareBody)
	})
	return r
}

// answerHandler is the bare handler answering with header and body: what
// the HTTP stack costs for an answer as large as another's. The benchmark
// asks it with budget-status's credentials, so that its phases carry
// budget-status's exchange, both ways, and nothing of its work.
func answerHandler(header http.Header, body []byte) http.Handler {
	r := chi.NewRouter()
	r.Get("/answer", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for k, v := range header {
			h[k] = v
		}
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	})
	return r
}

// serveTLS serves h over TLS on a loopback port as app.Run does: a TLS
// listener with the server's TLS configuration (h2 and http/1.1 offered)
// and the same timeouts.
func serveTLS(tb testing.TB, h http.Handler, conf *tls.Config) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	hs := app.NewHTTPServer(h, slog.New(slog.DiscardHandler))
	hs.TLSConfig = conf
	go hs.Serve(tls.NewListener(ln, conf))
	tb.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// clientTLS trusts the server's certificate.
func clientTLS(tb testing.TB, cert tls.Certificate, protos ...string) *tls.Config {
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: protos, MinVersion: tls.VersionTLS12}
}

// loadFixture is the servers of the load benchmark, all in this process:
// the bare handler, the API as app.Run builds it (counter memory) and,
// for diagnosis, the API with a counter that is never flushed, on one
// SQLite database; and the API with the shared counter (counter store) on
// a database of its own, whose windows the memory counter's flushes do
// not fill, on a handle and on a second one, as a second process opens
// it.
type loadFixture struct {
	bareAddr, apiAddr, apiNoFlushAddr string
	// apiStoreAddrs are the API with counter store on the first handle
	// and on the second.
	apiStoreAddrs [2]string
	// answerAddr is the bare handler answering with budget-status's
	// headers and body (check serves it).
	answerAddr string
	tls        *tls.Config
	// creds are the keys of the first database's accounts, storeCreds
	// those of the second's.
	creds, storeCreds []http.Header
	cert              tls.Certificate
}

func newLoadFixture(b *testing.B) *loadFixture {
	ctx := context.Background()
	lg := quiet()
	dir := b.TempDir()
	cfg := config.Default()
	cfg.DataDir = dir
	open := func(cfg config.Config) *app.Services { return openServices(b, cfg) }
	svc := open(cfg)
	f := &loadFixture{creds: newAccounts(b, svc)}

	mat, err := tlsconf.Load("", "", dir, []string{"127.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	f.cert, f.tls = mat.Cert, mat.Config()
	f.bareAddr = serveTLS(b, bareHandler(), f.tls)

	// The counter as app.Run builds it: the configured engine (memory),
	// persisted to the database, flushed every second (the default
	// counter-flush-interval).
	limiter, err := engines.Counters[cfg.Counter](ctx, cfg, svc.Store, lg)
	if err != nil {
		b.Fatal(err)
	}
	counter := limiter.Counter
	cctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { counter.Run(cctx); close(done) }()
	b.Cleanup(func() { stop(); <-done })
	serveAPI := func(svc *app.Services, counter limits.Counter) string {
		return serveTLS(b, apiHandler(svc, counter), mat.Config())
	}
	f.apiAddr = serveAPI(svc, counter)

	// The same API with the counter several processes share (counter
	// store): every request checked and counted in the database, on a
	// handle and on a second one, which contends for the file's write
	// lock as a second process's does.
	storeCfg := cfg
	storeCfg.DataDir, storeCfg.Counter = b.TempDir(), "store"
	first := open(storeCfg)
	f.storeCreds = newAccounts(b, first)
	for i, svc := range []*app.Services{first, open(storeCfg)} {
		shared, err := engines.Counters[storeCfg.Counter](ctx, storeCfg, svc.Store, lg)
		if err != nil {
			b.Fatal(err)
		}
		f.apiStoreAddrs[i] = serveAPI(svc, shared.Counter)
	}

	// Diagnosis only: the same API with a counter that is never written to
	// the database, so no commit every second moves PRAGMA data_version
	// and empties the store's key and budget caches.
	f.apiNoFlushAddr = serveAPI(svc, limits.NewMemory(nil, lg))
	return f
}

// openServices opens the services of cfg as app.Run does, closed when
// the benchmark ends.
func openServices(b *testing.B, cfg config.Config) *app.Services {
	svc, err := app.Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { svc.Close() })
	return svc
}

// apiHandler is the API as app.Run builds it on svc, with counter and a
// guard that never refuses the benchmark's one address; it logs at level
// error, discarded.
func apiHandler(svc *app.Services, counter limits.Counter) http.Handler {
	srv := api.New(api.Config{}, api.Deps{Store: svc.Store, Auth: svc.Auth, Content: svc.Content,
		Counter: counter, Guard: limits.NewAuthGuard(1_000_000, time.Minute), Log: quiet()})
	return srv.Handler()
}

// newAccounts makes the enterprise accounts, one key each, and returns
// their credentials.
func newAccounts(b *testing.B, svc *app.Services) []http.Header {
	ctx, t0 := context.Background(), time.Now()
	var creds []http.Header
	for i := range *nAccounts {
		a, err := svc.Accounts.Create(ctx, fmt.Sprintf("Bench %d", i), "enterprise", false)
		if err != nil {
			b.Fatal(err)
		}
		k, err := svc.Auth.CreateKey(ctx, auth.NewKey{AccountID: a.ID, Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		creds = append(creds, http.Header{"X-Api-Key": {k.APIKey}, "X-Api-Secret": {k.Secret}})
	}
	b.Logf("created %d enterprise accounts with one key each in %v", *nAccounts, time.Since(t0).Round(time.Millisecond))
	return creds
}

// check makes one request of each kind with net/http and checks the answers.
func (f *loadFixture) check(b *testing.B) {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS(b, f.cert)}}
	defer c.CloseIdleConnections()
	get := func(url string, h http.Header) (http.Header, []byte) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		copyHeader(req.Header, h)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %s %s", url, resp.Status, body)
		}
		return resp.Header, body
	}
	_, _ = get("https://"+f.bareAddr+"/bare", nil)
	var bs struct {
		Success bool `json:"success"`
		Data    struct {
			QuotaTier  string `json:"quota_tier"`
			RateLimits struct {
				PerMinute int `json:"per_minute"`
			} `json:"rate_limits"`
		} `json:"data"`
	}
	var header http.Header
	var body []byte
	for addr, creds := range map[string]http.Header{f.apiAddr: f.creds[0], f.apiStoreAddrs[0]: f.storeCreds[0], f.apiStoreAddrs[1]: f.storeCreds[0]} {
		header, body = get("https://"+addr+"/api/v1/ai/budget-status", creds)
		if err := json.Unmarshal(body, &bs); err != nil || !bs.Success || bs.Data.QuotaTier != "Enterprise" {
			b.Fatalf("budget-status answered %s (%v)", body, err)
		}
	}
	b.Logf("budget-status response: %d bytes of JSON; bare response: %d bytes", len(body), len(bareBody))
	header.Del("Date") // net/http writes its own
	f.answerAddr = serveTLS(b, answerHandler(header, body), f.tls)
	if h, got := get("https://"+f.answerAddr+"/answer", nil); !bytes.Equal(got, body) || len(h) != len(header)+1 {
		b.Fatalf("the bare handler answering as budget-status does: %d headers and %s, want %d and %s", len(h), got, len(header)+1, body)
	}
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

// BenchmarkLoad measures the HTTP stack's ceiling (a bare chi handler) and
// GET /api/v1/ai/budget-status (the real server: authentication, auth-failure
// guard, rate limit, budget read from SQLite) over HTTPS with keep-alive,
// from a generator in the same process on loopback: peak throughput in a
// closed loop, then latency in an open loop at half of each one's own peak,
// then HTTP/2 in a closed loop. budget-status is measured with each
// counter: memory (the default, one process's counts) and store (counts
// shared by every process on the database, one write a request). A fourth
// server, the API with a counter that
// is never flushed to the database, is measured for diagnosis only. It runs
// its phases once whatever b.N is; run it with -benchtime=1x.
func BenchmarkLoad(b *testing.B) {
	var rs []Result
	run := func(r Result, err error) Result {
		if err != nil {
			b.Fatal(err)
		}
		rs = append(rs, r)
		runtime.GC()
		return r
	}
	if !*inProcess {
		b.ReportMetric(0, "ns/op")
		var out strings.Builder
		reportEngines(b, &out, budgetOnEngines(b, run))
		fmt.Fprintln(os.Stdout, out.String())
		reportMetrics(b, budgetMetrics(b, buildServer(b, b.TempDir()), run))
		return
	}
	f := newLoadFixture(b)
	f.check(b)
	ctx := context.Background()
	bare := NewH1(f.bareAddr, "localhost", "/bare", clientTLS(b, f.cert, "http/1.1"), nil)
	answer := NewH1(f.answerAddr, "localhost", "/answer", clientTLS(b, f.cert, "http/1.1"), f.creds)
	budget := NewH1(f.apiAddr, "localhost", "/api/v1/ai/budget-status", clientTLS(b, f.cert, "http/1.1"), f.creds)
	budgetStore := NewH1(f.apiStoreAddrs[0], "localhost", "/api/v1/ai/budget-status", clientTLS(b, f.cert, "http/1.1"), f.storeCreds)
	budgetStore2 := &Spread{Targets: []Target{budgetStore,
		NewH1(f.apiStoreAddrs[1], "localhost", "/api/v1/ai/budget-status", clientTLS(b, f.cert, "http/1.1"), f.storeCreds)}}
	noFlush := NewH1(f.apiNoFlushAddr, "localhost", "/api/v1/ai/budget-status", clientTLS(b, f.cert, "http/1.1"), f.creds)

	const (
		nBare    = "bare chi handler, HTTP/1.1"
		nBudget  = "budget-status, HTTP/1.1"
		nStore   = "budget-status, counter store, HTTP/1.1"
		nStore2  = "budget-status, counter store, two handles, HTTP/1.1"
		nNoFlush = "budget-status, counter never flushed (diagnostic), HTTP/1.1"
	)
	b.ResetTimer()
	h1 := rounds(b, ctx, "HTTP/1.1", bare, answer, budget)
	bareClosed, answerClosed, budgetClosed := h1.median.bare, h1.median.answer, h1.median.budget
	rs = append(rs, bareClosed, answerClosed, budgetClosed)
	storeClosed := run(ClosedLoop(ctx, nStore, budgetStore, *workers, *warmup, *phase))
	store2Closed := run(ClosedLoop(ctx, nStore2, budgetStore2, *workers, *warmup, *phase))
	noFlushClosed := run(ClosedLoop(ctx, nNoFlush, noFlush, *workers, *warmup, *phase))
	bareOpen := run(OpenLoop(ctx, nBare, bare, *openWorkers, *openShare*bareClosed.Rate(), *warmup, *phase))
	budgetOpen := run(OpenLoop(ctx, nBudget, budget, *openWorkers, *openShare*budgetClosed.Rate(), *warmup, *phase))
	storeOpen := run(OpenLoop(ctx, nStore, budgetStore, *openWorkers, *openShare*storeClosed.Rate(), *warmup, *phase))
	store2Open := run(OpenLoop(ctx, nStore2, budgetStore2, *openWorkers, *openShare*store2Closed.Rate(), *warmup, *phase))
	noFlushOpen := run(OpenLoop(ctx, nNoFlush, noFlush, *openWorkers, *openShare*noFlushClosed.Rate(), *warmup, *phase))
	var h2 trioRounds
	if *withH2 {
		h2bare := NewH2("https://"+f.bareAddr+"/bare", clientTLS(b, f.cert), nil)
		h2answer := NewH2("https://"+f.answerAddr+"/answer", clientTLS(b, f.cert), f.creds)
		h2budget := NewH2("https://"+f.apiAddr+"/api/v1/ai/budget-status", clientTLS(b, f.cert), f.creds)
		h2 = rounds(b, ctx, "HTTP/2", h2bare, h2answer, h2budget)
		rs = append(rs, h2.median.bare, h2.median.answer, h2.median.budget)
		for _, c := range []*H2{h2bare, h2answer, h2budget} {
			c.Client.CloseIdleConnections()
		}
	}
	bareH2, answerH2, budgetH2 := h2.median.bare, h2.median.answer, h2.median.budget
	onEngines := budgetOnEngines(b, run)
	var costs []metricsCost
	if *metricsRounds > 0 {
		costs = append(costs, budgetMetrics(b, buildServer(b, b.TempDir()), run))
	}
	b.StopTimer()

	for _, r := range rs {
		if strings.HasPrefix(r.Name, "budget") && r.OKShare() < 0.99 {
			b.Errorf("%s (%s loop): only %.2f%% of responses were 200 (statuses %v): the measured path is the 200 one; raise -accounts",
				r.Name, r.Mode, 100*r.OKShare(), r.Status)
		}
	}
	ratio := budgetClosed.Rate() / bareClosed.Rate()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ratio, "ratio")
	if *withH2 {
		b.ReportMetric(budgetH2.Rate()/bareH2.Rate(), "ratio-h2")
	}
	for _, m := range []struct {
		name         string
		closed, open Result
	}{
		{"bare", bareClosed, bareOpen}, {"budget", budgetClosed, budgetOpen}, {"store", storeClosed, storeOpen},
		{"store2", store2Closed, store2Open}, {"noflush", noFlushClosed, noFlushOpen},
	} {
		b.ReportMetric(m.closed.Rate(), m.name+"-req/s")
		b.ReportMetric(msf(m.closed.P50), m.name+"-p50-ms")
		b.ReportMetric(msf(m.closed.P99), m.name+"-p99-ms")
		b.ReportMetric(msf(m.open.P50), m.name+"-open-p50-ms")
		b.ReportMetric(msf(m.open.P99), m.name+"-open-p99-ms")
		b.ReportMetric(us(m.closed.CPUPerRequest()), m.name+"-cpu-µs/req")
	}
	if *withH2 {
		b.ReportMetric(bareH2.Rate(), "bare-h2-req/s")
		b.ReportMetric(budgetH2.Rate(), "budget-h2-req/s")
		b.ReportMetric(answerH2.Rate(), "answer-h2-req/s")
	}
	b.ReportMetric(answerClosed.Rate(), "answer-req/s")

	var out strings.Builder
	fmt.Fprintf(&out, "\nBenchmarkLoad: %d CPUs (GOMAXPROCS %d), %s, generator and server in one process, server log level error (discarded)\n\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	out.WriteString(Table(rs))
	fmt.Fprintf(&out, "\n| target | figure | met |\n|---|---|---|\n")
	fmt.Fprintf(&out, "| budget-status ≥ 60%% of bare throughput (HTTP/1.1, closed loop) | %.0f%% | %s |\n", 100*ratio, yes(ratio >= 0.6))
	fmt.Fprintf(&out, "| bare p99 < 5 ms at %.0f%% of its peak (open loop) | %s ms | %s |\n", 100**openShare, ms(bareOpen.P99), yes(bareOpen.P99 < 5*time.Millisecond))
	fmt.Fprintf(&out, "| budget-status p99 < 5 ms at %.0f%% of its peak (open loop) | %s ms | %s |\n", 100**openShare, ms(budgetOpen.P99), yes(budgetOpen.P99 < 5*time.Millisecond))
	fmt.Fprintf(&out, "\nRate limits across processes: budget-status with counter store reaches %.0f%% of counter memory's throughput (%.0f vs %.0f req/s), p50/p99 %s/%s ms vs %s/%s ms in the closed loop and %s/%s vs %s/%s ms in the open loop at %.0f%% of each one's peak; CPU %.0f vs %.0f µs a request (the generator's included).\n",
		100*storeClosed.Rate()/budgetClosed.Rate(), storeClosed.Rate(), budgetClosed.Rate(), ms(storeClosed.P50), ms(storeClosed.P99), ms(budgetClosed.P50), ms(budgetClosed.P99),
		ms(storeOpen.P50), ms(storeOpen.P99), ms(budgetOpen.P50), ms(budgetOpen.P99), 100**openShare, us(storeClosed.CPUPerRequest()), us(budgetClosed.CPUPerRequest()))
	fmt.Fprintf(&out, "Spread over two handles on the database, as over two processes: %.0f req/s, p50/p99 %s/%s ms (closed loop), %s/%s ms (open loop); CPU %.0f µs a request.\n",
		store2Closed.Rate(), ms(store2Closed.P50), ms(store2Closed.P99), ms(store2Open.P50), ms(store2Open.P99), us(store2Closed.CPUPerRequest()))
	fmt.Fprintf(&out, "\nDiagnostic, not a target: with a counter that is never flushed, budget-status reaches %.0f%% of the bare handler and its open-loop p99 is %s ms.\n",
		100*noFlushClosed.Rate()/bareClosed.Rate(), ms(noFlushOpen.P99))
	fmt.Fprintf(&out, "\nThe closed loops of the bare handler, the bare handler asked with budget-status's credentials and answering with its headers and body (a diagnostic: the ceiling of any server answering that request), and budget-status, in turn, %d rounds; the table gives the round of the median budget-status / bare:\n\n", *loadRounds)
	out.WriteString("| protocol | budget-status / bare (rounds) | median | answer / bare | budget-status / answer | budget-status CPU µs a request |\n|---|---|---:|---|---|---|\n")
	h1.report(&out)
	if *withH2 {
		h2.report(&out)
	}
	reportEngines(b, &out, onEngines)
	fmt.Fprintln(os.Stdout, out.String())
	reportMetrics(b, costs...)
}

// trio is a round of the closed loops of the bare handler, the bare
// handler answering as budget-status and budget-status.
type trio struct{ bare, answer, budget Result }

func (t trio) ratio() float64 { return t.budget.Rate() / t.bare.Rate() }

// trioRounds are the rounds of one protocol and the round of the median
// budget-status / bare.
type trioRounds struct {
	proto  string
	all    []trio
	median trio
}

// rounds runs -load-rounds rounds of the three closed loops in turn, so
// that what drifts on a shared machine falls on all three alike.
func rounds(b *testing.B, ctx context.Context, proto string, bare, answer, budget Target) trioRounds {
	measure := func(name string, t Target) Result {
		r, err := ClosedLoop(ctx, name+", "+proto, t, *workers, *warmup, *phase)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		return r
	}
	tr := trioRounds{proto: proto}
	for range max(*loadRounds, 1) {
		tr.all = append(tr.all, trio{
			bare:   measure("bare chi handler", bare),
			answer: measure("bare chi handler answering as budget-status (diagnostic)", answer),
			budget: measure("budget-status", budget),
		})
	}
	byRatio := slices.Clone(tr.all)
	slices.SortFunc(byRatio, func(x, y trio) int { return cmp.Compare(x.ratio(), y.ratio()) })
	tr.median = byRatio[len(byRatio)/2]
	return tr
}

// report writes the rounds' row of the ratios' table.
func (tr trioRounds) report(out *strings.Builder) {
	each := func(f func(trio) string) string {
		var s []string
		for _, t := range tr.all {
			s = append(s, f(t))
		}
		return strings.Join(s, ", ")
	}
	fmt.Fprintf(out, "| %s | %s | %.2f | %s | %s | %s |\n", tr.proto,
		each(func(t trio) string { return fmt.Sprintf("%.2f", t.ratio()) }), tr.median.ratio(),
		each(func(t trio) string { return fmt.Sprintf("%.2f", t.answer.Rate()/t.bare.Rate()) }),
		each(func(t trio) string { return fmt.Sprintf("%.2f", t.budget.Rate()/t.answer.Rate()) }),
		each(func(t trio) string { return fmt.Sprintf("%.0f", us(t.budget.CPUPerRequest())) }))
}

// engineRun is budget-status on the `aivis serve` processes of a
// deployment.
type engineRun struct {
	label        string
	engine       string
	instances    int
	closed, open Result
}

// budgetOnEngines measures budget-status on `aivis serve` processes of
// each engine of -engines (the generator here, each process's CPU read
// from /proc): SQLite with one process, the cluster with one instance and
// with two, the load spread over them; a closed loop, then an open loop at
// half of its peak.
func budgetOnEngines(b *testing.B, run func(Result, error) Result) []engineRun {
	if len(engineNames()) == 0 {
		return nil
	}
	ctx := context.Background()
	bin := buildServer(b, b.TempDir())
	var out []engineRun
	for _, name := range engineNames() {
		d := newDeployment(b, name)
		svc := d.open(b)
		creds := newAccounts(b, svc)
		svc.Close()
		for _, n := range instanceCounts(name) {
			is := d.start(b, bin, n, listening)
			var targets []Target
			for _, i := range is {
				targets = append(targets, NewH1("127.0.0.1:"+i.port, "localhost", "/api/v1/ai/budget-status",
					clientTLS(b, i.cert(b).Cert, "http/1.1"), creds))
			}
			t := Metered{Target: &Spread{Targets: targets}, Meter: d.meter(is)}
			label := "budget-status, " + d.label(n) + ", HTTP/1.1"
			closed := run(ClosedLoop(ctx, label, t, *workers, *warmup, *phase))
			open := run(OpenLoop(ctx, label, t, *openWorkers, *openShare*closed.Rate(), *warmup, *phase))
			for _, i := range is {
				i.stop(b)
			}
			out = append(out, engineRun{d.label(n), name, n, closed, open})
		}
	}
	return out
}

// reportEngines writes the figures of budgetOnEngines: throughput and
// latency, the CPU a request of each process, and the cluster's one
// instance against SQLite's one process.
func reportEngines(b *testing.B, out *strings.Builder, runs []engineRun) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprintf(out, "\nbudget-status on `aivis serve` processes (generator in the benchmark's process, %d workers closed loop; open loop at %.0f%% of each one's peak):\n\n", *workers, 100**openShare)
	fmt.Fprintf(out, "| engines | req/s | p50/p99 ms closed | p50/p99 ms open (generator lag p99) | CPU µs a request (closed loop) |\n|---|---:|---|---|---|\n")
	var sqlite float64
	for _, r := range runs {
		fmt.Fprintf(out, "| %s | %.0f | %s/%s | %s/%s (%s) | %s |\n", r.label, r.closed.Rate(), ms(r.closed.P50), ms(r.closed.P99),
			ms(r.open.P50), ms(r.open.P99), ms(r.open.LagP99), r.closed.Procs.per(r.closed.Requests))
		if r.engine == "sqlite" {
			sqlite = r.closed.Rate()
		}
		key := strings.ReplaceAll(fmt.Sprintf("%s-%d", r.engine, r.instances), " ", "")
		b.ReportMetric(r.closed.Rate(), key+"-req/s")
		b.ReportMetric(msf(r.closed.P99), key+"-p99-ms")
		b.ReportMetric(us(r.closed.Procs.get("aivis")/time.Duration(max(r.closed.Requests, 1))), key+"-aivis-cpu-µs/req")
	}
	for _, r := range runs {
		if r.engine == "cluster" && r.instances == 1 && sqlite > 0 {
			fmt.Fprintf(out, "\n| target | figure | met |\n|---|---|---|\n| budget-status, cluster with 1 instance ≥ 50%% of sqlite (closed loop) | %.0f%% (%.0f vs %.0f req/s) | %s |\n",
				100*r.closed.Rate()/sqlite, r.closed.Rate(), sqlite, yes(r.closed.Rate() >= sqlite/2))
		}
	}
}

func msf(d time.Duration) float64 { return float64(d) / 1e6 }

func us(d time.Duration) float64 { return float64(d) / 1e3 }

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}
