package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aivis/aivis/client"
)

// Tool is a tool the server offers and the scope its key must hold.
type Tool struct {
	Name, Scope string
}

// Tools are the server's tools, each with the scope of the API operations
// it makes.
var Tools = []Tool{
	{"list_domains", "visibility:read"},
	{"get_visibility", "visibility:read"},
	{"get_visibility_history", "visibility:read"},
	{"get_scan", "visibility:read"},
	{"get_scan_figures", "visibility:read"},
	{"get_cited_sources", "visibility:read"},
	{"search_answers", "visibility:read"},
	{"compare_scans", "visibility:read"},
	{"start_scan", "visibility:write"},
	{"list_content_requests", "content:read"},
	{"get_content_request", "content:read"},
	{"create_content_request", "content:write"},
	{"get_budget_status", "budget:read"},
	{"get_traffic", "visibility:read"},
	{"get_traffic_pages", "visibility:read"},
	{"list_changes", "visibility:read"},
	{"record_change", "visibility:write"},
	{"get_change_lift", "visibility:read"},
}

// Page is the paging of a list tool's input.
type Page struct {
	Cursor string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page, to read the next"`
	Limit  int    `json:"limit,omitempty" jsonschema:"items per page, 1 to 100 (default 20)"`
}

func (p Page) query(q url.Values) url.Values {
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	return q
}

func setIf(q url.Values, name, v string) {
	if v != "" {
		q.Set(name, v)
	}
}

// Interval is a 95% Wilson score interval of a rate.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Rate is a proportion of answers, with its interval.
type Rate struct {
	Value    float64  `json:"value" jsonschema:"hits/of, 0 to 1"`
	Hits     int      `json:"hits"`
	Of       int      `json:"of"`
	Interval Interval `json:"interval_95" jsonschema:"the 95% Wilson score interval"`
}

// ListDomainsIn is list_domains's input.
type ListDomainsIn struct {
	ClientID string `json:"client_id,omitempty" jsonschema:"an agency's client whose domains to list (an agency-level key only)"`
	Page
}

// Domain is a monitored domain.
type Domain struct {
	ID          string   `json:"id"`
	Domain      string   `json:"domain"`
	Brands      []string `json:"brands"`
	Aliases     []string `json:"aliases"`
	Competitors []string `json:"competitors"`
	Topics      []string `json:"topics"`
	Prompts     []string `json:"prompts"`
	NextScanAt  *string  `json:"next_scan_at"`
	LastScanAt  *string  `json:"last_scan_at"`
	ClientID    *string  `json:"client_id"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
}

// List is a page of a list of the API, passed on as the API gives it:
// its items, whether more follow, and the cursor of the next page.
type List[T any] struct {
	passthrough
	Items      []T     `json:"items"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor" jsonschema:"pass as cursor for the next page; null on the last"`
}

// listOf is the API's page b, passed on.
func listOf[T any](b []byte) List[T] { return List[T]{passthrough: passthrough{b}} }

// DomainIn names a domain.
type DomainIn struct {
	Domain   string `json:"domain" jsonschema:"the monitored domain, e.g. example.com"`
	ClientID string `json:"client_id,omitempty" jsonschema:"the agency's client the domain is monitored for (an agency-level key only)"`
}

// Visibility is a domain's visibility now (GET /v1/visibility).
type Visibility struct {
	passthrough
	Domain          string          `json:"domain"`
	VisibilityScore int             `json:"visibility_score" jsonschema:"0 to 100"`
	Sentiment       string          `json:"sentiment"`
	SentimentScore  float64         `json:"sentiment_score"`
	MeasuredAt      string          `json:"measured_at"`
	Source          string          `json:"source"`
	ClientID        *string         `json:"client_id"`
	FormulaVersion  *int            `json:"formula_version"`
	Trend           json.RawMessage `json:"trend" jsonschema:"the score 7 and 30 days before, and the change since"`
	LastScan        json.RawMessage `json:"last_scan" jsonschema:"the last completed scan: id, readiness score and the breakdown the score stands on, with the engines' rates and their 95% intervals"`
}

// HistoryIn is get_visibility_history's input.
type HistoryIn struct {
	DomainIn
	Market string `json:"market,omitempty" jsonschema:"a market's history, its language and country (de-DE): the domain's readings in that market"`
	Page
}

// Reading is a visibility reading.
type Reading struct {
	Domain          string         `json:"domain"`
	VisibilityScore int            `json:"visibility_score"`
	Sentiment       string         `json:"sentiment"`
	SentimentScore  float64        `json:"sentiment_score"`
	MeasuredAt      string         `json:"measured_at"`
	Source          string         `json:"source"`
	ClientID        *string        `json:"client_id"`
	FormulaVersion  *int           `json:"formula_version"`
	Market          *client.Market `json:"market,omitempty" jsonschema:"the market of a market's reading"`
}

// ScanIn names a scan.
type ScanIn struct {
	ScanID string `json:"scan_id" jsonschema:"the scan's id (scan_...), from start_scan, get_visibility's last_scan or get_scan"`
}

// StartScanIn is start_scan's input.
type StartScanIn struct {
	DomainIn
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"retrying with the same key answers the first scan rather than starting another"`
}

// Scan is a scan (POST /v1/visibility/scans, GET /v1/visibility/scans/{id}).
type Scan struct {
	passthrough
	ID         string          `json:"id"`
	Domain     string          `json:"domain"`
	DomainID   string          `json:"domain_id"`
	Trigger    string          `json:"trigger"`
	Status     string          `json:"status" jsonschema:"queued, running, completed or failed"`
	Attempts   int             `json:"attempts"`
	Result     json.RawMessage `json:"result" jsonschema:"the completed scan's scores and breakdown (null before)"`
	Error      *string         `json:"error"`
	ClientID   *string         `json:"client_id"`
	CreatedAt  string          `json:"created_at"`
	StartedAt  *string         `json:"started_at"`
	FinishedAt *string         `json:"finished_at"`
}

// ScanStatus is get_scan's result: a scan without its breakdown, with
// its scores once completed.
type ScanStatus struct {
	passthrough
	ID              string  `json:"id"`
	Domain          string  `json:"domain"`
	Status          string  `json:"status" jsonschema:"queued, running, completed or failed"`
	Attempts        int     `json:"attempts"`
	Error           *string `json:"error"`
	CreatedAt       string  `json:"created_at"`
	StartedAt       *string `json:"started_at"`
	FinishedAt      *string `json:"finished_at"`
	VisibilityScore *int    `json:"visibility_score,omitempty"`
	ReadinessScore  *int    `json:"readiness_score,omitempty"`
	Sentiment       string  `json:"sentiment,omitempty"`
}

// SearchAnswersIn is search_answers's input.
type SearchAnswersIn struct {
	ScanIn
	Q         string `json:"q,omitempty" jsonschema:"words the answer's text contains"`
	Engine    string `json:"engine,omitempty" jsonschema:"an engine's label"`
	Market    string `json:"market,omitempty" jsonschema:"only the answers of this market, its language and country (de-DE)"`
	Cited     *bool  `json:"cited,omitempty" jsonschema:"only answers that cite the domain (true) or do not (false)"`
	Mentioned *bool  `json:"mentioned,omitempty" jsonschema:"only answers that name the brand (true) or do not (false)"`
	Prompt    *int   `json:"prompt,omitempty" jsonschema:"only the answers to this prompt of the scan's prompt set (its index, from 0)"`
	Page
}

// Answer is an engine's answer in a scan.
type Answer struct {
	Seq       int             `json:"seq"`
	Prompt    json.RawMessage `json:"prompt"`
	Run       int             `json:"run"`
	Engine    string          `json:"engine"`
	Kind      string          `json:"kind"`
	Text      string          `json:"text"`
	Error     *string         `json:"error"`
	Mentioned bool            `json:"mentioned"`
	Cited     bool            `json:"cited"`
	Position  int             `json:"position"`
	Sources   json.RawMessage `json:"sources"`
	Citations json.RawMessage `json:"citations"`
	Surface   string          `json:"surface,omitempty" jsonschema:"the engine's surface: model, search_api or serp"`
	Market    *client.Market  `json:"market,omitempty" jsonschema:"the market the prompt was asked in"`
	Absent    bool            `json:"absent,omitempty" jsonschema:"the surface showed no AI answer for the prompt (not a failure)"`
}

// ContentListIn is list_content_requests's input.
type ContentListIn struct {
	Status   string `json:"status,omitempty" jsonschema:"queued, processing, completed, failed or cancelled"`
	Domain   string `json:"domain,omitempty"`
	ClientID string `json:"client_id,omitempty" jsonschema:"an agency's client (an agency-level key only)"`
	Page
}

// ContentRequest is a content request.
type ContentRequest struct {
	ID            string            `json:"id"`
	Status        string            `json:"status"`
	Step          *string           `json:"step"`
	Type          string            `json:"type"`
	Domain        string            `json:"domain"`
	URL           *string           `json:"url"`
	Content       *string           `json:"content,omitempty"`
	TargetQueries []string          `json:"target_queries"`
	ClientID      *string           `json:"client_id"`
	Currency      string            `json:"currency"`
	Budget        float64           `json:"budget" jsonschema:"US dollars"`
	Spent         float64           `json:"spent"`
	Reserved      float64           `json:"reserved"`
	Metadata      map[string]string `json:"metadata"`
	FailureReason *string           `json:"failure_reason"`
	Result        json.RawMessage   `json:"result"`
	CreatedAt     string            `json:"created_at"`
	UpdatedAt     string            `json:"updated_at"`
	StartedAt     *string           `json:"started_at"`
	EndedAt       *string           `json:"ended_at"`
}

// ContentRequestOut is one content request.
type ContentRequestOut struct {
	passthrough
	ContentRequest
}

// ContentIDIn names a content request.
type ContentIDIn struct {
	ID string `json:"id" jsonschema:"the content request's id"`
}

// CreateContentIn is create_content_request's input.
type CreateContentIn struct {
	Domain         string            `json:"domain"`
	Budget         float64           `json:"budget" jsonschema:"the most it may spend, in US dollars (within the account's monthly budget and per-request maximum)"`
	URL            string            `json:"url,omitempty" jsonschema:"the page to analyse or optimize"`
	Content        string            `json:"content,omitempty" jsonschema:"the text to analyse or optimize, instead of url"`
	TargetQueries  []string          `json:"target_queries,omitempty" jsonschema:"the questions the content should answer"`
	Type           string            `json:"type,omitempty" jsonschema:"optimize (default) or analyze"`
	ClientID       string            `json:"client_id,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty" jsonschema:"retrying with the same key answers the first request rather than making another"`
}

// BudgetStatus is the account's rate limits, usage and monthly budget
// (GET /api/v1/ai/budget-status).
type BudgetStatus struct {
	passthrough
	QuotaTier      string          `json:"quota_tier"`
	RateLimits     json.RawMessage `json:"rate_limits"`
	Usage          json.RawMessage `json:"usage"`
	Remaining      json.RawMessage `json:"remaining"`
	Resets         json.RawMessage `json:"resets"`
	Budget         json.RawMessage `json:"budget"`
	ActiveRequests json.RawMessage `json:"active_requests"`
	AccountID      string          `json:"account_id"`
	ClientID       *string         `json:"client_id"`
}

var (
	yes = true
	no  = false
)

// scanView is a tool that reads a scan (GET /v1/visibility/scans/{id})
// and answers view of it.
func scanView[Out any](h *Handler, view func(scanDoc) Out) mcp.ToolHandlerFor[ScanIn, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in ScanIn) (*mcp.CallToolResult, Out, error) {
		sc, err := h.scan(ctx, req, in.ScanID)
		if err != nil {
			var none Out
			return nil, none, err
		}
		return nil, view(sc), nil
	}
}

func read(title string) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, OpenWorldHint: &no}
}

func write(title string) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, DestructiveHint: &no, OpenWorldHint: &no}
}

// tool adds a tool whose result is Out, with Out's open output schema.
func tool[In, Out any](h *Handler, name, description string, ann *mcp.ToolAnnotations, fn mcp.ToolHandlerFor[In, Out]) {
	scope := ""
	for _, t := range Tools {
		if t.Name == name {
			scope = t.Scope
		}
	}
	if scope == "" {
		panic("mcp: tool " + name + " is not in Tools")
	}
	in, out := inputSchema[In](), outputSchema[Out]()
	h.server.AddTool(&mcp.Tool{Name: name, Title: ann.Title, Description: description + " Needs the " + scope + " scope.",
		Annotations: ann, InputSchema: in, OutputSchema: out}, typed(resolve(in), resolve(out), fn))
}

func (h *Handler) addTools() {
	tool(h, "list_domains", "The monitored domains, with their brands, competitors, topics and prompts.", read("Monitored domains"),
		func(ctx context.Context, req *mcp.CallToolRequest, in ListDomainsIn) (*mcp.CallToolResult, List[Domain], error) {
			q := url.Values{}
			setIf(q, "client_id", in.ClientID)
			b, err := h.call(ctx, req, http.MethodGet, "/v1/domains", in.Page.query(q), nil, "")
			return nil, listOf[Domain](b), err
		})
	tool(h, "get_visibility", "A domain's AI visibility now: its score (0-100), sentiment, the trend over 7 and 30 days, "+
		"and the last scan's breakdown (mention, citation and share-of-voice rates per engine with 95% intervals).",
		read("Visibility now"),
		func(ctx context.Context, req *mcp.CallToolRequest, in DomainIn) (*mcp.CallToolResult, Visibility, error) {
			b, err := h.call(ctx, req, http.MethodGet, "/v1/visibility", in.query(url.Values{}), nil, "")
			return nil, Visibility{passthrough: passthrough{b}}, err
		})
	tool(h, "get_visibility_history", "A domain's visibility readings, newest first, a page at a time; with market (de-DE), its readings in that market.", read("Visibility history"),
		func(ctx context.Context, req *mcp.CallToolRequest, in HistoryIn) (*mcp.CallToolResult, List[Reading], error) {
			q := in.Page.query(in.DomainIn.query(url.Values{}))
			setIf(q, "market", in.Market)
			b, err := h.call(ctx, req, http.MethodGet, "/v1/visibility/history", q, nil, "")
			return nil, listOf[Reading](b), err
		})
	tool(h, "get_scan", "A scan's status (queued, running, completed or failed) and, once completed, its scores.", read("Scan status"),
		func(ctx context.Context, req *mcp.CallToolRequest, in ScanIn) (*mcp.CallToolResult, ScanStatus, error) {
			b, err := h.call(ctx, req, http.MethodGet, scanPath(in.ScanID), nil, nil, "")
			if err != nil {
				return nil, ScanStatus{}, err
			}
			out, err := scanStatus(b)
			return nil, out, err
		})
	tool(h, "get_scan_figures", "A completed scan's figures over every engine and per engine (and per surface and market when "+
		"the scan has them): presence, mention, citation, first-position and share-of-voice rates, each with its hits, "+
		"its base and its 95% Wilson interval; position, sentiment and competitors' mentions.", read("Scan figures"),
		scanView(h, figures))
	tool(h, "get_cited_sources", "The sources the engines cited in a completed scan: the domains cited most and the scanned "+
		"domain's own pages cited, over every engine and per engine, with the domain's share of the sources.",
		read("Cited sources"), scanView(h, citedSources))
	tool(h, "search_answers", "A scan's answers, the evidence of its figures: each engine's answer to each prompt with "+
		"whether it names and cites the domain, its sources and citations; filtered by words (q), engine, market, cited, "+
		"mentioned or prompt.", read("Search answers"),
		func(ctx context.Context, req *mcp.CallToolRequest, in SearchAnswersIn) (*mcp.CallToolResult, List[Answer], error) {
			q := url.Values{}
			setIf(q, "q", in.Q)
			setIf(q, "engine", in.Engine)
			setIf(q, "market", in.Market)
			if in.Cited != nil {
				q.Set("cited", strconv.FormatBool(*in.Cited))
			}
			if in.Mentioned != nil {
				q.Set("mentioned", strconv.FormatBool(*in.Mentioned))
			}
			if in.Prompt != nil {
				q.Set("prompt", strconv.Itoa(*in.Prompt))
			}
			b, err := h.call(ctx, req, http.MethodGet, scanPath(in.ScanID)+"/answers", in.Page.query(q), nil, "")
			return nil, listOf[Answer](b), err
		})
	tool(h, "compare_scans", "Two completed scans of a domain compared: per engine (and over every engine), the mention and "+
		"citation rates of each with their 95% intervals, the change, and whether the intervals are apart.",
		read("Compare scans"),
		func(ctx context.Context, req *mcp.CallToolRequest, in CompareIn) (*mcp.CallToolResult, Comparison, error) {
			from, err := h.scan(ctx, req, in.FromScanID)
			if err != nil {
				return nil, Comparison{}, err
			}
			to, err := h.scan(ctx, req, in.ToScanID)
			if err != nil {
				return nil, Comparison{}, err
			}
			out, err := compare(from, to)
			return nil, out, err
		})
	tool(h, "start_scan", "Starts a scan of a monitored domain now (or answers the one already queued or running); "+
		"follow it with get_scan.", write("Start a scan"),
		func(ctx context.Context, req *mcp.CallToolRequest, in StartScanIn) (*mcp.CallToolResult, Scan, error) {
			body := map[string]string{"domain": in.Domain}
			if in.ClientID != "" {
				body["client_id"] = in.ClientID
			}
			b, err := h.call(ctx, req, http.MethodPost, "/v1/visibility/scans", nil, body, in.IdempotencyKey)
			return nil, Scan{passthrough: passthrough{b}}, err
		})
	tool(h, "list_content_requests", "Content requests (analyses and optimizations of a page or text for AI answers), "+
		"newest first, without their content.", read("Content requests"),
		func(ctx context.Context, req *mcp.CallToolRequest, in ContentListIn) (*mcp.CallToolResult, List[ContentRequest], error) {
			q := url.Values{}
			setIf(q, "status", in.Status)
			setIf(q, "domain", in.Domain)
			setIf(q, "client_id", in.ClientID)
			b, err := h.call(ctx, req, http.MethodGet, "/api/v1/ai/content-requests", in.Page.query(q), nil, "")
			if err == nil {
				b, err = data(b)
			}
			return nil, listOf[ContentRequest](b), err
		})
	tool(h, "get_content_request", "A content request: its status, step, spending and, once completed, its result.",
		read("Content request"),
		func(ctx context.Context, req *mcp.CallToolRequest, in ContentIDIn) (*mcp.CallToolResult, ContentRequestOut, error) {
			b, err := h.call(ctx, req, http.MethodGet, "/api/v1/ai/content-requests/"+url.PathEscape(in.ID), nil, nil, "")
			if err == nil {
				b, err = data(b)
			}
			return nil, ContentRequestOut{passthrough: passthrough{b}}, err
		})
	tool(h, "create_content_request", "Asks for a page or text to be analysed or optimized for AI answers, spending at most "+
		"budget US dollars; refused beyond the account's monthly budget or its per-request maximum (see get_budget_status).",
		write("Create a content request"),
		func(ctx context.Context, req *mcp.CallToolRequest, in CreateContentIn) (*mcp.CallToolResult, ContentRequestOut, error) {
			body := map[string]any{"domain": in.Domain, "budget": json.Number(strconv.FormatFloat(in.Budget, 'f', -1, 64))}
			for k, v := range map[string]string{"url": in.URL, "content": in.Content, "type": in.Type, "client_id": in.ClientID} {
				if v != "" {
					body[k] = v
				}
			}
			if len(in.TargetQueries) > 0 {
				body["target_queries"] = in.TargetQueries
			}
			if len(in.Metadata) > 0 {
				body["metadata"] = in.Metadata
			}
			b, err := h.call(ctx, req, http.MethodPost, "/api/v1/ai/content-requests", nil, body, in.IdempotencyKey)
			if err == nil {
				b, err = data(b)
			}
			return nil, ContentRequestOut{passthrough: passthrough{b}}, err
		})
	tool(h, "get_traffic", "A domain's AI crawler visits and AI referrals over a window of days (from its CDN's or server's "+
		"logs): each AI agent's requests (verified against its operator's IP ranges, unverified, or spoofed), per purpose "+
		"(train, index, fetch) and day, the pages AI agents request most, the 4xx and 5xx answers they got, and the visits "+
		"each AI assistant sent.", read("AI crawler visits and referrals"),
		func(ctx context.Context, req *mcp.CallToolRequest, in TrafficIn) (*mcp.CallToolResult, Traffic, error) {
			b, err := h.onDomain(ctx, req, in.DomainIn, http.MethodGet, "/traffic", in.query(url.Values{}), nil, "")
			return nil, Traffic{passthrough: passthrough{b}}, err
		})
	tool(h, "get_traffic_pages", "A domain's pages over a window of days, each with the AI agents that requested it, the "+
		"engines whose answers cited it in the latest scan, and the visits AI assistants sent to it.", read("Pages: crawls, citations, referrals"),
		func(ctx context.Context, req *mcp.CallToolRequest, in TrafficPagesIn) (*mcp.CallToolResult, List[client.TrafficPage], error) {
			b, err := h.onDomain(ctx, req, in.DomainIn, http.MethodGet, "/traffic/pages", in.Page.query(in.TrafficIn.query(url.Values{})), nil, "")
			return nil, listOf[client.TrafficPage](b), err
		})
	tool(h, "list_changes", "The changes recorded of a domain's site (a rewritten page, new structured data), newest first: "+
		"when each went live, the pages and prompts it targets, and whether its lift has been measured.", read("Changes"),
		func(ctx context.Context, req *mcp.CallToolRequest, in ChangesIn) (*mcp.CallToolResult, List[client.Change], error) {
			q := url.Values{}
			setIf(q, "from", in.From)
			setIf(q, "to", in.To)
			b, err := h.onDomain(ctx, req, in.DomainIn, http.MethodGet, "/changes", in.Page.query(q), nil, "")
			return nil, listOf[client.Change](b), err
		})
	tool(h, "record_change", "Records a change made to a domain's site, so that its lift can be measured: what changed, when "+
		"it went live, and optionally the pages and the domain's prompts it targets.", write("Record a change"),
		func(ctx context.Context, req *mcp.CallToolRequest, in RecordChangeIn) (*mcp.CallToolResult, Change, error) {
			body := map[string]any{"title": in.Title}
			for k, v := range map[string]string{"notes": in.Notes, "at": in.At} {
				if v != "" {
					body[k] = v
				}
			}
			if len(in.Pages) > 0 {
				body["pages"] = in.Pages
			}
			if len(in.Prompts) > 0 {
				body["prompts"] = in.Prompts
			}
			b, err := h.onDomain(ctx, req, in.DomainIn, http.MethodPost, "/changes", nil, body, in.IdempotencyKey)
			return nil, Change{passthrough: passthrough{b}}, err
		})
	tool(h, "get_change_lift", "What a change moved: per measure (mention, citation, share of voice, source share, average "+
		"position), over every engine and per engine, the answers after it against those before it with a 95% interval, and "+
		"for a change that targets prompts the difference-in-differences against the prompts it did not target; "+
		"insufficient_data, with the scans still needed, where the answers are too few.", read("Lift of a change"),
		func(ctx context.Context, req *mcp.CallToolRequest, in LiftIn) (*mcp.CallToolResult, ChangeLift, error) {
			q := url.Values{}
			if in.Scans != 0 {
				q.Set("scans", strconv.Itoa(in.Scans))
			}
			b, err := h.onDomain(ctx, req, in.DomainIn, http.MethodGet, "/changes/"+url.PathEscape(in.ChangeID)+"/lift", q, nil, "")
			return nil, ChangeLift{passthrough: passthrough{b}}, err
		})
	tool(h, "get_budget_status", "The account's tier, rate limits and their use in the current minute, hour and day, and "+
		"its content budget for the month: spent, reserved and remaining.", read("Budget status"),
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, BudgetStatus, error) {
			b, err := h.call(ctx, req, http.MethodGet, "/api/v1/ai/budget-status", nil, nil, "")
			if err == nil {
				b, err = data(b)
			}
			return nil, BudgetStatus{passthrough: passthrough{b}}, err
		})
}

// TrafficIn is a domain and a window of days.
type TrafficIn struct {
	DomainIn
	From string `json:"from,omitempty" jsonschema:"the window's first day, YYYY-MM-DD (default: 29 days before to)"`
	To   string `json:"to,omitempty" jsonschema:"the window's last day, YYYY-MM-DD (default: today, UTC)"`
}

// TrafficPagesIn is a page of a domain's pages over a window.
type TrafficPagesIn struct {
	TrafficIn
	Page
}

// Traffic is a domain's AI crawler visits and AI referrals
// (GET /v1/domains/{id}/traffic).
type Traffic struct {
	passthrough
	client.TrafficSummary
}

// domainID is the id of the domain in names, found among the key's
// domains (the API's list, a page of 100 at a time), or taken as an id.
func (h *Handler) domainID(ctx context.Context, req *mcp.CallToolRequest, in DomainIn) (string, error) {
	name := strings.ToLower(strings.TrimSuffix(in.Domain, "."))
	q := url.Values{"limit": {"100"}}
	setIf(q, "client_id", in.ClientID)
	for {
		var page struct {
			Items []struct {
				ID     string `json:"id"`
				Domain string `json:"domain"`
			} `json:"items"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := h.get(ctx, req, "/v1/domains", q, &page); err != nil {
			return "", err
		}
		for _, d := range page.Items {
			if d.Domain == name {
				return d.ID, nil
			}
		}
		if page.NextCursor == nil {
			// None by that name: the API's own answer for it (404, with
			// its request id), which an id is also looked up by.
			var d struct {
				ID string `json:"id"`
			}
			err := h.get(ctx, req, "/v1/domains/"+url.PathEscape(in.Domain), nil, &d)
			return d.ID, err
		}
		q.Set("cursor", *page.NextCursor)
	}
}

// ChangesIn selects a page of a domain's changes.
type ChangesIn struct {
	DomainIn
	From string `json:"from,omitempty" jsonschema:"changes that went live at or after (RFC 3339 or YYYY-MM-DD)"`
	To   string `json:"to,omitempty" jsonschema:"changes that went live before (RFC 3339 or YYYY-MM-DD, the whole day)"`
	Page
}

// RecordChangeIn is a change to record.
type RecordChangeIn struct {
	DomainIn
	Title   string   `json:"title" jsonschema:"what changed, 1 to 200 characters"`
	Notes   string   `json:"notes,omitempty" jsonschema:"more about it, up to 4,000 characters"`
	At      string   `json:"at,omitempty" jsonschema:"when it went live, RFC 3339 (default: now)"`
	Pages   []string `json:"pages,omitempty" jsonschema:"the pages it changed: URLs on the domain or paths, at most 50"`
	Prompts []string `json:"prompts,omitempty" jsonschema:"the domain's prompts it targets, by their text, at most 50 (its lift is then measured against the others)"`
	// IdempotencyKey makes a retry safe.
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a key of yours: the same key and arguments within 24 hours record one change"`
}

// LiftIn names a change and the lift's window.
type LiftIn struct {
	DomainIn
	ChangeID string `json:"change_id" jsonschema:"the change's id (list_changes gives them)"`
	Scans    int    `json:"scans,omitempty" jsonschema:"scans on each side of the change, 1 to 180 (default 14)"`
}

// Change is a recorded change of a domain's site.
type Change struct {
	passthrough
	client.Change
}

// ChangeLift is a change and its measured lift.
type ChangeLift struct {
	passthrough
	client.ChangeLift
}

// onDomain is call on the API path of the domain in names:
// /v1/domains/{id} followed by sub.
func (h *Handler) onDomain(ctx context.Context, req *mcp.CallToolRequest, in DomainIn, method, sub string, query url.Values, body any,
	idempotencyKey string) (json.RawMessage, error) {
	id, err := h.domainID(ctx, req, in)
	if err != nil {
		return nil, err
	}
	return h.call(ctx, req, method, "/v1/domains/"+url.PathEscape(id)+sub, query, body, idempotencyKey)
}

func (in TrafficIn) query(q url.Values) url.Values {
	setIf(q, "from", in.From)
	setIf(q, "to", in.To)
	return q
}

func (in DomainIn) query(q url.Values) url.Values {
	q.Set("domain", in.Domain)
	setIf(q, "client_id", in.ClientID)
	return q
}

func scanPath(id string) string { return "/v1/visibility/scans/" + url.PathEscape(id) }
