package visibility

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/store"
)

// maxPromptLength bounds the text of a prompt, in characters.
const maxPromptLength = 1000

// PromptSet is the prompt set a scan asked, kept in its result: its id
// names the set (the same prompts in the same order, the same id).
type PromptSet struct {
	ID      string         `json:"id"`
	Prompts []probe.Prompt `json:"prompts"`
}

// NewPromptSet names a prompt set: "ps_" and the first 16 hex digits of
// the SHA-256 of its JSON.
func NewPromptSet(ps []probe.Prompt) *PromptSet {
	b, _ := json.Marshal(ps)
	sum := sha256.Sum256(b)
	return &PromptSet{ID: "ps_" + hex.EncodeToString(sum[:8]), Prompts: ps}
}

// subject is what a domain's probes look for.
func subject(d store.MonitoredDomain) probe.Subject {
	s := probe.Subject{Domain: d.Domain, Brands: d.Brands, Aliases: d.Aliases, Competitors: d.Competitors, Topics: d.Topics}
	for _, p := range d.Prompts {
		s.Prompts = append(s.Prompts, probe.Prompt{Text: p.Text, Intent: p.Intent})
	}
	for _, m := range MarketsView(d.Markets) {
		s.Markets = append(s.Markets, probe.Market{Country: m.Country, Language: m.Language})
	}
	return s
}

// MarketsView is a domain's markets, kept as language-COUNTRY tags, as
// the API shows them.
func MarketsView(tags []string) []client.Market {
	out := make([]client.Market, 0, len(tags))
	for _, t := range tags {
		if i := strings.LastIndexByte(t, '-'); i > 0 {
			out = append(out, client.Market{Country: t[i+1:], Language: t[:i]})
		}
	}
	return out
}

// cleanMarkets reads markets: each a country and a language
// (probe.ParseMarket), a repeated one dropped; as tags to keep.
func cleanMarkets(f *fault.Fields, in []client.Market) []string {
	out := []string{}
	for i, m := range in {
		pm, err := probe.ParseMarket(m.Country, m.Language)
		switch {
		case err != nil:
			f.Add(fmt.Sprintf("markets[%d]", i), "%s", err.Error())
		case !slices.Contains(out, pm.String()):
			out = append(out, pm.String())
		}
	}
	return out
}

// keepIntents makes the owner's prompts of a list of texts (the domain's
// prompts list): each keeps the intent it had among old, else is custom.
func keepIntents(texts []string, old []store.Prompt) []store.Prompt {
	out := make([]store.Prompt, len(texts))
	for i, t := range texts {
		out[i] = store.Prompt{Text: t, Intent: probe.Custom}
		if j := slices.IndexFunc(old, func(p store.Prompt) bool { return strings.EqualFold(p.Text, t) }); j >= 0 {
			out[i].Intent = old[j].Intent
		}
	}
	return out
}

// cleanPrompts validates the owner's prompts of a PUT: each text trimmed,
// not empty, at most maxPromptLength characters of valid UTF-8, none
// repeated (case-insensitively); each intent one of probe.Intents,
// custom when none is given.
func cleanPrompts(f *fault.Fields, in []client.Prompt) []store.Prompt {
	out := make([]store.Prompt, 0, len(in))
	seen := map[string]int{}
	for i, p := range in {
		text, at := strings.TrimSpace(p.Text), fmt.Sprintf("prompts[%d]", i)
		key := strings.ToLower(text)
		switch first, repeated := seen[key]; {
		case text == "":
			f.Add(at+".text", "must not be empty")
		case !utf8.ValidString(text) || utf8.RuneCountInString(text) > maxPromptLength:
			f.Add(at+".text", "must be at most %d characters of valid UTF-8", maxPromptLength)
		case repeated:
			f.Add(at+".text", "repeats prompts[%d]", first)
		default:
			seen[key] = i
		}
		intent := p.Intent
		if intent == "" {
			intent = probe.Custom
		} else if !slices.Contains(probe.Intents, intent) {
			f.Add(at+".intent", "must be one of %s", strings.Join(probe.Intents, ", "))
		}
		out = append(out, store.Prompt{Text: text, Intent: intent})
	}
	return out
}

// Prompts reads the prompts of a domain the principal may see: the
// owner's own and those the next scan generates after them.
func (s *Domains) Prompts(ctx context.Context, p auth.Principal, id string) (client.DomainPrompts, error) {
	d, err := s.Get(ctx, p, id)
	if err != nil {
		return client.DomainPrompts{}, err
	}
	return s.promptsView(p, d), nil
}

// SetPrompts replaces the owner's own prompts of a domain, within the
// tier's cap.
func (s *Domains) SetPrompts(ctx context.Context, p auth.Principal, id string, in client.PutPrompts) (client.DomainPrompts, error) {
	var f fault.Fields
	if in.Prompts == nil {
		f.Add("prompts", "is required: the owner's prompts, [] for none")
	}
	prompts := cleanPrompts(&f, in.Prompts)
	if err := f.Err(); err != nil {
		return client.DomainPrompts{}, err
	}
	tier, _ := limits.TierByName(p.Account.Tier)
	if err := tier.CheckPrompts(len(prompts)); err != nil {
		return client.DomainPrompts{}, err
	}
	var d store.MonitoredDomain
	err := s.Store.Update(ctx, func(tx store.Tx) (err error) {
		d, err = tx.MonitoredDomain(p.AccountID(), id)
		if d, err = visible(p, id, d, err); err != nil {
			return err
		}
		d.Prompts, d.UpdatedAt = prompts, s.Now()
		return tx.UpdateDomain(d)
	})
	if err != nil {
		return client.DomainPrompts{}, err
	}
	return s.promptsView(p, d), nil
}

// promptsView shows a domain's prompts with the set a scan builds of them.
func (s *Domains) promptsView(p auth.Principal, d store.MonitoredDomain) client.DomainPrompts {
	tier, _ := limits.TierByName(p.Account.Tier)
	v := client.DomainPrompts{DomainID: d.ID, Prompts: []client.Prompt{}, Generated: []client.Prompt{}, MaxPrompts: tier.MaxPrompts}
	own := map[string]bool{}
	for _, p := range d.Prompts {
		v.Prompts = append(v.Prompts, client.Prompt{Text: p.Text, Intent: p.Intent})
		own[strings.ToLower(strings.TrimSpace(p.Text))] = true
	}
	set := probe.Prompts(subject(d), cmp.Or(s.MaxPrompts, probe.DefaultMaxPrompts))
	for _, p := range set {
		if !own[strings.ToLower(p.Text)] {
			v.Generated = append(v.Generated, client.Prompt{Text: p.Text, Intent: p.Intent})
		}
	}
	v.PromptSetID = NewPromptSet(set).ID
	return v
}
