package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/engines"
	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/core/store/schema"
	"github.com/aivis/aivis/core/store/sqlite"
)

// migrateCmd is aivis migrate: where the store's schema stands, and the
// migrations applied or undone by hand (serve applies them at start unless
// auto_migrate is false; the other commands never do, but on a new data
// directory).
func migrateCmd() *cobra.Command {
	return group("migrate", "Show, apply and undo the store's schema migrations",
		withConfig(&cobra.Command{
			Use:   "status",
			Short: "List the migrations, applied and pending, with their numbers and names",
			Args:  takes(0, "no arguments"),
		}, func(ctx context.Context, in *invocation, _ []string) error {
			return migrateStatus(ctx, in.cfg, in.out)
		}),
		withConfig(&cobra.Command{
			Use:   "up",
			Short: "Apply the pending migrations",
			Args:  takes(0, "no arguments"),
		}, func(ctx context.Context, in *invocation, _ []string) error {
			return migrateUp(ctx, in.cfg, in.out)
		}),
		migrateDownCmd(),
	)
}

func migrateDownCmd() *cobra.Command {
	var to string
	c := &cobra.Command{
		Use:   "down --to N",
		Short: "Undo the migrations above version N, newest first (refused past one that cannot be undone)",
		Long: `Undo the migrations above version N, newest first.

Stop every aivis on the database first, and run the aivis that applied
them (the one whose migrate status lists them). A migration that cannot be
undone (status says which) stops the down before anything is undone:
restore a backup taken before it instead.`,
		Args: takes(0, "only --to N"),
	}
	c.Flags().StringVar(&to, "to", "", "the version to go down to (kept)")
	required(c, "to")
	return withConfig(c, func(ctx context.Context, in *invocation, _ []string) error {
		n, err := strconv.ParseInt(to, 10, 64)
		if err != nil || n < 0 {
			return usageError("--to takes a version number, as migrate status lists them: %q", to)
		}
		return migrateDown(ctx, in.cfg, n, in.out)
	})
}

// errNoDatabase is a data directory with no database yet, for status and
// down, which never make one.
var errNoDatabase = errors.New("no database yet")

// openMigrations opens the configured store's migrations alone. create
// lets it make the SQLite file (and its directory) when there is none.
func openMigrations(ctx context.Context, cfg config.Config, create bool) (*schema.Runner, func() error, error) {
	if err := engines.Check(cfg); err != nil {
		return nil, nil, err
	}
	if cfg.Store == "postgres" {
		return postgres.OpenMigrations(ctx, cfg.PostgresURL)
	}
	path := filepath.Join(cfg.DataDir, engines.DBFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, nil, fmt.Errorf("%w at %s: aivis migrate up or aivis serve makes it", errNoDatabase, path)
		}
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("data directory: %w", err)
		}
	}
	return sqlite.OpenMigrations(ctx, path)
}

func migrationJSON(m schema.Migration) map[string]any {
	state := "pending"
	if m.Applied {
		state = "applied"
	}
	return map[string]any{"version": m.Version, "name": m.Name, "state": state, "unknown": m.Unknown,
		"irreversible": m.Irreversible}
}

func migrateStatus(ctx context.Context, cfg config.Config, out printer) error {
	r, closeRunner, err := openMigrations(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer closeRunner()
	st, err := r.Status(ctx)
	if err != nil {
		return err
	}
	v, err := r.Version(ctx)
	if err != nil {
		return err
	}
	pending := 0
	for _, m := range st {
		if !m.Applied {
			pending++
		}
	}
	var b strings.Builder
	err = printer{w: &b}.table("VERSION\tNAME\tSTATE\tUNDO", len(st), func(i int) (any, string) {
		m := st[i]
		state, undo := "pending", "yes"
		if m.Applied {
			state = "applied"
		}
		if m.Unknown {
			state, undo = "applied, unknown to this aivis", "-"
		} else if m.Irreversible != "" {
			undo = "no: " + m.Irreversible
		}
		return nil, fmt.Sprintf("%04d\t%s\t%s\t%s\n", m.Version, m.Name, state, undo)
	})
	if err != nil {
		return err
	}
	summary := fmt.Sprintf("schema %d; this aivis knows up to %d; %d pending\n", v, r.Known(), pending)
	if v > r.Known() {
		summary = fmt.Sprintf("schema %d is newer than this aivis, which knows up to %d: run a newer aivis, or restore a backup\n", v, r.Known())
	} else if pending > 0 {
		summary = strings.TrimSuffix(summary, "\n") + ": aivis migrate up applies them\n"
	}
	rows := make([]any, len(st))
	for i, m := range st {
		rows[i] = migrationJSON(m)
	}
	return out.value(map[string]any{"version": v, "known": r.Known(), "pending": pending, "migrations": rows},
		b.String()+summary)
}

// printDone prints the migrations a command applied or undid, and where
// the schema stands.
func printDone(ctx context.Context, r *schema.Runner, verb string, done []schema.Migration, out printer) error {
	v, err := r.Version(ctx)
	if err != nil {
		return err
	}
	var b strings.Builder
	rows := make([]any, len(done))
	for i, m := range done {
		rows[i] = migrationJSON(m)
		fmt.Fprintf(&b, "%s %04d %s\n", verb, m.Version, m.Name)
	}
	if len(done) == 0 {
		fmt.Fprintf(&b, "nothing to do: ")
	}
	fmt.Fprintf(&b, "schema %d\n", v)
	return out.value(map[string]any{"version": v, verb: rows}, b.String())
}

func migrateUp(ctx context.Context, cfg config.Config, out printer) error {
	r, closeRunner, err := openMigrations(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer closeRunner()
	done, err := r.Up(ctx)
	if err != nil {
		return err
	}
	return printDone(ctx, r, "applied", done, out)
}

func migrateDown(ctx context.Context, cfg config.Config, to int64, out printer) error {
	r, closeRunner, err := openMigrations(ctx, cfg, false)
	if err != nil {
		return err
	}
	done, err := r.DownTo(ctx, to)
	if err == nil {
		err = printDone(ctx, r, "undone", done, out)
	}
	return errors.Join(err, closeRunner())
}
