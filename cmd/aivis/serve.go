package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/app"
	"github.com/aivis/aivis/internal/buildinfo"
)

// printVersion prints what this build says of itself: one line, or the
// fields as JSON with --json.
func printVersion(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return usageError("version takes only --json")
	}
	i := buildinfo.Get()
	return printer{w: stdout, json: *asJSON}.value(map[string]string{"version": i.Version, "commit": i.Commit,
		"date": i.Date, "go_version": i.GoVersion}, i.String()+"\n")
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
	return app.Run(ctx, cfg, app.Logger(cfg, stderr), stdout)
}

func printFlags(w io.Writer, serve bool) {
	c := config.Default()
	fs := flag.NewFlagSet("aivis", flag.ContinueOnError)
	c.Bind(fs, serve)
	fs.SetOutput(w)
	fmt.Fprintln(w, "Settings (flag, then environment variable; a JSON file given with --config sets the same by their snake_case names):")
	fs.PrintDefaults()
}
