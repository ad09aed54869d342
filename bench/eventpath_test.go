package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/webhook"
)

var (
	eventReadings = flag.Int("event-readings", 20000, "BenchmarkEventPath: readings posted in the throughput phase, each changing its domain's score")
	eventClients  = flag.Int("event-clients", 64, "BenchmarkEventPath: HTTPS clients posting readings, each on a keep-alive connection of its own")
	eventAccounts = flag.Int("event-accounts", 100, "BenchmarkEventPath: enterprise accounts of the throughput phase, one domain and one webhook each (as many again for the open loop)")
	eventPhase    = flag.Duration("event-phase", 5*time.Second, "BenchmarkEventPath: length of the open loop at half the peak")
	eventBins     = flag.String("event-bins", "", "BenchmarkEventPath: name=path,... of built aivis binaries measured in turn (two heads, say), each on a deployment of its own; default: this tree's, built")
	eventRounds   = flag.Int("event-rounds", 1, "BenchmarkEventPath: rounds; each round measures every binary of -event-bins on every engine, in turn, and the figures are the medians")
	eventPerf     = flag.String("event-perf", "", "BenchmarkEventPath: a directory where `perf record` writes a profile of each `aivis serve` over the throughput phase (<binary>-<engines>-<round>-<instance>.data)")
	eventPprof    = flag.String("event-pprof", "", "BenchmarkEventPath: a directory where the Go CPU profile (5 s) and the allocations over the throughput phase of each `aivis serve` that serves pprof are written (<binary>-<engines>-<round>-<instance>-{cpu,allocs}.pb.gz; read the allocations with go tool pprof -base)")
)

// BenchmarkEventPath measures the event path as users drive it, through
// the binary: `aivis serve` on fresh state, readings POSTed to
// /v1/visibility over HTTPS (HTTP/1.1, keep-alive) by -event-clients
// clients for -event-accounts enterprise accounts, every reading changing
// its domain's score, and each one's ai_visibility_change delivered to a
// local receiver that verifies every signature. Per binary and engine
// set (SQLite; the cluster with one instance and with two, the clients
// spread over them):
//   - deliveries/s from the first reading posted to the last delivery;
//   - the CPU time of each process a delivery (aivis, each server of the
//     cluster; bench is this process: the clients and the receiver);
//   - accepted-to-arrived latency (the 201's arrival here to the
//     delivery's) in an open loop at half that rate, p50 and p99;
//
// and, in the same run, the raw ceiling: a plain Go client POSTing signed
// bodies to the same receiver. It is the guard of the event path: run two
// heads' binaries with -event-bins and -event-rounds to compare them in
// one run. It runs its phases once whatever b.N is; run it with
// -benchtime=1x.
func BenchmarkEventPath(b *testing.B) {
	b.ReportMetric(0, "ns/op")
	if *eventAccounts < *eventClients {
		b.Fatalf("-event-accounts %d < -event-clients %d: the readings of a domain would race", *eventAccounts, *eventClients)
	}
	sink := newHookSink(b)
	raw := ceiling(b, sink, 3*time.Second)
	bins := eventBinaries(b)
	var runs []eventRun
	for round := range max(*eventRounds, 1) {
		for _, bin := range bins {
			for _, engine := range engineNames() {
				for _, n := range instanceCounts(engine) {
					r := eventPathOn(b, bin, sink, engine, n, round)
					fmt.Printf("%s, %s (round %d): %.0f deliveries/s; CPU µs a delivery: %s; %.1f KB allocated a delivery; open loop at %.0f/s: p50 %.1f ms, p99 %.1f ms\n",
						r.bin, r.label, round+1, r.rate, r.cpu.per(r.deliveries), r.alloc/1024, r.rate/2, msf(r.p50), msf(r.p99))
					runs = append(runs, r)
				}
			}
		}
	}
	if sink.bad.Load() != 0 {
		b.Errorf("%d deliveries failed verification", sink.bad.Load())
	}
	reportEventPath(b, runs, raw)
}

// eventBin is a binary the benchmark measures.
type eventBin struct{ name, path string }

// eventBinaries are the binaries of -event-bins, or this tree's built.
func eventBinaries(b *testing.B) []eventBin {
	if *eventBins == "" {
		return []eventBin{{"head", buildServer(b, b.TempDir())}}
	}
	var out []eventBin
	for _, nv := range strings.Split(*eventBins, ",") {
		name, path, ok := strings.Cut(nv, "=")
		if !ok {
			b.Fatalf("-event-bins: %q is not name=path", nv)
		}
		if _, err := os.Stat(path); err != nil {
			b.Fatalf("-event-bins: %v", err)
		}
		out = append(out, eventBin{name, path})
	}
	return out
}

// eventRun is one binary on one engine set.
type eventRun struct {
	bin, label, engine string
	instances          int
	rate               float64 // deliveries a second
	deliveries         int
	cpu                procCPU // over the throughput phase
	alloc              float64 // bytes the instances allocated a delivery (0: not known)
	p50, p99           time.Duration
}

// eventAccount is an account of the benchmark: its key, its domain, and
// the count of its readings, whose parity makes each one change the score
// (an account's readings are posted one at a time).
type eventAccount struct {
	key, domain string
	n           atomic.Int64
}

// eventPathOn runs the phases on a new deployment of engine served by n
// `aivis serve` of bin.
func eventPathOn(b *testing.B, bin eventBin, sink *hookSink, engine string, n, round int) eventRun {
	d := newDeployment(b, engine)
	accts := eventAccountsOf(b, bin.path, d, 2**eventAccounts)
	is, admins := d.startBin(b, bin.path, n, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets")
	cs := eventConns(b, is)
	sink.reset(nil)
	vs := verifiers{}
	for i, a := range accts {
		secret := cs[i%len(cs)].webhook(b, a, sink.srv.URL+"/hook")
		v, err := webhook.NewVerifier(secret)
		if err != nil {
			b.Fatal(err)
		}
		vs["/hook "+a.domain] = v
	}
	sink.reset(vs)
	// Warm up: a reading of every account, every connection used.
	var wg sync.WaitGroup
	for i := range *eventClients {
		wg.Go(func() {
			conn := cs[i%len(cs)].dial(b)
			defer conn.Close()
			for j := i; j < len(accts); j += *eventClients {
				conn.reading(b, accts[j])
			}
		})
	}
	wg.Wait()
	waitDeliveries(b, sink, len(accts))
	sink.reset(vs)

	r := eventRun{bin: bin.name, label: d.label(n), engine: engine, instances: n}
	m := d.meter(is)
	name := fmt.Sprintf("%s-%s-%d", bin.name, strings.ReplaceAll(strings.ReplaceAll(d.label(n), " ", ""), ",", "-"), round+1)
	stopPerf := recordPerf(b, is, name)
	stopPprof := recordPprof(b, *eventPprof, admins, name, 5)
	alloc0 := allocatedBy(b, admins)
	start, cpu0 := time.Now(), m.sample()
	// The throughput phase: each client takes the account that waited
	// longest, posts its reading and hands it back, so that the accounts
	// share the readings evenly and the readings of one domain never race.
	free := make(chan *eventAccount, *eventAccounts)
	for _, a := range accts[:*eventAccounts] {
		free <- a
	}
	var posted atomic.Int64
	for c := range *eventClients {
		wg.Go(func() {
			conn := cs[c%len(cs)].dial(b)
			defer conn.Close()
			for posted.Add(1) <= int64(*eventReadings) {
				a := <-free
				conn.reading(b, a)
				free <- a
			}
		})
	}
	wg.Wait()
	waitDeliveries(b, sink, *eventReadings)
	r.rate = float64(*eventReadings) / time.Since(start).Seconds()
	r.cpu = m.spent(cpu0, m.sample())
	if admins != nil {
		r.alloc = (allocatedBy(b, admins) - alloc0) / float64(*eventReadings)
	}
	stopPerf()
	stopPprof()
	r.deliveries = int(sink.count.Load())

	// The open loop at half the peak over the other accounts (each
	// account's per-minute window has room for both phases).
	sink.reset(vs)
	lats := eventOpenLoop(b, sink, cs, accts[*eventAccounts:], r.rate/2, *eventPhase)
	r.p50, r.p99 = quantile(lats, 0.50), quantile(lats, 0.99)
	for _, i := range is {
		i.stop(b)
	}
	return r
}

// eventAccountsOf makes n enterprise accounts, a key each, with the
// binary's own commands, so that a binary of another head writes its own
// schema.
func eventAccountsOf(b *testing.B, bin string, d *deployment, n int) []*eventAccount {
	out := make([]*eventAccount, n)
	run := func(v any, args ...string) {
		cmd := exec.Command(bin, append(append(args, "--data-dir", d.cfg.DataDir, "--json"), d.flags...)...)
		cmd.Env = serverEnv(b)
		o, err := cmd.Output()
		if err != nil {
			b.Fatalf("aivis %s: %v\n%s", strings.Join(args[:2], " "), err, stderrOf(err))
		}
		if err := json.Unmarshal(o, v); err != nil {
			b.Fatalf("aivis %s: %v: %s", strings.Join(args[:2], " "), err, o)
		}
	}
	// The first run migrates the store; the others go four at a time.
	make1 := func(i int) {
		var a struct{ ID string }
		run(&a, "account", "create", "--name", fmt.Sprintf("Event %d", i), "--tier", "enterprise")
		var k struct{ Key string }
		run(&k, "key", "create", "--account", a.ID, "--name", "bench")
		out[i] = &eventAccount{key: k.Key, domain: fmt.Sprintf("d%d.event.example", i)}
	}
	make1(0)
	var wg sync.WaitGroup
	next := atomic.Int64{}
	next.Store(1)
	for range 4 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				make1(i)
			}
		})
	}
	wg.Wait()
	return out
}

func stderrOf(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}

// startBin starts n `aivis serve` of bin with args added, on the
// deployment, and stops them when b ends; for a binary with an admin
// listener, it returns each one's address (serving pprof with
// -event-pprof).
func (d *deployment) startBin(b *testing.B, bin string, n int, args ...string) ([]instance, []string) {
	if !serves(bin, "--admin-addr") {
		return d.start(b, bin, n, listening, args...), nil
	}
	var is []instance
	var admins []string
	for range n {
		admin := freeAddr(b)
		extra := []string{"--admin-addr", admin}
		if *eventPprof != "" {
			extra = append(extra, "--admin-pprof")
		}
		is = append(is, d.start(b, bin, 1, listening, append(extra, args...)...)...)
		admins = append(admins, admin)
	}
	return is, admins
}

// allocatedBy is what the instances of admins have allocated so far.
func allocatedBy(b *testing.B, admins []string) float64 {
	var sum float64
	for _, a := range admins {
		sum += allocated(b, a)
	}
	return sum
}

// recordPprof writes to dir (none: it does nothing) a CPU profile of the
// next seconds from each instance's admin listener and its allocation
// profile now and when the function it returns is called.
func recordPprof(b *testing.B, dir string, admins []string, name string, seconds int) func() {
	if dir == "" || admins == nil {
		return func() {}
	}
	fetch := func(url, file string) {
		resp, err := http.Get(url)
		if err != nil {
			b.Error(err)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			b.Errorf("%s: %s", url, resp.Status)
			return
		}
		if err := os.WriteFile(filepath.Join(dir, file), body, 0o644); err != nil {
			b.Error(err)
		}
	}
	var wg sync.WaitGroup
	for i, a := range admins {
		fetch("http://"+a+"/debug/pprof/allocs", fmt.Sprintf("%s-%d-allocs-0.pb.gz", name, i+1))
		wg.Go(func() {
			fetch(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", a, seconds), fmt.Sprintf("%s-%d-cpu.pb.gz", name, i+1))
		})
	}
	return func() {
		wg.Wait()
		for i, a := range admins {
			fetch("http://"+a+"/debug/pprof/allocs", fmt.Sprintf("%s-%d-allocs.pb.gz", name, i+1))
		}
	}
}

// eventConn is the API of one instance: where to dial and how to trust
// its certificate.
type eventConn struct {
	addr string
	tls  *tls.Config
	h1   *H1
}

func eventConns(b *testing.B, is []instance) []*eventConn {
	var out []*eventConn
	for _, i := range is {
		pem, err := os.ReadFile(filepath.Join(i.dataDir, "tls", "cert.pem"))
		if err != nil {
			b.Fatal(err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			b.Fatal("no certificate in tls/cert.pem")
		}
		conf := &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}
		addr := "127.0.0.1:" + i.port
		out = append(out, &eventConn{addr: addr, tls: conf, h1: &H1{Addr: addr, TLS: conf}})
	}
	return out
}

// dial opens a keep-alive connection to the instance.
func (c *eventConn) dial(b *testing.B) *h1Conn {
	conn, err := c.h1.Dial(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return conn.(*h1Conn)
}

// webhook creates the account's webhook of ai_visibility_change to url
// through the API and returns its secret.
func (c *eventConn) webhook(b *testing.B, a *eventAccount, url string) string {
	conn := c.dial(b)
	defer conn.Close()
	body, _ := json.Marshal(map[string]any{"domain": a.domain, "events": []string{"ai_visibility_change"}, "url": url})
	var resp []byte
	status, err := conn.roundTrip(postRequest("/v1/webhooks", a.key, body), &resp)
	if err != nil || status != http.StatusCreated {
		b.Fatalf("POST /v1/webhooks: %d %v %s", status, err, resp)
	}
	var wh struct{ Secret string }
	if err := json.Unmarshal(resp, &wh); err != nil || wh.Secret == "" {
		b.Fatalf("POST /v1/webhooks: no secret in %s", resp)
	}
	return wh.Secret
}

// reading posts the account's next reading, each scoring 10 or 20 in
// turn, and returns the id of the event it caused ("" for none: a reading
// that lost a race with one of its domain) and when the answer came.
func (c *h1Conn) reading(b *testing.B, a *eventAccount) (string, time.Time) {
	score := 10 + 10*(a.n.Add(1)%2)
	body := fmt.Appendf(nil, `{"domain":%q,"visibility_score":%d,"sentiment":"neutral"}`, a.domain, score)
	var resp []byte
	status, err := c.roundTrip(postRequest("/v1/visibility", a.key, body), &resp)
	at := time.Now()
	if err != nil || status != http.StatusCreated {
		b.Fatalf("POST /v1/visibility: %d %v %s", status, err, resp)
	}
	_, rest, ok := bytes.Cut(resp, []byte(`"event_id":"`))
	if !ok {
		return "", at
	}
	id, _, _ := bytes.Cut(rest, []byte(`"`))
	return string(id), at
}

// postRequest is a complete HTTP/1.1 POST of a JSON body with a bearer
// key.
func postRequest(path, key string, body []byte) []byte {
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: aivis-bench\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: %d\r\n\r\n", path, key, len(body))
	req.Write(body)
	return req.Bytes()
}

// waitDeliveries waits until n deliveries have arrived.
func waitDeliveries(b *testing.B, sink *hookSink, n int) {
	deadline := time.Now().Add(5 * time.Minute)
	for sink.count.Load() < int64(n) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d deliveries in 5 minutes", sink.count.Load(), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// eventOpenLoop posts readings at rate for d, the accounts in turn over
// the instances' connections, and returns the accepted-to-arrived
// latencies of the events they caused.
func eventOpenLoop(b *testing.B, sink *hookSink, cs []*eventConn, accts []*eventAccount, rate float64, d time.Duration) []time.Duration {
	conns := make(chan *h1Conn, *eventClients)
	for i := range *eventClients {
		conns <- cs[i%len(cs)].dial(b)
	}
	defer func() {
		close(conns)
		for c := range conns {
			c.Close()
		}
	}()
	var mu sync.Mutex
	accepted := map[string]time.Time{}
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; time.Since(start) < d; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		c := <-conns
		wg.Go(func() {
			defer func() { conns <- c }()
			if id, at := c.reading(b, accts[i%len(accts)]); id != "" {
				mu.Lock()
				accepted[id] = at
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return latencies(b, sink, accepted)
}

// recordPerf runs `perf record` on each instance until the function it
// returns is called, when -event-perf names a directory.
func recordPerf(b *testing.B, is []instance, name string) func() {
	if *eventPerf == "" {
		return func() {}
	}
	var cmds []*exec.Cmd
	for i, in := range is {
		out := filepath.Join(*eventPerf, fmt.Sprintf("%s-%d.data", name, i+1))
		cmd := exec.Command("perf", "record", "-F", "499", "-g", "-o", out, "-p", fmt.Sprint(in.cmd.Process.Pid))
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			b.Fatalf("perf record: %v", err)
		}
		cmds = append(cmds, cmd)
	}
	return func() {
		for _, cmd := range cmds {
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
		}
	}
}

// reportEventPath writes the figures, the median of the rounds of each
// binary on each engine set.
func reportEventPath(b *testing.B, runs []eventRun, raw float64) {
	fmt.Printf("\nBenchmarkEventPath: readings POSTed over HTTPS by %d clients for %d enterprise accounts, each one's ai_visibility_change delivered to a verifying receiver; raw ceiling (a plain Go client to the receiver): %.0f req/s\n\n",
		*eventClients, *eventAccounts, raw)
	fmt.Printf("| binary | engines | rounds | deliveries/s (each round) | %% of the ceiling | CPU µs a delivery (medians) | aivis allocation a delivery | open loop at 50%%: p50/p99 ms |\n|---|---|---:|---|---:|---|---:|---|\n")
	type group struct{ bin, label string }
	var order []group
	by := map[group][]eventRun{}
	for _, r := range runs {
		g := group{r.bin, r.label}
		if _, ok := by[g]; !ok {
			order = append(order, g)
		}
		by[g] = append(by[g], r)
	}
	for _, g := range order {
		rs := by[g]
		var rates, p50s, p99s, allocs []float64
		cpu := map[string][]float64{}
		var names []string
		for _, r := range rs {
			rates = append(rates, r.rate)
			p50s, p99s = append(p50s, msf(r.p50)), append(p99s, msf(r.p99))
			if r.alloc > 0 {
				allocs = append(allocs, r.alloc/1024)
			}
			for _, c := range r.cpu {
				if !slices.Contains(names, c.name) {
					names = append(names, c.name) // the instances share "aivis"
				}
			}
			for _, name := range names {
				cpu[name] = append(cpu[name], us(r.cpu.get(name))/float64(max(r.deliveries, 1)))
			}
		}
		var parts []string
		for _, name := range names {
			parts = append(parts, fmt.Sprintf("%s %.0f", name, median(cpu[name])))
		}
		rate, alloc := median(rates), "–"
		if len(allocs) > 0 {
			alloc = fmt.Sprintf("%.1f KB", median(allocs))
			b.ReportMetric(median(allocs), fmt.Sprintf("%s-%s-%d-aivis-KB/delivery", g.bin, rs[0].engine, rs[0].instances))
		}
		fmt.Printf("| %s | %s | %d | %.0f (%s) | %.0f%% | %s | %s | %.1f/%.1f |\n", g.bin, g.label, len(rs), rate, rates1(rates), 100*rate/raw,
			strings.Join(parts, ", "), alloc, median(p50s), median(p99s))
		key := fmt.Sprintf("%s-%s-%d", g.bin, rs[0].engine, rs[0].instances)
		b.ReportMetric(rate, key+"-deliveries/s")
		b.ReportMetric(median(cpu["aivis"]), key+"-aivis-cpu-µs/delivery")
		b.ReportMetric(median(p99s), key+"-p99-ms")
	}
	b.ReportMetric(raw, "raw-req/s")
	fmt.Println()
}

// rates1 is each round's rate.
func rates1(rs []float64) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%.0f", r))
	}
	return strings.Join(s, ", ")
}
