package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/app"
)

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, fs, err := config.Load(args, getenv, true, nil)
	if errors.Is(err, flag.ErrHelp) {
		printFlags(stdout, true)
		return nil
	}
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("serve takes no arguments, got %q", fs.Args())
	}
	log := app.Logger(cfg, stderr)
	return app.Run(ctx, cfg, log, stdout)
}

func printFlags(w io.Writer, serve bool) {
	c := config.Default()
	fs := flag.NewFlagSet("aivis", flag.ContinueOnError)
	c.Bind(fs, serve)
	fs.SetOutput(w)
	fmt.Fprintln(w, "Settings (flag, then environment variable; a JSON file given with --config sets the same by their snake_case names):")
	fs.PrintDefaults()
}
