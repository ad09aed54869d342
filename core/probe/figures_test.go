package probe

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// src and cite are a source and a citation of url as an adapter reads
// them; redirect is a Gemini grounding chunk, whose URL hides the page
// and whose title names its domain.
func src(url string) Source { return Source{URL: url, Domain: SourceDomain(url)} }

func cite(url string) Citation {
	return Citation{URL: url, Domain: SourceDomain(url), Start: -1, End: -1}
}

func redirect(id, title string) Source {
	return Source{URL: "https://vertexaisearch.cloud.google.com/grounding-api-redirect/" + id, Title: title, Domain: title}
}

// The answers of a scan of three engines, and what a hand reading of
// each finds (acme.example is the subject).
var (
	// A search engine (openai-responses-like): four answers, all with
	// sources.
	// s1: cites the pricing page (the engine's utm_source added) and
	// globex; wiki consulted. Domains acme, globex, wiki: 1 of 3 own.
	s1 = Answer{Text: "Acme and Globex both sell rocket skates.", SourcesReported: true,
		Sources:   []Source{src("https://acme.example/pricing?utm_source=openai"), src("https://globex.example/a"), src("https://wiki.example/x")},
		Citations: []Citation{cite("https://acme.example/pricing?utm_source=openai"), cite("https://globex.example/a")}}
	// s2: cites a subdomain's page and the pricing page by an anchor, the
	// text has no URL. Domains docs.acme, acme, review: 2 of 3 own (the
	// subdomain is a source domain of its own, and the subject's).
	s2 = Answer{Text: "Acme's setup guide is clear.", SourcesReported: true,
		Sources:   []Source{src("https://docs.acme.example/setup"), src("https://www.acme.example/pricing#plans"), src("https://review.example/z")},
		Citations: []Citation{cite("https://docs.acme.example/setup"), cite("https://www.acme.example/pricing#plans")}}
	// s3: sources only, none the subject's, although the text names a
	// page of it without a scheme. Domains globex, wiki, review: 0 of 3.
	s3 = Answer{Text: "Globex leads; see acme.example/pricing too.", SourcesReported: true,
		Sources: []Source{src("https://globex.example/b"), src("https://wiki.example/y"), src("https://review.example/z")}}
	// s4: one source, globex's: 0 of 1.
	s4 = Answer{Text: "Globex.", SourcesReported: true, Sources: []Source{src("https://globex.example/c")}}

	// A Gemini-like engine: g1's sources are redirects attributed by
	// title (acme and globex: 1 of 2 own, no page of acme known); g2's
	// grounding metadata is missing: no sources reported.
	g1 = Answer{Text: "Acme is a good choice.", SourcesReported: true,
		Sources: []Source{redirect("AbC1", "acme.example"), redirect("AbC2", "globex.example")}}
	g2 = Answer{Text: "Acme is a good choice."}

	// An engine without search: t1 cites the pricing page in its text,
	// t2 nothing.
	t1 = Answer{Text: "Acme (https://acme.example/pricing) is fine."}
	t2 = Answer{Text: "Acme is fine."}
)

func TestAnalyzeSources(t *testing.T) {
	for _, tc := range []struct {
		name     string
		a        Answer
		cited    bool
		urls     []string
		reported bool
		domains  []string
	}{
		{"citations", s1, true, []string{"https://acme.example/pricing"}, true, []string{"acme.example", "globex.example", "wiki.example"}},
		{"subdomain", s2, true, []string{"https://docs.acme.example/setup", "https://www.acme.example/pricing"}, true,
			[]string{"docs.acme.example", "acme.example", "review.example"}},
		{"others' sources", s3, false, nil, true, []string{"globex.example", "wiki.example", "review.example"}},
		{"by title", g1, true, nil, true, []string{"acme.example", "globex.example"}},
		{"no metadata", g2, false, nil, false, nil},
		{"text", t1, true, []string{"https://acme.example/pricing"}, false, nil},
		// A citation alone, with no source listed, counts; a lookalike
		// domain and a path naming the domain do not.
		{"citation alone", Answer{Text: "x", SourcesReported: true, Citations: []Citation{cite("https://blog.acme.example/p?utm_medium=ai&id=7")}},
			true, []string{"https://blog.acme.example/p?id=7"}, true, []string{"blog.acme.example"}},
		{"lookalikes", Answer{Text: "x", SourcesReported: true,
			Sources: []Source{src("https://notacme.example/"), src("https://evil.example/acme.example")}}, false, nil, true,
			[]string{"notacme.example", "evil.example"}},
	} {
		f := Analyze(subject, tc.a)
		if f.Cited != tc.cited || !reflect.DeepEqual(f.CitedURLs, tc.urls) || f.SourcesReported != tc.reported || !reflect.DeepEqual(f.SourceDomains, tc.domains) {
			t.Errorf("%s: %+v", tc.name, f)
		}
	}
}

func probesOf(engine string, answers ...Answer) []Probe {
	var ps []Probe
	for _, a := range answers {
		ps = append(ps, Probe{Engine: engine, Answer: a, Finding: Analyze(subject, a)})
	}
	return ps
}

// TestMeasureSources: the citation figures of the three engines above,
// and of all their answers, by hand.
func TestMeasureSources(t *testing.T) {
	search := measure(subject, probesOf("S", s1, s2, s3, s4), make([]float64, 4))
	gemini := measure(subject, probesOf("G", g1, g2), make([]float64, 2))
	plain := measure(subject, probesOf("T", t1, t2), make([]float64, 2))
	all := measure(subject, append(append(probesOf("S", s1, s2, s3, s4), probesOf("G", g1, g2)...), probesOf("T", t1, t2)...), make([]float64, 8))

	// Search engine: citing s1 and s2, 2 of 4; sources reported 4 of 4;
	// source share (1 + 2 + 0 + 0) / (3 + 3 + 3 + 1) = 3/10. Wilson(3, 10),
	// z² = 3.8415: centre (0.3 + 3.8415/20) / (1 + 3.8415/10) = 0.49207 /
	// 1.38415 = 0.35551, half 1.95996/1.38415 × √(0.3×0.7/10 + 3.8415/400)
	// = 1.41600 × √0.030604 = 0.24772: [0.1078, 0.6032].
	if search.Citation.Hits != 2 || search.Citation.Of != 4 || search.SourcesReported.Hits != 4 || search.SourcesReported.Of != 4 ||
		search.SourceShare == nil || search.SourceShare.Hits != 3 || search.SourceShare.Of != 10 || search.SourceShare.Value != 0.3 ||
		!near(search.SourceShare.Interval.Low, 0.1078) || !near(search.SourceShare.Interval.High, 0.6032) {
		t.Errorf("search: %+v share %+v", search, search.SourceShare)
	}
	// Gemini-like: g1 cites by title, 1 of 2; reported 1 of 2 (g2's
	// metadata is missing, so it is out of the share); share 1/2.
	if gemini.Citation.Hits != 1 || gemini.Citation.Of != 2 || gemini.SourcesReported.Hits != 1 || gemini.SourceShare == nil ||
		gemini.SourceShare.Hits != 1 || gemini.SourceShare.Of != 2 || len(gemini.CitedPages) != 0 {
		t.Errorf("gemini: %+v share %+v", gemini, gemini.SourceShare)
	}
	// Without search: citations from the text alone, 1 of 2; nothing
	// reported, so no share and no cited domains; t1's page.
	if plain.Citation.Hits != 1 || plain.Citation.Of != 2 || plain.SourcesReported.Hits != 0 || plain.SourcesReported.Of != 2 ||
		plain.SourceShare != nil || len(plain.CitedDomains) != 0 ||
		!reflect.DeepEqual(plain.CitedPages, []PageCount{{"https://acme.example/pricing", 1}}) {
		t.Errorf("plain: %+v share %+v", plain, plain.SourceShare)
	}
	b, _ := json.Marshal(plain)
	if !strings.Contains(string(b), `"source_share":null`) || !strings.Contains(string(b), `"cited_domains":[]`) {
		t.Errorf("plain's JSON: %s", b)
	}

	// All eight: citing s1, s2, g1, t1, 4 of 8; reported 5 of 8; share
	// (3 + 1) / (10 + 2) = 4/12. Wilson(4, 12): centre (1/3 + 3.8415/24) /
	// (1 + 3.8415/12) = 0.49340 / 1.32012 = 0.37375, half 1.95996/1.32012
	// × √((1/3)(2/3)/12 + 3.8415/576) = 1.48468 × √0.025188 = 0.23563:
	// [0.1381, 0.6094].
	if all.Citation.Hits != 4 || all.Citation.Of != 8 || all.SourcesReported.Hits != 5 || all.SourcesReported.Of != 8 ||
		all.SourceShare == nil || all.SourceShare.Hits != 4 || all.SourceShare.Of != 12 ||
		!near(all.SourceShare.Interval.Low, 0.1381) || !near(all.SourceShare.Interval.High, 0.6094) {
		t.Errorf("all: %+v share %+v", all, all.SourceShare)
	}
	// Cited domains, one per answer each: globex s1 s3 s4 g1 = 4, acme s1
	// s2 g1 = 3, review s2 s3 = 2 and wiki s1 s3 = 2 (by name), docs.acme
	// s2 = 1; they add up to the share's 12.
	wantDomains := []DomainCount{{"globex.example", 4}, {"acme.example", 3}, {"review.example", 2}, {"wiki.example", 2}, {"docs.acme.example", 1}}
	if !reflect.DeepEqual(all.CitedDomains, wantDomains) {
		t.Errorf("cited domains %+v, want %+v", all.CitedDomains, wantDomains)
	}
	// Cited pages: the pricing page in s1 (utm_source dropped) and t1
	// (text), 2; s2's setup page and its pricing page on www. (the anchor
	// dropped; the host is kept as cited), 1 each, by URL.
	wantPages := []PageCount{{"https://acme.example/pricing", 2}, {"https://docs.acme.example/setup", 1}, {"https://www.acme.example/pricing", 1}}
	if !reflect.DeepEqual(all.CitedPages, wantPages) {
		t.Errorf("cited pages %+v, want %+v", all.CitedPages, wantPages)
	}
}

// TestCitedDomainsCap: one answer cites site01 to site22, another site22
// and site21: those two first (2 each, by name), then site01 to site18 by
// name, 20 in all; site19 and site20 are left out.
func TestCitedDomainsCap(t *testing.T) {
	var many []Source
	for i := 1; i <= 22; i++ {
		many = append(many, src(fmt.Sprintf("https://site%02d.example/", i)))
	}
	st := measure(subject, probesOf("S", Answer{Text: "x", SourcesReported: true, Sources: many},
		Answer{Text: "y", SourcesReported: true, Sources: []Source{src("https://site22.example/"), src("https://site21.example/")}}), make([]float64, 2))
	want := []DomainCount{{"site21.example", 2}, {"site22.example", 2}}
	for i := 1; i <= 18; i++ {
		want = append(want, DomainCount{fmt.Sprintf("site%02d.example", i), 1})
	}
	if !reflect.DeepEqual(st.CitedDomains, want) {
		t.Errorf("cited domains %+v, want %+v", st.CitedDomains, want)
	}
	// The share counts every source, not only the 20 shown: 0 of 24.
	if st.SourceShare == nil || st.SourceShare.Hits != 0 || st.SourceShare.Of != 24 {
		t.Errorf("share %+v", st.SourceShare)
	}
}
