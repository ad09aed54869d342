// Package testsvc gives tests real PostgreSQL, Redis and NATS JetStream
// servers, each test its own database, key prefix or stream prefix on them.
// Only tests import it.
//
// A server is, in this order: the one named by AIVIS_TEST_POSTGRES_URL,
// AIVIS_TEST_REDIS_URL or AIVIS_TEST_NATS_URL; the one answering on the
// standard loopback port (127.0.0.1:5432 as user postgres, 6379, 4222 with
// JetStream); or a private one that this package starts on a free loopback
// port in a temporary directory, once per test binary, after installing its
// Debian package if it is missing (as root; otherwise the test is skipped
// with the command that installs it). AIVIS_TEST_PRIVATE=1 skips the
// loopback servers. A private server runs under a supervisor (this test
// binary run again, see supervise.go) that stops it and removes its
// directory when the test binary exits, however it exits.
package testsvc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// privateEnv forces private servers even where loopback ones answer.
const privateEnv = "AIVIS_TEST_PRIVATE"

// service is one kind of server, found or started once per test binary.
type service struct {
	name     string // PostgreSQL, Redis, NATS
	env      string // the variable that names a server to use
	loopback string // the server on the standard loopback port
	// probe returns nil once a server at url answers and can be used.
	probe func(ctx context.Context, url string) error
	// start starts a private server and returns its URL.
	start func(s *service) (string, error)
	// clean removes what a test made under prefix.
	clean func(ctx context.Context, url, prefix string) error

	once sync.Once
	url  string
	err  error
}

// skipError is a reason to skip the tests that need a server rather than
// fail them: the server cannot be had on this machine by this user.
type skipError struct{ msg string }

func (e *skipError) Error() string { return e.msg }

// URL returns the server's URL, finding or starting it on first use; it
// skips or fails t when there is none.
func (s *service) URL(t testing.TB) string {
	t.Helper()
	s.once.Do(func() { s.url, s.err = s.find(t) })
	var skip *skipError
	if errors.As(s.err, &skip) {
		t.Skip(skip.msg)
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.url
}

// withPrefix returns the server's URL and a new prefix for t alone, and
// removes what t made under the prefix when t ends.
func (s *service) withPrefix(t testing.TB) (url, prefix string) {
	t.Helper()
	prefix = newPrefix()
	return s.under(t, prefix), prefix
}

// under returns the server's URL, and removes what t made under prefix
// when t ends.
func (s *service) under(t testing.TB, prefix string) (url string) {
	t.Helper()
	url = s.URL(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.clean(ctx, url, prefix); err != nil {
			t.Errorf("testsvc: removing what the test left in %s under %s: %v", s.name, prefix, err)
		}
	})
	return url
}

// Cluster is what the instances of one aivis deployment share: a
// database of their own, and a Redis and a NATS server on which the keys
// and streams under Name, the deployment's cluster_name, are its alone.
type Cluster struct {
	PostgresURL, RedisURL, NATSURL, Name string
}

// NewCluster returns a Cluster for t alone: its database is dropped, and
// its keys and streams deleted, when t ends.
func NewCluster(t testing.TB) Cluster {
	t.Helper()
	c := Cluster{PostgresURL: Postgres(t), Name: newPrefix()}
	c.RedisURL = redisServer.under(t, c.Name)
	c.NATSURL = natsServer.under(t, c.Name)
	return c
}

func (s *service) find(t testing.TB) (string, error) {
	if url := os.Getenv(s.env); url != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.probe(ctx, url); err != nil {
			return "", fmt.Errorf("%s named by %s does not answer: %w", s.name, s.env, err)
		}
		return url, nil
	}
	if os.Getenv(privateEnv) != "1" {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := s.probe(ctx, s.loopback)
		cancel()
		if err == nil {
			return s.loopback, nil
		}
		t.Logf("testsvc: no usable %s on its standard loopback port (%v): starting a private one", s.name, err)
	}
	began := time.Now()
	url, err := s.start(s)
	if err == nil {
		t.Logf("testsvc: private %s at %s, started in %v", s.name, url, time.Since(began).Round(time.Millisecond))
	}
	return url, err
}

// runPrivate starts the server that prepare describes for a free port and
// waits until it answers. prepare makes the server's directory, which the
// supervisor removes. Another process may take the port before the server
// binds it; then the server exits, and it is tried again on another port.
func (s *service) runPrivate(prepare func(port int) (spec, string, error)) (string, error) {
	for try := 1; ; try++ {
		url, err := s.tryPrivate(prepare)
		if _, exited := err.(*exitError); !exited || try == 3 {
			if err != nil {
				return "", fmt.Errorf("private %s: %w", s.name, err)
			}
			return url, nil
		}
	}
}

func (s *service) tryPrivate(prepare func(port int) (spec, string, error)) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	sp, url, err := prepare(port)
	if err != nil {
		return "", err
	}
	p, err := startSupervised(sp)
	if err != nil {
		os.RemoveAll(sp.Dir)
		return "", err
	}
	if err := waitReady(p, s.probe, url); err != nil {
		p.stdin.Close()
		return "", err
	}
	return url, nil
}

// privateDir makes a directory for a private server, which others (the
// postgres user) may enter.
func privateDir(name string) (string, error) {
	dir, err := os.MkdirTemp("", "aivis-testsvc-"+name+"-")
	if err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o755)
}

// newPrefix returns a name no other test shares: a NATS stream name and
// subject token, a Redis key prefix and a PostgreSQL database name alike.
func newPrefix() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "aivistest_" + hex.EncodeToString(b)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lookup returns the path of the program name on PATH or in one of dirs
// (Debian puts some servers in /usr/sbin or a versioned directory, off a
// user's PATH), or "" when there is none.
func lookup(name string, dirs ...string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// The installer and the user it runs as; tests replace them.
var (
	aptGet = "apt-get"
	euid   = os.Geteuid
)

// install returns what find finds, installing the Debian package pkg first
// when find finds nothing. Test binaries of several packages run at once,
// so installs are serialized on a lock file and find is asked again under
// it. Without root, or without apt-get, it returns a skipError naming the
// command that installs pkg.
func install(name, pkg string, find func() string) (string, error) {
	if p := find(); p != "" {
		return p, nil
	}
	if euid() != 0 {
		return "", &skipError{fmt.Sprintf("%s is not installed and only root may install it: "+
			"run `sudo apt-get install -y %s` (or point the tests at a server, see docs/testing.md)", name, pkg)}
	}
	if _, err := exec.LookPath(aptGet); err != nil {
		return "", &skipError{fmt.Sprintf("%s is not installed and there is no apt-get here: "+
			"install the package that Debian calls %s (or point the tests at a server, see docs/testing.md)", name, pkg)}
	}
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "aivis-testsvc-install.lock"), os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if p := find(); p != "" {
		return p, nil
	}
	apt := func(args ...string) ([]byte, error) {
		cmd := exec.Command(aptGet, args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	get := []string{"install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=600", pkg}
	if _, err := apt(get...); err != nil {
		// A fresh machine may have no package lists yet.
		if out, err := apt("update", "-qq"); err != nil {
			return "", fmt.Errorf("apt-get update: %v\n%s", err, out)
		}
		if out, err := apt(get...); err != nil {
			return "", fmt.Errorf("apt-get install %s: %v\n%s", pkg, err, out)
		}
	}
	if p := find(); p != "" {
		return p, nil
	}
	return "", fmt.Errorf("apt-get installed %s but %s is still not found", pkg, name)
}
