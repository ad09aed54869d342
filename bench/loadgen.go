// Package bench holds aivis's end-to-end performance benchmarks and the
// small load generator they drive the server with. Run them with
// `make bench`; docs/benchmarks.md has the method and the figures.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Target is what the generator sends requests to. Every worker opens its
// own Conn; request i of a run is built from variant i (a target cycles
// through its variants, e.g. one per API key, round-robin).
type Target interface {
	Dial(ctx context.Context) (Conn, error)
}

// Spread is its targets taken in turn: its connections are spread evenly
// over them (several servers, say).
type Spread struct {
	Targets []Target
	next    atomic.Uint64
}

// Dial dials the next target.
func (s *Spread) Dial(ctx context.Context) (Conn, error) {
	return s.Targets[(s.next.Add(1)-1)%uint64(len(s.Targets))].Dial(ctx)
}

// Conn sends one request at a time and reads its whole response.
type Conn interface {
	Do(ctx context.Context, i uint64) (status int, err error)
	Close() error
}

// H1 is an HTTP/1.1 target over TLS with keep-alive: each worker holds one
// connection and writes pre-built requests on it. Responses are parsed by
// a minimal reader (status line, Content-Length, body skipped) so that the
// generator, which shares the CPUs with the server, costs as little as
// possible.
type H1 struct {
	Addr string      // host:port to dial
	TLS  *tls.Config // client configuration (roots, ServerName)
	Reqs [][]byte    // complete requests, sent round-robin
}

// NewH1 builds the requests: GET path on host with each header set.
func NewH1(addr, host, path string, tlsConf *tls.Config, headerSets []http.Header) *H1 {
	if len(headerSets) == 0 {
		headerSets = []http.Header{nil}
	}
	t := &H1{Addr: addr, TLS: tlsConf}
	for _, h := range headerSets {
		var b bytes.Buffer
		fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: aivis-bench\r\nAccept: application/json\r\n", path, host)
		h.Write(&b)
		b.WriteString("\r\n")
		t.Reqs = append(t.Reqs, b.Bytes())
	}
	return t
}

// Dial opens a keep-alive connection and completes the TLS handshake.
func (t *H1) Dial(ctx context.Context) (Conn, error) {
	d := tls.Dialer{Config: t.TLS}
	c, err := d.DialContext(ctx, "tcp", t.Addr)
	if err != nil {
		return nil, err
	}
	tc := c.(*tls.Conn)
	if p := tc.ConnectionState().NegotiatedProtocol; p != "" && p != "http/1.1" {
		c.Close()
		return nil, fmt.Errorf("negotiated %q, want http/1.1", p)
	}
	return &h1Conn{t: t, c: c, br: bufio.NewReaderSize(c, 16<<10)}, nil
}

type h1Conn struct {
	t  *H1
	c  net.Conn
	br *bufio.Reader
}

func (c *h1Conn) Close() error { return c.c.Close() }

var errClosed = errors.New("server closed the connection")

func (c *h1Conn) Do(_ context.Context, i uint64) (int, error) {
	return c.roundTrip(c.t.Reqs[i%uint64(len(c.t.Reqs))], nil)
}

// roundTrip writes a complete request and reads its response; the body is
// appended to body when body is not nil, and skipped otherwise.
func (c *h1Conn) roundTrip(req []byte, body *[]byte) (int, error) {
	if _, err := c.c.Write(req); err != nil {
		return 0, err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	length, closing := -1, false
	for {
		line, err = c.br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return 0, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, fmt.Errorf("unsupported Transfer-Encoding %q", value)
		case bytes.EqualFold(name, []byte("Connection")) && bytes.EqualFold(value, []byte("close")):
			closing = true
		}
	}
	if length < 0 {
		return 0, errors.New("response without Content-Length")
	}
	if body != nil {
		start := len(*body)
		*body = slices.Grow(*body, length)[:start+length]
		if _, err := io.ReadFull(c.br, (*body)[start:]); err != nil {
			return 0, err
		}
	} else if _, err := c.br.Discard(length); err != nil {
		return 0, err
	}
	if closing {
		return status, errClosed
	}
	return status, nil
}

// H2 is an HTTP/2 target: all workers share one net/http client, which
// multiplexes their requests as streams on one TLS connection.
type H2 struct {
	URL     string
	Client  *http.Client
	Headers []http.Header // sent round-robin
}

// NewH2 builds a client that speaks only HTTP/2 over TLS.
func NewH2(url string, tlsConf *tls.Config, headerSets []http.Header) *H2 {
	var p http.Protocols
	p.SetHTTP2(true)
	tr := &http.Transport{TLSClientConfig: tlsConf, Protocols: &p, ForceAttemptHTTP2: true,
		MaxIdleConnsPerHost: 64, DisableCompression: true}
	if len(headerSets) == 0 {
		headerSets = []http.Header{nil}
	}
	return &H2{URL: url, Client: &http.Client{Transport: tr}, Headers: headerSets}
}

// Dial shares the client: HTTP/2 multiplexes the workers on one connection.
func (t *H2) Dial(context.Context) (Conn, error) { return (*h2Conn)(t), nil }

type h2Conn H2

func (c *h2Conn) Close() error { return nil }

func (c *h2Conn) Do(ctx context.Context, i uint64) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return 0, err
	}
	for k, v := range c.Headers[i%uint64(len(c.Headers))] {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "aivis-bench")
	resp, err := c.Client.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		return resp.StatusCode, fmt.Errorf("response over %s, want HTTP/2", resp.Proto)
	}
	return resp.StatusCode, err
}

// Result is one measured phase.
type Result struct {
	Name     string
	Mode     string        // "closed" or "open"
	Workers  int           // concurrent workers (connections for H1)
	Target   float64       // open loop: the scheduled rate, req/s
	Duration time.Duration // measured interval
	Requests int           // responses completed in the interval
	Errors   int           // transport errors (not HTTP statuses)
	Status   map[int]int   // responses by HTTP status
	P50, P90 time.Duration
	P99, Max time.Duration
	// CPU is the CPU time the process (the generator's included) spent
	// over the measured interval.
	CPU time.Duration
	// Procs is, for a Metered target, the CPU time of the benchmark's
	// process ("bench") and of each of the meter's sources over the
	// measured interval.
	Procs procCPU
	// LagP99 is, in an open-loop run, the 99th percentile of how late the
	// generator handed a request to a worker after its scheduled time: a
	// floor of the measured latencies that is the generator's, not the
	// server's.
	LagP99 time.Duration
}

// CPUPerRequest is the process's CPU time per completed request over the
// measured interval.
func (r Result) CPUPerRequest() time.Duration {
	if r.Requests == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Requests)
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Metered is a target whose phases also measure the CPU time of the
// meter's processes (the servers the target runs on).
type Metered struct {
	Target
	Meter meter
}

// cpuOver samples the CPU time of the process, and of the meter's
// processes if t is Metered, at from and at to; the function it returns
// waits for the second sample and gives the time between.
func cpuOver(t Target, from, to time.Time) func() procCPU {
	var m meter
	if mt, ok := t.(Metered); ok {
		m = mt.Meter
	}
	spent := make(chan procCPU, 1)
	go func() {
		time.Sleep(time.Until(from))
		c := m.sample()
		time.Sleep(time.Until(to))
		spent <- m.spent(c, m.sample())
	}()
	return func() procCPU { return <-spent }
}

// Rate is the completed requests per second.
func (r Result) Rate() float64 { return float64(r.Requests) / r.Duration.Seconds() }

// OKShare is the share of responses with status 200.
func (r Result) OKShare() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Status[http.StatusOK]) / float64(r.Requests)
}

// worker's tallies; merged at the end so the hot loop shares nothing.
type tally struct {
	lat    []int64
	lag    []int64
	status [600]int
	errs   int
	err    error // the first error, for the report
}

func (t *tally) record(status int, err error, lat time.Duration) {
	if err != nil && !errors.Is(err, errClosed) {
		t.errs++
		if t.err == nil {
			t.err = err
		}
		return
	}
	if status > 0 && status < len(t.status) {
		t.status[status]++
	}
	t.lat = append(t.lat, int64(lat))
}

func merge(name, mode string, workers int, d time.Duration, ts []*tally) (Result, error) {
	r := Result{Name: name, Mode: mode, Workers: workers, Duration: d, Status: map[int]int{}}
	var lat, lag []int64
	var firstErr error
	for _, t := range ts {
		lat = append(lat, t.lat...)
		lag = append(lag, t.lag...)
		r.Errors += t.errs
		if firstErr == nil {
			firstErr = t.err
		}
		for s, n := range t.status {
			if n > 0 {
				r.Status[s] += n
			}
		}
	}
	r.Requests = len(lat)
	slices.Sort(lat)
	slices.Sort(lag)
	r.P50, r.P90, r.P99 = pct(lat, 0.50), pct(lat, 0.90), pct(lat, 0.99)
	if len(lat) > 0 {
		r.Max = time.Duration(lat[len(lat)-1])
	}
	r.LagP99 = pct(lag, 0.99)
	if r.Requests == 0 {
		return r, fmt.Errorf("%s: no request completed (%d errors; first: %v)", name, r.Errors, firstErr)
	}
	if r.Errors > r.Requests/100 {
		return r, fmt.Errorf("%s: %d transport errors for %d responses; first: %v", name, r.Errors, r.Requests, firstErr)
	}
	return r, nil
}

// pct is the q-quantile of sorted samples (nearest rank).
func pct(sorted []int64, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return time.Duration(sorted[max(i, 0)])
}

func dialAll(ctx context.Context, t Target, n int) ([]Conn, error) {
	conns := make([]Conn, 0, n)
	for range n {
		c, err := t.Dial(ctx)
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// do sends request i, redialling once if the server closed the connection.
func do(ctx context.Context, t Target, c *Conn, i uint64) (int, error) {
	status, err := (*c).Do(ctx, i)
	if err != nil && status == 0 && ctx.Err() == nil || errors.Is(err, errClosed) {
		(*c).Close()
		nc, derr := t.Dial(ctx)
		if derr != nil {
			return status, errors.Join(err, derr)
		}
		*c = nc
	}
	return status, err
}

// ClosedLoop runs workers that each send a request as soon as their last
// one is answered, for warmup and then for d; only requests both sent and
// answered inside the d interval are counted. It measures peak throughput.
func ClosedLoop(ctx context.Context, name string, t Target, workers int, warmup, d time.Duration) (Result, error) {
	conns, err := dialAll(ctx, t, workers)
	if err != nil {
		return Result{}, err
	}
	var seq atomic.Uint64
	start := time.Now()
	from, to := start.Add(warmup), start.Add(warmup+d)
	cpu := cpuOver(t, from, to)
	ts := make([]*tally, workers)
	var wg sync.WaitGroup
	for w := range workers {
		ts[w] = &tally{lat: make([]int64, 0, 1<<14)}
		wg.Go(func() {
			tl, c := ts[w], conns[w]
			defer func() { c.Close() }()
			for ctx.Err() == nil {
				i := seq.Add(1)
				s := time.Now()
				if !s.Before(to) {
					return
				}
				status, err := do(ctx, t, &c, i)
				e := time.Now()
				if !s.Before(from) && e.Before(to) {
					tl.record(status, err, e.Sub(s))
				}
			}
		})
	}
	wg.Wait()
	r, err := merge(name, "closed", workers, d, ts)
	r.Procs = cpu()
	r.CPU = r.Procs.get("bench")
	return r, err
}

// OpenLoop sends rate requests per second for warmup and then for d, on a
// fixed schedule that does not wait for answers: request k is due at
// start + k/rate. Idle workers take the due requests in order; latency runs
// from the scheduled time, so a slow response delays, and is charged to,
// the requests queued behind it (no coordinated omission). workers bounds
// the connections. Only requests scheduled inside the d interval count.
func OpenLoop(ctx context.Context, name string, t Target, workers int, rate float64, warmup, d time.Duration) (Result, error) {
	conns, err := dialAll(ctx, t, workers)
	if err != nil {
		return Result{}, err
	}
	skip := int(rate * warmup.Seconds())
	n := skip + int(rate*d.Seconds())
	due := make(chan time.Time, n)
	interval := float64(time.Second) / rate
	start := time.Now().Add(time.Millisecond)
	from := start.Add(time.Duration(float64(skip) * interval))
	cpu := cpuOver(t, from, from.Add(d))
	ts := make([]*tally, workers)
	var wg sync.WaitGroup
	var seq atomic.Uint64
	for w := range workers {
		ts[w] = &tally{lat: make([]int64, 0, n/workers+1024), lag: make([]int64, 0, n/workers+1024)}
		wg.Go(func() {
			tl, c := ts[w], conns[w]
			defer func() { c.Close() }()
			var scratch tally
			for at := range due {
				r := tl
				if at.Before(from) {
					r = &scratch
					scratch.lat, scratch.lag = scratch.lat[:0], scratch.lag[:0]
				}
				r.lag = append(r.lag, int64(time.Since(at)))
				status, err := do(ctx, t, &c, seq.Add(1))
				r.record(status, err, time.Since(at))
			}
		})
	}
	for k := 0; k < n && ctx.Err() == nil; k++ {
		at := start.Add(time.Duration(float64(k) * interval))
		if wait := time.Until(at); wait > 0 {
			time.Sleep(wait)
		}
		due <- at
	}
	close(due)
	wg.Wait()
	r, err := merge(name, "open", workers, d, ts)
	r.Target, r.Procs = rate, cpu()
	r.CPU = r.Procs.get("bench")
	return r, err
}

// Count sends exactly n requests (0..n-1, so each variant once when n is
// the number of variants) from workers in a closed loop.
func Count(ctx context.Context, name string, t Target, workers, n int) (Result, error) {
	conns, err := dialAll(ctx, t, workers)
	if err != nil {
		return Result{}, err
	}
	var seq atomic.Uint64
	ts := make([]*tally, workers)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		ts[w] = &tally{}
		wg.Go(func() {
			tl, c := ts[w], conns[w]
			defer func() { c.Close() }()
			for ctx.Err() == nil {
				i := seq.Add(1) - 1
				if i >= uint64(n) {
					return
				}
				s := time.Now()
				status, err := do(ctx, t, &c, i)
				tl.record(status, err, time.Since(s))
			}
		})
	}
	wg.Wait()
	return merge(name, "closed", workers, time.Since(start), ts)
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) }

// Table renders results as a markdown table.
func Table(rs []Result) string {
	var b strings.Builder
	b.WriteString("| phase | mode | workers | target req/s | req/s | p50 ms | p90 ms | p99 ms | max ms | CPU µs/req | 200s | errors | generator lag p99 ms |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		target, lag := "–", "–"
		if r.Mode == "open" {
			target, lag = strconv.FormatFloat(r.Target, 'f', 0, 64), ms(r.LagP99)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %.0f | %s | %s | %s | %s | %.0f | %.2f%% | %d | %s |\n",
			r.Name, r.Mode, r.Workers, target, r.Rate(), ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max),
			float64(r.CPUPerRequest())/1e3, 100*r.OKShare(), r.Errors, lag)
	}
	return b.String()
}
