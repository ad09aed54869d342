// Package analysis scores a page or a text for AI citability with a
// documented rubric (docs/content-requests.md), names what it lacks with
// concrete fixes, drafts FAQ JSON-LD and an llms.txt entry from the text
// itself, checks a rewrite for facts the original does not hold, and diffs
// the two. It does no I/O.
package analysis

import (
	"bytes"
	"net/url"
	"regexp"
	"strings"

	"github.com/aivis/aivis/core/readiness"
	"golang.org/x/net/html"
)

// Block kinds.
const (
	Heading   = "heading"
	Paragraph = "paragraph"
	Item      = "item"  // a list item
	Quote     = "quote" // a blockquote
)

// Block is one unit of the main text.
type Block struct {
	Kind  string
	Level int    // headings: 1-6
	Text  string // plain text, spaces collapsed
	MD    string // the text in Markdown, links kept
	Links []string
}

// Doc is the main text of a page or a text and what it declares.
type Doc struct {
	URL         string
	Title       string
	Description string
	Blocks      []Block
	// JSONLDTypes are the @types of its valid JSON-LD blocks; InvalidJSONLD
	// counts the blocks that are not JSON.
	JSONLDTypes   []string
	InvalidJSONLD int
	// Definitions counts <dfn> and <dl> elements.
	Definitions int
}

// skipped are the elements outside the main text.
var skipped = map[string]bool{"script": true, "style": true, "noscript": true, "template": true, "head": true,
	"nav": true, "header": true, "footer": true, "aside": true, "form": true, "svg": true, "iframe": true, "button": true}

// ParseHTML reads the main text of an HTML page: the <main> element, else
// the first <article>, else the body, without navigation, headers, footers,
// asides and forms. The metadata and JSON-LD are read as the readiness
// audit reads them.
func ParseHTML(pageURL string, body []byte) Doc {
	pr := readiness.ParsePage(pageURL, 200, body)
	d := Doc{URL: pageURL, Title: pr.Title, Description: pr.Description, JSONLDTypes: pr.JSONLDTypes, InvalidJSONLD: pr.InvalidJSONLD}
	root, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return d
	}
	base, _ := url.Parse(pageURL)
	main := find(root, "main")
	if main == nil {
		main = find(root, "article")
	}
	if main == nil {
		main = find(root, "body")
	}
	if main == nil {
		main = root
	}
	w := walker{doc: &d, base: base}
	w.walk(main)
	w.flush()
	return d
}

func find(n *html.Node, tag string) *html.Node {
	if n.Type == html.ElementNode && n.Data == tag {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, tag); f != nil {
			return f
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if strings.EqualFold(a.Key, key) {
			return a.Val
		}
	}
	return ""
}

// walker turns the element tree into blocks: each heading, paragraph,
// list item and blockquote is one; loose text between them is one too.
type walker struct {
	doc   *Doc
	base  *url.URL
	cur   *Block
	text  strings.Builder
	md    strings.Builder
	quote int // depth inside blockquotes
}

func (w *walker) open(kind string, level int) {
	w.flush()
	w.cur = &Block{Kind: kind, Level: level}
}

func (w *walker) flush() {
	text := collapse(w.text.String())
	if text != "" {
		b := Block{Kind: Paragraph}
		if w.cur != nil {
			b = *w.cur
		} else if w.quote > 0 {
			b.Kind = Quote
		}
		b.Text, b.MD = text, collapse(w.md.String())
		w.doc.Blocks = append(w.doc.Blocks, b)
	}
	w.cur = nil
	w.text.Reset()
	w.md.Reset()
}

func (w *walker) write(s string) {
	w.text.WriteString(s)
	w.md.WriteString(s)
}

func (w *walker) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.write(n.Data)
		return
	case html.ElementNode:
	default:
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			w.walk(c)
		}
		return
	}
	if skipped[n.Data] {
		return
	}
	block := ""
	level := 0
	switch n.Data {
	case "h1", "h2", "h3", "h4", "h5", "h6":
		block, level = Heading, int(n.Data[1]-'0')
	case "p", "dd", "dt", "td", "th", "figcaption":
		block = Paragraph
		if w.quote > 0 {
			block = Quote
		}
	case "li":
		block = Item
	case "blockquote":
		w.flush()
		w.quote++
		w.children(n)
		w.flush()
		w.quote--
		return
	case "dfn", "dl":
		w.doc.Definitions++
	case "br":
		w.write(" ")
		return
	case "a":
		href := strings.TrimSpace(attr(n, "href"))
		if u, err := w.base.Parse(href); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			w.text.WriteString(" ")
			var inner walker
			inner.doc, inner.base = &Doc{}, w.base
			inner.children(n)
			label := collapse(inner.text.String())
			w.text.WriteString(label + " ")
			w.md.WriteString(" [" + label + "](" + u.String() + ") ")
			if w.cur == nil {
				w.cur = &Block{Kind: Paragraph}
				if w.quote > 0 {
					w.cur.Kind = Quote
				}
			}
			w.cur.Links = append(w.cur.Links, u.String())
			return
		}
	case "div", "section", "article", "main", "ul", "ol", "table", "tr", "figure", "details", "summary":
		w.flush()
		w.children(n)
		w.flush()
		return
	}
	if block == "" {
		w.children(n)
		return
	}
	w.open(block, level)
	w.children(n)
	w.flush()
}

func (w *walker) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

var (
	mdHeading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*$`)
	mdItem    = regexp.MustCompile(`^(?:[-*+]|\d+[.)])\s+(.*)$`)
	mdLink    = regexp.MustCompile(`\[([^\]]*)\]\((https?://[^)\s]+)\)`)
	bareURL   = regexp.MustCompile(`https?://[^\s)\]>"'\x00]+`)
)

// ParseText reads a text: Markdown (headings, list items, blockquotes,
// paragraphs split by blank lines, [links](…)), plain text as paragraphs,
// or HTML when it starts with a tag.
func ParseText(pageURL, text string) Doc {
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "<") {
		return ParseHTML(pageURL, []byte(t))
	}
	d := Doc{URL: pageURL}
	var para []string
	kind := Paragraph
	end := func() {
		if len(para) > 0 {
			d.Blocks = append(d.Blocks, mdBlock(kind, 0, strings.Join(para, " ")))
		}
		para, kind = nil, Paragraph
	}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "```"):
			end()
		case mdHeading.MatchString(line):
			end()
			m := mdHeading.FindStringSubmatch(line)
			d.Blocks = append(d.Blocks, mdBlock(Heading, len(m[1]), m[2]))
			if len(m[1]) == 1 && d.Title == "" {
				d.Title = collapse(mdLink.ReplaceAllString(m[2], "$1"))
			}
		case mdItem.MatchString(line):
			end()
			d.Blocks = append(d.Blocks, mdBlock(Item, 0, mdItem.FindStringSubmatch(line)[1]))
		case strings.HasPrefix(line, ">"):
			if kind != Quote {
				end()
			}
			kind = Quote
			para = append(para, strings.TrimSpace(strings.TrimPrefix(line, ">")))
		default:
			if kind == Quote {
				end()
			}
			para = append(para, line)
		}
	}
	end()
	return d
}

func mdBlock(kind string, level int, md string) Block {
	md = collapse(md)
	b := Block{Kind: kind, Level: level, MD: md}
	for _, m := range mdLink.FindAllStringSubmatch(md, -1) {
		b.Links = append(b.Links, m[2])
	}
	plain := mdLink.ReplaceAllString(md, "$1")
	for _, u := range bareURL.FindAllString(plain, -1) {
		b.Links = append(b.Links, strings.TrimRight(u, ".,;:"))
	}
	plain = strings.NewReplacer("**", "", "__", "", "`", "").Replace(plain)
	b.Text = collapse(plain)
	return b
}

// Markdown renders the main text as Markdown: what a rewrite starts from
// and what the diff compares.
func (d Doc) Markdown() string {
	var sb strings.Builder
	for i, b := range d.Blocks {
		if i > 0 {
			sb.WriteString("\n\n")
		}
		switch b.Kind {
		case Heading:
			sb.WriteString(strings.Repeat("#", b.Level) + " " + b.MD)
		case Item:
			sb.WriteString("- " + b.MD)
		case Quote:
			sb.WriteString("> " + b.MD)
		default:
			sb.WriteString(b.MD)
		}
	}
	return sb.String()
}

// Words counts the words of the main text.
func (d Doc) Words() int {
	n := 0
	for _, b := range d.Blocks {
		n += words(b.Text)
	}
	return n
}
