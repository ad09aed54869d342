// Package readiness audits what AI crawlers can read of a domain:
// robots.txt rules per AI crawler, llms.txt, the sitemap, and the home
// page and a few linked pages (metadata, JSON-LD, content present in the
// server-rendered HTML). The result is a score 0-100 and findings, each
// with a severity and a concrete fix.
package readiness

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/temoto/robotstxt"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/netguard"
)

// UserAgent is what the auditor sends.
const UserAgent = "aivis-readiness/1 (+https://aivis.dev/docs/visibility)"

// Crawlers are the AI crawlers whose access is checked.
var Crawlers = []string{"GPTBot", "OAI-SearchBot", "ChatGPT-User", "ClaudeBot", "Claude-SearchBot", "PerplexityBot", "Google-Extended", "CCBot"}

// The score is a weighted sum of six parts, in points of 100
// (docs/visibility.md gives the reasons). Access comes first, because a
// crawler that is refused reads nothing else; then what the HTML says
// without JavaScript (content, metadata, structured data: how a page
// says who it is and ties the brand to its other presences); llms.txt
// and the sitemap only help crawlers find pages, so they weigh least.
//
//	score = round(PointsCrawlers × allowed/len(Crawlers)
//	            + PointsLLMsTxtPresent + PointsLLMsTxtWellFormed
//	            + PointsSitemap
//	            + PointsPerMetadata × (title, description, canonical, lang, Open Graph present)
//	            + PointsOrganizationSameAs + PointsRichType + PointsValidJSONLD
//	            + PointsContent)
//
// A site whose home page cannot be fetched at all scores 0.
const (
	PointsCrawlers   = 35 // shared equally among the crawlers allowed to fetch /
	PointsLLMsTxt    = PointsLLMsTxtPresent + PointsLLMsTxtWellFormed
	PointsSitemap    = 10 // present and readable, with at least one URL
	PointsMetadata   = 5 * PointsPerMetadata
	PointsStructured = PointsOrganizationSameAs + PointsRichType + PointsValidJSONLD
	PointsContent    = 10 // the home page's text is in its HTML (at least MinWords words)

	PointsLLMsTxtPresent    = 5 // /llms.txt answers 200 with text
	PointsLLMsTxtWellFormed = 5 // and follows the llms.txt proposal
	PointsPerMetadata       = 4 // home page: title, description, canonical, lang, Open Graph
	// JSON-LD on the pages audited.
	PointsOrganizationSameAs = 7 // an Organization with sameAs
	PointsRichType           = 4 // a FAQPage, Article or Product
	PointsValidJSONLD        = 4 // any valid JSON-LD with a @type

	// PointsTotal is the best score; the parts above add up to it.
	PointsTotal = PointsCrawlers + PointsLLMsTxt + PointsSitemap + PointsMetadata + PointsStructured + PointsContent
)

// The weights must add up to 100: this fails to compile otherwise.
var _ = [1]struct{}{}[PointsTotal-100]

// MinWords is the least text a server-rendered home page should carry.
const MinWords = 50

// Finding is one problem and its fix.
type Finding struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Title    string `json:"title"`
	Fix      string `json:"fix"`
	URL      string `json:"url,omitempty"`
}

// CrawlerAccess says whether an AI crawler may fetch the home page.
type CrawlerAccess struct {
	Agent   string `json:"agent"`
	Allowed bool   `json:"allowed"`
}

// Sitemap is the check of the sitemap.
type Sitemap struct {
	URL     string `json:"url"`
	Present bool   `json:"present"`
	Valid   bool   `json:"valid"`
	URLs    int    `json:"urls"`
}

// Robots is the check of /robots.txt.
type Robots struct {
	URL      string   `json:"url"`
	Status   int      `json:"status"` // 0: no answer
	Present  bool     `json:"present"`
	Sitemaps []string `json:"sitemaps"`
}

// Report is an audit's result.
type Report struct {
	Domain string `json:"domain"`
	Score  int    `json:"score"`
	// Points are the score's parts before rounding: crawlers, llms_txt,
	// sitemap, metadata, structured_data, content.
	Points    map[string]float64 `json:"points"`
	Findings  []Finding          `json:"findings"`
	Crawlers  []CrawlerAccess    `json:"crawlers"`
	Robots    Robots             `json:"robots"`
	LLMsTxt   LLMsTxt            `json:"llms_txt"`
	Sitemap   Sitemap            `json:"sitemap"`
	Pages     []PageReport       `json:"pages"`
	FetchedAt time.Time          `json:"fetched_at"`
}

// Auditor runs audits.
type Auditor struct {
	// Client makes the requests; it must not follow redirects (the
	// auditor follows them itself, at most MaxRedirects).
	Client *http.Client
	// MaxBytes bounds each body read (default 2 MiB).
	MaxBytes int64
	// Timeout bounds each fetch (default 10 s).
	Timeout time.Duration
	// Pages is how many pages linked from the home page are audited
	// besides it (default 3).
	Pages int
	// Scheme is "https" (default) or "http".
	Scheme string
	Now    func() time.Time
}

func (r *Report) add(id, severity, title, fix, url string) {
	r.Findings = append(r.Findings, Finding{ID: id, Severity: severity, Title: title, Fix: fix, URL: url})
}

// Audit audits a domain. Its error is the context's: a site that cannot
// be read is a report with findings.
func (a *Auditor) Audit(ctx context.Context, domain string) (Report, error) {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	scheme := a.Scheme
	if scheme == "" {
		scheme = "https"
	}
	root := scheme + "://" + domain
	r := Report{Domain: domain, Points: map[string]float64{}, Findings: []Finding{}, Pages: []PageReport{}, FetchedAt: now().UTC(),
		Robots: Robots{URL: root + "/robots.txt", Sitemaps: []string{}}}

	home, homeErr := a.fetch(ctx, root+"/")
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	if homeErr != nil {
		r.fetchFinding("home", root+"/", homeErr, client.SeverityCritical)
		r.add("site_unreachable", client.SeverityCritical, "The site cannot be read at all", "Make "+root+"/ answer with the home page: AI crawlers give up on sites they cannot fetch.", root+"/")
		r.Crawlers = crawlersAll(false)
		return r, nil
	}

	// robots.txt: a 4xx allows everything, a 5xx or no answer forbids
	// everything, as crawlers read it.
	var sitemaps []string
	robots, err := a.fetch(ctx, root+"/robots.txt")
	var rd *robotstxt.RobotsData
	switch {
	case err != nil:
		r.fetchFinding("robots_txt", root+"/robots.txt", err, client.SeverityCritical)
		rd, _ = robotstxt.FromStatusAndBytes(http.StatusServiceUnavailable, nil)
	default:
		r.Robots.Status = robots.Status
		r.Robots.Present = robots.Status == http.StatusOK && !robots.isHTML()
		r.truncated(robots, a.maxBytes())
		body := robots.Body
		if robots.Status == http.StatusOK && robots.isHTML() {
			body = nil // an app's fallback page, not rules
		}
		rd, err = robotstxt.FromStatusAndBytes(robots.Status, body)
		if err != nil {
			rd, _ = robotstxt.FromStatusAndBytes(http.StatusNotFound, nil)
			r.add("robots_txt_unparsable", client.SeverityWarning, "robots.txt cannot be parsed", "Fix the syntax of robots.txt (User-agent, Allow, Disallow lines).", root+"/robots.txt")
		}
		if robots.Status >= 500 {
			r.add("robots_txt_server_error", client.SeverityCritical, fmt.Sprintf("robots.txt answers %d, so crawlers treat the whole site as forbidden", robots.Status),
				"Serve robots.txt with 200 (or 404 when you have no rules).", root+"/robots.txt")
		}
		sitemaps = rd.Sitemaps
		r.Robots.Sitemaps = append(r.Robots.Sitemaps, rd.Sitemaps...)
	}
	var blocked []string
	for _, agent := range Crawlers {
		ok := rd.TestAgent("/", agent)
		r.Crawlers = append(r.Crawlers, CrawlerAccess{Agent: agent, Allowed: ok})
		if !ok {
			blocked = append(blocked, agent)
		}
	}
	r.Points["crawlers"] = PointsCrawlers * float64(len(Crawlers)-len(blocked)) / float64(len(Crawlers))
	if len(blocked) > 0 && (robots.Status > 0 && robots.Status < 500) {
		sev := client.SeverityWarning
		if len(blocked) == len(Crawlers) {
			sev = client.SeverityCritical
		}
		r.add("crawlers_blocked", sev, "robots.txt blocks "+strings.Join(blocked, ", "),
			"Allow the AI crawlers you want to appear in (e.g. User-agent: "+blocked[0]+" / Allow: /) in robots.txt; training crawlers (GPTBot, CCBot, Google-Extended) and answer-time ones (OAI-SearchBot, ChatGPT-User, Claude-SearchBot, PerplexityBot) can be chosen separately.",
			root+"/robots.txt")
	}

	a.checkLLMsTxt(ctx, root, &r)
	a.checkSitemap(ctx, root, sitemaps, &r)
	a.checkPages(ctx, root, home, &r)
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	total := 0.0
	for _, v := range r.Points {
		total += v
	}
	r.Score = int(math.Round(total))
	return r, nil
}

// truncated reports a body cut at max bytes.
func (r *Report) truncated(f fetched, max int64) {
	if !f.Truncated {
		return
	}
	if f.isHTML() {
		r.add("page_too_large", client.SeverityWarning, fmt.Sprintf("%s is larger than %d bytes; what follows is not read", f.URL, max),
			"Keep pages lean (move inline data and scripts to separate files): crawlers read only the start of a large page.", f.URL)
		return
	}
	r.add("file_too_large", client.SeverityWarning, fmt.Sprintf("%s is larger than %d bytes; what follows is not read", f.URL, max),
		"Keep the file small (split a large sitemap into several listed by a <sitemapindex>).", f.URL)
}

func crawlersAll(allowed bool) []CrawlerAccess {
	out := make([]CrawlerAccess, len(Crawlers))
	for i, c := range Crawlers {
		out[i] = CrawlerAccess{Agent: c, Allowed: allowed}
	}
	return out
}

// fetchFinding reports a fetch that got no usable answer.
func (r *Report) fetchFinding(what, url string, err error, sev string) {
	var fe *fetchError
	kind := "unreachable"
	if errors.As(err, &fe) {
		kind = fe.kind
	}
	fix := map[string]string{
		"timeout":            "Make it answer within a few seconds: crawlers do not wait long.",
		"redirect_loop":      "Break the redirect loop: every redirect must end at a page that answers 200.",
		"too_many_redirects": fmt.Sprintf("Redirect at most once or twice; crawlers stop after a few hops (aivis after %d).", MaxRedirects),
		"unreachable":        "Make sure the host resolves and accepts HTTPS connections.",
	}[kind]
	r.add(what+"_"+kind, sev, url+": "+netguard.Describe(err), fix, url)
}

func (a *Auditor) checkLLMsTxt(ctx context.Context, root string, r *Report) {
	f, err := a.fetch(ctx, root+"/llms.txt")
	fix := "Publish /llms.txt: an H1 with your name, a > one-line summary, and ## sections listing your key pages as - [title](url): notes."
	switch {
	case err != nil:
		r.fetchFinding("llms_txt", root+"/llms.txt", err, client.SeverityInfo)
		return
	case f.Status != http.StatusOK || f.isHTML():
		r.add("llms_txt_missing", client.SeverityWarning, "No llms.txt", fix, root+"/llms.txt")
		return
	}
	r.truncated(f, a.maxBytes())
	r.LLMsTxt = checkLLMsTxt(string(f.Body))
	r.Points["llms_txt"] = PointsLLMsTxtPresent
	if r.LLMsTxt.WellFormed {
		r.Points["llms_txt"] = PointsLLMsTxt
	} else {
		r.add("llms_txt_malformed", client.SeverityWarning, "llms.txt is not well-formed: "+r.LLMsTxt.Problems[0], fix, root+"/llms.txt")
	}
}

func (a *Auditor) checkSitemap(ctx context.Context, root string, declared []string, r *Report) {
	u := root + "/sitemap.xml"
	if len(declared) > 0 {
		if base, err := url.Parse(root + "/"); err == nil {
			if d, err := base.Parse(declared[0]); err == nil {
				u = d.String()
			}
		}
	}
	r.Sitemap.URL = u
	f, err := a.fetch(ctx, u)
	fix := "Publish a sitemap (<urlset> of your pages) and name it in robots.txt: Sitemap: " + root + "/sitemap.xml"
	if err != nil || f.Status != http.StatusOK || f.isHTML() {
		r.add("sitemap_missing", client.SeverityWarning, "No sitemap", fix, u)
		return
	}
	r.Sitemap.Present = true
	r.truncated(f, a.maxBytes())
	var doc struct {
		XMLName  xml.Name
		URLs     []struct{} `xml:"url"`
		Sitemaps []struct{} `xml:"sitemap"`
	}
	if err := xml.Unmarshal(f.Body, &doc); err != nil || (doc.XMLName.Local != "urlset" && doc.XMLName.Local != "sitemapindex") {
		r.add("sitemap_invalid", client.SeverityWarning, "The sitemap is not a readable <urlset> or <sitemapindex>", fix, u)
		return
	}
	r.Sitemap.URLs = len(doc.URLs) + len(doc.Sitemaps)
	if r.Sitemap.URLs == 0 {
		r.add("sitemap_empty", client.SeverityWarning, "The sitemap lists no URL", fix, u)
		return
	}
	r.Sitemap.Valid = true
	r.Points["sitemap"] = PointsSitemap
}

func (a *Auditor) checkPages(ctx context.Context, root string, home fetched, r *Report) {
	r.truncated(home, a.maxBytes())
	if home.Status != http.StatusOK {
		r.add("home_status", client.SeverityCritical, fmt.Sprintf("The home page answers %d", home.Status), "Make the home page answer 200.", home.URL)
		return
	}
	if !home.isHTML() {
		r.add("home_not_html", client.SeverityCritical, "The home page is not HTML ("+home.ContentType+")", "Serve the home page as text/html.", home.URL)
		return
	}
	hp := parsePage(home.URL, home.Status, home.Body)
	r.Pages = append(r.Pages, hp)
	var meta float64
	check := func(ok bool, id, sev, title, fix string) {
		if ok {
			meta += PointsPerMetadata
		} else {
			r.add(id, sev, title, fix, home.URL)
		}
	}
	check(hp.Title != "", "title_missing", client.SeverityCritical, "The home page has no <title>", "Add a <title> that names the brand and what it does.")
	check(hp.Description != "", "description_missing", client.SeverityWarning, "No meta description", `Add <meta name="description" content="..."> summing up the page in a sentence or two.`)
	check(hp.Canonical != "", "canonical_missing", client.SeverityInfo, "No canonical link", `Add <link rel="canonical" href="`+root+`/"> so duplicates resolve to one URL.`)
	check(hp.Lang != "", "lang_missing", client.SeverityWarning, "No lang on <html>", `Declare the language: <html lang="en">.`)
	check(hp.OpenGraph, "open_graph_missing", client.SeverityInfo, "No Open Graph title and description", `Add <meta property="og:title"> and <meta property="og:description">.`)
	r.Points["metadata"] = meta
	if hp.Words >= MinWords {
		r.Points["content"] = PointsContent
	} else if hp.AppShell {
		r.add("content_needs_javascript", client.SeverityCritical, fmt.Sprintf("The home page's HTML holds %d words and an empty app root: its content needs JavaScript, which AI crawlers do not run", hp.Words),
			"Render the content on the server (SSR or pre-rendering) so that the HTML itself carries it.", home.URL)
	} else {
		r.add("thin_content", client.SeverityWarning, fmt.Sprintf("The home page's HTML holds only %d words", hp.Words),
			fmt.Sprintf("Say in the page's own text (at least %d words) who you are, what you offer and for whom.", MinWords), home.URL)
	}

	// A few linked pages, for their structured data.
	seen := map[string]bool{home.URL: true, root + "/": true, root: true}
	want := a.Pages
	if want == 0 {
		want = 3
	}
	for _, link := range hp.links {
		if len(r.Pages) > want || ctx.Err() != nil {
			break
		}
		if seen[link] {
			continue
		}
		seen[link] = true
		f, err := a.fetch(ctx, link)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.fetchFinding("page", link, err, client.SeverityWarning)
			continue
		case f.Status != http.StatusOK:
			r.add("page_status", client.SeverityWarning, fmt.Sprintf("%s, linked from the home page, answers %d", link, f.Status),
				"Fix or remove the link: crawlers follow links from the home page.", link)
			continue
		case !f.isHTML():
			r.add("page_not_html", client.SeverityInfo, fmt.Sprintf("%s, linked from the home page, is not HTML (%s)", link, f.ContentType),
				"Link to an HTML page that describes the document, or serve it as text/html if it is a page.", link)
			continue
		}
		r.truncated(f, a.maxBytes())
		p := parsePage(f.URL, f.Status, f.Body)
		if p.Title == "" {
			r.add("page_title_missing", client.SeverityInfo, f.URL+" has no <title>", "Give every page a <title> that says what it is about.", f.URL)
		}
		if p.Description == "" {
			r.add("page_description_missing", client.SeverityInfo, f.URL+" has no meta description", `Add <meta name="description" content="..."> to every page.`, f.URL)
		}
		r.Pages = append(r.Pages, p)
	}
	var org, orgSameAs, rich, valid, invalid bool
	for _, p := range r.Pages {
		org, orgSameAs = org || p.Organization, orgSameAs || p.OrganizationSameAs
		valid = valid || len(p.JSONLDTypes) > 0
		invalid = invalid || p.InvalidJSONLD > 0
		rich = rich || slices.ContainsFunc(p.JSONLDTypes, func(t string) bool {
			return t == "FAQPage" || t == "Article" || t == "NewsArticle" || t == "BlogPosting" || t == "Product"
		})
	}
	var sd float64
	switch {
	case orgSameAs:
		sd += PointsOrganizationSameAs
	case org:
		r.add("organization_without_same_as", client.SeverityWarning, "The Organization JSON-LD has no sameAs", `List your official profiles in "sameAs" (LinkedIn, Wikipedia, Crunchbase, GitHub...) so AI systems tie them to you.`, home.URL)
	default:
		r.add("organization_missing", client.SeverityWarning, "No Organization JSON-LD", `Add a <script type="application/ld+json"> Organization with name, url, logo and sameAs on the home page.`, home.URL)
	}
	if rich {
		sd += PointsRichType
	} else {
		r.add("rich_types_missing", client.SeverityInfo, "No FAQPage, Article or Product JSON-LD on the pages audited", "Mark up your FAQ, articles or products with their schema.org types.", home.URL)
	}
	if valid {
		sd += PointsValidJSONLD
	}
	if invalid {
		r.add("json_ld_invalid", client.SeverityWarning, "A JSON-LD block is not valid JSON", "Fix the JSON of the ld+json script: crawlers ignore a block they cannot parse.", home.URL)
	}
	r.Points["structured_data"] = sd
}
