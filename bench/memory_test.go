package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/engines"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

var (
	memAccounts = flag.Int("mem-accounts", 10_000, "accounts in the memory benchmark's database")
	memKeys     = flag.Int("mem-keys", 100_000, "keys in the memory benchmark's database, spread evenly over the accounts; each makes a request")
)

// buildServer builds the aivis binary into dir.
func buildServer(tb testing.TB, dir string) string {
	bin := filepath.Join(dir, "aivis")
	// go test puts its own GOROOT/bin first in the test's PATH.
	cmd := exec.Command("go", "build", "-o", bin, "github.com/aivis/aivis/cmd/aivis")
	cmd.Dir = ".." // the module root
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./cmd/aivis: %v\n%s", err, out)
	}
	return bin
}

type cred struct{ key, secret string }

// populate writes accounts and keys (keys spread round-robin over the
// accounts, tiers round-robin over the three) through the store, and
// returns the keys' credentials.
func populate(tb testing.TB, dataDir string, accounts, keys int) []cred {
	ctx := context.Background()
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	db, err := sqlite.Open(ctx, filepath.Join(dataDir, engines.DBFile))
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	tiers := []string{"starter", "professional", "enterprise"}
	now := time.Now().UTC()
	ids := make([]string, accounts)
	for i := range ids {
		ids[i] = randid.New("acct")
		err := db.CreateAccount(ctx, store.Account{ID: ids[i], Name: fmt.Sprintf("Memory bench %d", i),
			Tier: tiers[i%len(tiers)], Type: store.AccountStandard, CreatedAt: now})
		if err != nil {
			tb.Fatal(err)
		}
	}
	// Key k belongs to account k % accounts.
	out := make([]cred, 0, keys)
	for k := range keys {
		key, secret := auth.KeyPrefix+randid.String(40), randid.String(64)
		err := db.CreateKey(ctx, store.Key{ID: randid.New("key"), AccountID: ids[k%accounts], Name: "memory bench",
			KeyHash: auth.Hash(key), SecretHash: auth.Hash(secret), Hint: auth.Hint(key), Scopes: auth.Scopes, CreatedAt: now})
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, cred{key, secret})
	}
	return out
}

// child is a running `aivis serve`.
type child struct {
	cmd    *exec.Cmd
	port   string
	stderr bytes.Buffer
}

var listening = regexp.MustCompile(`aivis listening on https://localhost:(\d+)`)

// startServer runs `aivis serve` with args added and waits until it
// prints a line that ready matches: its first group, if any, is the port.
func startServer(tb testing.TB, bin, dataDir string, ready *regexp.Regexp, args ...string) *child {
	base := []string{"serve", "--data-dir", dataDir, "--addr", "127.0.0.1:0", "--log-level", "error"}
	if serves(bin, "--admin-addr") {
		base = append(base, "--admin-addr", "127.0.0.1:0")
	}
	args = append(base, args...)
	c := &child{cmd: exec.Command(bin, args...)}
	c.cmd.Env = serverEnv(tb)
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	ports := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := ready.FindStringSubmatch(sc.Text()); m != nil {
				ports <- append(m, "")[1]
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case c.port = <-ports:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		c.cmd.Wait()
		tb.Fatalf("aivis serve did not start in 30s; stderr:\n%s", c.stderr.String())
	}
	return c
}

var serveHelp sync.Map // binary path → its `serve --help`

// serves says whether `bin serve` takes a flag: a binary of an older head
// (BenchmarkEventPath's -event-bins) may lack one of today's.
func serves(bin, flag string) bool {
	help, ok := serveHelp.Load(bin)
	if !ok {
		out, _ := exec.Command(bin, "serve", "--help").CombinedOutput()
		help, _ = serveHelp.LoadOrStore(bin, string(out))
	}
	return strings.Contains(help.(string), strings.TrimLeft(flag, "-")+" ")
}

// stop sends SIGTERM and waits for a graceful exit.
func (c *child) stop(tb testing.TB) {
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		tb.Error(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			tb.Errorf("aivis serve exited with %v; stderr:\n%s", err, c.stderr.String())
		}
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-done
		tb.Error("aivis serve did not stop within 30s of SIGTERM")
	}
	if tb.Failed() && c.stderr.Len() > 0 {
		tb.Logf("aivis serve (pid %d) logged at level error:\n%s", c.cmd.Process.Pid, c.stderr.String())
	}
}

// memStatus reads VmRSS and VmHWM, in MB (2^20 bytes), of a process.
func memStatus(pid int) (rss, hwm float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		f := strings.Fields(value) // "123456 kB"
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("unexpected %s line %q", name, line)
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, 0, err
		}
		if name == "VmRSS" {
			rss = kb / 1024
		} else {
			hwm = kb / 1024
		}
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, errors.New("no VmRSS/VmHWM in /proc status")
	}
	return rss, hwm, nil
}

// BenchmarkServerMemory measures the resident memory of the real server
// binary holding 10,000 accounts and 100,000 keys in its database after
// each of the 100,000 keys has made an authenticated request, so the
// rate-limit counters hold every account, every key's usage has been
// counted, and the key cache holds as many keys as it keeps. It runs once
// whatever b.N is; run it with -benchtime=1x.
func BenchmarkServerMemory(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc/PID/status")
	}
	dir := b.TempDir()
	t0 := time.Now()
	bin := buildServer(b, dir)
	b.Logf("built aivis in %v", time.Since(t0).Round(time.Millisecond))

	dataDir := filepath.Join(dir, "data")
	t0 = time.Now()
	creds := populate(b, dataDir, *memAccounts, *memKeys)
	fi, err := os.Stat(filepath.Join(dataDir, engines.DBFile))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %d accounts and %d keys in %v; database %.1f MB", *memAccounts, *memKeys,
		time.Since(t0).Round(time.Millisecond), float64(fi.Size())/(1<<20))

	b.ResetTimer()
	srv := startServer(b, bin, dataDir, listening)
	defer srv.stop(b)
	pid := srv.cmd.Process.Pid
	time.Sleep(500 * time.Millisecond)
	idle, _, err := memStatus(pid)
	if err != nil {
		b.Fatal(err)
	}

	pem, err := os.ReadFile(filepath.Join(dataDir, "tls", "cert.pem"))
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		b.Fatal("no certificate in tls/cert.pem")
	}
	conf := &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}
	hs := make([]http.Header, len(creds))
	for i, c := range creds {
		hs[i] = http.Header{"X-Api-Key": {c.key}, "X-Api-Secret": {c.secret}}
	}
	target := NewH1("127.0.0.1:"+srv.port, "localhost:"+srv.port, "/api/v1/ai/budget-status", conf, hs)
	res, err := Count(context.Background(), "budget-status, one request per key", target, 16, len(hs))
	if err != nil {
		b.Fatal(err)
	}
	if res.OKShare() < 0.99 {
		b.Fatalf("only %.2f%% of responses were 200: %v", 100*res.OKShare(), res.Status)
	}
	rss, hwm, err := memStatus(pid)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()

	b.ReportMetric(0, "ns/op")
	b.ReportMetric(idle, "idle-rss-MB")
	b.ReportMetric(rss, "rss-MB")
	b.ReportMetric(hwm, "hwm-MB")
	b.ReportMetric(res.Rate(), "req/s")
	fmt.Printf("\nBenchmarkServerMemory: aivis serve --log-level error, %d accounts, %d keys (database %.1f MB), "+
		"%d distinct keys each made one GET /api/v1/ai/budget-status (%.0f req/s, %d connections, %.2f%% 200)\n\n",
		*memAccounts, *memKeys, float64(fi.Size())/(1<<20), len(hs), res.Rate(), res.Workers, 100*res.OKShare())
	fmt.Printf("| measure | MB | target < 150 MB |\n|---|---:|---|\n")
	fmt.Printf("| VmRSS after start, before any request | %.1f | %s |\n", idle, yes(idle < 150))
	fmt.Printf("| VmRSS after the requests | %.1f | %s |\n", rss, yes(rss < 150))
	fmt.Printf("| VmHWM (peak RSS) | %.1f | %s |\n\n", hwm, yes(hwm < 150))
}
