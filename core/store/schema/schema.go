// Package schema runs the store's migrations, on either engine, with goose:
// it says where a database stands (Status), applies what is pending (Up),
// undoes down to a version (DownTo, refusing a migration that cannot be
// undone) and decides at open what a process may do with a database whose
// schema is older or newer than the binary (Prepare).
package schema

import (
	"bufio"
	"bytes"
	"cmp"
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

// FloorTable holds the floor: the lowest version an aivis must know to run
// on the database (made by a migration of each engine; the runner keeps
// its one row).
const FloorTable = "schema_floor"

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
	// Contract says what of the schema before it the migration drops or
	// changes, which an earlier aivis reads ("" when it only adds): its
	// "-- Contract: ..." line. An aivis that does not know it cannot run
	// on a database that applied it.
	Contract string
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
		m := &Migration{Version: s.Version, Name: name(s.Path), Irreversible: irreversible(body), Contract: marked(body, "-- Contract:")}
		r.byVer[m.Version] = m
		r.sorted = append(r.sorted, m)
	}
	// By version, whatever the files' names (0031_a.sql, 00032_b.sql).
	slices.SortFunc(r.sorted, func(a, b *Migration) int { return cmp.Compare(a.Version, b.Version) })
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

// marked is the text of body's first line that begins with prefix, "" when
// none does.
func marked(body []byte, prefix string) string {
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
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
// does not know, unless compatible: the database's floor says that every
// migration past this binary's only adds to the schema, so that it may run
// on it (Prepare), though never migrate it.
func (r *Runner) checkNewer(ctx context.Context, compatible bool) error {
	v, err := r.Version(ctx)
	if err != nil || v <= r.Known() {
		return err
	}
	floor, ok, err := r.Floor(ctx)
	if err != nil {
		return err
	}
	if compatible && ok && floor <= r.Known() {
		return nil
	}
	why := "run a newer aivis, or restore a backup"
	if ok && floor > r.Known() {
		why = fmt.Sprintf("migration %d changed what this aivis reads: %s", floor, why)
	}
	return fmt.Errorf("%w: the database is at schema %d, this aivis knows up to %d: %s", ErrNewer, v, r.Known(), why)
}

// Floor is the database's floor: the lowest version an aivis must know to
// run on it (ok false when the database has no floor table: older than
// the migration that makes it).
func (r *Runner) Floor(ctx context.Context) (floor int64, ok bool, err error) {
	if ok, err := r.eng.TableExists(ctx, r.db, FloorTable); err != nil || !ok {
		return 0, false, err
	}
	err = r.db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM `+FloorTable).Scan(&floor)
	return floor, err == nil, err
}

// floorOf is the floor of a database that has applied applied: the newest
// of them marked as a contract, 0 when none is.
func (r *Runner) floorOf(applied func(int64) bool) int64 {
	var floor int64
	for _, m := range r.sorted {
		if m.Contract != "" && applied(m.Version) {
			floor = m.Version
		}
	}
	return floor
}

// setFloor writes the database's floor, where it has a floor table (it
// is older than the migration that makes it otherwise): with upTo 0, the
// floor of the migrations it has applied; else, before migrating up to
// upTo, the floor it will have then if that is higher, so that an earlier
// aivis that starts while a contract migration runs is refused, not let
// in.
func (r *Runner) setFloor(ctx context.Context, upTo int64) error {
	if ok, err := r.eng.TableExists(ctx, r.db, FloorTable); err != nil || !ok {
		return err
	}
	applied, err := r.applied(ctx)
	if err != nil {
		return err
	}
	floor := r.floorOf(func(v int64) bool { return applied[v] || v <= upTo })
	if old, _, err := r.Floor(ctx); err != nil || upTo > 0 && old >= floor {
		return err
	}
	_, err = r.db.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET version = %d`, FloorTable, floor))
	return err
}

// Up applies the pending migrations, each in a transaction of its own,
// under the engine's lock, and returns the ones it applied.
func (r *Runner) Up(ctx context.Context) ([]Migration, error) {
	return r.UpTo(ctx, r.Known())
}

// UpTo applies the pending migrations up to version, included.
func (r *Runner) UpTo(ctx context.Context, version int64) ([]Migration, error) {
	if err := r.checkNewer(ctx, false); err != nil {
		return nil, err
	}
	if err := r.setFloor(ctx, version); err != nil {
		return nil, fmt.Errorf("migrations: the floor: %w", err)
	}
	res, err := r.p.UpTo(ctx, version)
	return r.results(res), r.settle(ctx, wrap(err))
}

// settle writes the floor of the database as a migration left it, and
// returns the migration's error, else the floor's.
func (r *Runner) settle(ctx context.Context, err error) error {
	if ferr := r.setFloor(ctx, 0); ferr != nil && err == nil {
		err = fmt.Errorf("migrations: the floor: %w", ferr)
	}
	return err
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
	return r.results(res), r.settle(ctx, wrap(err))
}

// Prepare does at open what policy allows: it refuses a newer schema
// unless its floor lets this binary run on it (then it changes nothing),
// then applies pending migrations or refuses them.
func (r *Runner) Prepare(ctx context.Context, policy Policy) error {
	if err := r.checkNewer(ctx, true); err != nil {
		return err
	}
	if v, err := r.Version(ctx); err != nil || v > r.Known() {
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
