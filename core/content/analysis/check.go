package analysis

import (
	"regexp"
	"strings"
)

// Flag is something a rewrite said that the original does not hold,
// replaced by a placeholder for the author.
type Flag struct {
	Kind        string `json:"kind"` // "number", "quotation" or "link"
	Value       string `json:"value"`
	Placeholder string `json:"placeholder"`
}

var (
	placeholder = regexp.MustCompile(`\[[A-Z][A-Z ]* NEEDED:[^\]]*\]`)
	number      = regexp.MustCompile(`\d+(?:[.,]\d+)*`)
	marker      = regexp.MustCompile(`\x00[a-z]+\x01`)
	quotation   = regexp.MustCompile(`[“"„«]([^“”"„«»\n]+)[”"“»]`)
	// blockquote is a Markdown blockquote's line: a quotation needs no
	// quotation marks there (and the rubric counts it as one).
	blockquote  = regexp.MustCompile(`(?m)^([ \t]*(?:>[ \t]?)+)(.*)$`)
	attribution = regexp.MustCompile(`(?:\s*[—–]|\s+--?\s+)[^—–]*$`) // "— Dana, CEO"
)

// Check replaces, in a rewrite, every number, quotation (of four words or
// more, in quotation marks or as a Markdown blockquote) and link that the
// source and the target queries do not hold with a visible placeholder,
// and lists what it replaced. Placeholders the
// rewrite left itself ("[SOURCE NEEDED: …]") are kept as they are.
func Check(source string, queries []string, rewrite string) (string, []Flag) {
	return NewChecker(source, queries).Check(rewrite)
}

// Checker checks texts against one source: what it holds is read once.
type Checker struct {
	allowed, norm string
	numbers       map[string]bool
}

// NewChecker reads a source and the target queries for Check.
func NewChecker(source string, queries []string) *Checker {
	c := &Checker{allowed: source + "\n" + strings.Join(queries, "\n"), numbers: map[string]bool{}}
	for _, n := range number.FindAllString(c.allowed, -1) {
		c.numbers[normNumber(n)] = true
	}
	c.norm = strings.ToLower(collapse(c.allowed))
	return c
}

// Check is the package's Check against the checker's source.
func (c *Checker) Check(rewrite string) (string, []Flag) {
	allowed, norm, numbers := c.allowed, c.norm, c.numbers
	var flags []Flag
	// Placeholders are set aside so that nothing inside them is replaced.
	var kept []string
	keep := func(p string) string {
		kept = append(kept, p)
		return "\x00" + letters(len(kept)-1) + "\x01"
	}
	text := placeholder.ReplaceAllStringFunc(rewrite, keep)
	text = bareURL.ReplaceAllStringFunc(text, func(u string) string {
		u2 := strings.TrimRight(u, ".,;:")
		if strings.Contains(allowed, u2) {
			return u
		}
		p := "[SOURCE NEEDED: a source for this claim; the link " + u2 + " is not in the original]"
		flags = append(flags, Flag{Kind: "link", Value: u2, Placeholder: p})
		return keep(p) + u[len(u2):]
	})
	text = quotation.ReplaceAllStringFunc(text, func(q string) string {
		inner := strings.TrimSpace(quotation.FindStringSubmatch(q)[1])
		if len(strings.Fields(inner)) < 4 || strings.Contains(norm, strings.ToLower(collapse(inner))) {
			return q
		}
		p := "[QUOTE NEEDED: a real quotation; \"" + snippet(inner) + "\" is not in the original]"
		flags = append(flags, Flag{Kind: "quotation", Value: inner, Placeholder: p})
		return keep(p)
	})
	text = blockquote.ReplaceAllStringFunc(text, func(line string) string {
		m := blockquote.FindStringSubmatch(line)
		inner := strings.TrimSpace(marker.ReplaceAllString(m[2], ""))
		// What is said, without its attribution: a line left with only an
		// attribution had its quotation checked by the pass above.
		said := strings.TrimSpace(attribution.ReplaceAllString(inner, ""))
		if len(strings.Fields(said)) < 4 || strings.Contains(norm, strings.ToLower(collapse(said))) {
			return line
		}
		p := "[QUOTE NEEDED: a real quotation; \"" + snippet(said) + "\" is not in the original]"
		flags = append(flags, Flag{Kind: "quotation", Value: said, Placeholder: p})
		return m[1] + keep(p)
	})
	text = number.ReplaceAllStringFunc(text, func(n string) string {
		if numbers[normNumber(n)] {
			return n
		}
		p := "[FACT NEEDED: " + n + " is not in the original]"
		flags = append(flags, Flag{Kind: "number", Value: n, Placeholder: p})
		return p
	})
	return marker.ReplaceAllStringFunc(text, func(m string) string {
		i := 0
		for _, c := range m[1 : len(m)-1] {
			i = i*26 + int(c-'a')
		}
		return kept[i]
	}), flags
}

// normNumber reads "1,200" and "1200" alike.
func normNumber(n string) string {
	if strings.Count(n, ",") > 0 && !strings.Contains(n, ".") {
		n = strings.ReplaceAll(n, ",", "")
	}
	return strings.TrimLeft(n, "0")
}

// letters writes n in base 26 with the letters a-z: a marker without digits.
func letters(n int) string {
	s := string(rune('a' + n%26))
	for n /= 26; n > 0; n /= 26 {
		s = string(rune('a'+n%26)) + s
	}
	return s
}
