package analysis

import (
	"encoding/json"
	"fmt"
	"strings"
)

// QA is one question and its answer.
type QA struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// Drafts are the markup a page could add: FAQPage JSON-LD and its entry
// in the site's llms.txt.
type Drafts struct {
	FAQ         []QA            `json:"faq"`
	FAQJSONLD   json.RawMessage `json:"faq_json_ld"` // null without questions
	LLMsTxtLine string          `json:"llms_txt_entry"`
	// Source is "page" (drawn from the text as it is) or "engine".
	Source string `json:"source"`
}

// MaxFAQ bounds the questions of a draft.
const MaxFAQ = 8

// DraftFromPage drafts from the text itself: its questions under
// subheadings ending in "?" with the paragraph after each; else each
// target query answered by the paragraph that covers it best. The
// llms.txt entry is the title, the URL and the description or the
// opening sentence.
func DraftFromPage(d Doc, o Options) Drafts {
	var faq []QA
	for i, b := range d.Blocks {
		if b.Kind == Heading && strings.HasSuffix(b.Text, "?") && i+1 < len(d.Blocks) && isText(d.Blocks[i+1]) {
			faq = append(faq, QA{Question: b.Text, Answer: d.Blocks[i+1].Text})
		}
	}
	if len(faq) == 0 {
		for _, q := range o.Queries {
			if a := bestAnswer(d, q); a != "" {
				faq = append(faq, QA{Question: capital(q), Answer: a})
			}
		}
	}
	if len(faq) > MaxFAQ {
		faq = faq[:MaxFAQ]
	}
	if faq == nil {
		faq = []QA{}
	}
	return Drafts{FAQ: faq, FAQJSONLD: FAQJSONLD(faq), LLMsTxtLine: LLMsTxtEntry(d, o.Domain, ""), Source: "page"}
}

// bestAnswer is the paragraph sharing the most terms with a query (at
// least half of them), the first among equals.
func bestAnswer(d Doc, q string) string {
	qt := terms(q)
	best, score := "", 0
	for _, b := range d.Blocks {
		if b.Kind != Paragraph || !covers(b.Text, q) {
			continue
		}
		have := map[string]bool{}
		for _, t := range terms(b.Text) {
			have[t] = true
		}
		n := 0
		for _, t := range qt {
			if have[t] {
				n++
			}
		}
		if n > score {
			best, score = b.Text, n
		}
	}
	return best
}

// FAQJSONLD is the FAQPage markup of questions; nil without any.
func FAQJSONLD(faq []QA) json.RawMessage {
	if len(faq) == 0 {
		return nil
	}
	type answer struct {
		Type string `json:"@type"`
		Text string `json:"text"`
	}
	type question struct {
		Type   string `json:"@type"`
		Name   string `json:"name"`
		Answer answer `json:"acceptedAnswer"`
	}
	page := struct {
		Context string     `json:"@context"`
		Type    string     `json:"@type"`
		Main    []question `json:"mainEntity"`
	}{Context: "https://schema.org", Type: "FAQPage"}
	for _, qa := range faq {
		page.Main = append(page.Main, question{Type: "Question", Name: qa.Question, Answer: answer{Type: "Answer", Text: qa.Answer}})
	}
	b, _ := json.MarshalIndent(page, "", "  ")
	return b
}

// LLMsTxtEntry is a page's line in llms.txt ("- [Title](url): summary"),
// the summary given or else the description or the opening sentence.
func LLMsTxtEntry(d Doc, domain, summary string) string {
	title := d.Title
	if title == "" {
		for _, b := range d.Blocks {
			if b.Kind == Heading {
				title = b.Text
				break
			}
		}
	}
	if title == "" {
		title = domain
	}
	link := d.URL
	if link == "" {
		link = "https://" + domain + "/"
	}
	if summary == "" {
		summary = d.Description
	}
	if summary == "" {
		for _, b := range d.Blocks {
			if b.Kind == Paragraph {
				summary = firstSentence(b.Text)
				break
			}
		}
	}
	summary = collapse(summary)
	if r := []rune(summary); len(r) > 200 {
		summary = string(r[:197]) + "..."
	}
	line := fmt.Sprintf("- [%s](%s)", strings.NewReplacer("[", "(", "]", ")").Replace(title), link)
	if summary != "" {
		line += ": " + summary
	}
	return line
}
