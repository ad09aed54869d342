package readiness

import (
	"fmt"
	"regexp"
	"strings"
)

// LLMsTxt is the check of /llms.txt (https://llmstxt.org): an H1 with the
// site's name, an optional > summary, and H2 sections of link lists.
type LLMsTxt struct {
	Present    bool     `json:"present"`
	WellFormed bool     `json:"well_formed"`
	Sections   int      `json:"sections"`
	Links      int      `json:"links"`
	Problems   []string `json:"problems,omitempty"`
}

var linkItem = regexp.MustCompile(`^[-*] \[[^\]]+\]\([^)\s]+\)(:.*)?$`)

// checkLLMsTxt reads an llms.txt.
func checkLLMsTxt(body string) LLMsTxt {
	l := LLMsTxt{Present: true}
	lines := strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n")
	first := -1
	for i, ln := range lines {
		if strings.TrimSpace(ln) != "" {
			first = i
			break
		}
	}
	if first < 0 {
		l.Problems = append(l.Problems, "the file is empty")
		return l
	}
	if !strings.HasPrefix(lines[first], "# ") || strings.TrimSpace(lines[first][2:]) == "" {
		l.Problems = append(l.Problems, "the first line must be an H1 with the site's name (# Name)")
	}
	inSection := false
	for i, ln := range lines[first+1:] {
		t := strings.TrimSpace(ln)
		switch {
		case strings.HasPrefix(t, "# "):
			l.Problems = append(l.Problems, fmt.Sprintf("line %d: a second H1; sections are H2 (## Section)", first+i+2))
		case strings.HasPrefix(t, "## "):
			inSection = true
			l.Sections++
		case inSection && (strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ")):
			if linkItem.MatchString(t) {
				l.Links++
			} else {
				l.Problems = append(l.Problems, fmt.Sprintf("line %d: a list item of a section must be a link: - [title](url): notes", first+i+2))
			}
		}
	}
	l.WellFormed = len(l.Problems) == 0
	return l
}
