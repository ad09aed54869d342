package analysis

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// defective is a page with defects counted by hand: a lead of 64 words, a
// paragraph that opens with "This", subheadings that miss the target query,
// two statistics without a source, no links, quotations, definitions or
// JSON-LD, and one question answered under a subheading.
var defective = func() string {
	b, err := os.ReadFile("testdata/defective.html")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func TestAnalyzeDefectivePage(t *testing.T) {
	d := ParseHTML("https://acme.example/widgets", []byte(defective))
	r := Analyze(d, Options{Domain: "acme.example", Queries: []string{"best widgets for home"}})
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.ID+"/"+f.Severity+"/"+itoa(f.Points)+"/"+f.Title)
	}
	want := []string{
		"answer_first/warning/5/1 of 3 openings do not answer at once",
		"self_contained/warning/3/1 of 3 paragraphs do not stand alone",
		`headings_queries/warning/10/No subheading matches "best widgets for home"`,
		"statistics_sources/warning/10/2 of 2 statistics have no source",
		"sources/warning/10/The text cites 0 sources",
		"quotations/info/10/The text quotes no one",
		"definitions/info/5/The text defines nothing",
		"faq/warning/5/The text answers 1 question under subheadings and has no FAQPage markup",
		"json_ld/warning/10/The page has no JSON-LD",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.Score != 32 || r.Penalty != 0 || r.Words != 102 {
		t.Errorf("score %d, penalty %d, words %d; want 32, 0, 102", r.Score, r.Penalty, r.Words)
	}
	lost := 0
	for _, f := range r.Findings {
		lost += f.Points
	}
	if lost != 100-r.Score {
		t.Errorf("findings lose %d points, the score %d", lost, r.Score)
	}
	if f := r.Findings[1]; f.Evidence != "This is why we care about quality in everything we make for our customers eve..." {
		t.Errorf("self_contained evidence %q", f.Evidence)
	}
	if f := r.Findings[3]; f.Evidence != "3 times" {
		t.Errorf("statistics evidence %q", f.Evidence)
	}
	if !strings.Contains(r.Findings[2].Fix, `"Best widgets for home?"`) {
		t.Errorf("headings fix %q", r.Findings[2].Fix)
	}
	// The navigation and footer are not the main text.
	if md := d.Markdown(); strings.Contains(md, "Twitter") || strings.Contains(md, "Copyright") || !strings.HasPrefix(md, "# Widgets\n\nWelcome") {
		t.Errorf("main text:\n%s", md)
	}
}

// complete is a page that meets every part of the rubric.
const complete = `<html><head><title>Home widgets</title>
<script type="application/ld+json">{"@context":"https://schema.org","@type":"Article","headline":"Home widgets"}</script></head>
<body><article>
<h1>The best widgets for home use</h1>
<p>A home widget is a small device that automates one chore; the best ones run for years on a single battery.</p>
<h2>Which are the best widgets for home?</h2>
<p>The Acme W2 and the Bolt Mini lead independent tests of home devices in 2025.</p>
<p>According to the Gadget Lab 2025 report, 72% of owners used theirs daily and batteries lasted 3 times longer than in 2020 (<a href="https://widgetlab.example/2025">Gadget Lab</a>).</p>
<blockquote>"A widget should disappear into the routine of a home." — Dana Ruiz, editor at Gadget Lab</blockquote>
<h2>How long does a widget battery last?</h2>
<p>A widget battery lasts two to four years with daily use, as the <a href="https://standards.example/w">standard</a> requires.</p>
</article></body></html>`

func TestAnalyzeCompletePage(t *testing.T) {
	r := Analyze(ParseHTML("https://acme.example/", []byte(complete)), Options{Domain: "acme.example", Queries: []string{"best widgets for home"}})
	if r.Score != 100 || len(r.Findings) != 0 {
		t.Errorf("score %d, findings %+v", r.Score, r.Findings)
	}
}

func TestKeywordStuffing(t *testing.T) {
	text := "# Cheap widgets\n\n" + strings.Repeat("Cheap widgets are here and cheap widgets are the widgets you want in your kitchen today. ", 8)
	r := Analyze(ParseText("", text), Options{Queries: []string{"cheap widgets"}})
	f := r.Findings[len(r.Findings)-1]
	if r.Penalty != PenaltyStuffing || f.ID != "keyword_stuffing" || f.Title != `"widget" makes up 19.2% of the words` {
		t.Errorf("penalty %d, last finding %+v (words %d)", r.Penalty, f, r.Words)
	}
	sum := 0
	for _, p := range r.Parts {
		sum += p.Points
	}
	if r.Score != max(0, sum-PenaltyStuffing) {
		t.Errorf("score %d, parts %d", r.Score, sum)
	}
	// Without target queries, the most frequent word is the one measured.
	r = Analyze(ParseText("", text), Options{})
	if r.Penalty != PenaltyStuffing || r.Findings[len(r.Findings)-1].Title != `"widget" makes up 19.2% of the words` {
		t.Errorf("without queries: penalty %d, findings %+v", r.Penalty, r.Findings)
	}
}

func TestParseText(t *testing.T) {
	d := ParseText("", "# Title\n\nFirst line\nsame paragraph with [a link](https://x.example/a).\n\n- item one\n- item two\n\n> quoted\n> words\n\n## Sub?\nanswer")
	var kinds []string
	for _, b := range d.Blocks {
		kinds = append(kinds, b.Kind+":"+b.Text)
	}
	want := []string{"heading:Title", "paragraph:First line same paragraph with a link.", "item:item one", "item:item two",
		"quote:quoted words", "heading:Sub?", "paragraph:answer"}
	if !reflect.DeepEqual(kinds, want) || d.Title != "Title" || !reflect.DeepEqual(d.Blocks[1].Links, []string{"https://x.example/a"}) {
		t.Errorf("blocks %q, title %q, links %v", kinds, d.Title, d.Blocks[1].Links)
	}
}

func TestCheck(t *testing.T) {
	src := "Acme widgets last 3 years. 1,200 shops sell them. Dana said \"we test every widget twice\"."
	out, flags := Check(src, []string{"widgets 2025"}, "Acme widgets last 3 years and 45% of buyers agree. 1200 shops, since 2025. "+
		"Dana said \"we test every widget twice\". Bob said \"these are the best widgets ever made\". "+
		"See https://made-up.example/study. [SOURCE NEEDED: a study of 500 owners]")
	want := "Acme widgets last 3 years and [FACT NEEDED: 45 is not in the original]% of buyers agree. 1200 shops, since 2025. " +
		"Dana said \"we test every widget twice\". Bob said [QUOTE NEEDED: a real quotation; \"these are the best widgets ever made\" is not in the original]. " +
		"See [SOURCE NEEDED: a source for this claim; the link https://made-up.example/study is not in the original]. [SOURCE NEEDED: a study of 500 owners]"
	if out != want {
		t.Errorf("checked:\n%s\nwant:\n%s", out, want)
	}
	if kinds := flagKinds(flags); !reflect.DeepEqual(kinds, []string{"link:https://made-up.example/study", "quotation:these are the best widgets ever made", "number:45"}) {
		t.Errorf("flags %v", kinds)
	}
}

func TestDiff(t *testing.T) {
	before := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk"
	after := "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl"
	want := "--- original\n+++ optimized\n@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n@@ -9,3 +9,4 @@\n i\n j\n k\n+l\n"
	if got := Diff(before, after); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if Diff("same", "same") != "" {
		t.Error("equal texts have a diff")
	}
}

func TestDraftFromPage(t *testing.T) {
	d := ParseHTML("https://acme.example/widgets", []byte(defective))
	dr := DraftFromPage(d, Options{Domain: "acme.example", Queries: []string{"best widgets for home"}})
	if len(dr.FAQ) != 1 || dr.FAQ[0].Question != "Why choose us?" || !strings.HasPrefix(dr.FAQ[0].Answer, "Widgets from Acme") {
		t.Errorf("faq %+v", dr.FAQ)
	}
	var ld struct {
		Type string `json:"@type"`
		Main []struct {
			Name   string `json:"name"`
			Answer struct {
				Text string `json:"text"`
			} `json:"acceptedAnswer"`
		} `json:"mainEntity"`
	}
	if err := json.Unmarshal(dr.FAQJSONLD, &ld); err != nil || ld.Type != "FAQPage" || len(ld.Main) != 1 || ld.Main[0].Name != "Why choose us?" {
		t.Errorf("json-ld %s: %v", dr.FAQJSONLD, err)
	}
	if dr.LLMsTxtLine != "- [Widgets guide](https://acme.example/widgets): Welcome to our blog!" {
		t.Errorf("llms.txt %q", dr.LLMsTxtLine)
	}
	// Without questions in the text, the target queries are answered by
	// the paragraph that covers them.
	d = ParseText("", "# Widgets\n\nHome widgets save ten minutes a day.\n\nOther text.")
	dr = DraftFromPage(d, Options{Domain: "acme.example", Queries: []string{"home widgets", "garden hoses"}})
	if len(dr.FAQ) != 1 || dr.FAQ[0].Question != "Home widgets?" || dr.FAQ[0].Answer != "Home widgets save ten minutes a day." ||
		dr.LLMsTxtLine != "- [Widgets](https://acme.example/): Home widgets save ten minutes a day." {
		t.Errorf("drafts %+v", dr)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestStatistics(t *testing.T) {
	for text, want := range map[string]string{
		"87% of buyers and 3 times longer":              "87%|3 times",
		"Founded in 2019 with 12 staff":                 "",
		"1,200 shops, 12,500,000 visits, 1,20 no":       "1,200|12,500,000",
		"It costs $49.99 and 2.5 million people use it": "$49.99|2.5 million",
		"The W2 model, 3rd edition, 45 percent off":     "45 percent",
		"A 10x gain in 123456 runs; 5xl is a size":      "10x|123456",
		"Uptime of 99.9 % across 4 thousand servers":    "99.9 %|4 thousand",
	} {
		if got := strings.Join(statistics(text), "|"); got != want {
			t.Errorf("statistics(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestDefines(t *testing.T) {
	for sentence, want := range map[string]bool{
		"A home widget is a small device.":                                                         true,
		"Widgets are the tools of the trade.":                                                      true,
		"GEO refers to optimizing for AI answers.":                                                 true,
		"We think this is a great product for you.":                                                true,
		"Buy now, this is the best deal of the year.":                                              false, // a comma before the verb: not a term
		"Our widgets last longer.":                                                                 false,
		"An extremely long subject that goes on and on for more than sixty characters is a thing.": false,
	} {
		if got := defines(sentence); got != want {
			t.Errorf("defines(%q) = %v", sentence, got)
		}
	}
}

// TestCheckBlockquotes: a Markdown blockquote is a quotation without
// quotation marks (the rubric scores it as one), so one the original does
// not hold is replaced like a quoted one; the original's own blockquote,
// an attribution line and short lines are kept.
func TestCheckBlockquotes(t *testing.T) {
	src := "# Widgets\n\n> We test every widget twice — Dana Reyes, head of quality\n\nWell-known shops sell Acme widgets."
	rewrite := "## Why Acme?\n\n> We test every widget twice — Dana Reyes, head of quality\n\n" +
		"> These widgets changed how I clean my kitchen — a customer\n>> Best purchase I made all year, honestly.\n\n" +
		"> \"Our widgets never break in daily use\"\n> — Dana Reyes\n\n> Short and sweet.\n\n" +
		"> Well-known shops sell Acme widgets.\n\n« Acme widgets are loved by every family » said a buyer."
	out, flags := Check(src, nil, rewrite)
	want := "## Why Acme?\n\n> We test every widget twice — Dana Reyes, head of quality\n\n" +
		"> [QUOTE NEEDED: a real quotation; \"These widgets changed how I clean my kitchen\" is not in the original]\n" +
		">> [QUOTE NEEDED: a real quotation; \"Best purchase I made all year, honestly.\" is not in the original]\n\n" +
		"> [QUOTE NEEDED: a real quotation; \"Our widgets never break in daily use\" is not in the original]\n> — Dana Reyes\n\n> Short and sweet.\n\n" +
		"> Well-known shops sell Acme widgets.\n\n[QUOTE NEEDED: a real quotation; \"Acme widgets are loved by every family\" is not in the original] said a buyer."
	if out != want {
		t.Errorf("checked:\n%s\nwant:\n%s", out, want)
	}
	if kinds := flagKinds(flags); !reflect.DeepEqual(kinds, []string{"quotation:Our widgets never break in daily use", "quotation:Acme widgets are loved by every family",
		"quotation:These widgets changed how I clean my kitchen", "quotation:Best purchase I made all year, honestly."}) {
		t.Errorf("flags %q", kinds)
	}
}

// flagKinds lists flags as kind:value.
func flagKinds(flags []Flag) []string {
	var out []string
	for _, f := range flags {
		out = append(out, f.Kind+":"+f.Value)
	}
	return out
}
