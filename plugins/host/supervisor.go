package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aivis/aivis/plugins/sdk"
)

// Health of a supervised plugin.
type Health struct {
	State     string    // starting, running, restarting, stopped
	Restarts  int       // since the supervisor started
	LastError string    // why it last failed, "" if it never did
	Since     time.Time // when State began
}

// Supervisor keeps one plugin running: it starts it, notices when it has
// exited, restarts it with exponential backoff, and bounds every call by a
// deadline so a hanging plugin cannot hold a caller. It is safe for
// concurrent use.
type Supervisor struct {
	opt      Options
	deadline time.Duration
	backoff  func(n int) time.Duration

	mu      sync.Mutex
	cur     *Plugin
	health  Health
	next    time.Time // no start before this (backoff)
	crashes int       // failures since the last successful call: the backoff's step
	stopped bool
	done    chan struct{} // closed by Stop
}

// Supervise starts supervising the plugin of opt; calls have deadline
// each (default 30 s).
func Supervise(opt Options, deadline time.Duration) *Supervisor {
	if deadline <= 0 {
		deadline = 30 * time.Second
	}
	return &Supervisor{opt: opt, deadline: deadline, backoff: Backoff, done: make(chan struct{}),
		health: Health{State: "starting", Since: time.Now()}}
}

// Pid is the process id of the running plugin, 0 when none runs.
func (s *Supervisor) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil || s.cur.Exited() {
		return 0
	}
	return s.cur.Pid()
}

// Watch health-checks the plugin every interval until Stop: it pings the
// plugin, and one that exited or does not answer is restarted (after its
// backoff) without waiting for a call to need it.
func (s *Supervisor) Watch(every time.Duration) {
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
			}
			p, err := s.plugin()
			if err != nil {
				continue // not running yet: the next tick tries again
			}
			ctx, cancel := context.WithTimeout(context.Background(), min(every, s.deadline))
			err = p.Ping(ctx)
			cancel()
			if err != nil {
				s.failed(p, fmt.Errorf("health check: %w", err))
			}
		}
	}()
}

// Backoff is the wait before the n-th restart in a row: 250 ms doubling to
// at most 30 s.
func Backoff(n int) time.Duration {
	d := 250 * time.Millisecond
	for range min(n, 8) {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// ErrUnavailable is wrapped by the error of a call made while the plugin
// cannot be started (its backoff has not passed, or it failed to start):
// no call of it was made, and the caller retries later.
var ErrUnavailable = errors.New("host: plugin unavailable")

// plugin returns a running plugin, starting or restarting it if needed.
func (s *Supervisor) plugin() (*Plugin, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, fmt.Errorf("%w: stopped", ErrUnavailable)
	}
	if s.cur != nil && !s.cur.Exited() {
		return s.cur, nil
	}
	if s.cur != nil { // it crashed
		s.cur.Kill()
		s.cur = nil
		s.health.Restarts++
		s.crashes++
		s.health.LastError = "the plugin process exited"
		s.next = time.Now().Add(s.backoff(s.crashes))
		s.health.State, s.health.Since = "restarting", time.Now()
	}
	if time.Now().Before(s.next) {
		return nil, &backoffError{until: s.next, why: s.health.LastError}
	}
	p, err := Start(s.opt)
	if err != nil {
		s.health.Restarts++
		s.crashes++
		s.health.LastError = err.Error()
		s.next = time.Now().Add(s.backoff(s.crashes))
		s.health.State, s.health.Since = "restarting", time.Now()
		return nil, &startError{err}
	}
	s.cur = p
	s.health.State, s.health.Since = "running", time.Now()
	return p, nil
}

// failed notes a call that failed: a plugin that broke the protocol or
// missed its deadline is killed and started again on the next call.
func (s *Supervisor) failed(p *Plugin, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == p {
		p.Kill()
		s.health.LastError = err.Error()
	}
}

// Health reports the plugin's state.
func (s *Supervisor) Health() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.health
	if s.cur != nil && s.cur.Exited() && h.State == "running" {
		h.State = "restarting"
	}
	return h
}

// Stop kills the plugin and refuses further calls.
func (s *Supervisor) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		close(s.done)
	}
	s.stopped = true
	if s.cur != nil {
		s.cur.Kill()
		s.cur = nil
	}
	s.health.State, s.health.Since = "stopped", time.Now()
}

// backoffError is a call made while a plugin waits to be restarted.
type backoffError struct {
	until time.Time
	why   string
}

func (e *backoffError) Error() string {
	return fmt.Sprintf("%v: restarting after %s", ErrUnavailable, e.why)
}

func (e *backoffError) Unwrap() error { return ErrUnavailable }

// startError is a call that found the plugin not running and could not
// start it: the plugin is unavailable, and no call of it was made.
type startError struct{ err error }

func (e *startError) Error() string   { return e.err.Error() }
func (e *startError) Unwrap() []error { return []error{ErrUnavailable, e.err} }

// call runs f on the running plugin. A call made while the plugin waits to
// be restarted waits for it, as long as its context allows.
func call[T any](s *Supervisor, ctx context.Context, f func(context.Context, *sdk.Client) (T, error)) (T, error) {
	var zero T
	p, err := s.plugin()
	for be := (*backoffError)(nil); errors.As(err, &be); {
		dl, ok := ctx.Deadline()
		if ok && dl.Before(be.until) {
			return zero, err
		}
		select {
		case <-ctx.Done():
			return zero, err
		case <-time.After(time.Until(be.until)):
		}
		p, err = s.plugin()
	}
	if err != nil {
		return zero, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.deadline)
	defer cancel()
	v, err := f(ctx, p.Connector())
	if err != nil {
		s.failed(p, err)
		return zero, err
	}
	s.mu.Lock()
	s.crashes = 0 // it works again: a new crash starts the backoff over
	s.mu.Unlock()
	return v, nil
}

// Info asks the plugin to describe itself.
func (s *Supervisor) Info(ctx context.Context) (sdk.Info, error) {
	return call(s, ctx, func(ctx context.Context, c *sdk.Client) (sdk.Info, error) { return c.Info(ctx) })
}

// ValidateSettings asks the plugin what is wrong with settings.
func (s *Supervisor) ValidateSettings(ctx context.Context, settings json.RawMessage) ([]sdk.FieldError, error) {
	return call(s, ctx, func(ctx context.Context, c *sdk.Client) ([]sdk.FieldError, error) {
		return c.ValidateSettings(ctx, settings)
	})
}

// Test sends one test event.
func (s *Supervisor) Test(ctx context.Context, settings json.RawMessage, ev sdk.Event) (sdk.Result, error) {
	return call(s, ctx, func(ctx context.Context, c *sdk.Client) (sdk.Result, error) { return c.Test(ctx, settings, ev) })
}

// Deliver delivers events. An error means the plugin failed (crashed, hung,
// broke the protocol): every event is to be retried.
func (s *Supervisor) Deliver(ctx context.Context, settings json.RawMessage, events []sdk.Event) ([]sdk.Result, error) {
	return call(s, ctx, func(ctx context.Context, c *sdk.Client) ([]sdk.Result, error) {
		return c.Deliver(ctx, settings, events)
	})
}
