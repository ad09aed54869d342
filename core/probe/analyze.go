package probe

import (
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/jonreiter/govader"
)

// Finding is what one answer says about the subject.
type Finding struct {
	Mentioned bool `json:"mentioned"`
	// Position is the brand's rank among the brands the answer names
	// (itself and the competitors), by first mention: 1 is named first; 0
	// when not mentioned.
	Position    int      `json:"position"`
	Cited       bool     `json:"cited"`
	CitedURLs   []string `json:"cited_urls,omitempty"`
	Competitors []string `json:"competitors,omitempty"`
	// Sentences are the sentences that mention the brand, with the
	// sentiment of each (VADER compound, -1 to 1).
	Sentences []Sentence `json:"sentences,omitempty"`
}

// Sentence is a sentence that mentions the brand and its sentiment.
type Sentence struct {
	Text     string  `json:"text"`
	Compound float64 `json:"compound"`
}

var urlPattern = regexp.MustCompile(`https?://[^\s<>()\[\]"'` + "`" + `]+`)

// Analyze reads one answer.
func Analyze(s Subject, answer string) Finding {
	var f Finding
	terms := append(append([]string{s.Domain}, s.Brands...), s.Aliases...)
	brandAt := firstIndex(answer, terms)
	f.Mentioned = brandAt >= 0
	for _, u := range urlPattern.FindAllString(answer, -1) {
		u = strings.TrimRight(u, ".,;:!?")
		if p, err := url.Parse(u); err == nil && onDomain(p.Hostname(), s.Domain) && !slices.Contains(f.CitedURLs, u) {
			f.CitedURLs = append(f.CitedURLs, u)
		}
	}
	f.Cited = len(f.CitedURLs) > 0
	type named struct {
		at    int
		brand bool
	}
	var order []named
	if f.Mentioned {
		order = append(order, named{brandAt, true})
	}
	for _, c := range s.Competitors {
		if at := firstIndex(answer, []string{c}); at >= 0 {
			f.Competitors = append(f.Competitors, c)
			order = append(order, named{at, false})
		}
	}
	if f.Mentioned {
		sort.SliceStable(order, func(i, j int) bool { return order[i].at < order[j].at })
		f.Position = slices.IndexFunc(order, func(n named) bool { return n.brand }) + 1
		for _, sent := range sentences(answer) {
			if firstIndex(sent, terms) >= 0 {
				f.Sentences = append(f.Sentences, Sentence{Text: sent, Compound: Compound(sent)})
			}
		}
	}
	return f
}

// onDomain says whether host is domain or one of its subdomains.
func onDomain(host, domain string) bool {
	host, domain = strings.ToLower(host), strings.ToLower(domain)
	return domain != "" && (host == domain || strings.HasSuffix(host, "."+domain))
}

// firstIndex is where the first of terms occurs in text as a whole word
// (case-insensitive), or -1.
func firstIndex(text string, terms []string) int {
	lower := strings.ToLower(text)
	best := -1
	for _, t := range terms {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" {
			continue
		}
		for from := 0; from < len(lower); {
			i := strings.Index(lower[from:], t)
			if i < 0 {
				break
			}
			i += from
			if boundary(lower, i-1) && boundary(lower, i+len(t)) {
				if best < 0 || i < best {
					best = i
				}
				break
			}
			from = i + 1
		}
	}
	return best
}

// boundary says whether the byte at i does not continue a word.
func boundary(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return true
	}
	r := rune(s[i])
	return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r >= 0x80)
}

// sentences splits text at sentence ends and line breaks; a dot inside a
// word (a domain, a number) does not end a sentence.
func sentences(text string) []string {
	var out []string
	start := 0
	flush := func(end int) {
		if s := strings.TrimSpace(text[start:end]); s != "" {
			out = append(out, strings.TrimLeft(s, "-*•0123456789. "))
		}
		start = end
	}
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			flush(i + 1)
		case '.', '!', '?':
			if i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n' {
				flush(i + 1)
			}
		}
	}
	flush(len(text))
	return out
}

var (
	vaderOnce sync.Once
	vader     *govader.SentimentIntensityAnalyzer
)

// Compound is VADER's compound sentiment of a sentence, -1 to 1.
func Compound(sentence string) float64 {
	vaderOnce.Do(func() { vader = govader.NewSentimentIntensityAnalyzer() })
	return vader.PolarityScores(sentence).Compound
}
