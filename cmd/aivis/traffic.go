package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/traffic"
)

// trafficCmd is aivis traffic: a domain's logs imported, and the tokens
// its CDN delivers them with.
func trafficCmd() *cobra.Command {
	return group("traffic", "Import a domain's logs; make, list and revoke the tokens its CDN delivers them with",
		trafficImportCmd(),
		group("token", "Make, list and revoke a domain's ingest tokens",
			trafficTokenCreateCmd(),
			trafficTokenListCmd(),
			trafficTokenRevokeCmd(),
		),
	)
}

// domainFlags are the flags that name one monitored domain.
type domainFlags struct{ account, client, domain string }

func (f *domainFlags) bind(c *cobra.Command) {
	c.Flags().StringVar(&f.account, "account", "", "the account's id")
	c.Flags().StringVar(&f.client, "client", "", "the agency client whose domain it is (default: the account's own)")
	c.Flags().StringVar(&f.domain, "domain", "", "the monitored domain: its name (example.com) or id")
	required(c, "account", "domain")
}

// find is the domain the flags name, among the owner's.
func (f *domainFlags) find(ctx context.Context, st store.Store) (store.MonitoredDomain, error) {
	if d, err := st.MonitoredDomain(ctx, f.account, f.domain); err == nil {
		return d, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return store.MonitoredDomain{}, err
	}
	name := strings.ToLower(strings.TrimSuffix(f.domain, "."))
	filter := store.DomainFilter{AccountID: f.account, ClientID: f.client, Limit: 100}
	for {
		ds, next, err := st.ListDomains(ctx, filter)
		if err != nil {
			return store.MonitoredDomain{}, err
		}
		for _, d := range ds {
			if d.Domain == name {
				return d, nil
			}
		}
		if next == "" {
			return store.MonitoredDomain{}, fmt.Errorf("account %s monitors no domain %s%s", f.account, f.domain, clientOf(f.client))
		}
		filter.Cursor = next
	}
}

func clientOf(client string) string {
	if client == "" {
		return ""
	}
	return " for client " + client
}

func trafficImportCmd() *cobra.Command {
	var f domainFlags
	c := &cobra.Command{Use: "import FILE...", Short: "Import combined (Apache, nginx) log files of a domain, gzip-compressed or not; - reads standard input"}
	f.bind(c)
	return argsAfterFlags(func(c *cobra.Command, files []string) error {
		if len(files) == 0 {
			return usageError("%s takes one or more files (- for standard input)", c.CommandPath())
		}
		return nil
	}, withServices(c, func(ctx context.Context, in *invocation, files []string) error {
		d, err := f.find(ctx, in.svc.Store)
		if err != nil {
			return err
		}
		if err := in.svc.Traffic.LoadRanges(ctx); err != nil {
			return err
		}
		var rows []map[string]any
		var text strings.Builder
		for _, name := range files {
			r, err := importFile(ctx, in.svc.Traffic, d, name)
			if err != nil {
				return fmt.Errorf("%s: %w", name, explain(err))
			}
			row := map[string]any{"file": name, "duplicate": r.Duplicate, "lines": r.Batch.Lines,
				"malformed": r.Batch.Malformed, "malformed_samples": samplesJSON(r.Batch.Samples)}
			rows = append(rows, row)
			if r.Duplicate {
				fmt.Fprintf(&text, "%s: already imported; nothing added\n", name)
				continue
			}
			fmt.Fprintf(&text, "%s: %d lines read, %d malformed\n", name, r.Batch.Lines, r.Batch.Malformed)
			for _, s := range r.Batch.Samples {
				fmt.Fprintf(&text, "  line %d: %s: %s\n", s.Line, s.Reason, s.Excerpt)
			}
		}
		return in.out.value(rows, text.String())
	}))
}

func importFile(ctx context.Context, svc *traffic.Service, d store.MonitoredDomain, name string) (traffic.Result, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return traffic.Result{}, err
		}
		defer f.Close()
		r = f
	}
	return svc.Import(ctx, d, r)
}

func samplesJSON(ss []store.MalformedLine) []store.MalformedLine {
	if ss == nil {
		return []store.MalformedLine{}
	}
	return ss
}

func trafficTokenCreateCmd() *cobra.Command {
	var f domainFlags
	var n traffic.NewToken
	var secretEnv string
	c := &cobra.Command{Use: "create", Short: "Make a token a CDN delivers a domain's logs with (shown only now)", Args: takes(0, "no arguments")}
	f.bind(c)
	c.Flags().StringVar(&n.Name, "name", "", "the token's name")
	c.Flags().StringVar(&n.Source, "source", "", "where the logs come from: "+strings.Join(traffic.Sources, ", "))
	c.Flags().StringVar(&secretEnv, "signing-secret-env", "", "vercel: the environment variable that holds the drain's signature secret")
	c.Flags().StringVar(&n.FastlyServiceID, "fastly-service-id", "", "fastly: the service that delivers (optional)")
	required(c, "name", "source")
	return withServices(c, func(ctx context.Context, in *invocation, _ []string) error {
		if secretEnv != "" {
			if n.SigningSecret = in.getenv(secretEnv); n.SigningSecret == "" {
				return fmt.Errorf("--signing-secret-env: %s is not set", secretEnv)
			}
		}
		d, err := f.find(ctx, in.svc.Store)
		if err != nil {
			return err
		}
		t, secret, err := in.svc.Traffic.CreateToken(ctx, d, n)
		if err != nil {
			return explain(err)
		}
		j := tokenJSON(t)
		j["token"] = secret
		return in.out.value(j, fmt.Sprintf("id:     %s\ntoken:  %s\nsource: %s\nThe token is shown only now: store it safely (docs/traffic.md says where it goes).\n",
			t.ID, secret, t.Source))
	})
}

func trafficTokenListCmd() *cobra.Command {
	var f domainFlags
	c := &cobra.Command{Use: "list", Short: "List a domain's ingest tokens", Args: takes(0, "no arguments")}
	f.bind(c)
	return withServices(c, func(ctx context.Context, in *invocation, _ []string) error {
		d, err := f.find(ctx, in.svc.Store)
		if err != nil {
			return err
		}
		ts, err := in.svc.Store.ListIngestTokens(ctx, d.AccountID, d.ID)
		if err != nil {
			return err
		}
		return in.out.table("ID\tTOKEN\tNAME\tSOURCE\tSTATE\tLAST USED", len(ts), func(i int) (any, string) {
			t := ts[i]
			state := "active"
			if t.RevokedAt != nil {
				state = "revoked"
			}
			return tokenJSON(t), fmt.Sprintf("%s\t%s…\t%s\t%s\t%s\t%s\n", t.ID, t.Prefix, t.Name, t.Source, state, dashTimePtr(t.LastUsedAt))
		})
	})
}

func trafficTokenRevokeCmd() *cobra.Command {
	var f domainFlags
	c := &cobra.Command{Use: "revoke TOKEN_ID", Short: "Revoke an ingest token"}
	f.bind(c)
	return argsAfterFlags(takes(1, "TOKEN_ID"), withServices(c, func(ctx context.Context, in *invocation, args []string) error {
		d, err := f.find(ctx, in.svc.Store)
		if err != nil {
			return err
		}
		if err := in.svc.Store.RevokeIngestToken(ctx, d.AccountID, d.ID, args[0], time.Now().UTC()); errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%s has no ingest token %s", d.Domain, args[0])
		} else if err != nil {
			return err
		}
		return in.out.value(map[string]any{"id": args[0], "revoked": true}, fmt.Sprintf("ingest token %s revoked\n", args[0]))
	}))
}

// argsAfterFlags checks c's positional arguments with check when it runs:
// after cobra has named a required flag that is missing (it checks Args
// before the flags), and before anything is opened.
func argsAfterFlags(check cobra.PositionalArgs, c *cobra.Command) *cobra.Command {
	run := c.RunE
	c.RunE = func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return err
		}
		return run(c, args)
	}
	return c
}

func tokenJSON(t store.IngestToken) map[string]any {
	return map[string]any{"id": t.ID, "domain_id": t.DomainID, "name": t.Name, "source": t.Source, "prefix": t.Prefix,
		"fastly_service_id": t.FastlyServiceID, "created_at": t.CreatedAt, "last_used_at": t.LastUsedAt, "revoked_at": t.RevokedAt}
}

func dashTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}

// crawlersCmd is aivis crawlers: the catalog of AI crawlers and the IP
// range lists that verify them.
func crawlersCmd() *cobra.Command {
	return group("crawlers", "List the AI crawlers aivis knows; replace the IP range lists that verify them",
		crawlersListCmd(),
		crawlersUpdateCmd(),
	)
}

func crawlersListCmd() *cobra.Command {
	c := &cobra.Command{Use: "list", Short: "List the AI crawlers and assistants, and the range lists that verify each", Args: takes(0, "no arguments")}
	return withServices(c, func(ctx context.Context, in *invocation, _ []string) error {
		if err := in.svc.Traffic.LoadRanges(ctx); err != nil {
			return err
		}
		cat := in.svc.Traffic.Catalog
		r := cat.Ranges()
		as := cat.Agents()
		return in.out.table("TOKEN\tOPERATOR\tPURPOSE\tVERIFIED WITH", len(as), func(i int) (any, string) {
			a := as[i]
			var lists []string
			for _, l := range a.Lists {
				if r.Has(l) {
					lists = append(lists, fmt.Sprintf("%s (%d prefixes, %s)", l, r.Len(l), r.Created(l).Format(time.DateOnly)))
				} else {
					lists = append(lists, l+" (not loaded)")
				}
			}
			j := map[string]any{"token": a.Token, "operator": a.Operator, "purpose": a.Purpose, "lists": a.Lists}
			return j, fmt.Sprintf("%s\t%s\t%s\t%s\n", a.Token, a.Operator, a.Purpose, dash(strings.Join(lists, ", ")))
		})
	})
}

func crawlersUpdateCmd() *cobra.Command {
	var from string
	c := &cobra.Command{Use: "update", Short: "Replace the IP range lists that verify AI crawlers (every instance takes them within a minute)",
		Args: takes(0, "no arguments")}
	c.Flags().StringVar(&from, "from", "", `a JSON file: {"list name": the operator's list as published, ...} (aivis crawlers list names the lists)`)
	required(c, "from")
	return withServices(c, func(ctx context.Context, in *invocation, _ []string) error {
		data, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		names, err := in.svc.Traffic.ReplaceRanges(ctx, data)
		if err != nil {
			return explain(err)
		}
		return in.out.value(map[string]any{"lists": names}, fmt.Sprintf("replaced %d lists: %s\n", len(names), strings.Join(names, ", ")))
	})
}
