package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aivis/aivis/core/app"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
)

func accountCreateCmd() *cobra.Command {
	var name, tier, market string
	var agency bool
	c := &cobra.Command{Use: "create", Short: "Create an account", Args: takes(0, "no arguments")}
	c.Flags().StringVar(&name, "name", "", "the account's name")
	c.Flags().StringVar(&tier, "tier", "", "tier: starter, professional or enterprise")
	c.Flags().BoolVar(&agency, "agency", false, "an agency account, whose keys may act for its clients")
	c.Flags().StringVar(&market, "market", "", "the market of its domains that name none, language and country: de-DE (default: none, each engine's own)")
	required(c, "name", "tier")
	return withServices(c, func(ctx context.Context, in *invocation, _ []string) error {
		a, err := in.svc.Accounts.Create(ctx, name, tier, agency)
		if err != nil {
			return explain(err)
		}
		if market != "" {
			if a, err = in.svc.Accounts.SetMarket(ctx, a.ID, market); err != nil {
				return explain(err)
			}
		}
		return in.out.account(a)
	})
}

func accountSetMarketCmd() *cobra.Command {
	c := &cobra.Command{Use: "set-market ACCOUNT_ID MARKET", Short: "Set the market of an account's domains that name none (language and country: de-DE; none clears it)",
		Args: takes(2, "ACCOUNT_ID MARKET")}
	return withServices(c, func(ctx context.Context, in *invocation, args []string) error {
		tag := args[1]
		if tag == "none" {
			tag = ""
		}
		a, err := in.svc.Accounts.SetMarket(ctx, args[0], tag)
		if err != nil {
			return explain(err)
		}
		return in.out.account(a)
	})
}

func accountSetTierCmd() *cobra.Command {
	c := &cobra.Command{Use: "set-tier ACCOUNT_ID TIER", Short: "Change an account's tier", Args: takes(2, "ACCOUNT_ID TIER")}
	return withServices(c, func(ctx context.Context, in *invocation, args []string) error {
		a, err := in.svc.Accounts.SetTier(ctx, args[0], args[1])
		if err != nil {
			return explain(err)
		}
		return in.out.account(a)
	})
}

func accountListCmd() *cobra.Command {
	c := &cobra.Command{Use: "list", Short: "List the accounts", Args: takes(0, "no arguments")}
	return withServices(c, func(ctx context.Context, in *invocation, _ []string) error {
		as, err := in.svc.Store.ListAccounts(ctx)
		if err != nil {
			return err
		}
		return in.out.table("ID\tNAME\tTIER\tTYPE\tCREATED", len(as), func(i int) (any, string) {
			a := as[i]
			return accountJSON(a), fmt.Sprintf("%s\t%s\t%s\t%s\t%s\n", a.ID, a.Name, a.Tier, a.Type, a.CreatedAt.Format(time.RFC3339))
		})
	})
}

func clientCreateCmd() *cobra.Command {
	var account, name string
	c := &cobra.Command{Use: "create", Short: "Create a client of an agency account", Args: takes(0, "no arguments")}
	c.Flags().StringVar(&account, "account", "", "the agency account's id")
	c.Flags().StringVar(&name, "name", "", "the client's name")
	required(c, "account", "name")
	return withServices(c, func(ctx context.Context, in *invocation, _ []string) error {
		cl, err := in.svc.Accounts.CreateClient(ctx, account, name)
		if err != nil {
			return explain(err)
		}
		return in.out.value(clientJSON(cl), fmt.Sprintf("client %s %q in account %s\n", cl.ID, cl.Name, cl.AccountID))
	})
}

func clientListCmd() *cobra.Command {
	var account string
	c := &cobra.Command{Use: "list", Short: "List an agency account's clients", Args: takes(0, "no arguments")}
	c.Flags().StringVar(&account, "account", "", "the agency account's id")
	required(c, "account")
	return withServices(c, func(ctx context.Context, in *invocation, _ []string) error {
		cs, err := in.svc.Store.ListClients(ctx, account)
		if err != nil {
			return err
		}
		return in.out.table("ID\tNAME\tCREATED", len(cs), func(i int) (any, string) {
			cl := cs[i]
			return clientJSON(cl), fmt.Sprintf("%s\t%s\t%s\n", cl.ID, cl.Name, cl.CreatedAt.Format(time.RFC3339))
		})
	})
}

func keyCreateCmd() *cobra.Command {
	var n auth.NewKey
	var expires, scopes string
	c := &cobra.Command{Use: "create", Short: "Create an API key (its secret is shown only now)", Args: takes(0, "no arguments")}
	c.Flags().StringVar(&n.AccountID, "account", "", "the account's id")
	c.Flags().StringVar(&n.ClientID, "client", "", "the agency client's id the key acts for")
	c.Flags().StringVar(&n.Name, "name", "", "the key's name")
	c.Flags().StringVar(&expires, "expires", "", "expiry: YYYY-MM-DD or RFC 3339 (default: never)")
	c.Flags().StringVar(&scopes, "scopes", "", "comma-separated scopes (default: all)")
	required(c, "account", "name")
	return withServices(c, func(ctx context.Context, in *invocation, _ []string) error {
		if expires != "" {
			var err error
			if n.ExpiresAt, err = parseExpiry(expires); err != nil {
				return err
			}
		}
		if scopes != "" {
			var err error
			if n.Scopes, err = auth.ParseScopes(scopes); err != nil {
				return err
			}
		}
		k, err := in.svc.Auth.CreateKey(ctx, n)
		if err != nil {
			return explain(err)
		}
		j := keyJSON(k.Key)
		j["key"], j["secret"] = k.APIKey, k.Secret
		return in.out.value(j, fmt.Sprintf("id:     %s\nkey:    %s\nsecret: %s\nThe secret is shown only now: store it safely.\n", k.Key.ID, k.APIKey, k.Secret))
	})
}

func keyRevokeCmd() *cobra.Command {
	c := &cobra.Command{Use: "revoke KEY_ID", Short: "Revoke an API key", Args: takes(1, "KEY_ID")}
	return withServices(c, func(ctx context.Context, in *invocation, args []string) error {
		k, err := in.svc.Auth.Revoke(ctx, args[0])
		if err != nil {
			return explain(err)
		}
		return in.out.value(keyJSON(k), fmt.Sprintf("key %s (%s) revoked at %s\n", k.ID, k.Hint, k.RevokedAt.Format(time.RFC3339)))
	})
}

func keyListCmd() *cobra.Command {
	var account string
	c := &cobra.Command{Use: "list", Short: "List an account's API keys", Args: takes(0, "no arguments")}
	c.Flags().StringVar(&account, "account", "", "the account's id")
	required(c, "account")
	return withServices(c, func(ctx context.Context, in *invocation, _ []string) error {
		ks, err := in.svc.Store.ListKeys(ctx, account)
		if err != nil {
			return err
		}
		return in.out.table("ID\tKEY\tNAME\tCLIENT\tSTATE\tEXPIRES\tLAST USED", len(ks), func(i int) (any, string) {
			k := ks[i]
			return keyJSON(k), fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Hint, k.Name, dash(k.ClientID), keyState(k, time.Now()),
				dashTime(k.ExpiresAt), dashTime(k.LastUsedAt))
		})
	})
}

func userInviteCmd() *cobra.Command {
	var account, email, role, url string
	c := &cobra.Command{Use: "invite", Short: "Invite a user to an account's dashboard (a one-time link)", Args: takes(0, "no arguments")}
	c.Flags().StringVar(&account, "account", "", "the account's id")
	c.Flags().StringVar(&email, "email", "", "the user's email address")
	c.Flags().StringVar(&role, "role", "owner", "role: owner, admin, developer or viewer")
	c.Flags().StringVar(&url, "url", "", "the dashboard's address in invitation links (default the public URL, else https://<addr>)")
	required(c, "account", "email")
	return withServices(c, func(ctx context.Context, in *invocation, _ []string) error {
		token, err := in.svc.People.OperatorInvite(ctx, account, email, role)
		if err != nil {
			return explain(err)
		}
		base := strings.TrimSuffix(url, "/")
		if base == "" {
			base = in.cfg.PublicURL
		}
		if base == "" {
			base = "https://" + app.DisplayAddr(in.cfg.Addr)
		}
		link := base + "/join?token=" + token
		return in.out.value(map[string]any{"account_id": account, "email": strings.ToLower(email), "role": role, "link": link},
			fmt.Sprintf("Send this one-time link to %s (it works for 7 days):\n  %s\n", email, link))
	})
}

func userListCmd() *cobra.Command {
	var account string
	c := &cobra.Command{Use: "list", Short: "List an account's dashboard users", Args: takes(0, "no arguments")}
	c.Flags().StringVar(&account, "account", "", "the account's id")
	required(c, "account")
	return withServices(c, func(ctx context.Context, in *invocation, _ []string) error {
		us, err := in.svc.Store.ListUsers(ctx, account)
		if err != nil {
			return err
		}
		return in.out.table("ID\tEMAIL\tROLE\tCREATED", len(us), func(i int) (any, string) {
			u := us[i]
			return map[string]any{"id": u.ID, "account_id": u.AccountID, "email": u.Email, "role": u.Role, "created_at": u.CreatedAt}, fmt.Sprintf("%s\t%s\t%s\t%s\n", u.ID, u.Email, u.Role, u.CreatedAt.Format(time.RFC3339))
		})
	})
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

// table prints n rows: as a JSON array with --json, else as a table under
// header (columns separated by tabs); row gives the i-th's JSON and line.
func (p printer) table(header string, n int, row func(i int) (any, string)) error {
	rows := make([]any, n)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for i := range n {
		var line string
		rows[i], line = row(i)
		fmt.Fprint(tw, line)
	}
	tw.Flush()
	return p.value(rows, b.String())
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
	var market any
	if a.Market != "" {
		market = a.Market
	}
	return map[string]any{"id": a.ID, "name": a.Name, "tier": a.Tier, "type": a.Type, "market": market, "created_at": timeOrNil(a.CreatedAt)}
}

func (p printer) account(a store.Account) error {
	return p.value(accountJSON(a), fmt.Sprintf("account %s %q, tier %s, type %s\n", a.ID, a.Name, a.Tier, a.Type))
}
