package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/app"
)

func configCmd() *cobra.Command {
	return group("config", "Check and show the configuration serve reads", configCheckCmd(), configShowCmd())
}

func configCheckCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "check",
		Short: "Check the configuration as serve would (file, environment, flags): ok, or its errors",
		Long: `Check the configuration as serve would: the file named by --config or
AIVIS_CONFIG, the AIVIS_* and OTEL_* variables and the flags (serve's). Prints
ok, or the errors serve would refuse to start with (exit 1). It opens nothing:
the databases and servers the settings name are not reached.`,
		Args: takes(0, "no arguments"),
	}
	settings := bindSettings(c, true)
	c.RunE = func(c *cobra.Command, _ []string) error {
		cfg, err := settings.Load(envOf(c))
		if err != nil {
			return err
		}
		if err := app.Check(cfg, envOf(c)); err != nil {
			return err
		}
		_, err = fmt.Fprintln(c.OutOrStdout(), "ok")
		return err
	}
	return c
}

// otelVariables are the OTEL_* variables aivis's tracing reads, as
// config show prints them (headers masked: they carry vendors' keys).
var otelVariables = []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"}

func configShowCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "show",
		Short: "Print the effective settings (file, environment, flags) with secrets masked",
		Long: `Print the settings serve would run with, as JSON: defaults, then the file
named by --config or AIVIS_CONFIG, the AIVIS_* variables and the flags
(serve's), by their names in the file, with where each that is not its
default comes from (sources: file, env or flag); and the OTEL_* variables
set. The
passwords of URLs, engines' keys and OTLP headers' values are masked.`,
		Args: takes(0, "no arguments"),
	}
	settings := bindSettings(c, true)
	c.RunE = func(c *cobra.Command, _ []string) error {
		cfg, err := settings.Load(envOf(c))
		if err != nil {
			return err
		}
		env := map[string]string{}
		for _, name := range otelVariables {
			v := envOf(c)(name)
			switch {
			case v == "":
				continue
			case strings.HasSuffix(name, "_HEADERS"):
				v = maskHeaders(v)
			case strings.HasSuffix(name, "_ENDPOINT"):
				v = config.MaskURL(v)
			}
			env[name] = v
		}
		enc := json.NewEncoder(c.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"config_file": cfg.ConfigFile, "settings": cfg.Masked(), "sources": settings.Sources(envOf(c)), "environment": env})
	}
	return c
}

// maskHeaders masks the values of OTLP headers, key=value pairs separated
// by commas.
func maskHeaders(s string) string {
	pairs := strings.Split(s, ",")
	for i, p := range pairs {
		if k, _, ok := strings.Cut(p, "="); ok {
			pairs[i] = k + "=xxxxx"
		}
	}
	return strings.Join(pairs, ",")
}
