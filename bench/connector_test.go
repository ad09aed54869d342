package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/connectors/segment/segmentfake"
	"github.com/aivis/aivis/plugins/host"
	"github.com/aivis/aivis/plugins/sdk"
)

// callsInFlight is what the delivery engine allows per connection.
const callsInFlight = 16

func buildConnector(b *testing.B, pkg string) string {
	bin := filepath.Join(b.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, "./"+pkg)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// noop delivers nothing: in process, it is the cost of the call alone.
type noop struct{}

func (noop) Info() sdk.Info                                                     { return sdk.Info{Name: "noop", MaxBatch: 100} }
func (noop) ValidateSettings(context.Context, json.RawMessage) []sdk.FieldError { return nil }
func (noop) Deliver(_ context.Context, _ json.RawMessage, evs []sdk.Event) []sdk.Result {
	out := make([]sdk.Result, len(evs))
	for i := range out {
		out[i] = sdk.DeliveredResult()
	}
	return out
}

// deliverFunc is one Deliver call of either kind.
type deliverFunc func(ctx context.Context, settings json.RawMessage, evs []sdk.Event) ([]sdk.Result, error)

// drive delivers total events in batches of batch, callsInFlight calls at
// a time, and returns events per second.
func drive(b *testing.B, deliver deliverFunc, settings json.RawMessage, total, batch int) float64 {
	evs := make([]sdk.Event, batch)
	for i := range evs {
		id := fmt.Sprintf("evt_bench%06d", i)
		evs[i] = sdk.Event{ID: id, Kind: "ai_visibility_change", Timestamp: time.Now().UTC(), AccountID: "acct_bench", Domain: "example.com",
			Body: []byte(`{"id":"` + id + `","event":"ai_visibility_change","timestamp":"2026-11-23T10:00:00Z","data":{"domain":"example.com",` +
				`"visibility_score":72,"sentiment":"positive","sentiment_score":0.41,"measured_at":"2026-11-23T10:00:00Z","source":"scan",` +
				`"previous_visibility_score":60,"previous_sentiment":"neutral","previous_sentiment_score":0.02,"score_change":12,"client_id":null}}`)}
	}
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range callsInFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(int64(batch)) <= int64(total) {
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				rs, err := deliver(ctx, settings, evs)
				cancel()
				if err != nil || rs[0].Outcome != sdk.Delivered {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d calls failed", n)
	}
	return float64(total) / time.Since(start).Seconds()
}

// BenchmarkConnectorPlugin measures what running a connector out of
// process costs: the same no-op connector called in process and through
// the plugin boundary (gRPC over mutual TLS), by batch size; and the
// Segment connector's plugin delivering to a local fake that answers at
// once.
func BenchmarkConnectorPlugin(b *testing.B) {
	noopBin := buildConnector(b, "plugins/host/testdata/testplugin")
	segBin := buildConnector(b, "connectors/segment")
	p, err := host.Start(host.Options{Path: noopBin})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Kill()
	fake := segmentfake.New()
	defer fake.Close()
	sp, err := host.Start(host.Options{Path: segBin, Env: []string{sdk.EnvAllowedTargets + "=127.0.0.0/8"}})
	if err != nil {
		b.Fatal(err)
	}
	defer sp.Kill()
	inProcess := func(ctx context.Context, s json.RawMessage, evs []sdk.Event) ([]sdk.Result, error) {
		return noop{}.Deliver(ctx, s, evs), nil
	}
	ok := json.RawMessage(`{"mode":"ok"}`)
	for range b.N {
		for _, batch := range []int{1, 10, 100} {
			total := 20000 * min(batch, 10)
			local := drive(b, inProcess, ok, total, batch)
			plugin := drive(b, p.Connector().Deliver, ok, total, batch)
			overhead := (1/plugin - 1/local) * 1e6
			b.Logf("no-op, batch %3d: in process %12.0f events/s, plugin %9.0f events/s, plugin overhead %6.2f µs/event",
				batch, local, plugin, overhead)
			b.ReportMetric(plugin, fmt.Sprintf("plugin-b%d-events/s", batch))
			b.ReportMetric(overhead, fmt.Sprintf("overhead-b%d-µs/event", batch))
		}
		// One call at a time: the round trip of one event.
		const calls = 5000
		one := []sdk.Event{{ID: "evt_one", Kind: "webhook_test", Timestamp: time.Now(), Body: []byte(`{"id":"evt_one"}`)}}
		start := time.Now()
		for range calls {
			if _, err := p.Connector().Deliver(context.Background(), ok, one); err != nil {
				b.Fatal(err)
			}
		}
		rtt := time.Since(start).Seconds() / calls * 1e6
		b.Logf("no-op, one call at a time: %.1f µs a round trip", rtt)
		b.ReportMetric(rtt, "round-trip-µs")
		settings := json.RawMessage(`{"write_key":"` + segmentfake.WriteKey + `","api_url":"` + fake.URL() + `"}`)
		seg := drive(b, sp.Connector().Deliver, settings, 100000, 100)
		b.Logf("segment plugin to a local fake, batches of 100: %.0f events/s", seg)
		b.ReportMetric(seg, "segment-events/s")
	}
}
