package probefake

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

func init() {
	routes["GET /search.json"] = (*Fake).serpAPI
	routes["GET /search"] = (*Fake).serpAPI
}

// The ways a SerpApi page shows its AI answer other than inline
// (Reply.SERP). A page without any is Reply.NoOverview.
const (
	// SERPDeferred: Google's page gives the AI Overview as a page_token,
	// to be fetched by engine=google_ai_overview within TokenTTL.
	SERPDeferred = "deferred"
	// SERPExpired: as SERPDeferred, the token expired when it is fetched.
	SERPExpired = "expired"
	// SERPFailed: the overview failed ({"error": "Can't generate…"}).
	SERPFailed = "failed"
	// SERPNoResults: a 200 whose top-level error says the search found
	// nothing.
	SERPNoResults = "no_results"
)

// serpState is what the SerpApi fake keeps: its page tokens and the
// queries received.
type serpState struct {
	mu      sync.Mutex
	n       int
	tokens  map[string]serpToken
	queries []url.Values
}

type serpToken struct {
	reply   Reply
	expires time.Time
}

// SERPQueries are the query strings SerpApi received, in order, without
// their api_key.
func (f *Fake) SERPQueries() []url.Values {
	f.serp.mu.Lock()
	defer f.serp.mu.Unlock()
	return slices.Clone(f.serp.queries)
}

// serpUsual are SerpApi's words by status (sources.md 1a; the 429's and
// 5xx's not verified).
var serpUsual = map[int][2]string{
	http.StatusBadRequest:          {"", "Missing query `q` parameter."},
	http.StatusUnauthorized:        {"", "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"},
	http.StatusForbidden:           {"", "Your account may not use this API."},
	http.StatusNotFound:            {"", "Not found."},
	http.StatusTooManyRequests:     {"", "Your account has exceeded its hourly searches throughput."},
	http.StatusInternalServerError: {"", "Internal server error."},
	http.StatusServiceUnavailable:  {"", "Service temporarily unavailable."},
}

// serpError answers SerpApi's one-key error body (no Retry-After: SerpApi
// documents none).
func serpError(w http.ResponseWriter, fl Failure) {
	_, msg := fl.described(serpUsual, "")
	writeJSON(w, fl.Status, map[string]any{"error": msg})
}

var (
	serpCountry  = regexp.MustCompile(`^[a-z]{2}$`)
	serpLanguage = regexp.MustCompile(`^[a-z]{2,3}(-[a-z]{2,4})?$`)
)

// serpAPI answers as SerpApi's search.json (sources.md 1a, 1c), its base
// URL Root(): the key in
// the api_key parameter alone (a header is not read); engine google
// (default), google_ai_mode or bing_copilot, each requiring q, whose
// scripts are under the aivis model that reads them (google_ai_overview
// for Google's page, google_ai_mode, bing_copilot); google_ai_overview,
// the follow-up of a page_token, taking engine, page_token, api_key and
// no_cache alone, its failures scripted under "page_token". gl must be a lowercase country and hl a
// lowercase language; Copilot ignores both. search_parameters echo the
// request, every value a string. A Google page carries organic results
// and a related question with an AI Overview of its own (its own token,
// its text not the reply's); the AI answer's references give each page
// twice, once bare (its link with a #:~:text= fragment) and once as a
// card, their index fields not their places. A token unknown or expired
// is answered as SerpApi answers an overview it could not make: 200 with
// ai_overview {"error": …} (what SerpApi does then is not verified).
func (f *Fake) serpAPI(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := q.Get("api_key")
	rec := url.Values{}
	for k, v := range q {
		if k != "api_key" {
			rec[k] = v
		}
	}
	f.serp.mu.Lock()
	f.serp.queries = append(f.serp.queries, rec)
	f.serp.mu.Unlock()
	if key == "" || f.Key != "" && key != f.Key {
		serpError(w, Failure{Status: http.StatusUnauthorized})
		return
	}
	if q.Get("no_cache") == "true" && q.Get("async") == "true" {
		serpError(w, Failure{Status: http.StatusBadRequest, Message: "`no_cache` and `async` parameters cannot be used together."})
		return
	}
	engine := cmp.Or(q.Get("engine"), "google")
	switch engine {
	case "google_ai_overview":
		f.serpFollowUp(w, q)
		return
	case "google", "google_ai_mode", "bing_copilot":
	default:
		serpError(w, Failure{Status: http.StatusBadRequest, Message: fmt.Sprintf("Unsupported `%s` search engine.", engine)})
		return
	}
	prompt := q.Get("q")
	switch gl, hl := q.Get("gl"), q.Get("hl"); {
	case prompt == "":
		serpError(w, Failure{Status: http.StatusBadRequest, Message: "Missing query `q` parameter."})
		return
	case gl != "" && !serpCountry.MatchString(gl):
		serpError(w, Failure{Status: http.StatusBadRequest, Message: fmt.Sprintf("Unsupported `%s` country - gl parameter.", gl)})
		return
	case hl != "" && !serpLanguage.MatchString(hl):
		serpError(w, Failure{Status: http.StatusBadRequest, Message: fmt.Sprintf("Unsupported `%s` language - hl parameter.", hl)})
		return
	}
	model := engine
	if engine == "google" {
		model = "google_ai_overview"
	}
	reply, fail, ok := f.take(model, prompt)
	if fail != nil {
		serpError(w, *fail)
		return
	}
	params := map[string]any{"engine": engine, "q": prompt}
	for _, k := range []string{"gl", "hl", "no_cache", "location", "device"} {
		if v := q.Get(k); v != "" {
			params[k] = v
		}
	}
	if engine == "bing_copilot" {
		delete(params, "gl")
		delete(params, "hl")
	} else {
		params["google_domain"] = "google.com"
		params["device"] = cmp.Or(q.Get("device"), "desktop")
	}
	body := map[string]any{"search_metadata": f.serpMetadata(engine, prompt), "search_parameters": params}
	if !ok || reply.SERP == SERPNoResults {
		body["error"] = map[string]string{"bing_copilot": "Bing Copilot hasn't returned any results for this query."}[engine]
		if body["error"] == "" {
			body["error"] = "Google hasn't returned any results for this query."
		}
		writeJSON(w, http.StatusOK, body)
		return
	}
	if engine != "google" {
		if !reply.NoOverview {
			f.serpAnswer(body, reply, engine)
		}
		writeJSON(w, http.StatusOK, body)
		return
	}
	params["num"] = "10"
	body["search_information"] = map[string]any{"query_displayed": prompt, "total_results": 1230000, "time_taken_displayed": 0.41}
	organic := []any{}
	for i, s := range reply.results() {
		organic = append(organic, map[string]any{"position": i + 1, "title": s.Title, "link": s.URL, "snippet": "…"})
	}
	body["organic_results"] = organic
	// A related question's overview: not the page's.
	decoy := f.serpToken(Reply{Text: "An overview of a related question, not of the page."}, time.Now().Add(f.tokenTTL()))
	body["related_questions"] = []any{map[string]any{"question": "Is it worth it?", "type": "ai_overview", "page_token": decoy,
		"serpapi_ai_overview_link": f.serpFollowUpLink(decoy)}}
	switch reply.SERP {
	case SERPDeferred, SERPExpired:
		expires := time.Now().Add(f.tokenTTL())
		if reply.SERP == SERPExpired {
			expires = time.Now().Add(-time.Second)
		}
		reply.SERP = ""
		tok := f.serpToken(reply, expires)
		body["ai_overview"] = map[string]any{"page_token": tok, "serpapi_link": f.serpFollowUpLink(tok)}
	case SERPFailed:
		body["ai_overview"] = map[string]any{"error": "Can't generate an AI overview right now. Try again later."}
	default:
		if !reply.NoOverview {
			overview := map[string]any{}
			f.serpAnswer(overview, reply, engine)
			body["ai_overview"] = overview
		}
	}
	writeJSON(w, http.StatusOK, body)
}

// serpFollowUp answers engine=google_ai_overview: search_metadata,
// search_parameters and ai_overview alone.
func (f *Fake) serpFollowUp(w http.ResponseWriter, q url.Values) {
	for k := range q {
		if !slices.Contains([]string{"engine", "page_token", "api_key", "no_cache"}, k) {
			serpError(w, Failure{Status: http.StatusBadRequest, Message: fmt.Sprintf("`%s` parameter can't be used with the `google_ai_overview` engine.", k)})
			return
		}
	}
	tok := q.Get("page_token")
	if tok == "" {
		serpError(w, Failure{Status: http.StatusBadRequest, Message: "Missing `page_token` parameter."})
		return
	}
	f.mu.Lock()
	var fail *Failure
	if fs := f.fail["page_token"]; len(fs) > 0 {
		fail, f.fail["page_token"] = &fs[0], fs[1:]
	}
	f.mu.Unlock()
	if fail != nil {
		serpError(w, *fail)
		return
	}
	f.serp.mu.Lock()
	t, ok := f.serp.tokens[tok]
	f.serp.mu.Unlock()
	meta := f.serpMetadata("google_ai_overview", "")
	body := map[string]any{"search_metadata": meta, "search_parameters": map[string]any{"engine": "google_ai_overview", "page_token": tok}}
	if !ok || time.Now().After(t.expires) {
		body["ai_overview"] = map[string]any{"error": "Can't generate an AI overview right now. Try again later."}
	} else {
		overview := map[string]any{}
		f.serpAnswer(overview, t.reply, "google")
		body["ai_overview"] = overview
	}
	writeJSON(w, http.StatusOK, body)
}

func (f *Fake) tokenTTL() time.Duration { return cmp.Or(f.TokenTTL, time.Minute) }

// serpToken keeps reply under a new page_token until expires.
func (f *Fake) serpToken(reply Reply, expires time.Time) string {
	f.serp.mu.Lock()
	defer f.serp.mu.Unlock()
	f.serp.n++
	tok := opaque(fmt.Sprintf("serp-token-%d-%d", f.serp.n, time.Now().UnixNano()))
	if f.serp.tokens == nil {
		f.serp.tokens = map[string]serpToken{}
	}
	f.serp.tokens[tok] = serpToken{reply, expires}
	return tok
}

func (f *Fake) serpFollowUpLink(tok string) string {
	return f.Root() + "/search.json?" + url.Values{"engine": {"google_ai_overview"}, "page_token": {tok}}.Encode()
}

func (f *Fake) serpMetadata(engine, prompt string) map[string]any {
	f.serp.mu.Lock()
	f.serp.n++
	id := fmt.Sprintf("6747%020x", f.serp.n)
	f.serp.mu.Unlock()
	meta := map[string]any{"id": id, "status": "Success", "json_endpoint": f.Root() + "/searches/" + id + ".json",
		"created_at": "2026-11-27 10:00:00 UTC", "processed_at": "2026-11-27 10:00:00 UTC", "total_time_taken": 2.31}
	switch engine {
	case "google":
		meta["google_url"] = "https://www.google.com/search?q=" + url.QueryEscape(prompt)
	case "google_ai_overview":
		meta["google_ai_overview_url"] = "https://www.google.com/async/folsrch"
	case "google_ai_mode":
		meta["google_ai_mode_url"] = "https://www.google.com/search?udm=50&q=" + url.QueryEscape(prompt)
	case "bing_copilot":
		meta["bing_copilot_url"] = "https://www.bing.com/copilotsearch?q=" + url.QueryEscape(prompt)
	}
	return meta
}

// serpAnswer puts the reply into into as the engine's AI answer: its text
// as blocks (paragraphs between blank lines; "# " a heading, Copilot's
// first its header; lines of "- " a list, "  - " nested, "Name: rest" an
// item's title and snippet), each citation of the reply given by the
// block holding its quote (the first holds ""), and the references.
// AI Mode adds reconstructed_markdown, the reply's text; a reply without
// metadata (NoMetadata) is that alone there, and has no references
// elsewhere.
func (f *Fake) serpAnswer(into map[string]any, reply Reply, engine string) {
	if engine == "google_ai_mode" {
		into["reconstructed_markdown"] = reply.Text
		if reply.NoMetadata {
			return
		}
	}
	results := reply.results()
	var cited []string
	for _, c := range reply.Citations {
		if !slices.Contains(cited, c.URL) {
			cited = append(cited, c.URL)
		}
	}
	// The cards first, numbered from 10; then each cited page bare, its
	// link with a text fragment, numbered from 0.
	card := func(u string) int { return 10 + slices.IndexFunc(results, func(s Source) bool { return s.URL == u }) }
	bare := func(u string) int { return slices.Index(cited, u) }
	refs := []any{}
	for i, s := range results {
		refs = append(refs, map[string]any{"title": s.Title, "link": s.URL, "snippet": "…", "source": host(s.URL), "index": 10 + i})
	}
	for i, u := range cited {
		refs = append(refs, map[string]any{"link": u + "#:~:text=" + url.PathEscape("the quote"), "source": host(u), "index": i})
	}
	type block = map[string]any
	var blocks []block
	var texts []string // each block's or item's text, with where to put its indexes
	var holders []block
	paras := strings.Split(reply.Text, "\n\n")
	for pi, p := range paras {
		switch {
		case engine == "bing_copilot" && pi == 0 && strings.HasPrefix(p, "# "):
			into["header"] = strings.TrimPrefix(p, "# ")
		case strings.HasPrefix(p, "# "):
			b := block{"type": "heading", "snippet": strings.TrimPrefix(p, "# ")}
			blocks, texts, holders = append(blocks, b), append(texts, b["snippet"].(string)), append(holders, b)
		case strings.HasPrefix(p, "- "):
			list := block{"type": "list"}
			var top []any
			var last block
			for _, line := range strings.Split(p, "\n") {
				nested := strings.HasPrefix(line, "  - ")
				s := strings.TrimPrefix(strings.TrimPrefix(line, "  "), "- ")
				item := block{"snippet": s}
				if name, rest, ok := strings.Cut(s, ": "); ok && !strings.Contains(name, " ") {
					item = block{"title": name + ":", "snippet": rest}
				}
				if nested && last != nil {
					sub, _ := last["list"].([]any)
					last["list"] = append(sub, item)
				} else {
					top, last = append(top, item), item
				}
				texts, holders = append(texts, s), append(holders, item)
			}
			list["list"] = top
			blocks = append(blocks, list)
		default:
			b := block{"type": "paragraph", "snippet": p, "snippet_highlighted_words": []string{}}
			blocks, texts, holders = append(blocks, b), append(texts, p), append(holders, b)
		}
	}
	for _, c := range reply.Citations {
		i := slices.IndexFunc(texts, func(t string) bool { return strings.Contains(t, c.Quote) })
		if i < 0 {
			panic(fmt.Sprintf("probefake: the quote %q is not in a block of the reply's text", c.Quote))
		}
		idx, _ := holders[i]["reference_indexes"].([]int)
		holders[i]["reference_indexes"] = append(idx, bare(c.URL), card(c.URL))
	}
	into["text_blocks"] = blocks
	if !reply.NoMetadata {
		into["references"] = refs
	}
}

// host is a page's host, as SerpApi's source field names it.
func host(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}
