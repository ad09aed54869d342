package testsvc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestPostgres(t *testing.T) {
	var names []string
	t.Run("fresh databases", func(t *testing.T) {
		first, second := Postgres(t), Postgres(t)
		a, err := pgx.Connect(ctx(t), first)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close(context.Background())
		if _, err := a.Exec(ctx(t), `CREATE TABLE readings (id bigint PRIMARY KEY, v text);
			INSERT INTO readings VALUES (1, 'one')`); err != nil {
			t.Fatal(err)
		}
		var v string
		if err := a.QueryRow(ctx(t), `SELECT v FROM readings WHERE id = 1`).Scan(&v); err != nil || v != "one" {
			t.Fatalf("read back %q, %v", v, err)
		}
		// Left open: the database is dropped all the same.
		b, err := pgx.Connect(ctx(t), second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(context.Background()) })
		var other bool
		if err := b.QueryRow(ctx(t), `SELECT to_regclass('readings') IS NULL`).Scan(&other); err != nil || !other {
			t.Fatalf("the second database has the first one's table (%v)", err)
		}
		for _, c := range []*pgx.Conn{a, b} {
			var name string
			if err := c.QueryRow(ctx(t), `SELECT current_database()`).Scan(&name); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
		}
		if names[0] == names[1] {
			t.Fatalf("two calls gave one database, %s", names[0])
		}
	})
	server, err := pgx.Connect(ctx(t), postgres.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close(context.Background())
	var left int
	if err := server.QueryRow(ctx(t), `SELECT count(*) FROM pg_database WHERE datname = ANY($1)`, names).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 || left != 0 {
		t.Fatalf("%d of the test's databases %v are left after it", left, names)
	}
}

func TestRedis(t *testing.T) {
	url, other := Redis(t)
	c, err := redisClient(url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx(t), other+":kept", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var prefix string
	t.Run("keys under a prefix", func(t *testing.T) {
		url2, p := Redis(t)
		if url2 != url || p == other {
			t.Fatalf("second call: %s %s, first: %s %s", url2, p, url, other)
		}
		prefix = p
		// More keys than one SCAN step returns.
		pipe := c.Pipeline()
		for i := range 2500 {
			pipe.Set(ctx(t), fmt.Sprintf("%s:%d", prefix, i), i, 0)
		}
		if _, err := pipe.Exec(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Get(ctx(t), prefix+":2499").Result(); err != nil || v != "2499" {
			t.Fatalf("read back %q, %v", v, err)
		}
	})
	keys, _, err := c.Scan(ctx(t), 0, prefix+"*", 100000).Result()
	if err != nil || len(keys) != 0 {
		t.Fatalf("%d keys left under the prefix after the test (%v)", len(keys), err)
	}
	if n, err := c.Exists(ctx(t), other+":kept").Result(); err != nil || n != 1 {
		t.Fatalf("another test's key is gone (%v)", err)
	}
}

func TestNATS(t *testing.T) {
	url, other := NATS(t)
	nc, js, err := natsConnect(ctx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: other + "_kept", Subjects: []string{other + ".>"}}); err != nil {
		t.Fatal(err)
	}
	var prefix string
	t.Run("streams under a prefix", func(t *testing.T) {
		_, prefix = NATS(t)
		stream, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: prefix + "_events", Subjects: []string{prefix + ".events.>"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx(t), prefix+".events.reading", []byte("hello")); err != nil {
			t.Fatal(err)
		}
		cons, err := stream.CreateOrUpdateConsumer(ctx(t), jetstream.ConsumerConfig{
			Durable: prefix + "_worker", AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			t.Fatal(err)
		}
		msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil || string(msg.Data()) != "hello" {
			t.Fatalf("consumed %v", err)
		}
		if err := msg.DoubleAck(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if _, err := js.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: prefix + "_kv"}); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := js.Stream(ctx(t), prefix+"_events"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the test's stream is left after it (%v)", err)
	}
	if _, err := js.KeyValue(ctx(t), prefix+"_kv"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("the test's bucket is left after it (%v)", err)
	}
	if _, err := js.Stream(ctx(t), other+"_kept"); err != nil {
		t.Fatalf("another test's stream is gone: %v", err)
	}
}

// TestCluster: a cluster's Redis keys and NATS streams are under its name,
// and go with its database when the test ends.
func TestCluster(t *testing.T) {
	var c Cluster
	t.Run("a cluster", func(t *testing.T) {
		c = NewCluster(t)
		if c.PostgresURL == "" || c.RedisURL != redisServer.URL(t) || c.NATSURL != natsServer.URL(t) || !strings.HasPrefix(c.Name, "aivistest_") {
			t.Fatalf("cluster %+v", c)
		}
		r, err := redisClient(c.RedisURL)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := r.Set(ctx(t), c.Name+":counts", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		nc, js, err := natsConnect(ctx(t), c.NATSURL)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: c.Name, Subjects: []string{c.Name + ".>"}}); err != nil {
			t.Fatal(err)
		}
	})
	r, err := redisClient(c.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, err := r.Exists(ctx(t), c.Name+":counts").Result(); err != nil || n != 0 {
		t.Errorf("the cluster's Redis key is left after the test (%v)", err)
	}
	nc, js, err := natsConnect(ctx(t), c.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := js.Stream(ctx(t), c.Name); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("the cluster's stream is left after the test (%v)", err)
	}
	server, err := pgx.Connect(ctx(t), postgres.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close(context.Background())
	u, err := url.Parse(c.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	var left int
	if err := server.QueryRow(ctx(t), `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&left); err != nil || left != 0 {
		t.Errorf("the cluster's database %s is left after the test (%v)", name, err)
	}
}

// child runs this test binary's tests matching run with private servers
// only, as a fresh machine would have.
func child(t *testing.T, run string, env ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run="+run, "-test.v", "-test.count=1")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AIVIS_TEST") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, append(env, privateEnv+"=1")...)
	return cmd
}

func TestPrivate(t *testing.T) {
	if os.Getenv(privateEnv) == "1" {
		t.Skip("already private")
	}
	// An apt-get that only notes its call: nothing is to be installed.
	fake := t.TempDir()
	calls := filepath.Join(fake, "calls")
	if err := os.WriteFile(filepath.Join(fake, "apt-get"),
		[]byte("#!/bin/sh\necho \"$@\" >>"+calls+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := child(t, "^(TestPostgres|TestRedis|TestNATS)$", "PATH="+fake+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, name := range []string{"PostgreSQL", "Redis", "NATS"} {
		if !strings.Contains(string(out), "testsvc: private "+name+" at ") {
			t.Errorf("no private %s started:\n%s", name, out)
		}
	}
	if b, err := os.ReadFile(calls); err == nil {
		t.Errorf("apt-get was called with everything installed: %s", b)
	}
	t.Logf("\n%s", out)
}

func TestInstall(t *testing.T) {
	dir := t.TempDir()
	server := filepath.Join(dir, "server")
	find := func() string {
		if _, err := os.Stat(server); err == nil {
			return server
		}
		return ""
	}
	calls := filepath.Join(dir, "calls")
	aptGet = filepath.Join(dir, "apt-get")
	t.Cleanup(func() { aptGet, euid = "apt-get", os.Geteuid })
	if err := os.WriteFile(aptGet, []byte("#!/bin/sh\necho \"$@\" >>"+calls+"\n"+
		"case \"$1\" in install) touch "+server+";; esac\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	euid = func() int { return 1000 }
	_, err := install("Server", "server-pkg", find)
	var skip *skipError
	if !errors.As(err, &skip) || !strings.Contains(skip.msg, "sudo apt-get install -y server-pkg") {
		t.Fatalf("not root: %v", err)
	}
	if _, err := os.Stat(calls); err == nil {
		t.Fatal("apt-get ran without root")
	}

	euid = func() int { return 0 }
	if p, err := install("Server", "server-pkg", find); err != nil || p != server {
		t.Fatalf("root: %q, %v", p, err)
	}
	b, _ := os.ReadFile(calls)
	if want := "install -y -qq -o DPkg::Lock::Timeout=600 server-pkg\n"; string(b) != want {
		t.Fatalf("apt-get calls %q, want %q", b, want)
	}
	if p, err := install("Server", "server-pkg", find); err != nil || p != server {
		t.Fatalf("installed: %q, %v", p, err)
	}
	if b2, _ := os.ReadFile(calls); string(b2) != string(b) {
		t.Fatalf("apt-get ran again once installed: %q", b2)
	}
}

// TestHoldPrivate is the child of TestKilledBinaryStopsServers: it starts
// the private servers, names their processes and waits to be killed.
func TestHoldPrivate(t *testing.T) {
	if os.Getenv("AIVIS_TESTSVC_HOLD") != "1" {
		t.Skip("run by TestKilledBinaryStopsServers")
	}
	Postgres(t)
	Redis(t)
	NATS(t)
	procsMu.Lock()
	for _, p := range procs {
		select {
		case <-p.exited: // a start tried again on another port
		default:
			fmt.Printf("proc %d %d %s\n", p.super, p.pid, p.dir)
		}
	}
	procsMu.Unlock()
	fmt.Println("held")
	io.Copy(io.Discard, os.Stdin)
}

func TestKilledBinaryStopsServers(t *testing.T) {
	if os.Getenv(privateEnv) == "1" {
		t.Skip("already private")
	}
	cmd := child(t, "^TestHoldPrivate$", "AIVIS_TESTSVC_HOLD=1")
	hold, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	type server struct {
		super, pid int
		dir        string
	}
	var servers []server
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "held" {
		var s server
		if _, err := fmt.Sscanf(sc.Text(), "proc %d %d %s", &s.super, &s.pid, &s.dir); err == nil {
			servers = append(servers, s)
		}
	}
	if len(servers) != 3 {
		t.Fatalf("the child started %d servers, want 3 (see its output)", len(servers))
	}
	all := descendants(cmd.Process.Pid)
	for _, s := range servers {
		if !all.has(s.super) || !all.has(s.pid) {
			t.Fatalf("supervisor %d or server %d is not the child's (%v)", s.super, s.pid, all)
		}
	}

	// A killed supervisor takes its server along (it leaves the server's
	// directory, which is removed here). Redis's: a killed PostgreSQL would
	// leave its shared memory.
	redis := servers[1]
	t.Cleanup(func() { os.RemoveAll(redis.dir) })
	syscall.Kill(redis.super, syscall.SIGKILL)
	waitGone(t, all.only(redis.super, redis.pid), nil)

	// A killed test binary takes every supervisor, server (with the
	// server's own processes) and directory along.
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, all, []string{servers[0].dir, servers[2].dir})
}

// procID is a process: pid and start time, so that a reused pid is not it.
type procID struct {
	pid   int
	start string
}

type procSet []procID

func (s procSet) has(pid int) bool {
	for _, p := range s {
		if p.pid == pid {
			return true
		}
	}
	return false
}

func (s procSet) only(pids ...int) procSet {
	var o procSet
	for _, p := range s {
		for _, pid := range pids {
			if p.pid == pid {
				o = append(o, p)
			}
		}
	}
	return o
}

// stat returns a process's parent, state and start time from /proc.
func stat(pid int) (ppid int, state, start string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", "", false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 20 {
		return 0, "", "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0], f[19], true
}

// descendants returns the processes below root.
func descendants(root int) procSet {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]procID{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, start, ok := stat(pid); ok {
			children[ppid] = append(children[ppid], procID{pid, start})
		}
	}
	var out procSet
	next := []int{root}
	for len(next) > 0 {
		pid := next[0]
		next = next[1:]
		for _, c := range children[pid] {
			out = append(out, c)
			next = append(next, c.pid)
		}
	}
	return out
}

// waitGone waits until every process in ps has exited (a zombie has) and
// every directory in dirs is removed, failing t after a minute.
func waitGone(t *testing.T, ps procSet, dirs []string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var left []string
		for _, p := range ps {
			if _, state, start, ok := stat(p.pid); ok && state != "Z" && start == p.start {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
				left = append(left, fmt.Sprintf("process %d (%s)", p.pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
			}
		}
		for _, d := range dirs {
			if _, err := os.Stat(d); err == nil {
				left = append(left, "directory "+d)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still there a minute later:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A NATS server without JetStream answers, but is not used.
func TestNATSWithoutJetStream(t *testing.T) {
	bin := lookup("nats-server", "/usr/sbin", "/usr/bin")
	if bin == "" {
		t.Skip("no nats-server here")
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := privateDir("nats")
	if err != nil {
		t.Fatal(err)
	}
	p, err := startSupervised(spec{Argv: []string{bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port)}, Dir: dir, Stop: syscall.SIGTERM})
	if err != nil {
		t.Fatal(err)
	}
	defer p.stdin.Close()
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	answers := func(ctx context.Context, url string) error {
		nc, err := nats.Connect(url)
		if err == nil {
			nc.Close()
		}
		return err
	}
	if err := waitReady(p, answers, url); err != nil {
		t.Fatal(err)
	}
	if err := natsProbe(ctx(t), url); err == nil || !strings.Contains(err.Error(), "no JetStream") {
		t.Fatalf("probe of a server without JetStream: %v", err)
	}
}
