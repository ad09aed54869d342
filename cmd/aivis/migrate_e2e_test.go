package main

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type migrationStatus struct {
	Version    int64 `json:"version"`
	Known      int64 `json:"known"`
	Pending    int   `json:"pending"`
	Migrations []struct {
		Version      int64  `json:"version"`
		Name         string `json:"name"`
		State        string `json:"state"`
		Irreversible string `json:"irreversible"`
	} `json:"migrations"`
}

// exited waits for a server that must not start, and returns its stderr.
func (s *server) exited(t *testing.T) string {
	t.Helper()
	select {
	case <-s.closed:
		s.cmd.Wait()
	case <-s.banner:
		t.Fatalf("aivis serve started; want it refused:\n%s", s.Stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("aivis serve neither started nor exited in 30 s:\n%s", s.Stderr)
	}
	return s.Stderr.String()
}

// TestMigrateCommand: through the binary, on SQLite: a first command on a
// new data directory migrates it (the README's flow), status lists every
// migration, down undoes to a version, the other commands and serve
// without auto_migrate then refuse the older schema naming aivis migrate
// up and change nothing, up applies what is pending; a down past a
// migration that cannot be undone is refused; a newer schema is refused by
// every command and by serve, naming both versions.
func TestMigrateCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if msg := cliFails(t, dir, "migrate", "status"); !strings.Contains(msg, "no database yet") {
		t.Fatalf("status on a new data directory: %s", msg)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("status made the data directory (%v)", err)
	}
	acct := newAccount(t, dir, "starter", false)
	var st migrationStatus
	cli(t, dir, &st, "migrate", "status")
	if st.Pending != 0 || st.Version != st.Known || len(st.Migrations) == 0 {
		t.Fatalf("status after the first command: %+v", st)
	}
	for _, m := range st.Migrations {
		if m.State != "applied" || m.Name == "" {
			t.Fatalf("migration %+v", m)
		}
	}
	last, prev := st.Migrations[len(st.Migrations)-1], st.Migrations[len(st.Migrations)-2]
	cli(t, dir, nil, "migrate", "down", "--to", fmt.Sprint(prev.Version))
	cli(t, dir, &st, "migrate", "status")
	if st.Version != prev.Version || st.Pending != 1 || st.Migrations[len(st.Migrations)-1].State != "pending" {
		t.Fatalf("status after a down to %d: %+v", prev.Version, st)
	}

	want := fmt.Sprintf("the database is at schema %d, this aivis needs %d (1 pending): run `aivis migrate up`", prev.Version, last.Version)
	if msg := cliFails(t, dir, "account", "list"); !strings.Contains(msg, want) {
		t.Fatalf("account list on an older schema: %s", msg)
	}
	if msg := launch(t, dir, "--auto-migrate=false").exited(t); !strings.Contains(msg, want) {
		t.Fatalf("serve --auto-migrate=false on an older schema: %s", msg)
	}
	cli(t, dir, &st, "migrate", "status")
	if st.Version != prev.Version {
		t.Fatalf("a refused command moved the schema to %d", st.Version)
	}
	cli(t, dir, nil, "migrate", "up")
	var accts []account
	cli(t, dir, &accts, "account", "list")
	if len(accts) != 1 || accts[0].ID != acct.ID {
		t.Fatalf("accounts after migrate up: %+v", accts)
	}

	// The newest migration that cannot be undone stops a down past it.
	var stop int64
	for _, m := range st.Migrations {
		if m.Irreversible != "" {
			stop = m.Version
		}
	}
	msg := cliFails(t, dir, "migrate", "down", "--to", fmt.Sprint(stop-1))
	if !strings.Contains(msg, fmt.Sprintf("migration %04d", stop)) || !strings.Contains(msg, "cannot be undone") {
		t.Fatalf("down past %d: %s", stop, msg)
	}
	cli(t, dir, &st, "migrate", "status")
	if st.Version != last.Version || st.Pending != 0 {
		t.Fatalf("a refused down moved the schema: %+v", st)
	}
	if msg := cliFails(t, dir, "migrate", "down", "--to", "seven"); !strings.Contains(msg, "--to takes a version number") {
		t.Fatalf("down --to seven: %s", msg)
	}

	db, err := sql.Open("sqlite3", filepath.Join(dir, "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	// A newer aivis applied a migration that only adds: this one runs on
	// the database, but does not migrate it.
	_, err = db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)`, last.Version+5)
	if err != nil {
		t.Fatal(err)
	}
	cli(t, dir, nil, "account", "list")
	want = fmt.Sprintf("the database is at schema %d, this aivis knows up to %d: run a newer aivis, or restore a backup", last.Version+5, last.Version)
	if msg := cliFails(t, dir, "migrate", "up"); !strings.Contains(msg, want) {
		t.Errorf("aivis migrate up on a newer schema: %s", msg)
	}
	// Then a contract: what this aivis reads changed.
	_, err = db.Exec(`UPDATE schema_floor SET version = ?`, last.Version+5)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	want = fmt.Sprintf("the database is at schema %d, this aivis knows up to %d: migration %d changed what this aivis reads: run a newer aivis, or restore a backup",
		last.Version+5, last.Version, last.Version+5)
	for _, args := range [][]string{{"account", "list"}, {"migrate", "up"}} {
		if msg := cliFails(t, dir, args...); !strings.Contains(msg, want) {
			t.Errorf("aivis %s on a newer schema: %s", strings.Join(args, " "), msg)
		}
	}
	if msg := launch(t, dir).exited(t); !strings.Contains(msg, want) {
		t.Fatalf("serve on a newer schema: %s", msg)
	}
}

// TestMigrateCommandPostgres: the same commands on PostgreSQL (its
// settings in the environment): status on a new database lists every
// migration pending and makes nothing, up applies them, down undoes one,
// which the other commands then refuse, naming aivis migrate up.
func TestMigrateCommandPostgres(t *testing.T) {
	c := newCluster(t)
	var st migrationStatus
	cli(t, c.dir, &st, "migrate", "status")
	if st.Version != 0 || st.Pending != len(st.Migrations) || st.Pending == 0 {
		t.Fatalf("status on a new database: %+v", st)
	}
	if n := c.count(t, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`); n != 0 {
		t.Fatalf("status made %d tables", n)
	}
	cli(t, c.dir, nil, "migrate", "up")
	cli(t, c.dir, &st, "migrate", "status")
	if st.Version != st.Known || st.Pending != 0 {
		t.Fatalf("status after up: %+v", st)
	}
	prev := st.Migrations[len(st.Migrations)-2].Version
	cli(t, c.dir, nil, "migrate", "down", "--to", fmt.Sprint(prev))
	if n := c.count(t, `SELECT count(*) FROM goose_db_version WHERE version_id > $1`, prev); n != 0 {
		t.Fatalf("%d versions above %d after the down", n, prev)
	}
	if msg := cliFails(t, c.dir, "account", "list"); !strings.Contains(msg, "run `aivis migrate up`") {
		t.Fatalf("account list on an older schema: %s", msg)
	}
	cli(t, c.dir, nil, "migrate", "up")
	var accts []account
	cli(t, c.dir, &accts, "account", "list")
}
