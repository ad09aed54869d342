// Package hub runs the connector plugins an operator registered: one
// supervised process each, started when the server starts if its binary
// still has the registered SHA-256, and stopped with the server.
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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/plugins/host"
	"github.com/aivis/aivis/plugins/sdk"
)

// HealthInterval is how often a running connector is health-checked.
const HealthInterval = 10 * time.Second

// Connector is one registered plugin as the API shows it.
type Connector struct {
	Record store.PluginRecord
	Info   sdk.Info // as the plugin described itself; zero if it never started
	Health host.Health
	// Problem says why the connector is unavailable ("" when it runs).
	Problem string
}

type entry struct {
	rec     store.PluginRecord
	sup     *host.Supervisor // nil when the binary changed or is missing
	mu      sync.Mutex
	info    sdk.Info
	problem string
}

// Hub holds the supervised plugins.
type Hub struct {
	log     *slog.Logger
	entries []*entry
}

// Registry is where plugins are registered: what the hub reads of the
// store.
type Registry interface {
	ListPlugins(ctx context.Context) ([]store.PluginRecord, error)
}

// Open starts every registered plugin whose binary is unchanged, giving it
// the outbound policy; dir is searched for binaries that are not
// registered, which are reported in the log. A plugin that fails to start
// is reported, not fatal: the server runs without it.
func Open(ctx context.Context, st Registry, dir string, policy netguard.Policy, log *slog.Logger) (*Hub, error) {
	recs, err := st.ListPlugins(ctx)
	if err != nil {
		return nil, err
	}
	h := &Hub{log: log}
	env := PolicyEnv(policy)
	for _, rec := range recs {
		e := &entry{rec: rec}
		h.entries = append(h.entries, e)
		sum, err := host.Checksum(rec.Path)
		switch {
		case err != nil:
			e.problem = "the binary is missing: " + err.Error()
		case !bytes.Equal(sum, rec.SHA256):
			e.problem = "the binary changed since it was registered; register it again"
		default:
			e.sup = host.Supervise(host.Options{Path: rec.Path, Checksum: rec.SHA256, Env: env,
				Log: log.With("connector", rec.Name)}, 30*time.Second)
			e.sup.Watch(HealthInterval)
		}
		if e.problem != "" {
			log.Warn("connector not started", "connector", rec.Name, "path", rec.Path, "why", e.problem)
			continue
		}
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		info, err := e.sup.Info(ictx)
		cancel()
		if err != nil {
			log.Warn("connector did not start", "connector", rec.Name, "err", err)
			e.problem = err.Error()
			continue
		}
		e.info = info
		log.Info("connector started", "connector", rec.Name, "version", info.Version)
	}
	h.discover(dir, recs)
	return h, nil
}

// discover reports executables in dir that are not registered.
func (h *Hub) discover(dir string, recs []store.PluginRecord) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range ents {
		path := filepath.Join(dir, de.Name())
		st, err := os.Stat(path)
		if err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			continue
		}
		if !slices.ContainsFunc(recs, func(r store.PluginRecord) bool { return r.Path == path }) {
			h.log.Warn("connector plugin found but not registered", "path", path, "register", "aivis plugin register "+path)
		}
	}
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

// Connectors lists the registered connectors by name, with their health.
func (h *Hub) Connectors() []Connector {
	out := make([]Connector, 0, len(h.entries))
	for _, e := range h.entries {
		c := Connector{Record: e.rec, Health: host.Health{State: "stopped"}}
		e.mu.Lock()
		c.Info, c.Problem = e.info, e.problem
		e.mu.Unlock()
		if e.sup != nil {
			c.Health = e.sup.Health()
		}
		if c.Info.SettingsSchema == nil {
			c.Info.SettingsSchema = json.RawMessage(`{}`)
		}
		out = append(out, c)
	}
	return out
}

// ErrUnknown is the error of a call to a connector that is not
// registered; ErrUnavailable, to one that is but does not run.
var (
	ErrUnknown     = errors.New("connector not registered")
	ErrUnavailable = errors.New("connector unavailable")
)

// running finds a connector's supervisor, and its info, asking the plugin
// again if it could not describe itself at start.
func (h *Hub) running(ctx context.Context, name string) (*host.Supervisor, sdk.Info, error) {
	i := slices.IndexFunc(h.entries, func(e *entry) bool { return e.rec.Name == name })
	if i < 0 {
		return nil, sdk.Info{}, fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	e := h.entries[i]
	e.mu.Lock()
	info, problem := e.info, e.problem
	e.mu.Unlock()
	if e.sup == nil {
		return nil, info, fmt.Errorf("%w: %s: %s", ErrUnavailable, name, problem)
	}
	if info.Name == "" {
		got, err := e.sup.Info(ctx)
		if err != nil {
			return nil, info, fmt.Errorf("%w: %s: %v", ErrUnavailable, name, err)
		}
		e.mu.Lock()
		e.info, e.problem, info = got, "", got
		e.mu.Unlock()
	}
	return e.sup, info, nil
}

// Info is how a running connector describes itself.
func (h *Hub) Info(ctx context.Context, name string) (sdk.Info, error) {
	_, info, err := h.running(ctx, name)
	return info, err
}

// ValidateSettings asks a connector what is wrong with settings.
func (h *Hub) ValidateSettings(ctx context.Context, name string, settings json.RawMessage) ([]sdk.FieldError, error) {
	sup, info, err := h.running(ctx, name)
	if err != nil {
		return nil, err
	}
	fes, err := sup.ValidateSettings(ctx, settings)
	secrets := secretValues(settings, info.SecretFields)
	for i := range fes {
		fes[i].Message = sdk.Redact(fes[i].Message, secrets...)
	}
	return fes, redactError(err, secrets)
}

// Test has a connector deliver one test event.
func (h *Hub) Test(ctx context.Context, name string, settings json.RawMessage, ev sdk.Event) (sdk.Result, error) {
	rs, err := h.results(ctx, name, settings, func(sup *host.Supervisor) ([]sdk.Result, error) {
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
	return h.results(ctx, name, settings, func(sup *host.Supervisor) ([]sdk.Result, error) {
		return sup.Deliver(ctx, settings, evs)
	})
}

// results makes a call of a connector with settings, and redacts what it
// says: here, for every caller (the delivery log, a connection test, the
// logs), no reason or error carries the value of a secret setting, a
// secret URL's path, or any URL's query or user information
// (sdk.Redact), whatever the connector wrote.
func (h *Hub) results(ctx context.Context, name string, settings json.RawMessage,
	call func(*host.Supervisor) ([]sdk.Result, error)) ([]sdk.Result, error) {
	sup, info, err := h.running(ctx, name)
	if err != nil {
		return nil, err
	}
	rs, err := call(sup)
	secrets := secretValues(settings, info.SecretFields)
	for i := range rs {
		rs[i].Reason = sdk.Redact(rs[i].Reason, secrets...)
	}
	return rs, redactError(err, secrets)
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

func redactError(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	return &redacted{msg: sdk.Redact(err.Error(), secrets...), err: err}
}

// MaxBatch is how many events one Deliver of a connector may carry.
func (h *Hub) MaxBatch(name string) int {
	for _, e := range h.entries {
		if e.rec.Name == name {
			e.mu.Lock()
			defer e.mu.Unlock()
			return max(e.info.MaxBatch, 1)
		}
	}
	return 1
}

// Close stops every plugin.
func (h *Hub) Close() {
	for _, e := range h.entries {
		if e.sup != nil {
			e.sup.Stop()
		}
	}
}
