// Package schema runs the store's migrations, on either engine, with goose:
// it says where a database stands (Status), applies what is pending (Up),
// undoes down to a version (DownTo, refusing a migration that cannot be
// undone) and decides at open what a process may do with a database whose
// schema is older or newer than the binary (Prepare).
package schema

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
)

// Table is goose's table of applied versions, on both engines.
const Table = "goose_db_version"

// Policy is what opening a store may do with the schema it finds.
type Policy int

const (
	// Apply applies every pending migration (serve, unless auto_migrate
	// is false).
	Apply Policy = iota
	// ApplyNew applies them to a new database only (no migration applied
	// yet) and refuses an older one, naming `aivis migrate up`: what the
	// other commands do, so that a first `aivis account create` works on
	// a new data directory while an existing one is never migrated as a
	// side effect.
	ApplyNew
	// Refuse applies none and refuses a database with pending migrations
	// (serve with auto_migrate false).
	Refuse
)

// Of is the policy of an optional argument: Apply when there is none.
func Of(p []Policy) Policy {
	if len(p) == 0 {
		return Apply
	}
	return p[0]
}

// ErrNewer is a database whose schema is newer than the binary: it has a
// version this binary has no migration for.
var ErrNewer = errors.New("schema newer than this aivis")

// ErrPending is a database with migrations this binary has and it has not
// applied, opened by a process that may not apply them.
var ErrPending = errors.New("schema older than this aivis")

// ErrIrreversible is a down past a migration that cannot be undone.
var ErrIrreversible = errors.New("cannot be undone")

// Engine is what the runner needs of a store engine.
type Engine struct {
	Dialect goose.Dialect
	// Files holds the migrations, NNNN_name.sql, at its root.
	Files fs.FS
	// Locker is held while migrations run, so that processes opening the
	// database at once apply each migration once.
	Locker lock.SessionLocker
	// TableExists says whether table exists in db.
	TableExists func(ctx context.Context, db *sql.DB, table string) (bool, error)
}

// Migration is one migration of the binary, or one the database has
// applied that the binary does not know (Unknown).
type Migration struct {
	Version int64
	Name    string // the file's name without version and extension
	Applied bool
	Unknown bool // applied, with no file in this binary (a newer aivis's)
	// Irreversible says why the migration cannot be undone ("" if it
	// can).
	Irreversible string
}

// Runner runs an engine's migrations on one database.
type Runner struct {
	db     *sql.DB
	eng    Engine
	p      *goose.Provider
	byVer  map[int64]*Migration
	sorted []*Migration
}

// New prepares the migrations of eng on db (which the Runner does not
// close).
func New(db *sql.DB, eng Engine) (*Runner, error) {
	var opts []goose.ProviderOption
	if eng.Locker != nil {
		opts = append(opts, goose.WithSessionLocker(eng.Locker))
	}
	p, err := goose.NewProvider(eng.Dialect, db, eng.Files, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	r := &Runner{db: db, eng: eng, p: p, byVer: map[int64]*Migration{}}
	for _, s := range p.ListSources() {
		body, err := fs.ReadFile(eng.Files, s.Path)
		if err != nil {
			return nil, err
		}
		m := &Migration{Version: s.Version, Name: name(s.Path), Irreversible: irreversible(body)}
		r.byVer[m.Version] = m
		r.sorted = append(r.sorted, m)
	}
	return r, nil
}

// name is a migration file's name without its number and extension.
func name(file string) string {
	base := strings.TrimSuffix(path.Base(file), path.Ext(file))
	if _, rest, ok := strings.Cut(base, "_"); ok {
		return rest
	}
	return base
}

// irreversible says why a migration cannot be undone: the text of its
// "-- Irreversible: ..." line, or that it has no down statements; "" when
// its down section holds statements.
func irreversible(body []byte) string {
	var down, stmts bool
	reason := ""
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "-- +goose Down"):
			down = true
		case strings.HasPrefix(line, "-- +goose Up"):
			down = false
		case strings.HasPrefix(line, "-- Irreversible:"):
			reason = strings.TrimSpace(strings.TrimPrefix(line, "-- Irreversible:"))
		case down && line != "" && !strings.HasPrefix(line, "--"):
			stmts = true
		}
	}
	if stmts && reason == "" {
		return ""
	}
	if reason == "" {
		reason = "it has no down step"
	}
	return reason
}

// Known is the highest version this binary has a migration for.
func (r *Runner) Known() int64 {
	if len(r.sorted) == 0 {
		return 0
	}
	return r.sorted[len(r.sorted)-1].Version
}

// applied are the versions the database has applied (0 left out), none
// when goose's table is not there yet.
func (r *Runner) applied(ctx context.Context) (map[int64]bool, error) {
	ok, err := r.eng.TableExists(ctx, r.db, Table)
	if err != nil || !ok {
		return nil, err
	}
	st, err := database.NewStore(r.eng.Dialect, Table)
	if err != nil {
		return nil, err
	}
	l, err := st.ListMigrations(ctx, r.db)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	out := map[int64]bool{}
	for _, m := range l {
		if m.Version > 0 && m.IsApplied {
			out[m.Version] = true
		}
	}
	return out, nil
}

// Status lists every migration, the binary's and any unknown one the
// database has applied, by version.
func (r *Runner) Status(ctx context.Context) ([]Migration, error) {
	applied, err := r.applied(ctx)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, m := range r.sorted {
		c := *m
		c.Applied = applied[m.Version]
		out = append(out, c)
	}
	var unknown []int64
	for v := range applied {
		if r.byVer[v] == nil {
			unknown = append(unknown, v)
		}
	}
	slices.Sort(unknown)
	for _, v := range unknown {
		out = append(out, Migration{Version: v, Applied: true, Unknown: true, Name: "(unknown to this aivis)"})
	}
	return out, nil
}

// Version is the database's highest applied version (0: none).
func (r *Runner) Version(ctx context.Context) (int64, error) {
	applied, err := r.applied(ctx)
	var v int64
	for a := range applied {
		v = max(v, a)
	}
	return v, err
}

// Pending are the binary's migrations the database has not applied.
func (r *Runner) Pending(ctx context.Context) ([]Migration, error) {
	st, err := r.Status(ctx)
	var out []Migration
	for _, m := range st {
		if !m.Applied {
			out = append(out, m)
		}
	}
	return out, err
}

// checkNewer refuses a database that has applied a version this binary
// does not know.
func (r *Runner) checkNewer(ctx context.Context) error {
	v, err := r.Version(ctx)
	if err != nil {
		return err
	}
	if v > r.Known() {
		return fmt.Errorf("%w: the database is at schema %d, this aivis knows up to %d: run a newer aivis, or restore a backup",
			ErrNewer, v, r.Known())
	}
	return nil
}

// Up applies the pending migrations, each in a transaction of its own,
// under the engine's lock, and returns the ones it applied.
func (r *Runner) Up(ctx context.Context) ([]Migration, error) {
	if err := r.checkNewer(ctx); err != nil {
		return nil, err
	}
	res, err := r.p.Up(ctx)
	return r.results(res), wrap(err)
}

// UpTo applies the pending migrations up to version, included.
func (r *Runner) UpTo(ctx context.Context, version int64) ([]Migration, error) {
	if err := r.checkNewer(ctx); err != nil {
		return nil, err
	}
	res, err := r.p.UpTo(ctx, version)
	return r.results(res), wrap(err)
}

// DownTo undoes the applied migrations above version, newest first. It
// refuses, before undoing any, when one of them cannot be undone.
func (r *Runner) DownTo(ctx context.Context, version int64) ([]Migration, error) {
	if version < 0 {
		return nil, fmt.Errorf("migrations: no version %d", version)
	}
	st, err := r.Status(ctx)
	if err != nil {
		return nil, err
	}
	for i := len(st) - 1; i >= 0; i-- {
		m := st[i]
		if !m.Applied || m.Version <= version {
			continue
		}
		if m.Unknown {
			return nil, fmt.Errorf("migration %d %w by this aivis, which does not know it: undo it with the aivis that applied it",
				m.Version, ErrIrreversible)
		}
		if m.Irreversible != "" {
			return nil, fmt.Errorf("migration %04d (%s) %w: %s; restore a backup taken before it instead",
				m.Version, m.Name, ErrIrreversible, m.Irreversible)
		}
	}
	res, err := r.p.DownTo(ctx, version)
	return r.results(res), wrap(err)
}

// Prepare does at open what policy allows: it refuses a newer schema, then
// applies pending migrations or refuses them.
func (r *Runner) Prepare(ctx context.Context, policy Policy) error {
	if err := r.checkNewer(ctx); err != nil {
		return err
	}
	if policy == ApplyNew || policy == Refuse {
		pending, err := r.Pending(ctx)
		if err != nil {
			return err
		}
		v, err := r.Version(ctx)
		if err != nil {
			return err
		}
		if len(pending) > 0 && (policy == Refuse || v > 0) {
			return fmt.Errorf("%w: the database is at schema %d, this aivis needs %d (%d pending): run `aivis migrate up`",
				ErrPending, v, r.Known(), len(pending))
		}
	}
	_, err := r.Up(ctx)
	return err
}

func (r *Runner) results(res []*goose.MigrationResult) []Migration {
	var out []Migration
	for _, x := range res {
		if x == nil || x.Source == nil {
			continue
		}
		if m := r.byVer[x.Source.Version]; m != nil {
			out = append(out, *m)
		}
	}
	return out
}

func wrap(err error) error {
	if err == nil || errors.Is(err, goose.ErrNoNextVersion) {
		return nil
	}
	return fmt.Errorf("migrations: %w", err)
}
