package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/app"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/store"
)

// adminFlags are the flags of one administrative subcommand.
type adminFlags struct {
	json                                 bool
	name, tier, account, client, expires string
	scopes                               string
	agency                               bool
	email, role, url                     string
}

// parse reads flags and positional arguments in any order.
func (f *adminFlags) parse(args []string, getenv func(string) string) (config.Config, []string, error) {
	var pos []string
	extra := func(fs *flag.FlagSet) {
		fs.BoolVar(&f.json, "json", false, "print JSON")
		fs.StringVar(&f.name, "name", "", "name")
		fs.StringVar(&f.tier, "tier", "", "tier")
		fs.StringVar(&f.account, "account", "", "account id")
		fs.StringVar(&f.client, "client", "", "client id")
		fs.StringVar(&f.expires, "expires", "", "expiry date")
		fs.StringVar(&f.scopes, "scopes", "", "scopes")
		fs.BoolVar(&f.agency, "agency", false, "agency account")
		fs.StringVar(&f.email, "email", "", "email address")
		fs.StringVar(&f.role, "role", "owner", "role: owner, admin, developer or viewer")
		fs.StringVar(&f.url, "url", "", "the dashboard's address in invitation links (default the public URL, else https://<addr>)")
	}
	// Flags may follow positional arguments: parse, take one positional, repeat.
	var rest []string
	for {
		cfg, fs, err := config.Load(args, getenv, false, extra)
		if errors.Is(err, config.ErrInvalid) {
			return cfg, nil, err // the settings', as serve would say
		} else if err != nil {
			return cfg, nil, usageError("%v", err)
		}
		rest = fs.Args()
		if len(rest) == 0 {
			return cfg, pos, nil
		}
		pos = append(pos, rest[0])
		args = append(flagsOnly(args, rest), rest[1:]...)
	}
}

// flagsOnly is args without the unparsed tail rest.
func flagsOnly(args, rest []string) []string {
	return append([]string{}, args[:len(args)-len(rest)]...)
}

func admin(ctx context.Context, noun, verb string, args []string, getenv func(string) string, stdout io.Writer) error {
	var f adminFlags
	cfg, pos, err := f.parse(args, getenv)
	if err != nil {
		return err
	}
	need := func(n int, what string) error {
		if len(pos) != n {
			return usageError("%s %s takes %s", noun, verb, what)
		}
		return nil
	}
	svc, err := app.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer svc.Close()
	out := printer{w: stdout, json: f.json}

	switch noun + " " + verb {
	case "account create":
		if err := need(0, "no arguments"); err != nil {
			return err
		}
		a, err := svc.Accounts.Create(ctx, f.name, f.tier, f.agency)
		if err != nil {
			return explain(err)
		}
		return out.account(a)
	case "account set-tier":
		if err := need(2, "ACCOUNT_ID TIER"); err != nil {
			return err
		}
		a, err := svc.Accounts.SetTier(ctx, pos[0], pos[1])
		if err != nil {
			return explain(err)
		}
		return out.account(a)
	case "account list":
		as, err := svc.Store.ListAccounts(ctx)
		if err != nil {
			return err
		}
		rows := make([]any, len(as))
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tTIER\tTYPE\tCREATED")
		for i, a := range as {
			rows[i] = accountJSON(a)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.ID, a.Name, a.Tier, a.Type, a.CreatedAt.Format(time.RFC3339))
		}
		tw.Flush()
		return out.value(rows, b.String())
	case "client create":
		if err := need(0, "no arguments"); err != nil {
			return err
		}
		c, err := svc.Accounts.CreateClient(ctx, f.account, f.name)
		if err != nil {
			return explain(err)
		}
		return out.value(clientJSON(c), fmt.Sprintf("client %s %q in account %s\n", c.ID, c.Name, c.AccountID))
	case "client list":
		cs, err := svc.Store.ListClients(ctx, f.account)
		if err != nil {
			return err
		}
		rows := make([]any, len(cs))
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tCREATED")
		for i, c := range cs {
			rows[i] = clientJSON(c)
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.ID, c.Name, c.CreatedAt.Format(time.RFC3339))
		}
		tw.Flush()
		return out.value(rows, b.String())
	case "key create":
		if err := need(0, "no arguments"); err != nil {
			return err
		}
		return createKey(ctx, svc, f, out)
	case "key revoke":
		if err := need(1, "KEY_ID"); err != nil {
			return err
		}
		k, err := svc.Auth.Revoke(ctx, pos[0])
		if err != nil {
			return explain(err)
		}
		return out.value(keyJSON(k), fmt.Sprintf("key %s (%s) revoked at %s\n", k.ID, k.Hint, k.RevokedAt.Format(time.RFC3339)))
	case "key list":
		ks, err := svc.Store.ListKeys(ctx, f.account)
		if err != nil {
			return err
		}
		rows := make([]any, len(ks))
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tKEY\tNAME\tCLIENT\tSTATE\tEXPIRES\tLAST USED")
		for i, k := range ks {
			rows[i] = keyJSON(k)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Hint, k.Name, dash(k.ClientID), keyState(k, time.Now()),
				dashTime(k.ExpiresAt), dashTime(k.LastUsedAt))
		}
		tw.Flush()
		return out.value(rows, b.String())
	case "user invite":
		if err := need(0, "no arguments"); err != nil {
			return err
		}
		token, err := svc.People.OperatorInvite(ctx, f.account, f.email, f.role)
		if err != nil {
			return explain(err)
		}
		base := strings.TrimSuffix(f.url, "/")
		if base == "" {
			base = cfg.PublicURL
		}
		if base == "" {
			base = "https://" + app.DisplayAddr(cfg.Addr)
		}
		link := base + "/join?token=" + token
		return out.value(map[string]any{"account_id": f.account, "email": strings.ToLower(f.email), "role": f.role, "link": link},
			fmt.Sprintf("Send this one-time link to %s (it works for 7 days):\n  %s\n", f.email, link))
	case "user list":
		us, err := svc.Store.ListUsers(ctx, f.account)
		if err != nil {
			return err
		}
		rows := make([]any, len(us))
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tEMAIL\tROLE\tCREATED")
		for i, u := range us {
			rows[i] = map[string]any{"id": u.ID, "account_id": u.AccountID, "email": u.Email, "role": u.Role, "created_at": u.CreatedAt}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.ID, u.Email, u.Role, u.CreatedAt.Format(time.RFC3339))
		}
		tw.Flush()
		return out.value(rows, b.String())
	case "plugin register":
		if err := need(1, "the path of a plugin binary"); err != nil {
			return err
		}
		return registerPlugin(ctx, svc, pos[0], out)
	case "plugin list":
		if err := need(0, "no arguments"); err != nil {
			return err
		}
		return listPlugins(ctx, svc, hub.PluginsDir(cfg.DataDir), out)
	case "plugin remove":
		if err := need(1, "a plugin name"); err != nil {
			return err
		}
		if err := svc.Store.RemovePlugin(ctx, pos[0]); errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no plugin %q is registered", pos[0])
		} else if err != nil {
			return err
		}
		return out.value(map[string]any{"name": pos[0], "removed": true}, fmt.Sprintf("plugin %s removed\n", pos[0]))
	}
	return usageError("unknown command %q", noun+" "+verb)
}

// registerPlugin records a plugin binary and its SHA-256 after asking it
// what it is: the server starts it only while the file is unchanged.
func registerPlugin(ctx context.Context, svc *app.Services, path string, out printer) error {
	rec, err := hub.Register(ctx, svc.Store, path)
	if err != nil {
		return err
	}
	return out.value(pluginJSON(rec, "ok"), fmt.Sprintf("plugin %s %s (%s) registered from %s\nsha256 %x\n",
		rec.Name, rec.Version, rec.Kind, rec.Path, rec.SHA256))
}

// pluginState says whether this machine has the registered binary (at its
// path or, with its SHA-256, in the plugins directory dir, as the server
// looks for it), and if not, whether the file at its path changed.
func pluginState(p store.PluginRecord, dir string) string {
	switch path, _ := hub.Locate(p, dir); {
	case path != "":
		return "ok"
	case fileExists(p.Path):
		return "changed"
	}
	return "missing"
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func listPlugins(ctx context.Context, svc *app.Services, dir string, out printer) error {
	ps, err := svc.Store.ListPlugins(ctx)
	if err != nil {
		return err
	}
	rows := make([]any, len(ps))
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tVERSION\tSTATE\tSHA256\tPATH")
	for i, p := range ps {
		state := pluginState(p, dir)
		rows[i] = pluginJSON(p, state)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%x\t%s\n", p.Name, p.Kind, p.Version, state, p.SHA256[:8], p.Path)
	}
	tw.Flush()
	return out.value(rows, b.String())
}

func pluginJSON(p store.PluginRecord, state string) map[string]any {
	return map[string]any{"name": p.Name, "kind": p.Kind, "version": p.Version, "display_name": p.DisplayName,
		"path": p.Path, "sha256": fmt.Sprintf("%x", p.SHA256), "state": state, "registered_at": p.RegisteredAt}
}

func createKey(ctx context.Context, svc *app.Services, f adminFlags, out printer) error {
	var exp time.Time
	if f.expires != "" {
		var err error
		if exp, err = parseExpiry(f.expires); err != nil {
			return err
		}
	}
	var scopes []string
	if f.scopes != "" {
		var err error
		if scopes, err = auth.ParseScopes(f.scopes); err != nil {
			return err
		}
	}
	c, err := svc.Auth.CreateKey(ctx, auth.NewKey{AccountID: f.account, ClientID: f.client, Name: f.name, ExpiresAt: exp, Scopes: scopes})
	if err != nil {
		return explain(err)
	}
	j := keyJSON(c.Key)
	j["key"], j["secret"] = c.APIKey, c.Secret
	return out.value(j, fmt.Sprintf("id:     %s\nkey:    %s\nsecret: %s\nThe secret is shown only now: store it safely.\n", c.Key.ID, c.APIKey, c.Secret))
}

// parseExpiry reads --expires as the dashboard's form does.
func parseExpiry(s string) (time.Time, error) {
	t, err := auth.ParseExpiry(s)
	if err != nil {
		return t, fmt.Errorf("--expires %q: %w", s, err)
	}
	return t, nil
}

// explain makes a service error read well on a terminal.
func explain(err error) error {
	if fe, ok := fault.As(err); ok {
		msg := fe.Message
		for _, d := range fe.Details {
			if !strings.HasPrefix(msg, d.Field+":") {
				msg += "; " + d.Field + ": " + d.Message
			}
		}
		return errors.New(msg)
	}
	return err
}

func keyState(k store.Key, now time.Time) string {
	switch {
	case !k.RevokedAt.IsZero():
		return "revoked"
	case !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt):
		return "expired"
	}
	return "active"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dashTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Format(time.RFC3339)
}

func keyJSON(k store.Key) map[string]any {
	return map[string]any{"id": k.ID, "name": k.Name, "account_id": k.AccountID, "client_id": nilIfEmpty(k.ClientID),
		"hint": k.Hint, "scopes": k.Scopes, "expires_at": timeOrNil(k.ExpiresAt), "revoked_at": timeOrNil(k.RevokedAt),
		"created_at": timeOrNil(k.CreatedAt), "last_used_at": timeOrNil(k.LastUsedAt)}
}

func clientJSON(c store.Client) map[string]any {
	return map[string]any{"id": c.ID, "account_id": c.AccountID, "name": c.Name, "created_at": timeOrNil(c.CreatedAt)}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

type printer struct {
	w    io.Writer
	json bool
}

func (p printer) value(v any, text string) error {
	if p.json {
		enc := json.NewEncoder(p.w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	_, err := io.WriteString(p.w, text)
	return err
}

func accountJSON(a store.Account) map[string]any {
	return map[string]any{"id": a.ID, "name": a.Name, "tier": a.Tier, "type": a.Type, "created_at": timeOrNil(a.CreatedAt)}
}

func (p printer) account(a store.Account) error {
	return p.value(accountJSON(a), fmt.Sprintf("account %s %q, tier %s, type %s\n", a.ID, a.Name, a.Tier, a.Type))
}
