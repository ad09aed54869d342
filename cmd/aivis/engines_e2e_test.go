package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/internal/testsvc"
)

// aivis runs the binary in a directory of its own (so that nothing lands
// in the source tree) with env added to the test's environment, and
// returns its output and exit code. A command still running after a
// minute (a server that should have refused to start) is killed and fails
// the test.
func aivis(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("aivis %s still ran after a minute:\n%s", strings.Join(args, " "), errOut.String())
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("aivis %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// TestEnginesChosenAlike: serve and the other commands read the engine
// settings from the same flag, variable and file, and refuse an unknown
// engine with the same error (a configuration error, exit code 1), naming
// the known ones, before they touch the data directory.
func TestEnginesChosenAlike(t *testing.T) {
	file := filepath.Join(t.TempDir(), "aivis.json")
	if err := os.WriteFile(file, []byte(`{"store": "nosuch"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"--store", []string{"--store", "nosuch"}, nil, `store "nosuch" is not an engine of aivis (known: postgres, sqlite)`},
		{"AIVIS_STORE", nil, []string{"AIVIS_STORE=nosuch"}, `store "nosuch" is not an engine of aivis (known: postgres, sqlite)`},
		{"store in the file", []string{"--config", file}, nil, `store "nosuch" is not an engine of aivis (known: postgres, sqlite)`},
		{"AIVIS_CONFIG", nil, []string{"AIVIS_CONFIG=" + file}, `store "nosuch" is not an engine of aivis (known: postgres, sqlite)`},
		{"--bus", []string{"--bus", "kafka"}, nil, `bus "kafka" is not an engine of aivis (known: nats, postgres, sqlite)`},
		{"bus nats without its server", []string{"--bus", "nats"}, nil, "bus nats needs nats_url (AIVIS_NATS_URL, --nats-url)"},
		{"store postgres without its settings", []string{"--store", "postgres"}, nil,
			"store postgres needs postgres_url (AIVIS_POSTGRES_URL, --postgres-url)\n" +
				"store postgres needs master_key_file (AIVIS_MASTER_KEY_FILE, --master-key-file): " +
				"every instance seals and opens the stored secrets with the one master key it is given"},
		{"AIVIS_COUNTER", nil, []string{"AIVIS_COUNTER=memcached"}, `counter "memcached" is not an engine of aivis (known: memory, redis, store)`},
		{"counter redis without its server", []string{"--counter", "redis"}, nil, "counter redis needs redis_url (AIVIS_REDIS_URL, --redis-url)"},
		// Any other setting is read and checked alike too.
		{"AIVIS_LOG_LEVEL", nil, []string{"AIVIS_LOG_LEVEL=loud"}, `log_level must be debug, info, warn or error, not "loud"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			run := func(args ...string) string {
				t.Helper()
				args = append(append(args, "--data-dir", dir), tc.args...)
				_, stderr, code := aivis(t, tc.env, args...)
				if code != 1 {
					t.Fatalf("aivis %s: exit code %d, want 1; stderr:\n%s", strings.Join(args, " "), code, stderr)
				}
				return stderr
			}
			serve := run("serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0")
			if want := "aivis: config: " + tc.want + "\n"; serve != want {
				t.Fatalf("serve says\n%q\nwant\n%q", serve, want)
			}
			for _, cmd := range [][]string{{"key", "revoke", "key_1"}, {"account", "list"}, {"plugin", "list"}, {"user", "list", "--account", "acct_1"}} {
				if got := run(cmd...); got != serve {
					t.Errorf("aivis %s says\n%q\nserve says\n%q", strings.Join(cmd, " "), got, serve)
				}
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the data directory was made (%v) for a configuration refused", err)
			}
		})
	}
}

// TestCommandsReadTheServersConfiguration: a command given the server's
// file, by AIVIS_CONFIG or --config and nothing else, acts on the server's
// data: the key it makes is the server's, and the key it revokes is
// refused from the server's next request on.
func TestCommandsReadTheServersConfiguration(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "aivis.json")
	body, _ := json.Marshal(map[string]string{"data_dir": dir, "store": "sqlite", "bus": "sqlite", "counter": "memory"})
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	command := func(env []string, out any, args ...string) {
		t.Helper()
		stdout, stderr, code := aivis(t, env, append(args, "--json")...)
		if code != 0 {
			t.Fatalf("aivis %s: exit code %d:\n%s", strings.Join(args, " "), code, stderr)
		}
		if out != nil {
			if err := json.Unmarshal([]byte(stdout), out); err != nil {
				t.Fatalf("aivis %s: %v:\n%s", strings.Join(args, " "), err, stdout)
			}
		}
	}
	byEnv := []string{"AIVIS_CONFIG=" + file}
	var a account
	command(byEnv, &a, "account", "create", "--name", "Configured", "--tier", "starter")
	var k key
	command(byEnv, &k, "key", "create", "--account", a.ID, "--name", "configured")

	s := start(t, dir, "--config", file)
	bs := req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)}
	if r := s.do(t, bs); r.Status != 200 {
		t.Fatalf("the key the command made: %d %s", r.Status, r.Body)
	}
	command(nil, nil, "key", "revoke", k.ID, "--config", file)
	if r := s.do(t, bs); r.Status != 401 || r.errorCode(t) != "KEY_REVOKED" {
		t.Fatalf("the key the command revoked: %d %s", r.Status, r.Body)
	}
}

// TestStoreCounterSharedByServers: two servers on one data directory with
// counter store share an account's windows: of 90 concurrent requests of a
// starter account spread over both, exactly 60 (its per-minute limit)
// pass, and the key's usage in the database counts those 60 as soon as
// they are answered; and they share the guard of failed authentications:
// failures at either count against the address at both.
func TestStoreCounterSharedByServers(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "starter", false)
	k := newKey(t, dir, a.ID)
	servers := []*server{start(t, dir, "--counter", "store", "--auth-failures-per-minute", "3"),
		start(t, dir, "--counter", "store", "--auth-failures-per-minute", "3")}
	sixtyOfNinety(t, servers, k)
	if n := servers[0].count(t, `SELECT coalesce(sum(count), 0) FROM usage_hourly`); n != 60 {
		t.Errorf("the key's usage counts %d requests, want the 60 that passed", n)
	}
	for i, s := range servers {
		r := s.do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)})
		if r.Status != 429 || r.Header.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("server %d, after the 60: %d, remaining %s; want 429 and none", i+1, r.Status, r.Header.Get("X-RateLimit-Remaining"))
		}
	}
	threeFailuresOverBoth(t, servers, k)
}

// threeFailuresOverBoth fails to authenticate three times, with k's id and
// a wrong secret, over the two servers started with
// --auth-failures-per-minute 3, and checks that each then refuses the
// address, whatever the credentials.
func threeFailuresOverBoth(t *testing.T, servers []*server, k key) {
	t.Helper()
	awayFromMinuteEnd(5 * time.Second)
	wrong := with(keyed(k), "X-API-Secret", strings.Repeat("x", len(k.Secret)))
	for i := range 3 {
		if r := servers[i%2].do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: wrong}); r.Status != 401 {
			t.Fatalf("failure %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	for i, s := range servers {
		if r := s.do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)}); r.Status != 429 ||
			!strings.Contains(string(r.Body), "failed authentication attempts from this address") {
			t.Errorf("server %d after 3 failures over both: %d %s; want the address refused", i+1, r.Status, r.Body)
		}
	}
}

// sixtyOfNinety sends 90 concurrent requests of k, a starter account's key,
// spread over the servers, within one minute, and checks that exactly 60
// (the minute's limit) pass and the others are refused.
func sixtyOfNinety(t *testing.T, servers []*server, k key) {
	t.Helper()
	awayFromMinuteEnd(25 * time.Second)
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for i := range 90 {
		wg.Go(func() {
			r := servers[i%len(servers)].do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)})
			mu.Lock()
			statuses[r.Status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[200] != 60 || statuses[429] != 30 {
		t.Fatalf("statuses %v over %d servers; want exactly 60 passed and 30 refused", statuses, len(servers))
	}
}

// TestCommandsOnPostgres: the commands act on the PostgreSQL store named by
// the environment, their secrets sealed with the master key file they are
// given (no master.key is made in the data directory); a master key file
// that is not there stops them before they touch the store.
func TestCommandsOnPostgres(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	env := []string{"AIVIS_STORE=postgres", "AIVIS_POSTGRES_URL=" + testsvc.Postgres(t), "AIVIS_MASTER_KEY_FILE=" + masterKeyFile(t)}
	command := func(env []string, out any, args ...string) {
		t.Helper()
		args = append(args, "--data-dir", dir, "--json")
		stdout, stderr, code := aivis(t, env, args...)
		if code != 0 {
			t.Fatalf("aivis %s: exit code %d:\n%s", strings.Join(args, " "), code, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), out); err != nil {
			t.Fatalf("aivis %s: %v:\n%s", strings.Join(args, " "), err, stdout)
		}
	}
	var a account
	command(env, &a, "account", "create", "--name", "On PostgreSQL", "--tier", "starter")
	var k key
	command(env, &k, "key", "create", "--account", a.ID, "--name", "pg")
	var revoked struct {
		RevokedAt *string `json:"revoked_at"`
	}
	command(env, &revoked, "key", "revoke", k.ID)
	var keys []struct {
		ID        string  `json:"id"`
		RevokedAt *string `json:"revoked_at"`
	}
	command(env, &keys, "key", "list", "--account", a.ID)
	if len(keys) != 1 || keys[0].ID != k.ID || keys[0].RevokedAt == nil || revoked.RevokedAt == nil || *keys[0].RevokedAt != *revoked.RevokedAt {
		t.Errorf("key list after the revocation: %+v; revoked at %v", keys, revoked.RevokedAt)
	}
	if _, err := os.Stat(filepath.Join(dir, "master.key")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a master key was made in the data directory (%v) though master_key_file is set", err)
	}

	missing := append(env[:2:2], "AIVIS_MASTER_KEY_FILE="+filepath.Join(t.TempDir(), "nosuch.key"))
	_, stderr, code := aivis(t, missing, "account", "list", "--data-dir", dir)
	if code == 0 || !strings.Contains(stderr, "master key") || !strings.Contains(stderr, "nosuch.key") {
		t.Errorf("with a master key file that is not there: exit code %d, %q", code, stderr)
	}
}

// TestServeRefusesAnUnansweringRedis: serve with counter redis whose
// server does not answer refuses to start (exit code 1), saying so
// without the password of redis_url.
func TestServeRefusesAnUnansweringRedis(t *testing.T) {
	_, stderr, code := aivis(t, []string{"AIVIS_REDIS_URL=redis://aivis:s3cr3t@127.0.0.1:1/0"},
		"serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--counter", "redis")
	if code != 1 || !strings.Contains(stderr, "counter redis: the server of redis_url does not answer") || strings.Contains(stderr, "s3cr3t") {
		t.Fatalf("exit code %d, stderr %q; want 1 and the server named as not answering, without the password", code, stderr)
	}
}

// TestRedisCounterSharedByServers: two servers with counter redis on one
// Redis (through a relay the test can cut) share an account's windows and
// the guard of failed authentications: of 90 concurrent requests of a
// starter account spread over both, exactly 60 pass, and the key's usage
// reaches the database as those 60, once; failed authentications on
// either count against the address on both. While Redis is away both
// answer 503 RATE_LIMIT_UNAVAILABLE with Retry-After, and serve again
// once it is back.
func TestRedisCounterSharedByServers(t *testing.T) {
	url, prefix := testsvc.Redis(t)
	relay := testsvc.NewRelay(t, url)
	dir := t.TempDir()
	first, busy := newAccount(t, dir, "starter", false), newAccount(t, dir, "starter", false)
	k, kb := newKey(t, dir, first.ID), newKey(t, dir, busy.ID)
	var servers []*server
	for range 2 {
		servers = append(servers, start(t, dir, "--counter", "redis", "--redis-url", relay.URL(), "--cluster-name", prefix,
			"--auth-failures-per-minute", "3"))
	}
	bs := func(k key) req { return req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)} }
	for i, s := range servers {
		if r := s.do(t, bs(k)); r.Status != 200 {
			t.Fatalf("server %d: %d %s", i+1, r.Status, r.Body)
		}
	}

	relay.Cut()
	for i, s := range servers {
		r := s.do(t, bs(k))
		if r.Status != 503 || r.errorCode(t) != "RATE_LIMIT_UNAVAILABLE" || r.Header.Get("Retry-After") != "5" {
			t.Fatalf("server %d with Redis away: %d %s, Retry-After %q; want 503 RATE_LIMIT_UNAVAILABLE and 5", i+1, r.Status, r.Body, r.Header.Get("Retry-After"))
		}
	}
	relay.Mend(t)
	for i, s := range servers {
		deadline := time.Now().Add(15 * time.Second)
		for r := s.do(t, bs(k)); r.Status != 200; r = s.do(t, bs(k)) {
			if r.Status != 503 || time.Now().After(deadline) {
				t.Fatalf("server %d once Redis is back: %d %s", i+1, r.Status, r.Body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	sixtyOfNinety(t, servers, kb)
	// Each server writes the usage counted on Redis every second.
	usage := `SELECT coalesce(sum(count), 0) FROM usage_hourly WHERE key_id = '` + kb.ID + `'`
	deadline := time.Now().Add(15 * time.Second)
	for n := servers[0].count(t, usage); n != 60; n = servers[0].count(t, usage) {
		if n > 60 || time.Now().After(deadline) {
			t.Fatalf("the key's usage counts %d requests, want the 60 that passed", n)
		}
		time.Sleep(100 * time.Millisecond)
	}

	threeFailuresOverBoth(t, servers, k)
}
