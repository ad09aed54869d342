// Package health answers whether the server lives and whether it is ready
// to serve: /livez (the process answers), /readyz (the parts it needs, the
// store, the bus and the counter, answer within a short deadline; 503
// naming those that did not, by kind, and 503 while it drains at
// shutdown; 200 naming what is degraded, a registered connector that does
// not run, which a ready process does without), and /healthz, which is
// /livez.
package health

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A Check asks one part the server needs whether it answers.
type Check struct {
	// Part is its kind, the name /readyz gives of it: store, bus, counter.
	Part string
	Ping func(context.Context) error
}

// Health answers the probes of one process.
type Health struct {
	checks   []Check
	timeout  time.Duration
	log      *slog.Logger
	draining atomic.Bool
	degraded atomic.Pointer[func() []string]
	mu       sync.Mutex
	failing  string // what the last answer of Ready found failing, for the log's changes
	lessened string // what the last answer found degraded, likewise
}

// Degraded has /readyz name, while the process is ready, what f lists:
// what it does without, as "kind:name" (connector:slack, a registered
// connector that does not run here, whose deliveries wait). A process so
// degraded is still ready: it serves, and another instance could not do
// better with the same binaries.
func (h *Health) Degraded(f func() []string) { h.degraded.Store(&f) }

// lacking is what is degraded, once more said in the log when it changes.
func (h *Health) lacking() []string {
	f := h.degraded.Load()
	if f == nil {
		return nil
	}
	out := (*f)()
	switch h.changed(&h.lessened, out) {
	case "became":
		h.log.Warn("ready, but degraded", "degraded", out)
	case "ended":
		h.log.Info("no longer degraded")
	}
	return out
}

// changed notes what a probe found (failing or degraded, in *last) and
// says how it changed since the last probe: "became" (something now, and
// not the same), "ended" (nothing now, something before), or "".
func (h *Health) changed(last *string, found []string) string {
	now := ""
	if len(found) > 0 {
		b, _ := json.Marshal(found)
		now = string(b)
	}
	h.mu.Lock()
	before := *last
	*last = now
	h.mu.Unlock()
	switch {
	case now == before:
		return ""
	case now != "":
		return "became"
	}
	return "ended"
}

// New asks checks within timeout (at most 2 s when 0).
func New(log *slog.Logger, timeout time.Duration, checks ...Check) *Health {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Health{checks: checks, timeout: timeout, log: log}
}

// Drain makes Ready say no from now on: the process is stopping, and load
// balancers take it out before its listeners close.
func (h *Health) Drain() { h.draining.Store(true) }

// Draining reports whether Drain was called.
func (h *Health) Draining() bool { return h.draining.Load() }

// Ready asks every part at once, each within the timeout, and names those
// that did not answer, in the order of the checks. The log says when the
// answer changes (the first failure with why, and the return), not at
// every probe.
func (h *Health) Ready(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	errs := make([]error, len(h.checks))
	var wg sync.WaitGroup
	for i, c := range h.checks {
		wg.Go(func() { errs[i] = c.Ping(ctx) })
	}
	wg.Wait()
	var failing []string
	var why []any
	for i, err := range errs {
		if err != nil {
			failing = append(failing, h.checks[i].Part)
			why = append(why, h.checks[i].Part, err.Error())
		}
	}
	switch h.changed(&h.failing, failing) {
	case "became":
		h.log.Warn("not ready: a part does not answer", append([]any{"failing", failing}, why...)...)
	case "ended":
		h.log.Info("ready again: every part answers")
	}
	return failing
}

// Live answers /livez and /healthz: the process serves.
func (h *Health) Live(w http.ResponseWriter, _ *http.Request) {
	write(w, http.StatusOK, map[string]any{"status": "ok"})
}

// ServeReady answers /readyz: 200 when every part answers (naming what is
// degraded, if anything), else 503 with the parts that did not (by kind,
// never an address), or while the process drains.
func (h *Health) ServeReady(w http.ResponseWriter, r *http.Request) {
	if h.Draining() {
		write(w, http.StatusServiceUnavailable, map[string]any{"status": "draining"})
		return
	}
	if failing := h.Ready(r.Context()); failing != nil {
		write(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "failing": failing})
		return
	}
	if d := h.lacking(); len(d) > 0 {
		write(w, http.StatusOK, map[string]any{"status": "ready", "degraded": d})
		return
	}
	write(w, http.StatusOK, map[string]any{"status": "ready"})
}

// Paths are the probes' paths and their handlers.
func (h *Health) Paths() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{"/livez": h.Live, "/healthz": h.Live, "/readyz": h.ServeReady}
}

func write(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
