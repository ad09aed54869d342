package bench

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/app"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/tlsconf"
	"github.com/aivis/aivis/internal/testsvc"
)

var (
	enginesFlag = flag.String("engines", "sqlite,cluster", "the engines BenchmarkLoad and BenchmarkDelivery run `aivis serve` processes on, comma-separated: "+
		"sqlite (the embedded default, one process) and cluster (PostgreSQL, NATS JetStream and -cluster-counter, one instance and two; servers from internal/testsvc)")
	clusterCounter = flag.String("cluster-counter", "redis", "the counter of the cluster's instances: redis, or store (in PostgreSQL)")
)

// deployment is aivis on one set of engines, run as `aivis serve`
// processes of the binary: sqlite, the embedded default, whose processes
// share a data directory; or cluster, instances with a data directory
// each on one PostgreSQL database, one NATS stream and the shared counter,
// as docs/scaling.md deploys them.
type deployment struct {
	name string
	// cfg opens the deployment's store in this process (to write its
	// accounts, or to record readings as an instance's API would).
	cfg config.Config
	// flags are the settings of `aivis serve` beyond its data directory.
	flags []string
	// servers are the CPU sources of the servers the instances use.
	servers meter
}

// engineNames are the engines of -engines.
func engineNames() []string {
	var out []string
	for _, n := range strings.Split(*enginesFlag, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// instanceCounts are the numbers of instances each engine is measured
// with: SQLite's processes share one file, and serve the API one at a
// time with the default counter.
func instanceCounts(engine string) []int {
	if engine == "cluster" {
		return []int{1, 2}
	}
	return []int{1}
}

// newDeployment makes a deployment on fresh state: a new data directory,
// or a new database and stream on testsvc's servers.
func newDeployment(b *testing.B, name string) *deployment {
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	d := &deployment{name: name, cfg: cfg}
	switch name {
	case "sqlite":
	case "cluster":
		pg := testsvc.Postgres(b)
		natsURL, cluster := testsvc.NATS(b)
		key := filepath.Join(b.TempDir(), secrets.KeyFile)
		if _, _, err := secrets.Load(key, true); err != nil {
			b.Fatal(err)
		}
		d.cfg.Store, d.cfg.PostgresURL, d.cfg.MasterKeyFile = "postgres", pg, key
		d.cfg.Bus, d.cfg.NATSURL, d.cfg.ClusterName, d.cfg.Counter = "nats", natsURL, cluster, *clusterCounter
		d.flags = []string{"--store", "postgres", "--postgres-url", pg, "--master-key-file", key,
			"--bus", "nats", "--nats-url", natsURL, "--cluster-name", cluster, "--counter", *clusterCounter}
		u, _ := url.Parse(pg)
		d.servers = append(d.servers, d.server(b, "postgres", pg, func(pid int) cpuSource {
			return cpuSource{"postgres", pgCPU(pid, strings.TrimPrefix(u.Path, "/"))}
		}), d.server(b, "nats", natsURL, func(pid int) cpuSource { return cpuSource{"nats", pidCPU(pid)} }))
		if *clusterCounter == "redis" {
			d.cfg.RedisURL = redisUnder(b, cluster)
			d.flags = append(d.flags, "--redis-url", d.cfg.RedisURL)
			d.servers = append(d.servers, d.server(b, "redis", d.cfg.RedisURL, func(pid int) cpuSource { return cpuSource{"redis", pidCPU(pid)} }))
		}
	default:
		b.Fatalf("-engines: no engine %q (sqlite, cluster)", name)
	}
	return d
}

// redisUnder returns the URL of testsvc's Redis, on which the keys under
// prefix (the deployment's cluster_name, also its NATS stream's name) are
// deleted when b ends.
func redisUnder(b *testing.B, prefix string) string {
	url, _ := testsvc.Redis(b)
	b.Cleanup(func() {
		opt, err := redis.ParseURL(url)
		if err != nil {
			b.Error(err)
			return
		}
		c := redis.NewClient(opt)
		defer c.Close()
		ctx := context.Background()
		for it := c.Scan(ctx, 0, prefix+":*", 1000).Iterator(); it.Next(ctx); {
			c.Unlink(ctx, it.Val())
		}
	})
	return url
}

// server is the CPU source of the server at serverURL, or one that reads
// nothing when its process cannot be found.
func (d *deployment) server(b *testing.B, name, serverURL string, source func(pid int) cpuSource) cpuSource {
	pid, err := listener(serverURL)
	if err != nil {
		b.Logf("the CPU time of %s is not measured: %v", name, err)
		return cpuSource{name + " (not measured)", func() time.Duration { return 0 }}
	}
	return source(pid)
}

// open opens the deployment's store and services in this process.
func (d *deployment) open(b *testing.B) *app.Services {
	svc, err := app.Open(context.Background(), d.cfg)
	if err != nil {
		b.Fatal(err)
	}
	return svc
}

// instance is a running `aivis serve` of a deployment.
type instance struct {
	*child
	dataDir string
}

// start starts n `aivis serve` with args added, each waited for until it
// prints a line that ready matches, and stops them when b ends.
func (d *deployment) start(b *testing.B, bin string, n int, ready *regexp.Regexp, args ...string) []instance {
	var out []instance
	for range n {
		dir := d.cfg.DataDir // SQLite's processes share it
		if d.name != "sqlite" {
			dir = b.TempDir()
		}
		c := startServer(b, bin, dir, ready, append(append([]string{}, d.flags...), args...)...)
		b.Cleanup(func() {
			if c.cmd.ProcessState == nil {
				c.stop(b)
			}
		})
		out = append(out, instance{c, dir})
	}
	return out
}

// meter measures the instances and the deployment's servers.
func (d *deployment) meter(is []instance) meter {
	var m meter
	for _, i := range is {
		m = append(m, cpuSource{"aivis", pidCPU(i.cmd.Process.Pid)})
	}
	return append(m, d.servers...)
}

// cert is the certificate an instance serves (self-signed, in its data
// directory).
func (i instance) cert(b *testing.B) *tlsconf.Material {
	mat, err := tlsconf.Load("", "", i.dataDir, []string{"127.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	return mat
}

func (d *deployment) label(n int) string {
	if d.name == "sqlite" {
		return fmt.Sprintf("sqlite, %d aivis serve", n)
	}
	return fmt.Sprintf("%s, %d instance%s", d.name, n, map[bool]string{true: "s"}[n > 1])
}
