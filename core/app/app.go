// Package app wires aivis together from a Config and runs it.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/api"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/dashboard"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/engines"
	"github.com/aivis/aivis/core/health"
	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/mcp"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/people"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/readiness"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/schema"
	"github.com/aivis/aivis/core/tlsconf"
	"github.com/aivis/aivis/core/tracing"
	"github.com/aivis/aivis/core/traffic"
	"github.com/aivis/aivis/core/visibility"
	"github.com/aivis/aivis/internal/buildinfo"
	"github.com/aivis/aivis/internal/gctune"
	"github.com/aivis/aivis/internal/lockfile"
)

// Services are the core services, shared by the server and the CLI.
type Services struct {
	// MasterKeyCreated says the master key (data-dir/master.key, when no
	// master_key_file is set) was made by this Open: secrets stored from
	// now on need that file.
	MasterKeyCreated bool
	// Box holds the master key file's keys, which seal and open the
	// secrets Store keeps.
	Box   *secrets.Box
	Store store.Store
	// Outbox is where Store's transactions publish events, for the bus.
	Outbox engines.Outbox
	// Holder names this process in the work it claims in the store.
	Holder   string
	Auth     *auth.Service
	Accounts *accounts.Service
	Content  *content.Service
	People   *people.Service
	// Traffic takes a domain's logs and keeps their aggregates.
	Traffic *traffic.Service
	// Changes keeps domains' changes and measures their lift; its
	// Measured hook publishes lift_measured.
	Changes *changes.Service
	// Metrics is what a server counts in (measure); nil for the CLI.
	Metrics *metrics.Metrics
	// instrument gives the store the metrics it counts in, if it can.
	instrument func(*metrics.Metrics)
}

// OpenOption is an option of Open.
type OpenOption func(*openOptions)

type openOptions struct{ policy schema.Policy }

// Migrate says what Open may do with the store's schema (schema.Policy).
// Without it Open applies the migrations to a new database alone and
// refuses one with pending migrations, naming aivis migrate up
// (schema.ApplyNew): what every command but serve and migrate does.
func Migrate(p schema.Policy) OpenOption { return func(o *openOptions) { o.policy = p } }

// MigratePolicy is serve's policy: apply at start (auto_migrate), or
// refuse a database with pending migrations.
func MigratePolicy(cfg config.Config) schema.Policy {
	if cfg.AutoMigrate {
		return schema.Apply
	}
	return schema.Refuse
}

// Open opens the configured store and builds the services on it. A schema
// newer than this aivis is always refused.
func Open(ctx context.Context, cfg config.Config, opts ...OpenOption) (*Services, error) {
	o := openOptions{policy: schema.ApplyNew}
	for _, f := range opts {
		f(&o)
	}
	if err := engines.Check(cfg); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	box, created, err := masterKey(cfg)
	if err != nil {
		return nil, err
	}
	opened, err := engines.Stores[cfg.Store](ctx, cfg, box, o.policy)
	if err != nil {
		return nil, err
	}
	// A request that holds an Idempotency-Key marks it acted in the
	// transaction of its action (core/api).
	st := store.Acted(opened.Store)
	if tracing.Enabled() {
		st = store.Traced(st, dbSystem(cfg.Store))
	}
	now := time.Now
	accts := &accounts.Service{Store: st, Now: now}
	return &Services{
		MasterKeyCreated: created,
		Box:              box,
		Store:            st,
		Outbox:           opened.Outbox,
		Holder:           opened.Holder,
		instrument:       opened.Instrument,
		Auth:             &auth.Service{Keys: st, Accounts: st, Now: now},
		Accounts:         accts,
		Content:          &content.Service{Store: st, Now: now},
		People:           &people.Service{Store: st, Accounts: accts, Now: now},
		Traffic:          &traffic.Service{Store: st, Catalog: traffic.NewCatalog(traffic.Snapshot()), Box: box, Now: now, Sites: st},
		Changes:          &changes.Service{Store: st, Now: now, Measured: changes.Publish(now)},
	}, nil
}

// measureLift is what follows a completed scan: the changes of its
// domain whose window after them has now filled are measured and
// lift_measured published, once across every instance (Due).
func measureLift(st store.Store, cs *changes.Service, log *slog.Logger) func(context.Context, store.Scan) {
	return func(ctx context.Context, sc store.Scan) {
		d, err := st.MonitoredDomain(ctx, sc.AccountID, sc.DomainID)
		if errors.Is(err, store.ErrNotFound) {
			return // a scan of a domain no longer monitored
		} else if err != nil {
			log.ErrorContext(ctx, "changes: the domain of a completed scan", "scan", sc.ID, "err", err)
			return
		}
		ms, err := cs.Due(ctx, d)
		if err != nil {
			log.ErrorContext(ctx, "changes: measure the changes due", "domain", d.ID, "err", err)
		}
		for _, m := range ms {
			log.InfoContext(ctx, "changes: lift measured", "domain", d.ID, "change", m.Change.ID)
		}
	}
}

// pruneTraffic deletes the traffic aggregates of the days before before
// (its own batches: one call does all).
func pruneTraffic(st store.Traffic) func(ctx context.Context, before time.Time, limit int) (int, error) {
	return func(ctx context.Context, before time.Time, _ int) (int, error) {
		_, err := st.DeleteTrafficBefore(ctx, before.UTC().Truncate(24*time.Hour))
		return 0, err
	}
}

// RangesEvery is how often a server reads the crawler range lists kept in
// the store (aivis crawlers update on any instance).
const RangesEvery = time.Minute

// followRanges keeps the catalog's range lists those of the store, read
// now and every RangesEvery until ctx ends.
func followRanges(ctx context.Context, t *traffic.Service, log *slog.Logger) {
	tick := time.NewTicker(RangesEvery)
	defer tick.Stop()
	for {
		if err := t.LoadRanges(ctx); err != nil && ctx.Err() == nil {
			log.Warn("crawler ranges: the lists kept could not be read; the last ones stay", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// RangesFetchEvery is how often a server fetches crawler_ranges_url.
const RangesFetchEvery = 24 * time.Hour

// fetchRanges keeps the lists at url, fetched now and every
// RangesFetchEvery until ctx ends; a fetch that fails keeps the lists
// there were, and says why.
func fetchRanges(ctx context.Context, t *traffic.Service, url string, log *slog.Logger) {
	client := &http.Client{Timeout: time.Minute}
	tick := time.NewTicker(RangesFetchEvery)
	defer tick.Stop()
	for {
		if names, err := t.FetchRanges(ctx, client, url); err != nil && ctx.Err() == nil {
			log.Warn("crawler ranges: crawler_ranges_url could not be read; the lists kept stay", "err", err)
		} else if err == nil {
			log.Info("crawler ranges: lists replaced from crawler_ranges_url", "lists", names)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// dbSystem is a store engine's name as OpenTelemetry's db.system.name
// says it.
func dbSystem(engine string) string {
	if engine == "postgres" {
		return "postgresql"
	}
	return engine
}

// masterKey loads the master key file (MasterKeyPath): master_key_file,
// which must exist, or data_dir's master.key, made on the first start
// (created says it was).
func masterKey(cfg config.Config) (box *secrets.Box, created bool, err error) {
	if cfg.MasterKeyFile != "" {
		box, _, err := secrets.Load(cfg.MasterKeyFile, false)
		if err != nil {
			return nil, false, fmt.Errorf("master_key_file: %w", err)
		}
		return box, false, nil
	}
	return secrets.Load(MasterKeyPath(cfg), true)
}

// MasterKeyPath is the master key file of cfg: master_key_file, else
// master.key in the data directory.
func MasterKeyPath(cfg config.Config) string {
	if cfg.MasterKeyFile != "" {
		return cfg.MasterKeyFile
	}
	return filepath.Join(cfg.DataDir, secrets.KeyFile)
}

// Close closes the store.
func (s *Services) Close() error { return s.Store.Close() }

// Logger builds the configured logger.
func Logger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func prefixes(ss []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		if p, err := config.ParsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// Run runs the workers and, when this process's turn comes (apiTurn), the
// API, until ctx ends; then it shuts down gracefully. It writes the startup
// banner to out when it starts to serve the API.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger, out io.Writer) error {
	if err := Check(cfg, os.Getenv); err != nil {
		return err
	}
	// Traces, when the OTEL_* variables ask for them: before anything
	// traced is built, flushed once everything has stopped.
	stopTracing, err := tracing.Setup(ctx, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	log = tracing.Logger(log)
	svc, err := Open(ctx, cfg, Migrate(MigratePolicy(cfg)))
	if err != nil {
		return err
	}
	defer svc.Close()
	// Once the settings and the engines they name are known good: what
	// refuses to start says only why.
	bi := buildinfo.Get()
	gc := gctune.Apply(os.Getenv, "/sys/fs/cgroup", "/proc/self/cgroup")
	log.Info("aivis starting", "version", bi.Version, "commit", bi.Commit, "go", bi.GoVersion,
		"gc_percent", gc.Percent, "gc_percent_from", gc.PercentFrom, "memory_limit", gc.Limit, "memory_limit_from", gc.LimitFrom)
	svc.measure(cfg)
	limiter, err := engines.Counters[cfg.Counter](ctx, cfg, svc.Store, log)
	if err != nil {
		return err
	}
	defer func() { limiter.Close() }() // the one serveAPI ran, once it returned
	measureCounter(svc.Metrics, limiter)
	turn, err := takeAPI(cfg, limiter.Counter.Shared())
	if err != nil {
		return err
	}
	defer turn.release()
	var mat *tlsconf.Material
	if cfg.API { // a standby too: what would fail at its takeover fails now
		if mat, err = loadTLS(cfg); err != nil {
			return err
		}
	}
	w, err := startWorkers(ctx, cfg, svc, log)
	if err != nil {
		return err
	}
	defer w.stop()
	// The parts this process needs, which /readyz asks. (The memory
	// counter, the one a standby replaces when it takes over, needs none.)
	checks := []health.Check{{Part: "store", Ping: svc.Store.Ping}, {Part: "bus", Ping: w.bus.Ping}}
	if limiter.Ping != nil {
		checks = append(checks, health.Check{Part: "counter", Ping: limiter.Ping})
	}
	hc := health.New(log, 2*time.Second, checks...)
	hc.Degraded(func() []string { return connectorsDown(w.connectors) })
	watch(svc.Metrics, svc, w, hc, checks)
	admin, stopAdmin, err := serveAdmin(cfg, hc, svc.Metrics, log)
	if err != nil {
		return err
	}
	defer stopAdmin()
	if admin != "" {
		fmt.Fprintf(out, "admin listener on http://%s: /livez, /readyz, /metrics\n", admin)
	}
	defer hc.Drain() // a process that stops is no longer ready, whatever stops it

	switch {
	case !cfg.API:
		fmt.Fprintf(out, "aivis runs the workers only (api: false): deliveries, scans and content requests; it serves no API\ndata directory: %s\n", cfg.DataDir)
		log.Info("running the workers only", "api", false)
		<-ctx.Done()
		return nil
	case turn.standby:
		fmt.Fprintf(out, "another aivis process serves the API of this data directory (it holds %s); this one runs the workers, and serves the API on %s once that one stops\ndata directory: %s\n",
			turn.lock.Name(), cfg.Addr, cfg.DataDir)
		log.Info("another process serves the API; this one runs the workers and takes over when that one stops", "lock", turn.lock.Name())
		if err := lockfile.Wait(ctx, turn.lock); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("api lock: %w", err)
		}
		// The counts the process before wrote behind, as they are now.
		next, err := engines.Counters[cfg.Counter](ctx, cfg, svc.Store, log)
		if err != nil {
			return err
		}
		limiter.Close()
		limiter = next
		measureCounter(svc.Metrics, limiter)
		log.Info("the process that served the API stopped: this one serves it", "addr", cfg.Addr)
	}
	return serveAPI(ctx, cfg, svc, w, limiter, mat, turn, hc, log, out)
}

// serveAdmin serves the admin listener of admin_addr, if any, until the
// function it returns is called: the probes, the metrics, and pprof when
// admin_pprof says.
func serveAdmin(cfg config.Config, hc *health.Health, m *metrics.Metrics, log *slog.Logger) (addr string, stop func(), err error) {
	if cfg.AdminAddr == "" {
		return "", func() {}, nil
	}
	ln, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		return "", nil, fmt.Errorf("admin listener (admin_addr; every process on a host needs its own, \"\" turns it off): %w", err)
	}
	mux := http.NewServeMux()
	for path, h := range hc.Paths() {
		mux.HandleFunc("GET "+path, h)
	}
	if m.On() {
		mux.Handle("GET /metrics", m.Handler())
	}
	if cfg.AdminPprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	srv := NewHTTPServer(mux, log)
	srv.WriteTimeout = 0 // a CPU profile takes as long as it is asked to
	go srv.Serve(ln)
	return ln.Addr().String(), func() { srv.Close() }, nil
}

// loadTLS loads the server's TLS material, or makes the self-signed pair.
func loadTLS(cfg config.Config) (*tlsconf.Material, error) {
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("addr %q: %w", cfg.Addr, err)
	}
	hostname, _ := os.Hostname()
	return tlsconf.Load(cfg.TLSCert, cfg.TLSKey, cfg.DataDir, []string{host, hostname})
}

// workers are what a process runs whether it serves the API or not: the
// delivery engine (with its retention), the scans, the content requests,
// and the pruning of idempotency keys; and the services over them that the
// API calls.
type workers struct {
	bus        engines.Bus
	webhooks   *delivery.Service
	connectors *hub.Hub
	recorder   *visibility.Recorder
	scans      *visibility.Scans
	stops      []func() // in the order they were started
}

// stop stops the workers, the last started first.
func (w *workers) stop() {
	for _, f := range slices.Backward(w.stops) {
		f()
	}
}

// startWorkers starts the workers; on an error, those started are stopped.
func startWorkers(ctx context.Context, cfg config.Config, svc *Services, log *slog.Logger) (_ *workers, err error) {
	w := &workers{}
	defer func() {
		if err != nil {
			w.stop()
		}
	}()
	background := func(run func(context.Context)) {
		c, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { run(c); close(done) }()
		w.stops = append(w.stops, func() { cancel(); <-done })
	}
	background(func(c context.Context) { svc.Content.PruneIdempotency(c, time.Hour, log) })

	// Events: the delivery engine consumes the bus that carries what the
	// store's transactions publish, and delivers to webhooks and, through
	// the connector plugins, connections.
	policy := netguard.Policy{AllowPrivate: cfg.AllowPrivateTargets, Allow: prefixes(cfg.AllowedTargets)}
	timeout := time.Duration(cfg.WebhookTimeout)
	outbound := policy.Client(timeout)
	events, err := engines.Buses[cfg.Bus](ctx, cfg, svc.Outbox, log)
	if err != nil {
		return nil, fmt.Errorf("event bus: %w", err)
	}
	w.bus = events
	w.stops = append(w.stops, func() { events.Close() }) // after the subscriber
	sub, err := events.Subscriber(engines.Consumer{Group: "webhooks", InFlight: delivery.FanoutInFlight, Batch: delivery.FanoutBatch})
	if err != nil {
		return nil, fmt.Errorf("event bus: %w", err)
	}
	w.stops = append(w.stops, func() { sub.Close() }) // after the engine has stopped
	if cfg.TrustedPluginsDir != "" {
		if err := hub.RegisterDir(ctx, svc.Store, cfg.TrustedPluginsDir, log); err != nil {
			return nil, fmt.Errorf("trusted_plugins_dir: %w", err)
		}
	}
	if w.connectors, err = hub.Open(ctx, svc.Store, hub.Options{Dir: hub.PluginsDir(cfg.DataDir), Policy: policy, Instance: svc.Holder, Log: log,
		Metrics: svc.Metrics.Connectors}); err != nil {
		return nil, fmt.Errorf("connectors: %w", err)
	}
	w.stops = append(w.stops, func() { w.connectors.Close() }) // after the engine has stopped
	engine := delivery.New(svc.Store, sub, outbound, log, delivery.Options{Timeout: timeout, Connectors: w.connectors,
		Retention: time.Duration(cfg.DeliveryRetention), Holder: svc.Holder, Metrics: svc.Metrics.Delivery,
		Prune: []delivery.Pruning{{What: "scan answers", Age: time.Duration(cfg.AnswerRetention), Prune: svc.Store.PruneScanAnswers},
			{What: "traffic aggregates", Age: time.Duration(cfg.TrafficRetention), Prune: pruneTraffic(svc.Store)}}})
	background(func(c context.Context) {
		if err := engine.Run(c); err != nil {
			log.Error("webhook engine", "err", err)
		}
	})
	w.webhooks = &delivery.Service{Store: svc.Store, Client: outbound, AllowHTTP: cfg.AllowHTTPTargets, Wake: engine.Wake, Hub: w.connectors,
		CheckURL: func(raw string, allowHTTP bool) error { _, err := policy.CheckURL(raw, allowHTTP); return err }}

	// Scans: the readiness audit reads sites through the outbound guard;
	// the engines are the operator's own endpoints (local models included).
	w.recorder = &visibility.Recorder{Store: svc.Store, Now: time.Now}
	auditor := &readiness.Auditor{Client: policy.Client(0)}
	prober := &probe.Prober{Client: &probe.Client{HTTP: &http.Client{}, Metrics: svc.Metrics.Engines}, Engines: probeEngines(cfg.Engines), Log: log}
	w.scans = &visibility.Scans{Store: svc.Store, Recorder: w.recorder, Log: log, Now: time.Now, Workers: cfg.ScanWorkers, Holder: svc.Holder, Metrics: svc.Metrics.Scans,
		Scanner: &visibility.EngineScanner{
			Readiness: func(ctx context.Context, domain string) (int, any, error) {
				r, err := auditor.Audit(ctx, domain)
				return r.Score, r, err
			},
			Prober: prober,
		}, Completed: measureLift(svc.Store, svc.Changes, log)}
	svc.Changes.PromptLimit = prober.MaxPrompts
	background(w.scans.Run)

	// Content requests: pages are fetched through the outbound guard as
	// the audit fetches them; the engine is the operator's own.
	contents, err := contentEngine(cfg, svc.Store, svc.Holder, auditor, log)
	if err != nil {
		return nil, err
	}
	contents.Metrics, contents.Client.Metrics = svc.Metrics.Content, svc.Metrics.Engines
	if cfg.ContentWorkers > 0 {
		svc.Content.Queued = contents.Wake
		background(contents.Run)
	}
	return w, nil
}

// serveAPI serves the API and the dashboard with the limiter's counter and
// guards until ctx ends, then shuts them down, lets the counter write
// behind what it holds, and only then lets the API lock go.
func serveAPI(ctx context.Context, cfg config.Config, svc *Services, w *workers, limiter engines.Limiter, mat *tlsconf.Material,
	turn apiTurn, hc *health.Health, log *slog.Logger, out io.Writer) error {
	counter := limiter.Counter
	counterCtx, stopCounter := context.WithCancel(context.Background())
	counted := make(chan struct{})
	go func() { counter.Run(counterCtx); close(counted) }()
	defer func() {
		stopCounter()
		<-counted
		turn.release()
	}()

	domainsSvc := &visibility.Domains{Store: svc.Store, Now: time.Now}
	guard := limiter.Guards("auth", cfg.AuthFailuresPerMinute, time.Minute)
	dash, err := dashboard.New(dashboard.Deps{Store: svc.Store, People: svc.People, Auth: svc.Auth, Accounts: svc.Accounts,
		Counter: counter, Webhooks: w.webhooks, Hub: w.connectors, Domains: domainsSvc, Scans: w.scans, Content: svc.Content, Traffic: svc.Traffic, Changes: svc.Changes,
		Guard: guard, Guards: limiter.Guards, PublicURL: cfg.PublicURL, Log: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	_, httpsPort, _ := net.SplitHostPort(ln.Addr().String())
	srv := api.New(api.Config{TrustedProxies: prefixes(cfg.TrustedProxies), CORSAllowedOrigins: cfg.CORSAllowedOrigins,
		HSTS: !mat.SelfSigned, PublicURL: cfg.PublicURL, HTTPSPort: httpsPort}, api.Deps{
		Store: svc.Store, Auth: svc.Auth, Content: svc.Content, Counter: counter,
		Guard: guard, Log: log,
		Readings: w.recorder, Webhooks: w.webhooks, Scans: w.scans,
		Domains: domainsSvc, Hub: w.connectors, Dashboard: dash, Health: hc, Metrics: svc.Metrics,
		MCP: func(a *api.Server) http.Handler {
			return mcp.New(a, mcp.Options{Log: log, Version: buildinfo.Get().Version, SessionKey: svc.Box.Derive("mcp sessions")})
		},
		Traffic: svc.Traffic, Changes: svc.Changes,
	})
	go followRanges(ctx, svc.Traffic, log)
	if cfg.CrawlerRangesURL != "" {
		go fetchRanges(ctx, svc.Traffic, cfg.CrawlerRangesURL, log)
	}
	dash.ClientAddr = srv.ClientAddr
	// The first start without users prints a one-time link that creates
	// the first owner.
	bootstrap, err := svc.People.Bootstrap(ctx)
	if err != nil {
		ln.Close()
		return fmt.Errorf("bootstrap owner: %w", err)
	}

	servers := []*http.Server{NewHTTPServer(srv.Handler(), log)}
	servers[0].TLSConfig = mat.Config()
	listeners := []net.Listener{tls.NewListener(ln, servers[0].TLSConfig)}
	if cfg.HTTPAddr != "" {
		pln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			ln.Close()
			return err
		}
		servers = append(servers, NewHTTPServer(srv.RequireHTTPS(), log))
		listeners = append(listeners, pln)
	}

	url := cfg.PublicURL
	if url == "" {
		url = "https://" + DisplayAddr(ln.Addr().String())
	}
	banner(out, url, cfg, mat, listeners, svc.MasterKeyCreated, bootstrap)

	errc := make(chan error, len(servers))
	for i, s := range servers {
		go func() { errc <- s.Serve(listeners[i]) }()
	}
	select {
	case err = <-errc:
		log.Error("server stopped", "err", err)
	case <-ctx.Done():
		err = nil
	}
	// Load balancers learn from /readyz that this process goes, while its
	// listeners still take what they send meanwhile.
	hc.Drain()
	if d := time.Duration(cfg.ShutdownDelay); d > 0 && err == nil {
		log.Info("draining: /readyz answers 503 before the listeners close", "delay", cfg.ShutdownDelay.String())
		time.Sleep(d)
	}
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.ShutdownTimeout))
	defer cancel()
	for _, s := range servers {
		if serr := s.Shutdown(sctx); serr != nil {
			log.Warn("shutdown did not finish in time", "err", serr)
			s.Close()
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// probeEngines are the configured AI engines as the prober takes them.
func probeEngines(cs []config.Engine) []probe.Engine {
	out := make([]probe.Engine, len(cs))
	for i, e := range cs {
		out[i] = probe.Engine{Label: e.Label, Kind: e.Kind, BaseURL: e.URL(), Model: e.Model, APIKey: e.Key(),
			InputPricePerMTok: e.InputPricePerMTok, OutputPricePerMTok: e.OutputPricePerMTok,
			SearchPricePer1K: e.SearchPricePer1K, MaxSearches: e.MaxSearches,
			Concurrency: e.Concurrency, Timeout: time.Duration(e.Timeout), SurfaceOf: e.Surface, XSearch: e.XSearch}
	}
	return out
}

// contentEngine builds the engine of content requests from the settings.
func contentEngine(cfg config.Config, st content.Store, holder string, fetcher content.Fetcher, log *slog.Logger) (*content.Engine, error) {
	e := &content.Engine{Store: st, Holder: holder, Fetcher: fetcher, Client: &probe.Client{HTTP: &http.Client{}}, Log: log, Now: time.Now,
		Workers: cfg.ContentWorkers, MaxTokens: cfg.ContentMaxTokens, Lease: time.Duration(cfg.ContentLease),
		Prices: content.Prices{Fetch: int64(cfg.ContentPrices.Fetch), Analysis: int64(cfg.ContentPrices.Analysis)}}
	if i := cfg.ContentAI(); i >= 0 {
		e.AI = &probeEngines(cfg.Engines)[i]
	}
	if cfg.ContentEngine != "" && e.AI == nil {
		return nil, fmt.Errorf("content_engine %q is not the label of an engine", cfg.ContentEngine)
	}
	return e, nil
}

// NewHTTPServer is the http.Server aivis serves with: timeouts against
// slow clients and a bounded header size.
func NewHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}

// DisplayAddr turns a listen address into one a user can open.
func DisplayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && (ip.IsLoopback() || ip.IsUnspecified())) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

func banner(out io.Writer, url string, cfg config.Config, mat *tlsconf.Material, lns []net.Listener, keyMade bool, bootstrap string) {
	fmt.Fprintf(out, "aivis listening on %s\n", url)
	if len(lns) > 1 {
		fmt.Fprintf(out, "plain HTTP on %s answers 403 HTTPS_REQUIRED (but the probes /livez, /readyz)\n", lns[1].Addr())
	}
	if mat.SelfSigned {
		made := ""
		if mat.Created {
			made = " (made now)"
		}
		fmt.Fprintf(out, "TLS: self-signed certificate %s%s\n", mat.CertFile, made)
	} else {
		fmt.Fprintf(out, "TLS: certificate %s\n", mat.CertFile)
	}
	fmt.Fprintf(out, "TLS certificate SHA-256 fingerprint: %s\n", mat.Fingerprint)
	if keyMade {
		fmt.Fprintf(out, "master key: %s (made now; back it up with the database: stored secrets need it)\n",
			filepath.Join(cfg.DataDir, secrets.KeyFile))
	}
	fmt.Fprintf(out, "dashboard: %s/\n", url)
	// The commands act on this server's store given its settings.
	settings := "--data-dir " + cfg.DataDir
	if cfg.ConfigFile != "" {
		settings = "--config " + cfg.ConfigFile + " " + settings
	}
	if bootstrap != "" {
		fmt.Fprintf(out, `
No one can sign in yet. Open this one-time link to create your account and
its owner (it works once, for 7 days; each start without users makes a new one):
  %s/join?token=%s
Your browser will warn about the self-signed certificate unless you trust
%s (its fingerprint is above).
For an account made with "aivis account create", invite its first user instead:
  %s user invite %s --account <account id> --email <email>
`, url, bootstrap, mat.CertFile, os.Args[0], settings)
	}
	fmt.Fprintf(out, "data directory: %s\n", cfg.DataDir)
	fmt.Fprintf(out, `
Sign in at %[3]s/ to generate keys in the browser, or get credentials
from another terminal:
  %[4]s account create %[1]s --name "My company" --tier starter
  %[4]s key create %[1]s --account <account id> --name "my first key"
Then call the API (the secret is shown once):
  curl --cacert %[2]s -H "X-API-Key: <key>" -H "X-API-Secret: <secret>" %[3]s/api/v1/ai/budget-status
API reference: %[3]s/openapi.json
`, settings, mat.CertFile, url, os.Args[0])
}
