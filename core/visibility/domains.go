package visibility

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/publicsuffix"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/domains"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
)

// Domains is what the API and the dashboard do with monitored domains.
type Domains struct {
	Store Store
	Now   func() time.Time
	// MaxPrompts is the scanner's Prober.MaxPrompts: the size the
	// generated prompts fill a prompt set up to (0: probe's default).
	MaxPrompts int
}

// The bounds of a monitored domain's lists: how many (for prompts, the
// tier's cap), and how long each.
var listBounds = map[string][2]int{
	"brands":      {10, 100},
	"aliases":     {20, 100},
	"competitors": {20, 100},
	"topics":      {10, 200},
	"prompts":     {0, maxPromptLength},
}

// cleanList trims, drops empty and repeated (case-insensitively) entries,
// and checks the bounds.
func cleanList(f *fault.Fields, field string, in []string) []string {
	bound := listBounds[field]
	if bound[0] > 0 && len(in) > bound[0] {
		f.Add(field, "must have at most %d entries", bound[0])
		return nil
	}
	out := []string{}
	seen := map[string]bool{}
	for i, v := range in {
		v = strings.TrimSpace(v)
		switch {
		case !utf8.ValidString(v) || utf8.RuneCountInString(v) > bound[1]:
			f.Add(fmt.Sprintf("%s[%d]", field, i), "must be at most %d characters of valid UTF-8", bound[1])
		case v == "" || seen[strings.ToLower(v)]:
		default:
			seen[strings.ToLower(v)] = true
			out = append(out, v)
		}
	}
	return out
}

// DefaultBrand is the brand name a domain suggests: its registrable
// label, capitalised ("shop.example.co.uk" -> "Example").
func DefaultBrand(domain string) string {
	site, err := publicsuffix.EffectiveTLDPlusOne(domain)
	if err != nil {
		site = domain
	}
	label, _, _ := strings.Cut(site, ".")
	if label == "" {
		return domain
	}
	return strings.ToUpper(label[:1]) + label[1:]
}

// Create adds a monitored domain within the tier's cap; its first scan is
// due at once.
func (s *Domains) Create(ctx context.Context, p auth.Principal, in client.CreateDomain) (store.MonitoredDomain, error) {
	var f fault.Fields
	d, err := domains.Normalize(in.Domain)
	if err != nil {
		f.Add("domain", "%s", err.Error())
	}
	md := store.MonitoredDomain{Domain: d, Brands: cleanList(&f, "brands", in.Brands), Aliases: cleanList(&f, "aliases", in.Aliases),
		Competitors: cleanList(&f, "competitors", in.Competitors), Topics: cleanList(&f, "topics", in.Topics),
		Prompts: keepIntents(cleanList(&f, "prompts", in.Prompts), nil), Markets: cleanMarkets(&f, in.Markets)}
	clientID, err := accounts.Owner(ctx, s.Store, p, in.ClientID)
	if err != nil {
		return md, err
	}
	if err := f.Err(); err != nil {
		return md, err
	}
	tier, _ := limits.TierByName(p.Account.Tier)
	if err := cmp.Or(tier.CheckPrompts(len(md.Prompts)), tier.CheckMarkets(len(md.Markets))); err != nil {
		return md, err
	}
	if len(md.Brands) == 0 {
		md.Brands = []string{DefaultBrand(d)}
	}
	if len(md.Markets) == 0 && p.Account.Market != "" {
		md.Markets = []string{p.Account.Market} // the account's default
	}
	now := s.Now()
	md.ID, md.AccountID, md.ClientID = randid.New("dom"), p.AccountID(), clientID
	md.NextScanAt, md.CreatedAt, md.UpdatedAt = now, now, now
	err = s.Store.Update(ctx, func(tx store.Tx) error {
		n, err := tx.CountDomains(p.AccountID())
		if err != nil {
			return err
		}
		if n >= tier.MaxDomains {
			return fault.New(fault.DomainLimitReached, "the %s tier monitors at most %d domains (the account's and its clients'); delete one or change the tier",
				tier.Title, tier.MaxDomains)
		}
		return tx.InsertDomain(md)
	})
	if errors.Is(err, store.ErrConflict) {
		return md, fault.New(fault.AlreadyExists, "%s is monitored already", d)
	}
	return md, err
}

// visible hides another client's domain behind NOT_FOUND.
func visible(p auth.Principal, id string, d store.MonitoredDomain, err error) (store.MonitoredDomain, error) {
	if errors.Is(err, store.ErrNotFound) || (err == nil && p.ClientID() != "" && d.ClientID != p.ClientID()) {
		return store.MonitoredDomain{}, fault.New(fault.NotFound, "no monitored domain %s", id)
	}
	return d, err
}

// Get reads a monitored domain the principal may see.
func (s *Domains) Get(ctx context.Context, p auth.Principal, id string) (store.MonitoredDomain, error) {
	d, err := s.Store.MonitoredDomain(ctx, p.AccountID(), id)
	return visible(p, id, d, err)
}

// List lists the monitored domains a principal may see (clientID as for
// every list: accounts.ListScope).
func (s *Domains) List(ctx context.Context, p auth.Principal, clientID, cursor string, limit int) ([]store.MonitoredDomain, string, error) {
	owner, all, ok := accounts.ListScope(p, clientID)
	if !ok {
		return nil, "", nil
	}
	ds, next, err := s.Store.ListDomains(ctx, store.DomainFilter{AccountID: p.AccountID(), ClientID: owner, AllClients: all,
		Cursor: cursor, Limit: limit})
	return ds, next, accounts.CursorError(err)
}

// Update replaces the lists given.
func (s *Domains) Update(ctx context.Context, p auth.Principal, id string, in client.UpdateDomain) (store.MonitoredDomain, error) {
	var f fault.Fields
	lists := map[string]*[]string{"brands": in.Brands, "aliases": in.Aliases, "competitors": in.Competitors,
		"topics": in.Topics, "prompts": in.Prompts}
	clean := map[string][]string{}
	for field, l := range lists {
		if l != nil {
			clean[field] = cleanList(&f, field, *l)
		}
	}
	if b, ok := clean["brands"]; ok && len(b) == 0 {
		f.Add("brands", "must name the brand at least once")
	}
	var markets []string
	if in.Markets != nil {
		markets = cleanMarkets(&f, *in.Markets)
	}
	if err := f.Err(); err != nil {
		return store.MonitoredDomain{}, err
	}
	tier, _ := limits.TierByName(p.Account.Tier)
	if err := cmp.Or(tier.CheckPrompts(len(clean["prompts"])), tier.CheckMarkets(len(markets))); err != nil {
		return store.MonitoredDomain{}, err
	}
	var d store.MonitoredDomain
	err := s.Store.Update(ctx, func(tx store.Tx) (err error) {
		d, err = tx.MonitoredDomain(p.AccountID(), id)
		if d, err = visible(p, id, d, err); err != nil {
			return err
		}
		was := d
		for field, dst := range map[string]*[]string{"brands": &d.Brands, "aliases": &d.Aliases, "competitors": &d.Competitors,
			"topics": &d.Topics} {
			if l, ok := clean[field]; ok {
				*dst = l
			}
		}
		if l, ok := clean["prompts"]; ok {
			d.Prompts = keepIntents(l, d.Prompts)
		}
		if markets != nil {
			d.Markets = markets
		}
		if slices.Equal(d.Brands, was.Brands) && slices.Equal(d.Aliases, was.Aliases) && slices.Equal(d.Competitors, was.Competitors) &&
			slices.Equal(d.Topics, was.Topics) && slices.Equal(d.Prompts, was.Prompts) && slices.Equal(d.Markets, was.Markets) {
			return nil // nothing changes: updated_at stays
		}
		d.UpdatedAt = s.Now()
		return tx.UpdateDomain(d)
	})
	return d, err
}

// Delete stops monitoring a domain. Its readings stay.
func (s *Domains) Delete(ctx context.Context, p auth.Principal, id string) error {
	return s.Store.Update(ctx, func(tx store.Tx) error {
		d, err := tx.MonitoredDomain(p.AccountID(), id)
		if _, err := visible(p, id, d, err); err != nil {
			return err
		}
		return tx.DeleteDomain(p.AccountID(), id)
	})
}
