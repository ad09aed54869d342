package bench

import (
	"bytes"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/engines"
	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/visibility"
	"github.com/aivis/aivis/webhook"
)

var (
	deliveryEvents  = flag.Int("delivery-events", 20000, "events recorded in the 1-endpoint throughput phase")
	deliveryStages  = flag.Bool("delivery-stages", false, "print, every 250 ms of the 1-endpoint phase, how far each stage of the event path has come")
	fiftyEvents     = flag.Int("delivery-fifty-events", 0, "events of the 50-endpoint phase (default: delivery-events / 50)")
	deliveryWriters = flag.Int("delivery-writers", 64, "domains, one writer each, in the 1-endpoint phase (as many as the ceiling's requests in flight)")
	deliveryPhase   = flag.Duration("delivery-phase", 5*time.Second, "length of the open-loop latency phase")
	deliveryProfile = flag.String("delivery-cpuprofile", "", "write a CPU profile of the 1-endpoint phase to this file")
	deliveryProcs   = flag.Int("delivery-processes", 3, "after the phases in one process, the 1-endpoint phase on SQLite is delivered by 1 and by this many `aivis serve --api=false` on one data directory (0 or 1: by 1)")
)

// hookSink is the local receiver: it verifies every delivery's signature
// with its webhook's secret, as a real receiver must, and notes when each
// event id arrived.
type hookSink struct {
	srv       *httptest.Server
	mu        sync.Mutex
	verifiers verifiers
	arrived   map[string]time.Time
	count     atomic.Int64
	bad       atomic.Int64
}

func newHookSink(b *testing.B) *hookSink {
	h := &hookSink{arrived: make(map[string]time.Time)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		vs := h.verifiers
		h.mu.Unlock()
		if vs != nil {
			v := vs.of(r, body)
			if v == nil {
				h.bad.Add(1)
				w.WriteHeader(http.StatusNotFound)
				return
			}
			if err := v.Verify(r.Header, body); err != nil {
				h.bad.Add(1)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		}
		now := time.Now()
		h.mu.Lock()
		if _, ok := h.arrived[r.Header.Get(webhook.HeaderID)]; !ok {
			h.arrived[r.Header.Get(webhook.HeaderID)] = now
		}
		h.mu.Unlock()
		h.count.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(h.srv.Close)
	return h
}

// verifiers are the receiver's secrets: by path, and for the webhooks of
// several domains that share a path, by the event's domain.
type verifiers map[string]*webhook.Verifier

func (vs verifiers) of(r *http.Request, body []byte) *webhook.Verifier {
	if v, ok := vs[r.URL.Path]; ok {
		return v
	}
	// The domain, found as a byte string: the ceiling's receiver decodes
	// no JSON either.
	_, rest, _ := bytes.Cut(body, []byte(`"domain":"`))
	domain, _, _ := bytes.Cut(rest, []byte(`"`))
	return vs[r.URL.Path+" "+string(domain)]
}

func (h *hookSink) reset(v verifiers) {
	h.mu.Lock()
	h.verifiers = v
	h.arrived = make(map[string]time.Time)
	h.mu.Unlock()
	h.count.Store(0)
}

// deliveryStack is the product's event path in one process, opened as
// the server opens it: SQLite store, the SQLite bus, the delivery engine,
// the guarded client.
type deliveryStack struct {
	db       store.Store
	file     string // the database file, which stages reads
	recorder *visibility.Recorder
	svc      *delivery.Service
	engine   *delivery.Engine
	p        auth.Principal
	stop     func()
}

// benchDB opens the store of a new data directory through the engines'
// registry, with its master key and one Enterprise account; the caller
// closes it.
func benchDB(b *testing.B) (store.Store, engines.Outbox, store.Account) {
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	return openBenchDB(b, cfg)
}

// openBenchDB opens the store of cfg (its master key in the data
// directory unless master_key_file says) and adds one Enterprise account.
func openBenchDB(b *testing.B, cfg config.Config) (store.Store, engines.Outbox, store.Account) {
	keyFile := cfg.MasterKeyFile
	if keyFile == "" {
		keyFile = filepath.Join(cfg.DataDir, secrets.KeyFile)
	}
	box, _, err := secrets.Load(keyFile, true)
	if err != nil {
		b.Fatal(err)
	}
	opened, err := engines.Stores[cfg.Store](context.Background(), cfg, box)
	if err != nil {
		b.Fatal(err)
	}
	db, outbox := opened.Store, opened.Outbox
	a := store.Account{ID: "acct_bench", Name: "Bench", Tier: "enterprise", Type: store.AccountStandard, CreatedAt: time.Now()}
	if err := db.CreateAccount(context.Background(), a); err != nil {
		db.Close()
		b.Fatal(err)
	}
	return db, outbox, a
}

// newDeliveryStack opens the event path in this process; newRecordingStack
// its first stage alone (readings recorded, webhooks made), for processes
// of the binary that deliver.
func newDeliveryStack(b *testing.B) *deliveryStack {
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	s, outbox := newRecordingStack(b, cfg)
	events, err := engines.Buses[cfg.Bus](context.Background(), cfg, outbox, nil)
	if err != nil {
		b.Fatal(err)
	}
	sub, err := events.Subscriber(engines.Consumer{Group: "webhooks", InFlight: delivery.FanoutInFlight, Batch: delivery.FanoutBatch})
	if err != nil {
		b.Fatal(err)
	}
	s.engine = delivery.New(s.db, sub, s.svc.Client, quiet(), delivery.Options{})
	s.svc.Wake = s.engine.Wake
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.engine.Run(ctx) }()
	closeDB := s.stop
	s.stop = func() {
		cancel()
		<-done
		sub.Close()
		events.Close()
		closeDB()
	}
	return s
}

func newRecordingStack(b *testing.B, cfg config.Config) (*deliveryStack, engines.Outbox) {
	db, outbox, a := openBenchDB(b, cfg)
	policy := netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	s := &deliveryStack{db: db, recorder: &visibility.Recorder{Store: db, Now: time.Now},
		svc: &delivery.Service{Store: db, Client: policy.Client(15 * time.Second), AllowHTTP: true, Wake: func() {},
			CheckURL: func(raw string, allowHTTP bool) error { _, err := policy.CheckURL(raw, allowHTTP); return err }},
		p:    auth.Principal{Principal: store.Principal{Key: store.Key{ID: "key_bench", AccountID: a.ID}, Account: a}},
		stop: func() { db.Close() }}
	if o, ok := outbox.(engines.SQLiteOutbox); ok {
		s.file = o.Path
	}
	b.Cleanup(func() { s.stop() })
	return s, outbox
}

var workersOnly = regexp.MustCompile(`aivis runs the workers only`)

// deliveryRun is the 1-endpoint phase delivered by `aivis serve
// --api=false` processes of a deployment.
type deliveryRun struct {
	label      string
	engine     string
	instances  int
	rate       float64 // deliveries a second
	deliveries int
	cpu        procCPU // over the burst, from its first record to its last delivery
	p50, p99   time.Duration
}

// deliverOn runs the 1-endpoint phase on a new deployment of engine whose
// events n processes of the binary deliver (`aivis serve --api=false`,
// the workers alone; args added to their settings), this process
// recording the readings through a store of its own, as an instance
// serving the API would, and receiving the deliveries; then the open loop
// at half the rate.
func deliverOn(b *testing.B, bin string, sink *hookSink, domains []string, engine string, n int, args ...string) deliveryRun {
	d := newDeployment(b, engine)
	s, _ := newRecordingStack(b, d.cfg)
	v := s.hooks(b, sink, domains, 1)
	sink.reset(v)
	is := d.start(b, bin, n, workersOnly, append([]string{"--api=false", "--allowed-targets", "127.0.0.1/32", "--allow-http-targets"}, args...)...)
	r := deliveryRun{label: d.label(n), engine: engine, instances: n}
	r.rate, r.cpu = s.burst(b, sink, domains, *deliveryEvents, 1, d.meter(is))
	r.deliveries = int(sink.count.Load())
	sink.reset(v)
	lats := s.openLoop(b, sink, domains[0], r.rate/2, *deliveryPhase)
	r.p50, r.p99 = quantile(lats, 0.50), quantile(lats, 0.99)
	for _, i := range is {
		i.stop(b)
	}
	fmt.Printf("%s: %.0f deliveries/s; CPU µs a delivery: %s; open loop at %.0f/s p50 %.1f ms p99 %.1f ms\n",
		r.label, r.rate, r.cpu.per(r.deliveries), r.rate/2, msf(r.p50), msf(r.p99))
	return r
}

// hooks creates a webhook on the sink for each domain, n per domain (each
// at its own path when n > 1, all at /hook when n is 1: one endpoint), and
// returns the receiver's verifiers of their secrets.
func (s *deliveryStack) hooks(b *testing.B, sink *hookSink, domains []string, n int) verifiers {
	vs := verifiers{}
	for i := range n * len(domains) {
		sink.reset(nil)
		path, key := "/hook", "/hook "+domains[i/n]
		if n > 1 {
			path = fmt.Sprintf("/hook/%d", i)
			key = path
		}
		url := sink.srv.URL + path
		w, err := s.svc.Create(context.Background(), s.p, client.CreateWebhook{Domain: domains[i/n],
			Events: []string{"ai_visibility_change"}, URL: url})
		if err != nil {
			b.Fatal(err)
		}
		v, err := webhook.NewVerifier(w.Secret)
		if err != nil {
			b.Fatal(err)
		}
		vs[key] = v
	}
	return vs
}

// stages prints how far each stage of the event path has come, every
// 250 ms until stop: readings recorded, events on the bus and fanned out
// (the consumer group's offset), deliveries pending and succeeded. The
// stage whose count lags is the one that limits the rate.
func (s *deliveryStack) stages(stop chan struct{}) {
	r, err := sql.Open("sqlite3", "file:"+s.file+"?mode=ro")
	if err != nil {
		return
	}
	defer r.Close()
	t0 := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-time.After(250 * time.Millisecond):
		}
		var bus, acked, pending, done, readings int64
		r.QueryRow(`SELECT coalesce(max(seq), 0) FROM bus_messages`).Scan(&bus)
		r.QueryRow(`SELECT coalesce(max(acked), 0) FROM bus_offsets`).Scan(&acked)
		r.QueryRow(`SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'succeeded')
			FROM webhook_deliveries`).Scan(&pending, &done)
		r.QueryRow(`SELECT count(*) FROM visibility_readings`).Scan(&readings)
		fmt.Printf("%5d ms: readings %d, events %d, fanned out %d, deliveries pending %d, succeeded %d\n",
			time.Since(t0).Milliseconds(), readings, bus, acked, pending, done)
	}
}

// record stores a reading and returns the id of the event it caused and
// the time its transaction committed. Concurrent writers of one domain may
// commit a reading measured before the latest, which emits nothing ("").
func (s *deliveryStack) record(b *testing.B, domain string, i int) (string, time.Time) {
	score := 10 + i%2*10 + i%7
	_, ev, err := s.recorder.Record(context.Background(), s.p, client.RecordReading{Domain: domain, VisibilityScore: &score, Sentiment: "neutral"})
	if err != nil {
		b.Fatalf("record: %v", err)
	}
	if ev == nil {
		return "", time.Now()
	}
	return ev.ID, time.Now()
}

// burst records n events with one writer per domain and waits until each
// has reached each of the domain's hooks; it returns deliveries per second
// from the first commit, and the CPU time this process and m's used
// meanwhile.
func (s *deliveryStack) burst(b *testing.B, sink *hookSink, domains []string, n, hooks int, m meter) (float64, procCPU) {
	start, cpu := time.Now(), m.sample()
	var events atomic.Int64
	var wg sync.WaitGroup
	for _, d := range domains {
		wg.Go(func() {
			for i := 0; events.Load() < int64(n); i++ {
				if id, _ := s.record(b, d, i); id != "" {
					events.Add(1)
				}
			}
		})
	}
	wg.Wait()
	fmt.Printf("recorded %d events in %v (%.0f/s)\n", events.Load(), time.Since(start).Round(time.Millisecond), float64(events.Load())/time.Since(start).Seconds())
	want := int(events.Load()) * hooks
	waitDeliveries(b, sink, want)
	rate, spent := float64(want)/time.Since(start).Seconds(), m.spent(cpu, m.sample())
	fmt.Printf("%d deliveries: µs of CPU each (this process's includes the receiver): %s\n", want, spent.per(want))
	return rate, spent
}

// ceiling is the rate at which a plain Go client POSTs signed bodies to
// the same receiver, 64 requests in flight.
func ceiling(b *testing.B, sink *hookSink, d time.Duration) float64 {
	secret, _ := webhook.NewSecret()
	v, _ := webhook.NewVerifier(secret)
	sink.reset(verifiers{"/raw": v})
	signer, _ := webhook.NewSigner(secret)
	body := []byte(`{"id":"evt_x","event":"ai_visibility_change","timestamp":"2026-11-22T10:00:00Z","data":{"domain":"example.com","visibility_score":72}}`)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var n atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				req, _ := http.NewRequest(http.MethodPost, sink.srv.URL+"/raw", bytes.NewReader(body))
				signer.Headers(req.Header, fmt.Sprintf("evt_%d_%d", w, i), time.Now(), body)
				resp, err := hc.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(n.Load()) / d.Seconds()
}

// openLoop records events at rate for d and returns the commit-to-delivery
// latencies of those that arrived.
func (s *deliveryStack) openLoop(b *testing.B, sink *hookSink, domain string, rate float64, d time.Duration) []time.Duration {
	var mu sync.Mutex
	committed := map[string]time.Time{}
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := 0; time.Since(start) < d; i++ {
		due := start.Add(time.Duration(i) * interval)
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			id, at := s.record(b, domain, i)
			if id != "" {
				mu.Lock()
				committed[id] = at
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return latencies(b, sink, committed)
}

// latencies waits up to a minute for the events of sent (id to when it
// was sent) to arrive at the sink, and returns each one's time from sent
// to arrived, sorted; an event that did not arrive is an error.
func latencies(b *testing.B, sink *hookSink, sent map[string]time.Time) []time.Duration {
	deadline := time.Now().Add(time.Minute)
	for {
		sink.mu.Lock()
		n := len(sink.arrived)
		sink.mu.Unlock()
		if n >= len(sent) || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var lats []time.Duration
	for id, at := range sent {
		if got, ok := sink.arrived[id]; ok {
			lats = append(lats, max(got.Sub(at), 0))
		}
	}
	if len(lats) < len(sent) {
		b.Errorf("%d of %d events arrived", len(lats), len(sent))
	}
	slices.Sort(lats)
	return lats
}

func quantile(s []time.Duration, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// BenchmarkDelivery measures the event path from a recorded reading to a
// verified delivery at a local receiver, on the durable SQLite bus, with 1
// and 50 endpoints, and the raw rate at which a plain Go client reaches
// the same receiver; then the 1-endpoint phase again with the deliveries
// made by 1 and by -delivery-processes processes of the binary on one data
// directory.
func BenchmarkDelivery(b *testing.B) {
	sink := newHookSink(b)
	raw := ceiling(b, sink, 3*time.Second)

	s := newDeliveryStack(b)
	// One endpoint: a webhook for each of 64 domains, all to one URL, and a
	// writer per domain: as many readings in flight as the ceiling has
	// requests (readings of one domain are ordered, so writers of one
	// domain would mostly wait for each other).
	var oneDomains []string
	for i := range *deliveryWriters {
		oneDomains = append(oneDomains, fmt.Sprintf("d%d.one.example", i))
	}
	v1 := s.hooks(b, sink, oneDomains, 1)
	sink.reset(v1)
	stopW := make(chan struct{})
	if *deliveryStages {
		go s.stages(stopW)
	}
	if *deliveryProfile != "" {
		f, err := os.Create(*deliveryProfile)
		if err != nil {
			b.Fatal(err)
		}
		pprof.StartCPUProfile(f)
	}
	one, _ := s.burst(b, sink, oneDomains, *deliveryEvents, 1, nil)
	if *deliveryProfile != "" {
		pprof.StopCPUProfile()
	}
	close(stopW)

	v50 := s.hooks(b, sink, []string{"fifty.example"}, 50)
	sink.reset(v50)
	events50 := *deliveryEvents / 50
	if *fiftyEvents > 0 {
		events50 = *fiftyEvents
	}
	fifty, _ := s.burst(b, sink, []string{"fifty.example"}, events50, 50, nil)

	sink.reset(v1)
	lats := s.openLoop(b, sink, oneDomains[0], one/2, *deliveryPhase)
	if sink.bad.Load() != 0 {
		b.Errorf("%d deliveries failed verification", sink.bad.Load())
	}

	var runs []deliveryRun
	var costs []metricsCost
	if len(engineNames()) > 0 {
		bin := buildServer(b, b.TempDir())
		for _, engine := range engineNames() {
			for _, n := range deliveryCounts(engine) {
				runs = append(runs, deliverOn(b, bin, sink, oneDomains, engine, n))
			}
		}
		if *metricsRounds > 0 {
			costs = append(costs, deliveryMetrics(b, bin, sink, oneDomains))
		}
	}

	p50, p99 := quantile(lats, 0.50), quantile(lats, 0.99)
	fmt.Printf("\n| phase | figure |\n|---|---|\n")
	fmt.Printf("| raw ceiling: plain Go client to the receiver, 64 in flight | %.0f req/s |\n", raw)
	fmt.Printf("| 1 endpoint: %d events of %d domains, reading to verified delivery | %.0f deliveries/s (%.0f%% of the ceiling) |\n", *deliveryEvents, len(oneDomains), one, 100*one/raw)
	fmt.Printf("| 50 endpoints: %d events x 50 webhooks | %.0f deliveries/s (%.0f%% of the ceiling) |\n", events50, fifty, 100*fifty/raw)
	fmt.Printf("| 1 endpoint, open loop at %.0f events/s (50%%): commit to delivery | p50 %.1f ms, p99 %.1f ms (%d events) |\n",
		one/2, msf(p50), msf(p99), len(lats))
	fmt.Println()
	fmt.Printf("| target | figure | met |\n|---|---|---|\n")
	fmt.Printf("| >= 2,000 deliveries/s (1 and 50 endpoints) | %.0f and %.0f | %s |\n", one, fifty, yes(one >= 2000 && fifty >= 2000))
	fmt.Printf("| >= 25%% of the raw ceiling | %.0f%% and %.0f%% | %s |\n", 100*one/raw, 100*fifty/raw, yes(one >= raw/4 && fifty >= raw/4))
	fmt.Printf("| p99 commit to delivery < 250 ms at 50%% load | %.1f ms | %s |\n\n", msf(p99), yes(p99 < 250*time.Millisecond))
	reportDeliveries(b, runs, one)
	reportMetrics(b, costs...)
	b.ReportMetric(raw, "raw-req/s")
	b.ReportMetric(one, "deliveries-1/s")
	b.ReportMetric(fifty, "deliveries-50/s")
	b.ReportMetric(msf(p50), "p50-ms")
	b.ReportMetric(msf(p99), "p99-ms")
}

// deliveryCounts are the numbers of `aivis serve --api=false` each engine's
// event path is measured with.
func deliveryCounts(engine string) []int {
	if engine == "sqlite" && *deliveryProcs > 1 {
		return []int{1, *deliveryProcs}
	}
	return instanceCounts(engine)
}

// reportDeliveries writes the figures of the phases on `aivis serve`
// processes, and the cluster's one instance against SQLite's one process
// and against the event path in one process (inProcess deliveries/s).
func reportDeliveries(b *testing.B, runs []deliveryRun, inProcess float64) {
	if len(runs) == 0 {
		return
	}
	fmt.Printf("1 endpoint, %d events of %d domains recorded in this process, delivered by `aivis serve --api=false` processes:\n\n", *deliveryEvents, *deliveryWriters)
	fmt.Printf("| engines | deliveries/s | open loop at 50%%: p50/p99 ms | CPU µs a delivery (this process: recording and receiving) |\n|---|---:|---|---|\n")
	var sqlite float64
	for _, r := range runs {
		fmt.Printf("| %s | %.0f | %.1f/%.1f | %s |\n", r.label, r.rate, msf(r.p50), msf(r.p99), r.cpu.per(r.deliveries))
		if r.engine == "sqlite" && r.instances == 1 {
			sqlite = r.rate
		}
		key := fmt.Sprintf("%s-%d", r.engine, r.instances)
		b.ReportMetric(r.rate, key+"-deliveries/s")
		b.ReportMetric(msf(r.p99), key+"-p99-ms")
		b.ReportMetric(us(r.cpu.get("aivis")/time.Duration(max(r.deliveries, 1))), key+"-aivis-cpu-µs/delivery")
	}
	fmt.Println()
	for _, r := range runs {
		if r.engine == "cluster" && r.instances == 1 {
			fmt.Printf("| target | figure | met |\n|---|---|---|\n")
			if sqlite > 0 {
				fmt.Printf("| cluster, 1 instance ≥ 50%% of sqlite, 1 process | %.0f%% (%.0f vs %.0f deliveries/s) | %s |\n", 100*r.rate/sqlite, r.rate, sqlite, yes(r.rate >= sqlite/2))
			}
			fmt.Printf("| cluster, 1 instance ≥ 50%% of the event path in one process (SQLite) | %.0f%% (%.0f vs %.0f deliveries/s) | %s |\n\n",
				100*r.rate/inProcess, r.rate, inProcess, yes(r.rate >= inProcess/2))
		}
	}
}
