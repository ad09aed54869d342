// Command aivis serves the aivis API and administers its accounts and keys.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/app"
	"github.com/aivis/aivis/internal/buildinfo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// commands are aivis's commands, as its help lists them. To add one, add
// a line here: a function of your file that returns its *cobra.Command,
// at the top level or in its group (group makes a command whose
// subcommands are listed after it).
//
// A command that acts on aivis's data is made with withServices(c, run):
// c declares its name (Use), help (Short, Long), positional arguments
// (Args: takes(n, "WHAT")) and its own flags (required ones marked with
// required(c, "name", ...)); withServices adds the flags every command
// takes (--config, --data-dir, --store, --bus, --counter and the engines'
// settings; --json) and, once cobra has parsed the command line and
// checked its arguments and required flags, loads the configuration as
// serve would (file, environment, flags), opens the services (app.Open)
// and calls run with them in an *invocation (closed after it). A command
// that needs the configuration but opens what it needs its own way takes
// withConfig(c, run) instead (in.svc is then nil). A usage error of run
// (usageError) exits 2 with the command's usage, any other error 1; the
// errors cobra finds before run (unknown commands and flags, missing
// arguments or required flags) are usage errors, and nothing is opened
// for them, nor for --help.
func commands() []*cobra.Command {
	return []*cobra.Command{
		serveCmd(),
		group("account", "Create and list accounts",
			accountCreateCmd(),
			accountSetTierCmd(),
			accountSetMarketCmd(),
			accountListCmd(),
			accountExportCmd(),
			accountDeleteCmd(),
		),
		group("client", "Create and list an agency's clients",
			clientCreateCmd(),
			clientListCmd(),
		),
		group("key", "Create, revoke and list API keys",
			keyCreateCmd(),
			keyRevokeCmd(),
			keyListCmd(),
		),
		group("user", "Invite and list an account's dashboard users",
			userInviteCmd(),
			userListCmd(),
		),
		group("plugin", "Register, list, prune and remove connector plugins and their builds",
			pluginRegisterCmd(),
			pluginListCmd(),
			pluginPruneCmd(),
			pluginRemoveCmd(),
		),
		trafficCmd(),
		crawlersCmd(),
		secretsCmd(),
		backupCmd(),
		restoreCmd(),
		migrateCmd(),
		configCmd(),
		versionCmd(),
	}
}

// rootCmd is aivis with its commands.
func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "aivis",
		Short: "aivis: the AI-visibility API and integration hub",
		Long: `aivis: the AI-visibility API and integration hub

Every command reads the settings serve reads (the file named by --config or
AIVIS_CONFIG, then AIVIS_* variables), takes --data-dir DIR (default
./aivis-data), --store, --bus and --counter as flags, and prints JSON with
--json. "aivis serve --help" lists every setting.`,
		Version:       buildinfo.Get().String(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err.Error()) })
	root.AddCommand(commands()...)
	return root
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	root := rootCmd()
	ran := false // a command's RunE began: the errors before it are cobra's, of usage
	var mark func(*cobra.Command)
	mark = func(c *cobra.Command) {
		if r := c.RunE; r != nil {
			c.RunE = func(c *cobra.Command, args []string) error {
				ran = true
				return r(c, args)
			}
		}
		for _, s := range c.Commands() {
			mark(s)
		}
	}
	mark(root)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	c, err := root.ExecuteContextC(context.WithValue(ctx, getenvKey{}, getenv))
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "aivis:", err)
	var u usageErr
	if !ran || errors.As(err, &u) {
		fmt.Fprint(stderr, "\n", c.UsageString())
		return 2
	}
	return 1
}

type usageErr string

func (e usageErr) Error() string { return string(e) }

func usageError(format string, args ...any) error { return usageErr(fmt.Sprintf(format, args...)) }

type getenvKey struct{}

// envOf is the environment run gave the command line.
func envOf(c *cobra.Command) func(string) string {
	return c.Context().Value(getenvKey{}).(func(string) string)
}

// invocation is what a command's run gets: the configuration, the
// services (withServices) and where to print.
type invocation struct {
	cfg            config.Config
	svc            *app.Services // nil under withConfig
	out            printer       // stdout, as JSON with --json
	stdout, stderr io.Writer
	getenv         func(string) string
}

// withConfig gives c the flags every command takes and a RunE that loads
// the configuration and calls run (commands' comment).
func withConfig(c *cobra.Command, run func(ctx context.Context, in *invocation, args []string) error) *cobra.Command {
	settings := bindSettings(c, false)
	var asJSON bool
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.RunE = func(c *cobra.Command, args []string) error {
		getenv := envOf(c)
		cfg, err := settings.Load(getenv)
		if err != nil {
			return err
		}
		return run(c.Context(), &invocation{cfg: cfg, out: printer{w: c.OutOrStdout(), json: asJSON},
			stdout: c.OutOrStdout(), stderr: c.ErrOrStderr(), getenv: getenv}, args)
	}
	return c
}

// withServices is withConfig with the services opened for run, and
// closed after it.
func withServices(c *cobra.Command, run func(ctx context.Context, in *invocation, args []string) error) *cobra.Command {
	return withConfig(c, func(ctx context.Context, in *invocation, args []string) error {
		svc, err := app.Open(ctx, in.cfg)
		if err != nil {
			return err
		}
		defer svc.Close()
		in.svc = svc
		return run(ctx, in, args)
	})
}

// bindSettings adds the settings' flags to c: serve's are every setting,
// the other commands' those of where the data is and which engines hold
// it (config.Bind).
func bindSettings(c *cobra.Command, serve bool) *config.Flags {
	fs := flag.NewFlagSet(c.Name(), flag.ContinueOnError)
	settings := config.Bind(fs, serve)
	c.Flags().AddGoFlagSet(fs)
	return settings
}

// group is a command of subcommands: alone, or with an argument that
// names none of them, it is a usage error.
func group(name, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   name,
		Short: short,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("unknown command %q for %q", args[0], c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			return usageError("%s needs a subcommand", c.CommandPath())
		},
	}
	c.AddCommand(subs...)
	return c
}

// takes is the positional arguments of a command: n of them, what says
// which.
func takes(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError("%s takes %s", c.CommandPath(), what)
		}
		return nil
	}
}

// required marks c's flags names as required: cobra refuses the command
// line that lacks one, naming it, before anything is opened.
func required(c *cobra.Command, names ...string) {
	for _, n := range names {
		if err := c.MarkFlagRequired(n); err != nil {
			panic(err) // no such flag: a mistake of the command's definition
		}
	}
}
