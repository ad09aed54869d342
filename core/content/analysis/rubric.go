package analysis

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/aivis/aivis/client"
)

// The citability score is a sum of nine parts, in points of 100, less a
// penalty for keyword stuffing. The weights follow the GEO study
// (Aggarwal et al., KDD 2024), where adding statistics, quotations and
// cited sources raised a page's visibility in generative answers by up to
// about 40% and keyword stuffing did not help; docs/content-requests.md
// gives each part's reason.
const (
	PointsAnswerFirst   = 15 // openings that answer at once: 8 to 60 words, not a question
	PointsSelfContained = 10 // paragraphs that stand alone: no opening back-reference, at most 150 words
	PointsHeadings      = 15 // subheadings (5), matching the target queries (10)
	PointsStatistics    = 15 // statistics, with their sources
	PointsSources       = 10 // cited sources: external links and attributions
	PointsQuotations    = 10 // attributed quotations
	PointsDefinitions   = 5  // a definition of the subject
	PointsFAQ           = 10 // questions as headings with their answers, or FAQPage
	PointsJSONLD        = 10 // valid JSON-LD

	PointsTotal = PointsAnswerFirst + PointsSelfContained + PointsHeadings + PointsStatistics + PointsSources +
		PointsQuotations + PointsDefinitions + PointsFAQ + PointsJSONLD

	// PenaltyStuffing is taken off when a target query's term (or, without
	// target queries, the most frequent word) is more than StuffingShare of
	// a text of at least StuffingMinWords words.
	PenaltyStuffing  = 15
	StuffingShare    = 0.06
	StuffingMinWords = 100
)

// The weights must add up to 100: this fails to compile otherwise.
var _ = [1]struct{}{}[PointsTotal-100]

// Finding is one shortfall: the points it costs and its fix.
type Finding struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Points   int    `json:"points_lost"`
	Title    string `json:"title"`
	Fix      string `json:"fix"`
	Evidence string `json:"evidence,omitempty"`
}

// Part is one part of the score.
type Part struct {
	ID     string `json:"id"`
	Points int    `json:"points"`
	Max    int    `json:"max"`
}

// Report is an analysis's result.
type Report struct {
	Score    int       `json:"score"`
	Parts    []Part    `json:"parts"`
	Penalty  int       `json:"penalty"`
	Words    int       `json:"words"`
	Findings []Finding `json:"findings"`
}

// Options are what an analysis is measured against.
type Options struct {
	// Domain is the site's own domain: links elsewhere are cited sources.
	Domain string
	// Queries are the target queries.
	Queries []string
}

var (
	quoted  = regexp.MustCompile(`[“"]([^”"]{12,})[”"]`)
	saidBy  = regexp.MustCompile(`(?i)\b(?:said|says|wrote|writes|explains|explained|according to)\b|[—–-]\s*[A-Z][a-z]+`)
	backRef = regexp.MustCompile(`(?i)^(?:this|that|these|those|it|they|he|she|its|their|here|also|as (?:mentioned|noted|discussed|shown)|the (?:above|former|latter)|above|below)\b`)
)

// Analyze scores a document.
func Analyze(d Doc, o Options) Report {
	r := Report{Words: d.Words(), Findings: []Finding{}}
	add := func(id string, got, max int) {
		r.Parts = append(r.Parts, Part{ID: id, Points: got, Max: max})
	}
	lose := func(id, sev string, pts int, title, fix, evidence string) {
		if pts > 0 {
			r.Findings = append(r.Findings, Finding{ID: id, Severity: sev, Points: pts, Title: title, Fix: fix, Evidence: evidence})
		}
	}
	queries := strings.Join(quoteAll(o.Queries), ", ")

	// Answer first: the opening of the page and of each section.
	var openings []Block
	want := true
	for _, b := range d.Blocks {
		switch {
		case b.Kind == Heading:
			want = true
		case b.Kind == Paragraph && want:
			openings = append(openings, b)
			want = false
		}
	}
	ok, bad := 0, ""
	for _, b := range openings {
		n := words(b.Text)
		if n >= 8 && n <= 60 && !strings.HasSuffix(firstSentence(b.Text), "?") {
			ok++
		} else if bad == "" {
			bad = b.Text
		}
	}
	pts := share(PointsAnswerFirst, ok, len(openings))
	add("answer_first", pts, PointsAnswerFirst)
	if len(openings) == 0 {
		lose("answer_first", client.SeverityCritical, PointsAnswerFirst, "The text has no paragraphs an AI answer could quote",
			"Write the answer as prose: open with a paragraph of 40 to 60 words that answers the main question directly.", "")
	} else {
		lose("answer_first", client.SeverityWarning, PointsAnswerFirst-pts,
			fmt.Sprintf("%d of %d openings do not answer at once", len(openings)-ok, len(openings)),
			"Start the page and each section with a direct answer of 8 to 60 words (the answer, then the background), not a question or a long preamble.",
			snippet(bad))
	}

	// Self-contained passages.
	total, ok, bad := 0, 0, ""
	for _, b := range d.Blocks {
		if b.Kind != Paragraph || words(b.Text) < 5 {
			continue
		}
		total++
		if !backRef.MatchString(b.Text) && words(b.Text) <= 150 {
			ok++
		} else if bad == "" {
			bad = b.Text
		}
	}
	pts = share(PointsSelfContained, ok, total)
	add("self_contained", pts, PointsSelfContained)
	lose("self_contained", client.SeverityWarning, PointsSelfContained-pts,
		fmt.Sprintf("%d of %d paragraphs do not stand alone", total-ok, total),
		"Make each paragraph readable on its own: name the subject instead of opening with \"this\", \"it\" or \"as mentioned\", and keep it under 150 words.",
		snippet(bad))

	// Headings.
	var heads []string
	for _, b := range d.Blocks {
		if b.Kind == Heading && b.Level > 1 {
			heads = append(heads, b.Text)
		}
	}
	structure := 0
	switch {
	case len(heads) >= 2:
		structure = 5
	case len(heads) == 1:
		structure = 2
	}
	match := PointsHeadings - 5
	var missed []string
	if len(o.Queries) > 0 {
		hit := 0
		for _, q := range o.Queries {
			if slices.ContainsFunc(heads, func(h string) bool { return covers(h, q) }) {
				hit++
			} else {
				missed = append(missed, q)
			}
		}
		match = share(PointsHeadings-5, hit, len(o.Queries))
	} else if structure == 0 {
		match = 0
	}
	add("headings", structure+match, PointsHeadings)
	lose("headings", client.SeverityWarning, 5-structure, fmt.Sprintf("The text has %d subheadings", len(heads)),
		"Split the text into sections under H2/H3 subheadings, one question or topic each.", "")
	if len(missed) > 0 {
		lose("headings_queries", client.SeverityWarning, PointsHeadings-5-match,
			fmt.Sprintf("No subheading matches %s", strings.Join(quoteAll(missed), ", ")),
			"Add a subheading worded as each target query (for example \""+capital(missed[0])+"\") with the answer right under it.", "")
	}

	// Statistics and their sources.
	stats, sourced, sample := 0, 0, ""
	for _, b := range d.Blocks {
		if !isText(b) {
			continue
		}
		found := statistics(b.Text)
		n := len(found)
		stats += n
		if n > 0 && (external(b.Links, o.Domain) > 0 || attributions(b.Text) > 0) {
			sourced += n
		} else if n > 0 && sample == "" {
			sample = found[0]
		}
	}
	pts = 0
	switch {
	case sourced >= 2:
		pts = PointsStatistics
	case sourced == 1:
		pts = 10
	case stats > 0:
		pts = 5
	}
	add("statistics", pts, PointsStatistics)
	if stats == 0 {
		lose("statistics", client.SeverityCritical, PointsStatistics, "The text has no statistics",
			"Add at least two figures that support the answer (percentages, counts, measured results), each with its source named and linked.", "")
	} else {
		lose("statistics_sources", client.SeverityWarning, PointsStatistics-pts, fmt.Sprintf("%d of %d statistics have no source", stats-sourced, stats),
			"Name and link the source of each figure in its sentence (\"according to <source>\"); unsourced numbers are rarely cited.", sample)
	}

	// Cited sources.
	cites := 0
	for _, b := range d.Blocks {
		if isText(b) {
			cites += external(b.Links, o.Domain) + attributions(b.Text)
		}
	}
	pts = 0
	switch {
	case cites >= 2:
		pts = PointsSources
	case cites == 1:
		pts = PointsSources / 2
	}
	add("sources", pts, PointsSources)
	lose("sources", client.SeverityWarning, PointsSources-pts, fmt.Sprintf("The text cites %d sources", cites),
		"Cite at least two authoritative sources: link studies, standards or official documentation where the claim is made.", "")

	// Quotations.
	attributed, unattributed := 0, 0
	for _, b := range d.Blocks {
		if !isText(b) {
			continue
		}
		if b.Kind == Quote {
			attributed++
			continue
		}
		for range quoted.FindAllString(b.Text, -1) {
			if saidBy.MatchString(b.Text) {
				attributed++
			} else {
				unattributed++
			}
		}
	}
	pts = 0
	switch {
	case attributed > 0:
		pts = PointsQuotations
	case unattributed > 0:
		pts = PointsQuotations / 2
	}
	add("quotations", pts, PointsQuotations)
	if unattributed > 0 && attributed == 0 {
		lose("quotations", client.SeverityInfo, PointsQuotations-pts, "The quotations are not attributed",
			"Say who said each quotation (name and role), or set it as a blockquote with its author.", "")
	} else {
		lose("quotations", client.SeverityInfo, PointsQuotations-pts, "The text quotes no one",
			"Quote an expert, a customer or a study verbatim, with the speaker's name and role.", "")
	}

	// Definitions.
	defs := d.Definitions
	for _, b := range d.Blocks {
		if isText(b) && defines(firstSentence(b.Text)) {
			defs++
		}
	}
	pts = 0
	if defs > 0 {
		pts = PointsDefinitions
	}
	add("definitions", pts, PointsDefinitions)
	lose("definitions", client.SeverityInfo, PointsDefinitions-pts, "The text defines nothing",
		"Define the subject in one sentence of the form \"X is a ... that ...\" near the top: answers quote definitions.", "")

	// FAQ.
	questions := 0
	for i, b := range d.Blocks {
		if b.Kind == Heading && strings.HasSuffix(b.Text, "?") && i+1 < len(d.Blocks) && isText(d.Blocks[i+1]) {
			questions++
		}
	}
	pts = 0
	switch {
	case questions >= 2 || slices.Contains(d.JSONLDTypes, "FAQPage"):
		pts = PointsFAQ
	case questions == 1:
		pts = PointsFAQ / 2
	}
	add("faq", pts, PointsFAQ)
	fix := "Add an FAQ section: the questions people ask as subheadings ending in \"?\", each answered in its first sentence, and mark it up as FAQPage (the draft below)."
	if queries != "" {
		fix = "Add an FAQ section answering " + queries + " (questions as subheadings, each answered in its first sentence) and mark it up as FAQPage (the draft below)."
	}
	lose("faq", client.SeverityWarning, PointsFAQ-pts, fmt.Sprintf("The text answers %s under subheadings and has no FAQPage markup", plural(questions, "question")), fix, "")

	// JSON-LD.
	pts = 0
	if len(d.JSONLDTypes) > 0 {
		pts = PointsJSONLD
	}
	add("json_ld", pts, PointsJSONLD)
	if d.InvalidJSONLD > 0 && pts == 0 {
		lose("json_ld", client.SeverityCritical, PointsJSONLD, fmt.Sprintf("%d JSON-LD blocks are not valid JSON", d.InvalidJSONLD),
			"Fix the JSON-LD: validate it with the Schema.org validator; invalid blocks are ignored.", "")
	} else {
		lose("json_ld", client.SeverityWarning, PointsJSONLD-pts, "The page has no JSON-LD",
			"Describe the page in JSON-LD (Article or FAQPage, with headline, author and dateModified).", "")
	}

	// Keyword stuffing.
	if term, n := stuffed(d, o.Queries); term != "" {
		r.Penalty = PenaltyStuffing
		lose("keyword_stuffing", client.SeverityCritical, PenaltyStuffing,
			fmt.Sprintf("%q makes up %.1f%% of the words", term, 100*float64(n)/float64(r.Words)),
			fmt.Sprintf("Use %q where it is natural, at most once or twice per section, and write the rest for readers: repeating keywords did not raise visibility in AI answers.", term), "")
	}

	for _, p := range r.Parts {
		r.Score += p.Points
	}
	r.Score = max(0, r.Score-r.Penalty)
	return r
}

// stuffed finds a term repeated past StuffingShare: a target query's
// term, or without queries the most frequent significant word.
func stuffed(d Doc, queries []string) (string, int) {
	counts := map[string]int{}
	total := 0
	for _, b := range d.Blocks {
		total += words(b.Text)
		for _, t := range terms(b.Text) {
			counts[t]++
		}
	}
	if total < StuffingMinWords {
		return "", 0
	}
	var candidates []string
	for _, q := range queries {
		candidates = append(candidates, terms(q)...)
	}
	if len(queries) == 0 {
		for t := range counts {
			candidates = append(candidates, t)
		}
	}
	slices.Sort(candidates)
	best, n := "", 0
	for _, t := range candidates {
		if counts[t] > n {
			best, n = t, counts[t]
		}
	}
	if float64(n) > StuffingShare*float64(total) {
		return best, n
	}
	return "", 0
}
