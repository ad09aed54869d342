package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	metricsRounds = flag.Int("metrics-rounds", 5, "BenchmarkLoad and BenchmarkDelivery: rounds of `aivis serve` on SQLite with its metrics off "+
		"(no admin listener) and on (scraped every -metrics-scrape), one after the other, in turn first; the medians are compared (0: none)")
	metricsScrape = flag.Duration("metrics-scrape", 5*time.Second, "how often the metrics of an `aivis serve` with them on are scraped during its phase")
)

// metricsArgs are the settings of an `aivis serve` with its metrics on
// (an admin listener on a free port, which a scraper reads every
// -metrics-scrape until the returned stop is called) or off (no admin
// listener: nothing counted).
func metricsArgs(b *testing.B, on bool) (args []string, scrape func() (stop func())) {
	if !on {
		return []string{"--admin-addr", ""}, func() func() { return func() {} }
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return []string{"--admin-addr", addr}, func() func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(*metricsScrape):
				}
				res, err := http.Get("http://" + addr + "/metrics")
				if err != nil {
					b.Errorf("scrape: %v", err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Errorf("scrape: %s", res.Status)
				}
			}
		}()
		return func() { cancel(); <-done }
	}
}

// metricsCost is what an `aivis serve` does a second, and the CPU time
// it takes a unit, with its metrics off and on, over -metrics-rounds
// rounds of each, alternately, off first in the odd rounds and on first
// in the even ones: phase runs one measured phase of a new server started
// with args, scrape running meanwhile.
type metricsCost struct {
	what          string
	off, on       []float64 // a second
	offCPU, onCPU []float64 // the aivis process's CPU µs a unit
}

func measureMetrics(b *testing.B, what string, phase func(args []string, scrape func() (stop func())) (rate float64, cpu time.Duration)) metricsCost {
	c := metricsCost{what: what}
	for round := range *metricsRounds {
		for i := range 2 {
			on := (round%2 == 0) == (i == 1)
			args, scrape := metricsArgs(b, on)
			rate, cpu := phase(args, scrape)
			if on {
				c.on, c.onCPU = append(c.on, rate), append(c.onCPU, us(cpu))
			} else {
				c.off, c.offCPU = append(c.off, rate), append(c.offCPU, us(cpu))
			}
			fmt.Printf("%s, metrics %s: %.0f/s, aivis %.1f µs CPU each\n", what, map[bool]string{true: "on", false: "off"}[on], rate, us(cpu))
		}
	}
	return c
}

func median(s []float64) float64 {
	s = slices.Sorted(slices.Values(s))
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// loss is how much less the median with metrics on does than off, in %;
// cpu, how much more CPU the median unit takes.
func (c metricsCost) loss() float64 { return 100 * (1 - median(c.on)/median(c.off)) }
func (c metricsCost) cpu() float64  { return 100 * (median(c.onCPU)/median(c.offCPU) - 1) }

// reportMetrics writes the comparisons and checks the target: at most 3%
// lost to the metrics.
func reportMetrics(b *testing.B, costs ...metricsCost) {
	if len(costs) == 0 || *metricsRounds == 0 {
		return
	}
	fmt.Printf("\n`aivis serve` on SQLite, metrics off (no admin listener) and on (/metrics scraped every %v), %d rounds each, alternately:\n\n", *metricsScrape, *metricsRounds)
	fmt.Printf("| phase | off, a second | on, a second | median off / on | lost to the metrics (≤ 3%%) | aivis CPU µs each, median off / on |\n|---|---|---|---|---|---|\n")
	for _, c := range costs {
		fmt.Printf("| %s | %s | %s | %.0f / %.0f | %.1f%% %s | %.1f / %.1f (%+.1f%%) |\n", c.what, rates(c.off), rates(c.on), median(c.off), median(c.on),
			c.loss(), yes(c.loss() <= 3), median(c.offCPU), median(c.onCPU), c.cpu())
		b.ReportMetric(c.loss(), strings.Fields(c.what)[0]+"-metrics-loss-%")
		b.ReportMetric(c.cpu(), strings.Fields(c.what)[0]+"-metrics-cpu-%")
	}
	fmt.Println()
}

func rates(s []float64) string {
	var parts []string
	for _, r := range s {
		parts = append(parts, fmt.Sprintf("%.0f", r))
	}
	return strings.Join(parts, ", ")
}

// budgetMetrics is budget-status on `aivis serve` on SQLite with its
// metrics off and on (closed loop, requests a second), each phase on a
// data directory of its own, whose accounts' windows are fresh.
func budgetMetrics(b *testing.B, bin string, run func(Result, error) Result) metricsCost {
	return measureMetrics(b, "budget-status req", func(args []string, scrape func() func()) (float64, time.Duration) {
		d := newDeployment(b, "sqlite")
		svc := d.open(b)
		creds := newAccounts(b, svc)
		svc.Close()
		is := d.start(b, bin, 1, listening, args...)
		t := Metered{Target: NewH1("127.0.0.1:"+is[0].port, "localhost", "/api/v1/ai/budget-status", clientTLS(b, is[0].cert(b).Cert, "http/1.1"), creds),
			Meter: d.meter(is)}
		stop := scrape()
		r := run(ClosedLoop(context.Background(), "budget-status, sqlite, metrics "+map[bool]string{true: "off", false: "on"}[args[1] == ""]+", HTTP/1.1",
			t, *workers, *warmup, *phase))
		stop()
		is[0].stop(b)
		return r.Rate(), r.Procs.get("aivis") / time.Duration(max(r.Requests, 1))
	})
}

// deliveryMetrics is the 1-endpoint phase delivered by `aivis serve
// --api=false` on SQLite with its metrics off and on (deliveries a
// second).
func deliveryMetrics(b *testing.B, bin string, sink *hookSink, domains []string) metricsCost {
	return measureMetrics(b, "delivery deliveries", func(args []string, scrape func() func()) (float64, time.Duration) {
		stop := scrape()
		defer stop()
		r := deliverOn(b, bin, sink, domains, "sqlite", 1, args...)
		return r.rate, r.cpu.get("aivis") / time.Duration(max(r.deliveries, 1))
	})
}
