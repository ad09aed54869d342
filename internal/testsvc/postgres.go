package testsvc

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var postgres = &service{
	name:     "PostgreSQL",
	env:      "AIVIS_TEST_POSTGRES_URL",
	loopback: "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
	probe:    pgProbe,
	start:    startPostgres,
	clean:    pgDrop,
}

// Postgres returns the URL of a new, empty database for t alone, dropped
// when t ends (with the connections still open to it).
func Postgres(t testing.TB) string {
	t.Helper()
	server, name := postgres.withPrefix(t)
	db, err := url.Parse(server)
	if err != nil || (db.Scheme != "postgres" && db.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL", postgres.env)
	}
	db.Path, db.RawPath = "/"+name, ""
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// template0 is never connected to, so that creating from it cannot
	// fail on another session in the template, as template1 can.
	if err := pgExec(ctx, server, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		t.Fatalf("testsvc: creating a database: %v", err)
	}
	return db.String()
}

func pgDrop(ctx context.Context, server, name string) error {
	return pgExec(ctx, server, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
}

// pgExec runs sql on a connection of its own to the server's database.
func pgExec(ctx context.Context, server, sql string) error {
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func pgProbe(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// startPostgres starts a private PostgreSQL: initdb, then postgres in the
// foreground. PostgreSQL refuses to run as root, so root runs both as the
// postgres user, which Debian's package makes.
func startPostgres(s *service) (string, error) {
	bin, err := install("PostgreSQL", "postgresql", findPostgres)
	if err != nil {
		return "", err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return "", fmt.Errorf("PostgreSQL cannot run as root and there is no postgres user: %w", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	return s.runPrivate(func(port int) (spec, string, error) {
		dir, err := privateDir("postgres")
		if err != nil {
			return spec{}, "", err
		}
		data := filepath.Join(dir, "data")
		err = os.Mkdir(data, 0o700)
		if err == nil && cred != nil {
			err = os.Chown(data, int(cred.Uid), int(cred.Gid))
		}
		if err != nil {
			os.RemoveAll(dir)
			return spec{}, "", err
		}
		initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
			"-E", "UTF8", "--locale=C", "--no-sync")
		initdb.Dir = dir
		initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := initdb.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return spec{}, "", fmt.Errorf("initdb: %v\n%s", err, out)
		}
		return spec{
			Argv: []string{filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
				"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
				// The data goes with the server: no need to survive a crash.
				"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off",
				// The test packages that run at once, each with its pools
				// and its clusters' instances, pass the default 100.
				"-c", "max_connections=300"},
			Dir:  dir,
			Cred: cred,
			Stop: syscall.SIGQUIT, // immediate shutdown
		}, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), nil
	})
}

// findPostgres returns the directory of postgres and initdb: on PATH, or
// where Debian puts them (/usr/lib/postgresql/VERSION/bin, the newest).
func findPostgres() string {
	if p := lookup("postgres"); p != "" && lookup("initdb", filepath.Dir(p)) != "" {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return n
	}
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if lookup(filepath.Join(d, "postgres")) != "" && lookup(filepath.Join(d, "initdb")) != "" {
			return d
		}
	}
	return ""
}
