// Package scripts_test runs the scripts of scripts/ as an operator does,
// with stand-ins for the programs they call where those would need
// servers, and checks what they show, pass on and write.
package scripts_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/internal/scripttest"
)

// TestShellcheck: every script passes shellcheck.
func TestShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Skip("shellcheck is missing (Debian: apt-get install -y shellcheck; make deps installs it)")
	}
	scripts, err := filepath.Glob("*.sh")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	if out, err := exec.Command("shellcheck", scripts...).CombinedOutput(); err != nil {
		t.Fatalf("shellcheck %v: %v\n%s", scripts, err, out)
	}
}

// psql stands in for psql: it records its arguments, one a line, and its
// PGPASSWORD in $RECORD/psql, then answers as PostgreSQL would without the
// database (nothing to the query, and the CREATE done), or, with
// FAKE_PSQL=down, as psql does when the server does not answer.
const psql = `#!/bin/sh
{ echo "argv:"; printf '%s\n' "$@"; echo "PGPASSWORD=${PGPASSWORD-(unset)}"; } >>"$RECORD/psql"
if [ "${FAKE_PSQL:-}" = down ]; then
	echo 'psql: error: connection to server at "127.0.0.1", port 5432 failed: Connection refused' >&2
	exit 2
fi
exit 0
`

// aivis stands in for the binary: plugin commands do nothing, and serve
// prints what the script reads of a server's banner, then runs until it
// is stopped.
const aivis = `#!/bin/sh
case "$1" in
serve)
	echo "aivis listening on https://localhost:1"
	echo "  https://localhost:1/join?token=t0ken"
	echo "data directory: $*"
	trap 'exit 0' TERM INT
	while :; do sleep 0.05; done ;;
esac
exit 0
`

// runCluster runs run-cluster.sh with the stand-ins and the environment
// given, and returns its output and its exit once it exits, or once
// Ctrl-C has stopped it after it started the cluster. record is where psql
// records.
func runCluster(t *testing.T, env ...string) (out string, err error, record string) {
	t.Helper()
	bin, record := t.TempDir(), t.TempDir()
	for name, body := range map[string]string{"psql": psql, "aivis": aivis} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "run-cluster.sh")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "BIN="+bin, "RECORD="+record, "CLUSTER_ADDRS=127.0.0.1:0 127.0.0.1:0", "CLUSTER_ADMIN_ADDRS=127.0.0.1:0 127.0.0.1:0")
	cmd.Env = append(cmd.Env, env...)
	s := scripttest.Start(t, cmd)
	if started, err := s.WaitOutput(t, "Ctrl-C stops both instances.", time.Minute); !started {
		return s.Out.String(), err, record
	}
	err = s.Interrupt(t, time.Minute)
	return s.Out.String(), err, record
}

func needJQ(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("run-cluster.sh needs jq (Debian: apt-get install -y jq; make deps installs it)")
	}
}

// TestRunClusterKeepsSecretsOutOfSight: the PostgreSQL password of
// AIVIS_POSTGRES_URL, in its user part or among its parameters, reaches
// psql as PGPASSWORD (URL encoding undone), never among its arguments, and
// the script's output never shows it; the settings it writes are the JSON
// of the values given, quotes, backslashes and all; and the settings, the
// master key and the instances' logs are the user's alone, in a directory
// only the user may enter, files made before with other modes included.
func TestRunClusterKeepsSecretsOutOfSight(t *testing.T) {
	needJQ(t)
	const password = `p@ss"w\d/x`
	for _, tc := range []struct{ name, url string }{
		{"in the user part", `postgres://aivis:p%40ss%22w%5Cd%2Fx@127.0.0.1:5432/aivis?sslmode=disable`},
		{"among the parameters", `postgres://aivis@127.0.0.1:5432/aivis?sslmode=disable&password=p%40ss%22w%5Cd%2Fx`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), `trial "one" \ two`)
			if err := os.MkdirAll(filepath.Join(data, "a"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"a.log", "aivis.json"} { // left by an earlier run, readable by all
				if err := os.WriteFile(filepath.Join(data, f), []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			nats, redis, cluster := `nats://u:"q\uote"@127.0.0.1:4222`, "redis://:r\\e\"d\nis@127.0.0.1:6379/0", `trial"\`
			out, err, record := runCluster(t, "CLUSTER_DATA="+data, "AIVIS_POSTGRES_URL="+tc.url, "AIVIS_NATS_URL="+nats,
				"AIVIS_REDIS_URL="+redis, "AIVIS_CLUSTER_NAME="+cluster)
			if err != nil {
				t.Fatalf("run-cluster.sh: %v\n%s", err, out)
			}
			calls, err := os.ReadFile(filepath.Join(record, "psql"))
			if err != nil {
				t.Fatal(err)
			}
			for _, call := range strings.Split(string(calls), "argv:\n")[1:] {
				args, env, _ := strings.Cut(call, "PGPASSWORD=")
				if strings.Contains(args, "p%40ss") || strings.Contains(args, password) || strings.Contains(args, "password") {
					t.Errorf("psql was given the password among its arguments:\n%s", args)
				}
				if env != password+"\n" {
					t.Errorf("psql's PGPASSWORD is %q, want %q", env, password+"\n")
				}
				if !strings.Contains(args, "postgres://aivis@127.0.0.1:5432/postgres") {
					t.Errorf("psql was not given the maintenance database of the server:\n%s", args)
				}
			}
			if n := strings.Count(string(calls), "argv:"); n != 2 {
				t.Errorf("psql was run %d times, want 2 (the look, the CREATE)", n)
			}
			if strings.Contains(out, "p%40ss") || strings.Contains(out, "p@ss") {
				t.Errorf("the output shows the password:\n%s", out)
			}

			var got map[string]string
			config, err := os.ReadFile(filepath.Join(data, "aivis.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(config, &got); err != nil {
				t.Fatalf("aivis.json is not JSON: %v\n%s", err, config)
			}
			for k, want := range map[string]string{"data_dir": filepath.Join(data, "a"), "store": "postgres", "postgres_url": tc.url,
				"bus": "nats", "nats_url": nats, "counter": "redis", "redis_url": redis, "cluster_name": cluster,
				"master_key_file": filepath.Join(data, "master.key")} {
				if got[k] != want {
					t.Errorf("aivis.json's %s is %q, want %q", k, got[k], want)
				}
			}
			for name, mode := range map[string]os.FileMode{"": 0o700, "aivis.json": 0o600, "master.key": 0o600, "a.log": 0o600, "b.log": 0o600} {
				fi, err := os.Stat(filepath.Join(data, name))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != mode {
					t.Errorf("%s has mode %v, want %v", filepath.Join(data, name), fi.Mode().Perm(), mode)
				}
			}
			if log, err := os.ReadFile(filepath.Join(data, "b.log")); err != nil || !strings.Contains(string(log), "join?token=t0ken") {
				t.Errorf("b.log holds %q (%v), want the one-time link", log, err)
			}
		})
	}
}

// TestRunClusterNamesOnlyTheServer: when PostgreSQL does not answer, the
// script says so naming the server's host and port, not its user or
// password, and stops before it writes anything.
func TestRunClusterNamesOnlyTheServer(t *testing.T) {
	needJQ(t)
	data := filepath.Join(t.TempDir(), "trial")
	out, err, _ := runCluster(t, "FAKE_PSQL=down", "CLUSTER_DATA="+data,
		"AIVIS_POSTGRES_URL=postgres://aivis:s3cr3t@127.0.0.1:5432/aivis?sslmode=disable")
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("run-cluster.sh: %v, want exit code 1\n%s", err, out)
	}
	if !strings.Contains(out, "run-cluster: PostgreSQL does not answer at 127.0.0.1:5432: psql: error:") {
		t.Errorf("the output does not say which server does not answer:\n%s", out)
	}
	if strings.Contains(out, "s3cr3t") || strings.Contains(out, "aivis:") || strings.Contains(out, "aivis@") {
		t.Errorf("the output shows the server's user or password:\n%s", out)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the trial's directory was made (%v) though PostgreSQL does not answer", err)
	}
}
