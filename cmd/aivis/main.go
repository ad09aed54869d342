// Command aivis serves the aivis API and administers its accounts and keys.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `aivis: the AI-visibility API and integration hub

Usage:
  aivis serve [--config FILE] [--addr HOST:PORT] [--http-addr HOST:PORT] [--tls-cert F --tls-key F] [--allow-private-targets] [--api=false]
  aivis account create --name N --tier starter|professional|enterprise [--agency]
  aivis account set-tier ID TIER
  aivis account list
  aivis client create --account ID --name N
  aivis client list --account ID
  aivis key create --account ID [--client ID] --name N [--expires YYYY-MM-DD|RFC3339] [--scopes a,b]
  aivis key revoke KEY_ID
  aivis key list --account ID
  aivis user invite --account ID --email E [--role owner|admin|developer|viewer] [--url URL]
  aivis user list --account ID
  aivis plugin register PATH
  aivis plugin list
  aivis plugin remove NAME
  aivis version [--json]         (also aivis --version)

Every subcommand reads the settings serve reads (the file named by --config or
AIVIS_CONFIG, then AIVIS_* variables), takes --data-dir DIR (default
./aivis-data), --store, --bus and --counter as flags, and prints JSON with
--json. "aivis serve --help" lists every setting.
`

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], getenv, stdout, stderr)
	case "account", "client", "key", "plugin", "user":
		if len(args) < 2 {
			err = usageError("%s needs a subcommand", args[0])
			break
		}
		err = admin(ctx, args[0], args[1], args[2:], getenv, stdout)
	case "version", "--version":
		err = printVersion(args[1:], stdout)
	default:
		err = usageError("unknown command %q", args[0])
	}
	if err != nil {
		fmt.Fprintln(stderr, "aivis:", err)
		if _, ok := err.(usageErr); ok {
			fmt.Fprint(stderr, "\n", usage)
			return 2
		}
		return 1
	}
	return 0
}

type usageErr string

func (e usageErr) Error() string { return string(e) }

func usageError(format string, args ...any) error { return usageErr(fmt.Sprintf(format, args...)) }
