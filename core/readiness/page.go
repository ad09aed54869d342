package readiness

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// PageReport is what an audited page shows AI crawlers in its server-rendered
// HTML.
type PageReport struct {
	URL         string   `json:"url"`
	Status      int      `json:"status"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Canonical   string   `json:"canonical"`
	Lang        string   `json:"lang"`
	OpenGraph   bool     `json:"open_graph"` // og:title and og:description
	JSONLDTypes []string `json:"json_ld_types"`
	// OrganizationSameAs: an Organization with sameAs links (the profiles
	// that tie the brand to its other presences).
	Organization       bool `json:"organization"`
	OrganizationSameAs bool `json:"organization_same_as"`
	InvalidJSONLD      int  `json:"invalid_json_ld"`
	Words              int  `json:"words"`
	// AppShell: the page has the root element of a JavaScript app
	// (id root, app, __next, __nuxt, svelte), which with few words means
	// the content is rendered by scripts.
	AppShell bool     `json:"app_shell"`
	links    []string // same-host links, in order
}

// parsePage reads an HTML page.
func parsePage(pageURL string, status int, body []byte) PageReport {
	p := PageReport{URL: pageURL, Status: status, JSONLDTypes: []string{}}
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return p
	}
	base, _ := url.Parse(pageURL)
	var words int
	var og = map[string]bool{}
	var walk func(n *html.Node, hidden bool)
	walk = func(n *html.Node, hidden bool) {
		if n.Type == html.TextNode && !hidden {
			words += len(strings.Fields(n.Data))
		}
		if n.Type == html.ElementNode {
			switch n.Data {
			case "html":
				p.Lang = attr(n, "lang")
			case "title":
				if p.Title == "" && n.Namespace == "" && n.FirstChild != nil {
					p.Title = strings.TrimSpace(n.FirstChild.Data)
				}
			case "meta":
				name, prop := strings.ToLower(attr(n, "name")), strings.ToLower(attr(n, "property"))
				if name == "description" {
					p.Description = strings.TrimSpace(attr(n, "content"))
				}
				if prop == "" {
					prop = name // a common mistake that Open Graph readers accept
				}
				if prop == "og:title" || prop == "og:description" {
					og[prop] = og[prop] || strings.TrimSpace(attr(n, "content")) != ""
				}
			case "link":
				if slices.ContainsFunc(strings.Fields(attr(n, "rel")), func(s string) bool { return strings.EqualFold(s, "canonical") }) && p.Canonical == "" {
					p.Canonical = strings.TrimSpace(attr(n, "href"))
				}
			case "script":
				if strings.EqualFold(strings.TrimSpace(attr(n, "type")), "application/ld+json") && n.FirstChild != nil {
					p.readJSONLD([]byte(n.FirstChild.Data))
				}
			case "a":
				if u, err := base.Parse(attr(n, "href")); err == nil && base != nil && strings.EqualFold(u.Hostname(), base.Hostname()) &&
					(u.Scheme == "http" || u.Scheme == "https") {
					u.Fragment = ""
					p.links = append(p.links, u.String())
				}
			case "div", "main", "body", "app-root":
				switch attr(n, "id") {
				case "root", "app", "__next", "__nuxt", "svelte", "___gatsby":
					p.AppShell = true
				}
				if n.Data == "app-root" || hasAttr(n, "data-reactroot") {
					p.AppShell = true
				}
			}
			hidden = hidden || n.Data == "script" || n.Data == "style" || n.Data == "noscript" || n.Data == "template" || n.Data == "head"
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, hidden)
		}
	}
	walk(doc, false)
	p.Words = words
	p.OpenGraph = og["og:title"] && og["og:description"]
	slices.Sort(p.JSONLDTypes)
	p.JSONLDTypes = slices.Compact(p.JSONLDTypes)
	return p
}

func hasAttr(n *html.Node, key string) bool {
	return slices.ContainsFunc(n.Attr, func(a html.Attribute) bool { return strings.EqualFold(a.Key, key) })
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if strings.EqualFold(a.Key, key) {
			return a.Val
		}
	}
	return ""
}

// readJSONLD collects the @types of a JSON-LD block: an object, an array
// of them, or an @graph.
func (p *PageReport) readJSONLD(b []byte) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		p.InvalidJSONLD++
		return
	}
	var visit func(v any)
	visit = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, x := range v {
				visit(x)
			}
		case map[string]any:
			types := []string{}
			switch t := v["@type"].(type) {
			case string:
				types = append(types, t)
			case []any:
				for _, x := range t {
					if s, ok := x.(string); ok {
						types = append(types, s)
					}
				}
			}
			for _, t := range types {
				// "schema:Organization", "https://schema.org/Organization"
				t = t[strings.LastIndexAny(t, ":/")+1:]
				p.JSONLDTypes = append(p.JSONLDTypes, t)
				if t == "Organization" || t == "Corporation" || t == "LocalBusiness" || t == "OnlineStore" {
					p.Organization = true
					switch s := v["sameAs"].(type) {
					case string:
						p.OrganizationSameAs = p.OrganizationSameAs || s != ""
					case []any:
						p.OrganizationSameAs = p.OrganizationSameAs || len(s) > 0
					}
				}
			}
			if g, ok := v["@graph"]; ok {
				visit(g)
			}
		}
	}
	visit(v)
}

// ParsePage reads an HTML page's metadata and JSON-LD as the audit does.
func ParsePage(pageURL string, status int, body []byte) PageReport {
	return parsePage(pageURL, status, body)
}
