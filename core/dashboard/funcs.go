package dashboard

import (
	"encoding/hex"
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/store"
)

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"iso":        func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"usd":        func(u client.USD) string { return "$" + u.String() },
	"micros":     func(m int64) string { return "$" + client.USD(m).String() },
	"has":        func(list []string, s string) bool { return slices.Contains(list, s) },
	"join":       strings.Join,
	"domainLink": domainLink,
	"hex":        hex.EncodeToString,
	"pct":        func(v float64) string { return fmt.Sprintf("%.0f", v) },
	"rate":       rate,
	"surface": func(s string) string {
		return map[string]string{probe.SurfaceModel: "model", probe.SurfaceSearchAPI: "search API", probe.SurfaceSERP: "search page (SERP)"}[s]
	},
	"localisation": func(l string) string {
		return map[string]string{probe.LocaliseNative: "(asked as the market)", probe.LocaliseCountry: "(country as location, language in the prompt)",
			probe.LocalisePrompt: "(approximated in the prompt)"}[l]
	},
	// uniqueLabels are the engines' labels, each once (an engine has a
	// result per market).
	"uniqueLabels": func(es []probe.EngineResult) []string {
		var out []string
		for _, e := range es {
			if !slices.Contains(out, e.Label) {
				out = append(out, e.Label)
			}
		}
		return out
	},
	"interval": func(i probe.Interval) string {
		return strings.TrimSuffix(rate(i.Low), "%") + "–" + rate(i.High)
	},
	"signed": func(v float64) string { return fmt.Sprintf("%+.2f", v) },
	"inc":    func(v int) int { return v + 1 },
	// thresholds is the data of the "thresholds" inputs: the values
	// shown (as typed, or saved) and what an empty input means.
	"thresholds": func(score, citation, errors any, empty string) map[string]any {
		return map[string]any{"Score": score, "Citation": citation, "Errors": errors, "Empty": empty}
	},
	"mark":  mark,
	"cited": citedText,
	"ms":    func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) },
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"clientName": func(cs any, id string) string {
		if id == "" {
			return "Account"
		}
		if list, ok := cs.([]store.Client); ok {
			for _, c := range list {
				if c.ID == id {
					return c.Name
				}
			}
		}
		return id
	},
}

// rate is a proportion as a percentage: whole under 10 points from 0 and
// 100, with a decimal nearer (0.4%, 99.6%), where rounding would say 0 or
// 100 of what is not.
func rate(v float64) string {
	p := v * 100
	if p != 0 && p != 100 && (p < 10 || p > 90) {
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", p)
}

// mark is text with each occurrence of q (case folded) marked, every
// piece of it escaped: the answers' text is the engines', never markup.
func mark(text, q string) template.HTML {
	var b strings.Builder
	n := utf8.RuneCountInString(q)
	from := 0
	for i := 0; q != "" && i < len(text); {
		end := i
		for k := 0; k < n && end < len(text); k++ {
			_, size := utf8.DecodeRuneInString(text[end:])
			end += size
		}
		if strings.EqualFold(text[i:end], q) {
			b.WriteString(template.HTMLEscapeString(text[from:i]) + "<mark>" + template.HTMLEscapeString(text[i:end]) + "</mark>")
			from, i = end, end
			continue
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		i += size
	}
	b.WriteString(template.HTMLEscapeString(text[from:]))
	return template.HTML(b.String())
}

// citedText is the text of an answer a citation supports: as the engine
// quoted it, else the span it gave ("" when it gave neither, or a span
// that is not one of the text).
func citedText(text string, c client.AnswerCitation) string {
	if c.Text != "" || c.Start == nil || c.End == nil {
		return c.Text
	}
	s, e := *c.Start, *c.End
	if s < 0 || e > len(text) || s >= e || !utf8.RuneStart(text[s]) || e < len(text) && !utf8.RuneStart(text[e]) {
		return ""
	}
	return text[s:e]
}
