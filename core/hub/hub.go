// Package hub runs the connector plugins an operator registered, on every
// instance of the server: one supervised process each, from the binary
// this instance finds whose SHA-256 is one of the plugin's registered
// builds (Locate), so that instances of two versions of a cluster each run
// their own. It reads the registry again every RefreshInterval, so that a
// plugin registered, registered again or removed is started, swapped or
// stopped without a restart, and it reports the health of its connectors
// (with the build each runs) under this instance's name every
// HealthInterval, beside every other instance's.
package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/text"
	"github.com/aivis/aivis/core/tracing"
	"github.com/aivis/aivis/plugins/host"
	"github.com/aivis/aivis/plugins/sdk"
)

const (
	// HealthInterval is how often a running connector is health-checked,
	// and how often an instance reports its connectors' health.
	HealthInterval = 10 * time.Second
	// RefreshInterval is how often the registry is read again.
	RefreshInterval = 5 * time.Second
	// staleReports is how many health intervals an instance's report is
	// taken as current: one not renewed for that long is of an instance
	// that stopped, and is pruned.
	staleReports = 3
	// callDeadline bounds each call of a plugin; a connector that is
	// swapped or removed waits that long (and a little) for its calls in
	// flight before its process is stopped.
	callDeadline = 30 * time.Second
	drainTimeout = callDeadline + 5*time.Second
	// infoTimeout bounds the first call of a connector just started.
	infoTimeout = 10 * time.Second
)

// ReportedSince is how old, at now, the oldest report of an instance
// still taken as current is: an instance that did not report since
// stopped.
func ReportedSince(now time.Time) time.Time { return now.Add(-staleReports * HealthInterval) }

// PluginsDir is the plugins directory of an instance whose data
// directory is dataDir: where it looks for the binaries of registered
// plugins not at their registered path.
func PluginsDir(dataDir string) string { return filepath.Join(dataDir, "plugins") }

// Connector is one registered plugin as the API shows it.
type Connector struct {
	Record store.PluginRecord
	Info   sdk.Info // as the plugin described itself; zero if it never started
	// Health is the connector's here: its State is unavailable when this
	// instance found no binary of a registered build to start.
	Health host.Health
	// SHA256 is the build this instance found and starts; nil when none.
	SHA256 []byte
	// Problem says why the connector is unavailable ("" when it runs).
	Problem string
	// Instances is the health of the connector on every instance that
	// reports it, by instance: this one's as it is now, the others' as of
	// their last report, if it is current.
	Instances []store.PluginHealth
}

type entry struct {
	name  string
	path  string           // where this instance found the binary; "" when nowhere
	sum   []byte           // its SHA-256, one of the registered builds'
	sup   *host.Supervisor // nil when the binary was not found
	calls sync.WaitGroup   // calls in flight, waited for when it is retired

	mu      sync.Mutex
	rec     store.PluginRecord // as last read: its builds may change while it runs
	info    sdk.Info
	problem string
}

// record is the registration as last read.
func (e *entry) record() store.PluginRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rec
}

// scrub replaces the paths of the connector's binary in a text by the
// binary's name, any other path by its last element, and an IP address by
// "[address]": what the hub says of a connector reaches accounts, who are
// told nothing of the server's file system or network. The text, which may hold
// what the plugin printed, is cleaned and cut to 1,024 bytes: it is kept
// in the store.
func (e *entry) scrub(s string) string {
	paths := []string{e.path}
	for _, b := range e.record().Builds {
		paths = append(paths, b.Path)
	}
	for _, p := range paths {
		if p != "" {
			s = strings.ReplaceAll(s, p, filepath.Base(p))
		}
	}
	// Any other path (a socket's, what the plugin printed) by its name
	// alone, and no address.
	s = otherPath.ReplaceAllStringFunc(s, func(m string) string {
		i := strings.IndexByte(m, '/')
		return m[:i] + filepath.Base(m[i:])
	})
	s = address.ReplaceAllString(s, "[address]")
	return text.Clean(s, 1024)
}

var (
	otherPath = regexp.MustCompile(`(?:^|[\s"'(=])/[^\s"'():,]+`)
	address   = regexp.MustCompile(`\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|\[[0-9a-fA-F:]*:[0-9a-fA-F:.]*\](?::\d+)?`)
)

// Registry is what the hub reads and writes of the store: the registered
// plugins and the health each instance reports of them.
type Registry interface {
	ListPlugins(ctx context.Context) ([]store.PluginRecord, error)
	PutPluginHealth(ctx context.Context, instance string, hs []store.PluginHealth) error
	ListPluginHealth(ctx context.Context, since time.Time) ([]store.PluginHealth, error)
	PrunePluginHealth(ctx context.Context, before time.Time) error
}

// Options configure a hub.
type Options struct {
	// Dir is this instance's plugins directory (PluginsDir).
	Dir string
	// Policy is the outbound policy the plugins are given.
	Policy netguard.Policy
	// Instance names this process in the health it reports (its holder
	// name in the store); "" reports none.
	Instance string
	Log      *slog.Logger
	// Refresh and Health replace RefreshInterval and HealthInterval
	// (tests).
	Refresh, Health time.Duration
	// Metrics counts the plugins' calls (nil: none).
	Metrics *metrics.Connectors
}

// Hub holds the supervised plugins.
type Hub struct {
	reg  Registry
	opt  Options
	log  *slog.Logger
	env  []string
	sums checksums // of the refresh alone

	mu       sync.RWMutex
	entries  []*entry             // by name; replaced whole by a refresh
	reported []store.PluginHealth // the other instances' current reports, as last read

	ctx    context.Context // ended by Close
	cancel context.CancelFunc
	quit   chan struct{}
	wg     sync.WaitGroup // the loops and the connectors being retired
	closed sync.Once
}

// Open starts every registered plugin whose binary this instance has,
// giving it the outbound policy, and reports their health; binaries in
// the plugins directory that are not registered are reported in the log.
// A plugin that fails to start is reported, not fatal: the server runs
// without it. Then, until Close, the hub follows the registry and reports
// the health of its connectors.
func Open(ctx context.Context, reg Registry, opt Options) (*Hub, error) {
	if opt.Refresh <= 0 {
		opt.Refresh = RefreshInterval
	}
	if opt.Health <= 0 {
		opt.Health = HealthInterval
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	h := &Hub{reg: reg, opt: opt, log: opt.Log, env: PolicyEnv(opt.Policy), quit: make(chan struct{})}
	h.ctx, h.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if _, err := h.refresh(ctx); err != nil {
		h.cancel()
		return nil, err
	}
	h.discover()
	h.report(ctx)
	h.wg.Go(func() {
		h.every(h.opt.Refresh, func() {
			changed, err := h.refresh(h.ctx)
			if err != nil && h.ctx.Err() == nil {
				h.log.Warn("connectors: the registry could not be read; the connectors run on as they were", "err", err)
			}
			if changed {
				h.report(h.ctx) // at once, not at the next interval
			}
		})
	})
	h.wg.Go(func() { h.every(h.opt.Health, func() { h.report(h.ctx) }) })
	return h, nil
}

// every runs f every interval until Close.
func (h *Hub) every(interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-h.quit:
			return
		case <-t.C:
			f()
		}
	}
}

// refresh reads the registry and follows it: a registration that is new,
// or whose binary this instance had not found, is started; one removed
// is retired; one that runs a build no longer registered, or for which
// this instance finds another registered build (a newer one registered),
// is started anew and the old one retired once its new one runs, so that
// calls never find it missing. One that runs a registered build runs on
// even if its file changed meanwhile: what runs is what was registered.
// changed says whether any was.
func (h *Hub) refresh(ctx context.Context) (changed bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, infoTimeout)
	recs, err := h.reg.ListPlugins(rctx)
	cancel()
	if err != nil {
		return false, err
	}
	h.mu.RLock()
	cur := h.entries // only the refresh replaces it
	h.mu.RUnlock()
	next := make([]*entry, 0, len(recs))
	var retired []*entry
	for _, rec := range recs {
		i := slices.IndexFunc(cur, func(e *entry) bool { return e.name == rec.Name })
		if i < 0 {
			next = append(next, h.start(ctx, rec))
			changed = true
			continue
		}
		e := cur[i]
		path, sum, problem := h.sums.locate(rec, h.opt.Dir)
		switch {
		case e.sup != nil && rec.Trusts(e.sum) && (path == "" || path == e.path && bytes.Equal(sum, e.sum)),
			e.sup == nil && path == "":
			changed = e.update(rec, path, problem) || changed
			next = append(next, e)
			continue
		case e.sup == nil:
			h.log.Info("connector binary found: starting it", "connector", rec.Name)
		default:
			h.log.Info("connector registered again: starting it anew", "connector", rec.Name)
		}
		retired = append(retired, e)
		next = append(next, h.startFrom(ctx, rec, path, sum, problem))
		changed = true
	}
	for _, e := range cur {
		if !slices.ContainsFunc(recs, func(r store.PluginRecord) bool { return r.Name == e.name }) {
			h.log.Info("connector no longer registered: stopping it", "connector", e.name)
			retired = append(retired, e)
			changed = true
		}
	}
	h.mu.Lock()
	h.entries = next
	h.mu.Unlock()
	for _, e := range retired {
		h.retire(e)
	}
	return changed, nil
}

// update keeps a registration read again for a connector that runs on as
// it was, or is still found nowhere (why, when path is ""); changed says
// whether what it reports changed.
func (e *entry) update(rec store.PluginRecord, path, problem string) (changed bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	changed = len(rec.Builds) != len(e.rec.Builds) || rec.Version != e.rec.Version
	e.rec = rec
	if path == "" && e.sup == nil {
		changed = changed || e.problem != problem
		e.problem = problem
	}
	return changed
}

// start starts a registered plugin from the binary this instance has.
func (h *Hub) start(ctx context.Context, rec store.PluginRecord) *entry {
	path, sum, problem := h.sums.locate(rec, h.opt.Dir)
	return h.startFrom(ctx, rec, path, sum, problem)
}

// startFrom starts a registered plugin from the binary at path, whose
// SHA-256 is sum; with none (path ""), it is unavailable for problem.
func (h *Hub) startFrom(ctx context.Context, rec store.PluginRecord, path string, sum []byte, problem string) *entry {
	e := &entry{name: rec.Name, rec: rec, path: path, sum: sum, problem: problem}
	if e.path == "" {
		h.log.Warn("connector not started", "connector", rec.Name, "path", rec.Path, "why", e.problem)
		return e
	}
	e.sup = host.Supervise(host.Options{Path: e.path, Checksum: sum, Env: h.env,
		Log: h.log.With("connector", rec.Name)}, callDeadline)
	e.sup.Watch(h.opt.Health)
	ictx, cancel := context.WithTimeout(ctx, infoTimeout)
	info, err := e.sup.Info(ictx)
	cancel()
	if err != nil {
		h.log.Warn("connector did not start", "connector", rec.Name, "err", err)
		e.problem = e.scrub(err.Error())
		return e
	}
	e.info = info
	h.log.Info("connector started", "connector", rec.Name, "version", info.Version, "path", e.path, "sha256", fmt.Sprintf("%x", sum))
	return e
}

// retire stops a connector that was removed or replaced once the calls
// it has in flight have ended (within drainTimeout; at once on Close):
// they finish on it, and the next calls find its successor or none.
func (h *Hub) retire(e *entry) {
	if e.sup == nil {
		return
	}
	h.wg.Go(func() {
		drained := make(chan struct{})
		go func() { e.calls.Wait(); close(drained) }()
		t := time.NewTimer(drainTimeout)
		defer t.Stop()
		select {
		case <-drained:
		case <-t.C:
			h.log.Warn("connector stopped with calls in flight", "connector", e.name)
		case <-h.quit:
		}
		e.sup.Stop()
	})
}

// report writes the health of this instance's connectors to the store
// under its name, prunes the reports of instances that stopped, and
// reads the others' current reports.
func (h *Hub) report(ctx context.Context) {
	if h.opt.Instance == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, HealthInterval)
	defer cancel()
	now := time.Now()
	stale := now.Add(-staleReports * h.opt.Health)
	h.mu.RLock()
	entries := h.entries
	h.mu.RUnlock()
	own := make([]store.PluginHealth, len(entries))
	for i, e := range entries {
		own[i] = h.own(e.connector(), now)
	}
	err := h.reg.PutPluginHealth(ctx, h.opt.Instance, own)
	if err == nil {
		err = h.reg.PrunePluginHealth(ctx, stale)
	}
	var all []store.PluginHealth
	if err == nil {
		all, err = h.reg.ListPluginHealth(ctx, stale)
	}
	if err != nil {
		if h.ctx.Err() == nil {
			h.log.Warn("connectors: the health of this instance could not be reported", "err", err)
		}
		return
	}
	others := slices.DeleteFunc(all, func(p store.PluginHealth) bool { return p.Instance == h.opt.Instance })
	h.mu.Lock()
	h.reported = others
	h.mu.Unlock()
}

// discover reports executables in the plugins directory that are not the
// binary of a registered plugin.
func (h *Hub) discover() {
	ents, err := os.ReadDir(h.opt.Dir)
	if err != nil {
		return
	}
	for _, de := range ents {
		path := filepath.Join(h.opt.Dir, de.Name())
		if !executable(path) {
			continue
		}
		if !slices.ContainsFunc(h.entries, func(e *entry) bool { return e.path == path || e.record().Path == path }) {
			h.log.Warn("connector plugin found but not registered", "path", path, "register", "aivis plugin register "+path)
		}
	}
}

func executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// Locate finds where this instance has the binary of a registered plugin:
// of the plugin's builds, newest first, the path it was registered from
// if the file there has one of the registered SHA-256; else in dir (this
// instance's plugins directory) a file named as a registered one, else any
// executable file there, with one of them. Found nowhere, problem says
// why, naming no path.
func Locate(rec store.PluginRecord, dir string) (path string, sum []byte, problem string) {
	var c checksums
	return c.locate(rec, dir)
}

// checksums are the SHA-256 of the files looked at, kept while their size
// and modification time stay the same, so that a binary still missing is
// looked for again at every refresh without hashing every file again.
// The check that counts is made when the plugin starts (host.Start).
type checksums map[string]checksum

type checksum struct {
	size int64
	mod  time.Time
	sum  []byte
}

func (c *checksums) of(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a file", path)
	}
	if k, ok := (*c)[path]; ok && k.size == st.Size() && k.mod.Equal(st.ModTime()) {
		return k.sum, nil
	}
	sum, err := host.Checksum(path)
	if err != nil {
		return nil, err
	}
	if *c == nil {
		*c = checksums{}
	}
	(*c)[path] = checksum{size: st.Size(), mod: st.ModTime(), sum: sum}
	return sum, nil
}

func (c *checksums) locate(rec store.PluginRecord, dir string) (string, []byte, string) {
	problem := "the binary is not on this instance: not where it was registered from, nor with a registered SHA-256 in the plugins directory"
	builds := rec.Builds
	if len(builds) == 0 {
		builds = []store.PluginBuild{{SHA256: rec.SHA256, Path: rec.Path}}
	}
	var candidates []string
	add := func(p string) {
		if !slices.Contains(candidates, p) {
			candidates = append(candidates, p)
		}
	}
	for i := len(builds) - 1; i >= 0; i-- {
		add(builds[i].Path)
	}
	registered := len(candidates)
	for i := len(builds) - 1; i >= 0; i-- {
		add(filepath.Join(dir, filepath.Base(builds[i].Path)))
	}
	if ents, err := os.ReadDir(dir); err == nil {
		for _, de := range ents {
			if p := filepath.Join(dir, de.Name()); executable(p) {
				add(p)
			}
		}
	}
	for i, p := range candidates {
		sum, err := c.of(p)
		switch {
		case err != nil:
		case rec.Trusts(sum):
			return p, sum, ""
		case i < registered:
			problem = fmt.Sprintf("the binary changed since it was registered: its SHA-256 %x… is not one of a registered build; "+
				"register it (aivis plugin register)", sum[:4])
		}
	}
	return "", nil, problem
}

// PolicyEnv is the environment that passes an outbound policy to plugins.
func PolicyEnv(p netguard.Policy) []string {
	var env []string
	if p.AllowPrivate {
		env = append(env, sdk.EnvAllowPrivate+"=true")
	}
	if len(p.Allow) > 0 {
		var cidrs []string
		for _, a := range p.Allow {
			cidrs = append(cidrs, a.String())
		}
		env = append(env, sdk.EnvAllowedTargets+"="+strings.Join(cidrs, ","))
	}
	return env
}

// Connectors lists the registered connectors by name, with their health
// here and on every instance that reports it.
func (h *Hub) Connectors() []Connector {
	now := time.Now()
	h.mu.RLock()
	entries, reported := h.entries, h.reported
	h.mu.RUnlock()
	out := make([]Connector, 0, len(entries))
	for _, e := range entries {
		c := e.connector()
		if h.opt.Instance != "" {
			c.Instances = append(c.Instances, h.own(c, now))
		}
		for _, r := range reported {
			if r.Plugin == e.name && now.Sub(r.CheckedAt) < staleReports*h.opt.Health {
				c.Instances = append(c.Instances, r)
			}
		}
		slices.SortFunc(c.Instances, func(a, b store.PluginHealth) int { return strings.Compare(a.Instance, b.Instance) })
		out = append(out, c)
	}
	return out
}

// Unavailable lists by name the registered connectors that do not run on
// this instance: its binary not found, or not started, or not running at
// the moment (its deliveries wait meanwhile).
func (h *Hub) Unavailable() []string {
	h.mu.RLock()
	entries := h.entries
	h.mu.RUnlock()
	var out []string
	for _, e := range entries {
		if e.sup == nil || e.sup.Health().State != "running" {
			out = append(out, e.name)
		}
	}
	return out
}

// connector is the connector as it runs here.
func (e *entry) connector() Connector {
	c := Connector{Health: host.Health{State: "unavailable"}, SHA256: e.sum}
	e.mu.Lock()
	c.Record, c.Info, c.Problem = e.rec, e.info, e.problem
	e.mu.Unlock()
	if e.sup != nil {
		c.Health = e.sup.Health()
		c.Health.LastError = e.scrub(c.Health.LastError)
	}
	if c.Info.SettingsSchema == nil {
		c.Info.SettingsSchema = json.RawMessage(`{}`)
	}
	return c
}

// own is a connector's health on this instance, checked at now.
func (h *Hub) own(c Connector, now time.Time) store.PluginHealth {
	return store.PluginHealth{Instance: h.opt.Instance, Plugin: c.Record.Name, State: c.Health.State,
		Restarts: c.Health.Restarts, Problem: c.Problem, SHA256: c.SHA256, CheckedAt: now}
}

// ErrUnknown is the error of a call to a connector that is not
// registered; ErrUnavailable, to one that is but does not run here (no
// binary of a registered build, or one that does not start): no call of
// the plugin was made.
var (
	ErrUnknown     = errors.New("connector not registered")
	ErrUnavailable = errors.New("connector unavailable")
)

// use runs f on a running connector, with its info (asked of the plugin
// again if it could not describe itself at start), as one of its calls in
// flight: a connector swapped or removed meanwhile is stopped only once f
// has returned.
func (h *Hub) use(ctx context.Context, name string, f func(e *entry, info sdk.Info) error) error {
	h.mu.RLock()
	i := slices.IndexFunc(h.entries, func(e *entry) bool { return e.name == name })
	var e *entry
	if i >= 0 {
		e = h.entries[i]
		e.calls.Add(1) // under the lock: a refresh retires it only after
	}
	h.mu.RUnlock()
	if e == nil {
		return fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	defer e.calls.Done()
	e.mu.Lock()
	info, problem := e.info, e.problem
	e.mu.Unlock()
	if e.sup == nil {
		return fmt.Errorf("%w: %s: %s", ErrUnavailable, name, problem)
	}
	if info.Name == "" {
		got, err := e.sup.Info(ctx)
		if err != nil {
			return fmt.Errorf("%w: %s: %s", ErrUnavailable, name, e.scrub(err.Error()))
		}
		e.mu.Lock()
		e.info, e.problem, info = got, "", got
		e.mu.Unlock()
	}
	if err := f(e, info); errors.Is(err, host.ErrUnavailable) {
		// Not running, and not started: no call of it was made.
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, name, err)
	} else if err != nil {
		return err
	}
	return nil
}

// Info is how a running connector describes itself.
func (h *Hub) Info(ctx context.Context, name string) (sdk.Info, error) {
	var out sdk.Info
	err := h.use(ctx, name, func(_ *entry, info sdk.Info) error { out = info; return nil })
	return out, err
}

// ValidateSettings asks a connector what is wrong with settings.
func (h *Hub) ValidateSettings(ctx context.Context, name string, settings json.RawMessage) (_ []sdk.FieldError, err error) {
	ctx, span := startCall(ctx, name, "validate", 0)
	defer func() { endCall(span, err) }()
	var fes []sdk.FieldError
	err = h.use(ctx, name, func(e *entry, info sdk.Info) error {
		var err error
		start := time.Now()
		fes, err = e.sup.ValidateSettings(ctx, settings)
		h.opt.Metrics.Call(e.name, metrics.CallValidate, time.Since(start), err)
		secrets := secretValues(settings, info.SecretFields)
		for i := range fes {
			fes[i].Message = sdk.Redact(fes[i].Message, secrets...)
		}
		return e.redact(err, secrets)
	})
	return fes, err
}

// Test has a connector deliver one test event.
func (h *Hub) Test(ctx context.Context, name string, settings json.RawMessage, ev sdk.Event) (sdk.Result, error) {
	rs, err := h.results(ctx, name, "test", settings, 1, func(ctx context.Context, sup *host.Supervisor) ([]sdk.Result, error) {
		r, err := sup.Test(ctx, settings, ev)
		return []sdk.Result{r}, err
	})
	if err != nil {
		return sdk.Result{}, err
	}
	return rs[0], nil
}

// Deliver has a connector deliver events; an error is the plugin's failure.
func (h *Hub) Deliver(ctx context.Context, name string, settings json.RawMessage, evs []sdk.Event) ([]sdk.Result, error) {
	return h.results(ctx, name, "deliver", settings, len(evs), func(ctx context.Context, sup *host.Supervisor) ([]sdk.Result, error) {
		return sup.Deliver(ctx, settings, evs)
	})
}

// results makes a call of a connector with settings, and redacts what it
// says: here, for every caller (the delivery log, a connection test, the
// logs), no reason or error carries the value of a secret setting, a
// secret URL's path, or any URL's query or user information
// (sdk.Redact), whatever the connector wrote, nor an error the path of its
// binary. With tracing on, the call is a span (startCall).
func (h *Hub) results(ctx context.Context, name, method string, settings json.RawMessage, events int,
	call func(context.Context, *host.Supervisor) ([]sdk.Result, error)) (_ []sdk.Result, err error) {
	ctx, span := startCall(ctx, name, method, events)
	defer func() { endCall(span, err) }()
	var rs []sdk.Result
	err = h.use(ctx, name, func(e *entry, info sdk.Info) error {
		var err error
		start := time.Now()
		rs, err = call(ctx, e.sup)
		h.opt.Metrics.Call(e.name, method, time.Since(start), err)
		secrets := secretValues(settings, info.SecretFields)
		for i := range rs {
			rs[i].Reason = sdk.Redact(rs[i].Reason, secrets...)
		}
		return e.redact(err, secrets)
	})
	return rs, err
}

// secretValues are the values of a connection's secret settings.
func secretValues(settings json.RawMessage, fields []string) []string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(settings, &m)
	var out []string
	for _, f := range fields {
		var s string
		if v, ok := m[f]; ok && json.Unmarshal(v, &s) != nil {
			s = string(v) // not a string: its JSON text
		}
		out = append(out, s)
	}
	return out
}

// redacted is an error whose text was redacted; errors.Is and errors.As
// still see what it wraps.
type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// redact is err, of a call of the connector, told without secrets or
// the path of its binary.
func (e *entry) redact(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	return &redacted{msg: sdk.Redact(e.scrub(err.Error()), secrets...), err: err}
}

// startCall starts the span of a call of a connector when tracing is on:
// "connector deliver", "connector test" or "connector validate", whose
// attributes are the connector's name, the call and the events it
// carries.
func startCall(ctx context.Context, name, method string, events int) (context.Context, trace.Span) {
	if !tracing.Enabled() {
		return tracing.Start(ctx, "")
	}
	attrs := []attribute.KeyValue{tracing.Connector.String(name), tracing.ConnectorCall.String(method)}
	if events > 0 {
		attrs = append(attrs, tracing.Deliveries.Int(events))
	}
	return tracing.Start(ctx, "connector "+method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// endCall ends a call's span: an error is the plugin's failure (not
// registered, not running, crashed, past its deadline), said by kind.
func endCall(span trace.Span, err error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrUnknown):
		tracing.Fail(span, "unknown")
	case errors.Is(err, ErrUnavailable):
		tracing.Fail(span, "unavailable")
	case errors.Is(err, context.DeadlineExceeded):
		tracing.Fail(span, "timeout")
	default:
		tracing.Fail(span, "plugin")
	}
	span.End()
}

// MaxBatch is how many events one Deliver of a connector may carry.
func (h *Hub) MaxBatch(name string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, e := range h.entries {
		if e.name == name {
			e.mu.Lock()
			defer e.mu.Unlock()
			return max(e.info.MaxBatch, 1)
		}
	}
	return 1
}

// Close stops following the registry, stops every plugin (those being
// retired too) and forgets this instance's health in the store.
func (h *Hub) Close() {
	h.closed.Do(func() {
		h.cancel()
		close(h.quit)
		h.wg.Wait()
		h.mu.RLock()
		entries := h.entries
		h.mu.RUnlock()
		for _, e := range entries {
			if e.sup != nil {
				e.sup.Stop()
			}
		}
		if h.opt.Instance != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := h.reg.PutPluginHealth(ctx, h.opt.Instance, nil); err != nil {
				h.log.Warn("connectors: the health of this instance could not be forgotten", "err", err)
			}
		}
	})
}
