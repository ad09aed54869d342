package analysis

// The readings of a text the rubric is made of: words, query terms,
// statistics, attributions, definitions.

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"unicode"
)

// stopwords are left out of query terms and word counts for stuffing.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or of to in on for with by at from is are was were be been it this that these those
		as how what why when where who which do does can you your our we i my best top vs versus about into than then its their they
		not no yes will would should could may might more most less much many per via`) {
		stopwords[w] = true
	}
}

// tokens are a text's words, lower-cased: runs of letters and digits,
// with an apostrophe inside.
func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != '\'' && r != '’'
	})
}

// terms are a text's significant words, lower-cased, a plural's s dropped.
func terms(s string) []string {
	var out []string
	for _, w := range tokens(s) {
		w = strings.Trim(w, "'’")
		if stopwords[w] || len([]rune(w)) < 2 {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

func stem(w string) string {
	if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		return w[:len(w)-1]
	}
	return w
}

// covers reports whether a text holds at least half (rounded up) of a
// query's terms.
func covers(text string, query string) bool {
	q := terms(query)
	if len(q) == 0 {
		return false
	}
	have := map[string]bool{}
	for _, t := range terms(text) {
		have[t] = true
	}
	n := 0
	for _, t := range q {
		if have[t] {
			n++
		}
	}
	return n*2 >= len(q)
}

// words counts the words of a text as strings.Fields splits them,
// without making the slice.
func words(s string) int {
	n, in := 0, false
	for _, r := range s {
		space := unicode.IsSpace(r)
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

func firstSentence(s string) string {
	for i, r := range s {
		if (r == '.' || r == '?' || r == '!') && (i+1 == len(s) || s[i+1] == ' ') {
			return s[:i+1]
		}
	}
	return s
}

func snippet(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:77]) + "..."
	}
	return s
}

func isText(b Block) bool { return b.Kind == Paragraph || b.Kind == Item || b.Kind == Quote }

// external counts links to hosts outside the domain.
func external(links []string, domain string) int {
	n := 0
	for _, l := range links {
		u, err := url.Parse(l)
		if err != nil || u.Hostname() == "" {
			continue
		}
		h := strings.ToLower(u.Hostname())
		if domain == "" || (h != domain && !strings.HasSuffix(h, "."+domain)) {
			n++
		}
	}
	return n
}

func share(points, ok, total int) int {
	if total == 0 {
		return 0
	}
	return int(math.Round(float64(points) * float64(ok) / float64(total)))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func capital(s string) string {
	r := []rune(s)
	if len(r) == 0 {
		return s
	}
	r[0] = unicode.ToUpper(r[0])
	out := string(r)
	if !strings.HasSuffix(out, "?") {
		out += "?"
	}
	return out
}

// attributionPhrases name a source in the sentence that uses it.
var attributionPhrases = []string{"according to ", "source:", "sources:", "reported by ", "data from ", "published by ",
	"published in ", "study by ", "survey by "}

// attributions counts the phrases that attribute a claim to a source.
func attributions(text string) int {
	lower := strings.ToLower(text)
	n := 0
	for _, p := range attributionPhrases {
		n += strings.Count(lower, p)
	}
	return n
}

// statUnits make a number a statistic when they follow it.
var statUnits = []string{"%", "percent", "per cent", "x", "times", "million", "billion", "thousand"}

// statistics finds a text's statistics: a percentage, a multiplier, a
// count in thousands, millions or billions, an amount in dollars, a
// number written with thousands separators (1,200), or a number of five
// or more digits. Years and small counts are not statistics.
func statistics(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		if !isDigit(text[i]) || (i > 0 && isWordByte(text[i-1])) {
			i++
			continue
		}
		start := i
		for i < len(text) && (isDigit(text[i]) || ((text[i] == ',' || text[i] == '.') && i+1 < len(text) && isDigit(text[i+1]))) {
			i++
		}
		num := text[start:i]
		rest := text[i:]
		sep := ""
		if strings.HasPrefix(rest, " ") {
			sep, rest = " ", rest[1:]
		}
		unit := unitOf(rest)
		switch {
		case unit != "":
			out = append(out, num+sep+unit)
			i += len(sep) + len(unit)
		case i < len(text) && isWordByte(text[i]):
			// part of a word such as "3rd" or "W2"
		case start > 0 && text[start-1] == '$':
			out = append(out, "$"+num)
		case thousands(num) || (len(num) >= 5 && strings.IndexAny(num, ",.") < 0):
			out = append(out, num)
		}
	}
	return out
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWordByte(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// thousands reports whether a number is written with thousands
// separators: 1,200 or 12,500,000.
func thousands(num string) bool {
	groups := strings.Split(num, ",")
	if len(groups) < 2 || len(groups[0]) > 3 || strings.Contains(num, ".") {
		return false
	}
	for _, g := range groups[1:] {
		if len(g) != 3 {
			return false
		}
	}
	return true
}

// unitOf is the unit s starts with, as a whole word, or "".
func unitOf(s string) string {
	for _, u := range statUnits {
		if len(s) >= len(u) && strings.EqualFold(s[:len(u)], u) && (u == "%" || len(s) == len(u) || !isWordByte(s[len(u)])) {
			return u
		}
	}
	return ""
}

// defines reports whether a sentence defines something: "X is a ...",
// "X are the ..." with X of at most 60 characters, or a sentence with
// "refers to", "is defined as" or "means".
func defines(sentence string) bool {
	lower := strings.ToLower(sentence) + " "
	for _, m := range []string{" refers to ", " is defined as ", " means "} {
		if strings.Contains(lower, m) {
			return true
		}
	}
	for _, m := range []string{" is a ", " is an ", " is the ", " are a ", " are an ", " are the "} {
		i := strings.Index(lower, m)
		if i < 1 || i > 61 {
			continue
		}
		if strings.IndexFunc(lower[:i], func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != ' ' && r != '\'' && r != '’' && r != '-'
		}) < 0 {
			return true
		}
	}
	return false
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
