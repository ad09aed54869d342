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
	Position int `json:"position"`
	// Cited: a citation or source of the answer is on the domain or a
	// subdomain, or a URL in its text is.
	Cited bool `json:"cited"`
	// CitedURLs are the domain's own pages the answer cites, in its
	// citations, its sources and its text (pageURL).
	CitedURLs []string `json:"cited_urls,omitempty"`
	// SourcesReported: the engine reported its sources (Answer).
	SourcesReported bool `json:"sources_reported"`
	// SourceDomains are the distinct domains of the answer's sources and
	// citations, in order of first appearance.
	SourceDomains []string `json:"source_domains,omitempty"`
	Competitors   []string `json:"competitors,omitempty"`
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

// Analyze reads one answer: its text, and the sources and citations the
// engine reported with it.
func Analyze(s Subject, a Answer) Finding {
	answer := a.Text
	f := Finding{SourcesReported: a.SourcesReported}
	terms := append(append([]string{s.Domain}, s.Brands...), s.Aliases...)
	brandAt := firstIndex(answer, terms)
	f.Mentioned = brandAt >= 0
	// A structured source is attributed by its Domain (a redirect's by its
	// title); its URL is one of the domain's pages only when its own host
	// is on the domain.
	attribute := func(rawURL, domain string) {
		if domain != "" && !slices.Contains(f.SourceDomains, domain) {
			f.SourceDomains = append(f.SourceDomains, domain)
		}
		if onDomain(domain, s.Domain) {
			f.Cited = true
			if page := pageURL(rawURL); onDomain(SourceDomain(page), s.Domain) && !slices.Contains(f.CitedURLs, page) {
				f.CitedURLs = append(f.CitedURLs, page)
			}
		}
	}
	for _, src := range a.Sources {
		attribute(src.URL, src.Domain)
	}
	for _, c := range a.Citations {
		attribute(c.URL, c.Domain)
	}
	for _, u := range urlPattern.FindAllString(answer, -1) {
		u = pageURL(strings.TrimRight(u, ".,;:!?"))
		if onDomain(SourceDomain(u), s.Domain) {
			f.Cited = true
			if !slices.Contains(f.CitedURLs, u) {
				f.CitedURLs = append(f.CitedURLs, u)
			}
		}
	}
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

// onDomain says whether host is domain or one of its subdomains ("www."
// aside).
func onDomain(host, domain string) bool {
	host, domain = bareHost(host), bareHost(domain)
	return domain != "" && (host == domain || strings.HasSuffix(host, "."+domain))
}

// pageURL is the page a cited URL names: without its fragment and its
// utm_ tracking parameters (search engines add utm_source to the links
// they cite), so that one page cited two ways counts once.
func pageURL(rawURL string) string {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return rawURL
	}
	u.Fragment, u.RawFragment = "", ""
	q := u.Query()
	n := len(q)
	for k := range q {
		if strings.HasPrefix(strings.ToLower(k), "utm_") {
			q.Del(k)
		}
	}
	if len(q) < n {
		u.RawQuery = q.Encode()
	}
	return u.String()
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
