package probe

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

func init() { adapters[KindSerpAPI] = serpAPI{} }

// SerpAPIModels are the models of a serpapi engine: the surfaces it reads,
// each through one of SerpApi's engines.
var SerpAPIModels = []string{"google_ai_overview", "google_ai_mode", "bing_copilot"}

// serpEngines are SerpApi's engines by model: Google's AI Overview is a
// block of its search page (engine=google).
var serpEngines = map[string]string{
	"google_ai_overview": "google",
	"google_ai_mode":     "google_ai_mode",
	"bing_copilot":       "bing_copilot",
}

// serpAPI speaks SerpApi's search.json (sources.md, 1a and 1c): GET
// {base}/search.json with the prompt as the query and the key as the
// api_key parameter, SerpApi's only way to take it. The request's URL
// holds the key, so none of it goes into an error: a failure says what
// SerpApi said, the key redacted (Engine.said), and the request's only
// error names the base URL alone.
//
// Each request is a search of the plan's quota, charged at the engine's
// search_price_per_1k; an AI Overview fetched by its page_token is a
// second. no_cache=true makes each a fresh look at the page (a cached
// answer would be free, but the same page again, and not told apart).
type serpAPI struct{}

// localisation: Google's engines take the market as gl and hl; Copilot
// takes neither, so it is asked in the prompt.
func (serpAPI) localisation(e Engine) string {
	if e.Model == "bing_copilot" {
		return LocalisePrompt
	}
	return LocaliseNative
}

func (serpAPI) request(ctx context.Context, e Engine, r Request) (*http.Request, error) {
	engine, ok := serpEngines[e.Model]
	if !ok {
		return nil, fmt.Errorf("model %q is not one of %s", e.Model, strings.Join(SerpAPIModels, ", "))
	}
	q := url.Values{"engine": {engine}, "q": {r.Prompt}, "no_cache": {"true"}, "api_key": {e.APIKey}}
	if engine != "bing_copilot" {
		if r.Market.Country != "" {
			q.Set("gl", strings.ToLower(r.Market.Country))
		}
		if r.Market.Language != "" {
			q.Set("hl", googleLanguage(r.Market.Language))
		}
	}
	return serpGet(ctx, e.BaseURL, q)
}

// deferred is the request of a Google search's AI Overview that came as a
// page_token: only engine, page_token and api_key, at once (the token
// lives about a minute).
func (serpAPI) deferred(ctx context.Context, e Engine, b []byte) (*http.Request, error) {
	var sr struct {
		AIOverview *serpOverview `json:"ai_overview"`
	}
	if json.Unmarshal(b, &sr) != nil || sr.AIOverview == nil || !sr.AIOverview.isDeferred() {
		return nil, nil
	}
	return serpGet(ctx, e.BaseURL, url.Values{"engine": {"google_ai_overview"}, "page_token": {sr.AIOverview.PageToken}, "api_key": {e.APIKey}})
}

// serpGet is a GET of base's search.json with the query q. The query is
// set after the URL is made, so that an error names base alone.
func serpGet(ctx context.Context, base string, q url.Values) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/search.json", nil)
	if err != nil {
		return nil, err
	}
	req.URL.RawQuery = q.Encode()
	return req, nil
}

// googleLanguage is Google's hl of a market's language: its language
// subtag, Chinese by its script as Google names it (zh-cn, zh-tw).
func googleLanguage(lang string) string {
	switch {
	case lang == "zh-Hant":
		return "zh-tw"
	case lang == "zh" || strings.HasPrefix(lang, "zh-"):
		return "zh-cn"
	}
	base, _, _ := strings.Cut(lang, "-")
	return strings.ToLower(base)
}

type serpResponse struct {
	SearchMetadata *struct {
		Status string `json:"status"`
	} `json:"search_metadata"`
	Error string `json:"error"`
	// AIOverview is Google's search's (and its page_token's follow-up);
	// the other fields are AI Mode's and Copilot's, at the top level.
	AIOverview            *serpOverview           `json:"ai_overview"`
	Header                string                  `json:"header"`
	TextBlocks            lenient[serpBlock]      `json:"text_blocks"`
	References            *lenient[serpReference] `json:"references"`
	ReconstructedMarkdown string                  `json:"reconstructed_markdown"`
}

type serpOverview struct {
	TextBlocks lenient[serpBlock]      `json:"text_blocks"`
	References *lenient[serpReference] `json:"references"`
	PageToken  string                  `json:"page_token"`
	Error      string                  `json:"error"`
}

// isDeferred says whether the overview is to be fetched by its token.
func (o *serpOverview) isDeferred() bool {
	return o.PageToken != "" && o.Error == "" && len(o.TextBlocks) == 0
}

// serpBlock is a block of text (text_blocks[]), or an item of a list.
type serpBlock struct {
	Type          string                 `json:"type"`
	Title         string                 `json:"title"`
	Subtitle      string                 `json:"subtitle"`
	Snippet       string                 `json:"snippet"`
	Code          string                 `json:"code"`
	List          lenient[serpBlock]     `json:"list"`
	TextBlocks    lenient[serpBlock]     `json:"text_blocks"`
	Table         lenient[lenient[cell]] `json:"table"`
	ProductLabels lenient[cell]          `json:"product_labels"`
	Comparison    lenient[struct {
		Feature cell          `json:"feature"`
		Values  lenient[cell] `json:"values"`
	}] `json:"comparison"`
	ReferenceIndexes lenient[int] `json:"reference_indexes"`
	SnippetLinks     lenient[struct {
		Text string `json:"text"`
		Link string `json:"link"`
	}] `json:"snippet_links"`
}

type serpReference struct {
	Title string `json:"title"`
	Link  string `json:"link"`
	URL   string `json:"url"` // Copilot's, in some clients (not verified)
	Index *int   `json:"index"`
}

// parse reads an AI answer of a SERP: Google's AI Overview (ai_overview,
// inline), AI Mode's or Copilot's (at the top level: Copilot's header,
// the text blocks, else AI Mode's reconstructed_markdown). The text is
// the blocks in order, a blank line between them (lists an item a line,
// nested ones indented; tables a row a line, cells between " | "); a
// block's reference_indexes name references by their index field (not
// their place in the list), each cited for the span of the block's text
// (a list item's own line); its snippet_links cite their pages for their
// words. Sources are the references, one a page (a link's #:~:text=
// fragment left out: the same page is often given twice).
//
// An answer the page does not show is Absent, not a failure: a search
// without an ai_overview, a 200 whose error says the search found nothing
// ("Google hasn't returned any results for this query."), and an overview
// that failed ({"error": "Can't generate an AI overview right now."}):
// that is what a person saw on the page then, and retrying until one
// comes would overstate how often the page shows one. So is an overview
// deferred to its page_token, until the second request (deferred) brings
// it, where an absent one is a failure (Client.rest): the page had one.
func (serpAPI) parse(b []byte) (Answer, error) {
	var sr serpResponse
	if err := json.Unmarshal(b, &sr); err != nil {
		return Answer{}, err
	}
	absent := Answer{Absent: true, Searches: 1}
	switch {
	case sr.Error != "" && (sr.SearchMetadata == nil || sr.SearchMetadata.Status == "Error"):
		return Answer{}, errors.New(sr.Error)
	case sr.SearchMetadata == nil:
		return Answer{}, errors.New("no search_metadata")
	case sr.Error != "":
		return absent, nil
	}
	var w serpWriter
	refs := sr.References
	if o := sr.AIOverview; o != nil {
		if o.Error != "" || o.isDeferred() {
			return absent, nil
		}
		refs = o.References
		w.start(refs)
		w.blocks(o.TextBlocks)
	} else {
		w.start(refs)
		if h := strings.TrimSpace(sr.Header); h != "" {
			w.b.WriteString(h)
		}
		header := w.b.Len()
		w.blocks(sr.TextBlocks)
		if md := strings.TrimSpace(sr.ReconstructedMarkdown); w.b.Len() == header && md != "" {
			w.sep("\n\n")
			w.b.WriteString(md)
		}
	}
	text := strings.TrimRight(w.b.String(), "\n")
	if text == "" {
		return absent, nil
	}
	a := Answer{Text: text, Citations: w.cites, Searches: 1, SourcesReported: refs != nil}
	seen := map[string]bool{}
	for _, r := range w.refs {
		if u := r.url(); u != "" && !seen[u] {
			seen[u] = true
			a.Sources = append(a.Sources, Source{URL: u, Title: w.titles[u], Domain: SourceDomain(u)})
		}
	}
	return a, nil
}

// failure reads SerpApi's {"error": "..."}: 401 a refused key, 429 its
// hourly throughput (retried) or a plan out of searches (permanent: not
// mended before the month renews or the plan grows), 5xx retried.
func (serpAPI) failure(status int, h http.Header, b []byte) (time.Duration, error) {
	var body struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &body) == nil && body.Error != "" {
		msg = body.Error
	}
	wait, err := failed(status, h, msg)
	if status == http.StatusTooManyRequests && strings.Contains(strings.ToLower(msg), "run out of searches") {
		return 0, fmt.Errorf("%w: %w", ErrPermanent, err)
	}
	return wait, err
}

// url is the reference's page: its link without a text fragment
// (#:~:text=…, which Google adds to say where on the page).
func (r serpReference) url() string {
	u := strings.TrimSpace(cmp.Or(r.Link, r.URL))
	if h := strings.IndexByte(u, '#'); h >= 0 {
		if i := strings.Index(u[h:], ":~:"); i >= 0 {
			u = strings.TrimSuffix(u[:h+i], "#")
		}
	}
	return u
}

// serpWriter writes blocks as text, noting what they cite.
type serpWriter struct {
	b      strings.Builder
	refs   []serpReference
	byNum  map[int]serpReference // by index
	titles map[string]string     // by page: the first title given
	cites  []Citation
}

func (w *serpWriter) start(refs *lenient[serpReference]) {
	w.byNum, w.titles = map[int]serpReference{}, map[string]string{}
	if refs == nil {
		return
	}
	w.refs = *refs
	for _, r := range w.refs {
		if r.Index != nil {
			if _, dup := w.byNum[*r.Index]; !dup {
				w.byNum[*r.Index] = r
			}
		}
		if u := r.url(); u != "" && w.titles[u] == "" {
			w.titles[u] = strings.TrimSpace(r.Title)
		}
	}
}

// blocks writes blocks, a blank line between them.
func (w *serpWriter) blocks(bs []serpBlock) {
	for _, bl := range bs {
		switch bl.Type {
		case "paragraph", "heading", "code_block":
			w.para(bl, cmp.Or(bl.Snippet, bl.Title, bl.Code))
		case "list":
			w.sep("\n\n")
			w.list(bl.List, "")
		case "expandable":
			w.para(bl, strings.TrimSpace(bl.Title+" "+bl.Subtitle))
			w.blocks(bl.TextBlocks)
		case "table":
			var rows []string
			for _, row := range bl.Table {
				rows = append(rows, strings.TrimSpace(joinCells(row)))
			}
			w.para(bl, strings.Join(rows, "\n"))
		case "comparison":
			rows := []string{joinCells(bl.ProductLabels)}
			for _, c := range bl.Comparison {
				rows = append(rows, string(c.Feature)+": "+joinCells(c.Values))
			}
			w.para(bl, strings.TrimSpace(strings.Join(rows, "\n")))
		}
	}
}

// para writes s as a block of its own that cites bl's references.
func (w *serpWriter) para(bl serpBlock, s string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	w.sep("\n\n")
	w.write(bl, s)
}

// list writes a list's items a line each ("- title snippet"), a nested
// list's under its item, indented.
func (w *serpWriter) list(items []serpBlock, indent string) {
	for _, it := range items {
		if s := strings.TrimSpace(strings.TrimSpace(it.Title) + " " + strings.TrimSpace(it.Snippet)); s != "" {
			w.sep("\n")
			w.b.WriteString(indent + "- ")
			w.write(it, s)
		}
		w.list(it.List, indent+"  ")
	}
}

// sep starts a new block or line, unless the text is empty or ends with
// a blank line already (a list's first item).
func (w *serpWriter) sep(s string) {
	if w.b.Len() > 0 && !strings.HasSuffix(w.b.String(), "\n\n") {
		w.b.WriteString(s)
	}
}

// write writes s, the text of bl, and its citations: of its references
// for all of s, one a page, and of its links for their words.
func (w *serpWriter) write(bl serpBlock, s string) {
	start := w.b.Len()
	w.b.WriteString(s)
	end := w.b.Len()
	cited := map[string]bool{}
	for _, n := range bl.ReferenceIndexes {
		r, ok := w.byNum[n]
		if u := r.url(); ok && u != "" && !cited[u] {
			cited[u] = true
			w.cites = append(w.cites, Citation{URL: u, Title: w.titles[u], Domain: SourceDomain(u), Start: start, End: end, Text: s})
		}
	}
	for _, l := range bl.SnippetLinks {
		u := serpReference{Link: l.Link}.url()
		i := strings.Index(s, l.Text)
		if u == "" || l.Text == "" || i < 0 {
			continue
		}
		w.cites = append(w.cites, Citation{URL: u, Title: w.titles[u], Domain: SourceDomain(u), Start: start + i, End: start + i + len(l.Text), Text: l.Text})
	}
}

func joinCells(cs []cell) string {
	var out []string
	for _, c := range cs {
		out = append(out, strings.TrimSpace(string(c)))
	}
	return strings.Join(out, " | ")
}

// cell is a table's cell: a string, or a number's or boolean's text.
type cell string

func (c *cell) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*c = cell(s)
		return nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case float64:
		*c = cell(strconv.FormatFloat(v, 'f', -1, 64))
	case bool:
		*c = cell(strconv.FormatBool(v))
	case nil:
	default:
		return errors.New("not a cell")
	}
	return nil
}

// lenient is a JSON array read entry by entry: one not of T's shape is
// left out (a block of a type not known, a reference of odd fields), as
// is the whole where it is not an array.
type lenient[T any] []T

func (l *lenient[T]) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if json.Unmarshal(b, &raw) != nil {
		return nil
	}
	for _, r := range raw {
		var v T
		if json.Unmarshal(r, &v) == nil {
			*l = append(*l, v)
		}
	}
	return nil
}
