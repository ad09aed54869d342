package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/store"
)

// The plugin commands: a plugin's builds are trusted by their SHA-256;
// register adds one, prune drops those no instance runs, list shows each
// and the instances that run it.

func pluginRegisterCmd() *cobra.Command {
	c := &cobra.Command{Use: "register PATH", Short: "Register a build of a connector plugin by its SHA-256, beside the plugin's other builds",
		Args: takes(1, "the path of a plugin binary")}
	return withServices(c, func(ctx context.Context, in *invocation, args []string) error {
		return registerPlugin(ctx, in.svc.Store, args[0], in.out)
	})
}

func pluginListCmd() *cobra.Command {
	c := &cobra.Command{Use: "list", Short: "List the registered connector plugins, each build and the instances that run it",
		Args: takes(0, "no arguments")}
	return withServices(c, func(ctx context.Context, in *invocation, _ []string) error {
		return listPlugins(ctx, in.svc.Store, hub.PluginsDir(in.cfg.DataDir), time.Now(), in.out)
	})
}

func pluginPruneCmd() *cobra.Command {
	c := &cobra.Command{Use: "prune [NAME]", Short: "Forget the builds of a connector plugin (of every one without NAME) that no running instance has",
		Args: cobra.MaximumNArgs(1)}
	return withServices(c, func(ctx context.Context, in *invocation, args []string) error {
		name := ""
		if len(args) == 1 {
			name = args[0]
		}
		return prunePlugins(ctx, in.svc.Store, name, time.Now(), in.out)
	})
}

func pluginRemoveCmd() *cobra.Command {
	c := &cobra.Command{Use: "remove NAME", Short: "Remove a registered connector plugin and all its builds", Args: takes(1, "a plugin name")}
	return withServices(c, func(ctx context.Context, in *invocation, args []string) error {
		if err := in.svc.Store.RemovePlugin(ctx, args[0]); errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no plugin %q is registered", args[0])
		} else if err != nil {
			return err
		}
		return in.out.value(map[string]any{"name": args[0], "removed": true}, fmt.Sprintf("plugin %s removed\n", args[0]))
	})
}

// registerPlugin records a build of a plugin and its SHA-256 after asking
// it what it is, beside the plugin's other builds: the servers start the
// binary they find whose SHA-256 is one of them.
func registerPlugin(ctx context.Context, st store.Store, path string, out printer) error {
	rec, err := hub.Register(ctx, st, path)
	if err != nil {
		return err
	}
	recs, err := st.ListPlugins(ctx)
	if err != nil {
		return err
	}
	n := 1
	if i := slices.IndexFunc(recs, func(r store.PluginRecord) bool { return r.Name == rec.Name }); i >= 0 {
		n = len(recs[i].Builds)
	}
	j := pluginJSON(rec, "ok")
	j["builds"] = n
	return out.value(j, fmt.Sprintf("plugin %s %s (%s) registered from %s\nsha256 %x\n%s trusted (aivis plugin prune drops those no instance runs)\n",
		rec.Name, rec.Version, rec.Kind, rec.Path, rec.SHA256, plural(n, "build")))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// pluginState says whether this machine has a registered build of the
// plugin (at its path or in the plugins directory dir, as the server
// looks for it), and if not, whether a file is where one was registered
// from (a build not registered).
func pluginState(p store.PluginRecord, dir string) string {
	if path, _, _ := hub.Locate(p, dir); path != "" {
		return "ok"
	}
	for _, b := range p.Builds {
		if _, err := os.Stat(b.Path); err == nil {
			return "changed"
		}
	}
	return "missing"
}

// running is the current reports of the instances, by plugin: the
// instances that have each build.
func running(ctx context.Context, st store.Store, now time.Time) (map[string][]store.PluginHealth, error) {
	rows, err := st.ListPluginHealth(ctx, hub.ReportedSince(now))
	if err != nil {
		return nil, err
	}
	out := map[string][]store.PluginHealth{}
	for _, r := range rows {
		out[r.Plugin] = append(out[r.Plugin], r)
	}
	return out, nil
}

// runBy lists the instances whose report says they have build sum.
func runBy(reports []store.PluginHealth, sum []byte) []string {
	out := []string{}
	for _, r := range reports {
		if bytes.Equal(r.SHA256, sum) {
			out = append(out, r.Instance)
		}
	}
	return out
}

// listPlugins lists the plugins, a line per build: its SHA-256 and the
// instances that report they have it.
func listPlugins(ctx context.Context, st store.Store, dir string, now time.Time, out printer) error {
	ps, err := st.ListPlugins(ctx)
	if err != nil {
		return err
	}
	reports, err := running(ctx, st, now)
	if err != nil {
		return err
	}
	rows := make([]any, len(ps))
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tVERSION\tSTATE\tSHA256\tRUN BY\tPATH")
	for i, p := range ps {
		state := pluginState(p, dir)
		j := pluginJSON(p, state)
		var builds []map[string]any
		for k := len(p.Builds) - 1; k >= 0; k-- { // newest first
			bd := p.Builds[k]
			by := runBy(reports[p.Name], bd.SHA256)
			builds = append(builds, map[string]any{"sha256": fmt.Sprintf("%x", bd.SHA256), "version": bd.Version, "path": bd.Path,
				"registered_at": bd.RegisteredAt, "instances": by})
			shown := "-"
			if len(by) > 0 {
				shown = strings.Join(by, ",")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%x\t%s\t%s\n", p.Name, p.Kind, bd.Version, state, bd.SHA256[:8], shown, bd.Path)
		}
		j["builds"] = builds
		rows[i] = j
	}
	tw.Flush()
	return out.value(rows, b.String())
}

// prunePlugins forgets the builds of the plugin name (of every plugin when
// "") that no instance reporting now has. A plugin no running instance
// reports, or none of whose builds any instance has, is left as it is:
// what would be kept could not be told.
func prunePlugins(ctx context.Context, st store.Store, name string, now time.Time, out printer) error {
	ps, err := st.ListPlugins(ctx)
	if err != nil {
		return err
	}
	if name != "" {
		ps = slices.DeleteFunc(ps, func(p store.PluginRecord) bool { return p.Name != name })
		if len(ps) == 0 {
			return fmt.Errorf("no plugin %q is registered", name)
		}
	}
	reports, err := running(ctx, st, now)
	if err != nil {
		return err
	}
	rows := []any{}
	var b strings.Builder
	for _, p := range ps {
		rs := reports[p.Name]
		if !slices.ContainsFunc(p.Builds, func(bd store.PluginBuild) bool { return len(runBy(rs, bd.SHA256)) > 0 }) {
			fmt.Fprintf(&b, "plugin %s: nothing pruned: no running instance reports having one of its builds\n", p.Name)
			continue
		}
		pruned := 0
		for _, bd := range p.Builds {
			if len(runBy(rs, bd.SHA256)) > 0 {
				continue
			}
			if err := st.RemovePluginBuild(ctx, p.Name, bd.SHA256); errors.Is(err, store.ErrNotFound) {
				continue // pruned meanwhile
			} else if err != nil {
				return err
			}
			pruned++
			rows = append(rows, map[string]any{"name": p.Name, "sha256": fmt.Sprintf("%x", bd.SHA256), "version": bd.Version,
				"path": bd.Path, "removed": true})
			fmt.Fprintf(&b, "plugin %s: build %x (version %s, from %s) pruned: no instance runs it\n", p.Name, bd.SHA256[:8], bd.Version, bd.Path)
		}
		if pruned == 0 {
			fmt.Fprintf(&b, "plugin %s: nothing to prune: every build is run by an instance\n", p.Name)
		}
	}
	return out.value(rows, b.String())
}

func pluginJSON(p store.PluginRecord, state string) map[string]any {
	return map[string]any{"name": p.Name, "kind": p.Kind, "version": p.Version, "display_name": p.DisplayName,
		"path": p.Path, "sha256": fmt.Sprintf("%x", p.SHA256), "state": state, "registered_at": p.RegisteredAt}
}
