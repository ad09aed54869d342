package probe

import (
	"cmp"
	"fmt"
	"strings"
)

// Intents of prompts.
const (
	Custom     = "custom"     // the owner's own
	Discovery  = "discovery"  // a buyer looking for a kind of product
	Comparison = "comparison" // the brand against a competitor
	Branded    = "branded"    // about the brand by name
)

// Prompt is one question asked of every engine.
type Prompt struct {
	Text   string `json:"text"`
	Intent string `json:"intent"`
}

// Subject is what a domain's prompts are about.
type Subject struct {
	Domain      string
	Brands      []string // the brand's names, the main one first
	Aliases     []string
	Competitors []string
	Topics      []string
	Prompts     []Prompt // the owner's own, each with its intent (default Custom)
	// Markets are the markets every prompt is asked in, each of every
	// engine (none: once, in the engine's default).
	Markets []Market
}

// Intents are the intents a prompt may carry.
var Intents = []string{Custom, Discovery, Comparison, Branded}

// DefaultMaxPrompts is the size of a prompt set unless a Prober says
// otherwise.
const DefaultMaxPrompts = 20

// Brand is the subject's main name: its first brand, else the domain.
func (s Subject) Brand() string {
	if len(s.Brands) > 0 {
		return s.Brands[0]
	}
	return s.Domain
}

// Prompts is the prompt set of a subject: the owner's own first, every
// one of them (how many an owner keeps is capped by its tier), then
// generated ones while the set has fewer than limit, taken in turn from
// each intent so that the cap keeps a mix. Discovery prompts need the
// subject's topics. Generated prompts name no brand in discovery (that is
// how a buyer asks), the competitor in comparison, the brand in branded
// ones.
func Prompts(s Subject, limit int) []Prompt {
	var out []Prompt
	seen := map[string]bool{}
	add := func(text, intent string, capped bool) {
		key := strings.ToLower(strings.TrimSpace(text))
		if key == "" || seen[key] || (capped && len(out) >= limit) {
			return
		}
		seen[key] = true
		out = append(out, Prompt{Text: strings.TrimSpace(text), Intent: intent})
	}
	for _, p := range s.Prompts {
		add(p.Text, cmp.Or(p.Intent, Custom), false)
	}
	brand := s.Brand()
	var discovery, comparison, branded []string
	for _, t := range s.Topics {
		discovery = append(discovery,
			fmt.Sprintf("What are the best options for %s? Name specific companies or products and their websites.", t),
			fmt.Sprintf("Which companies would you recommend for %s, and why?", t))
	}
	for _, c := range s.Competitors {
		comparison = append(comparison,
			fmt.Sprintf("How does %s compare to %s?", brand, c),
			fmt.Sprintf("What are the best alternatives to %s?", c))
	}
	branded = append(branded, fmt.Sprintf("What is %s (%s)? What do people say about it?", brand, s.Domain))
	if len(s.Topics) > 0 {
		branded = append(branded, fmt.Sprintf("Is %s a good choice for %s? What are its strengths and weaknesses?", brand, s.Topics[0]))
	} else {
		branded = append(branded, fmt.Sprintf("Is %s a good choice? What are its strengths and weaknesses?", brand))
	}
	for i := 0; len(out) < limit && i < max(len(discovery), len(comparison), len(branded)); i++ {
		for _, list := range []struct {
			ps     []string
			intent string
		}{{discovery, Discovery}, {comparison, Comparison}, {branded, Branded}} {
			if i < len(list.ps) {
				add(list.ps[i], list.intent, true)
			}
		}
	}
	return out
}
