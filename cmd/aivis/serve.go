package main

import (
	"github.com/spf13/cobra"

	"github.com/aivis/aivis/core/app"
	"github.com/aivis/aivis/internal/buildinfo"
)

func serveCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the API, the dashboard and the workers",
		Long: `Serve the API, the dashboard and the workers.

Settings: each flag below, then its environment variable; a JSON file given
with --config sets the same by their snake_case names (docs/configuration.md).`,
		Args: takes(0, "no arguments"),
	}
	settings := bindSettings(c, true)
	c.RunE = func(c *cobra.Command, _ []string) error {
		cfg, err := settings.Load(envOf(c))
		if err != nil {
			return err
		}
		return app.Run(c.Context(), cfg, app.Logger(cfg, c.ErrOrStderr()), c.OutOrStdout())
	}
	return c
}

// versionCmd prints what this build says of itself: one line, or the
// fields as JSON with --json.
func versionCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version (also aivis --version)",
		Args:  takes(0, "only --json"),
		RunE: func(c *cobra.Command, _ []string) error {
			i := buildinfo.Get()
			return printer{w: c.OutOrStdout(), json: asJSON}.value(map[string]string{"version": i.Version, "commit": i.Commit,
				"date": i.Date, "go_version": i.GoVersion}, i.String()+"\n")
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
