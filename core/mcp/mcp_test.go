package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/auth"
	aivismcp "github.com/aivis/aivis/core/mcp"
)

// bearer sends the key as the MCP client's Authorization header.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return b.next.RoundTrip(r)
}

// connect opens a session of the Go SDK's client with key, asking for
// the revision version ("" for the SDK's latest, 2026-07-28).
func connect(t *testing.T, e *env, k key, version string, rec *exchanges) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{k.Key, e.transport(rec)}}}
	c := mcp.NewClient(&mcp.Implementation{Name: "aivis-test", Version: "1.0.0"}, nil)
	cs, err := c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func mustConnect(t *testing.T, e *env, k key, version string, rec *exchanges) *mcp.ClientSession {
	t.Helper()
	cs, err := connect(t, e, k, version, rec)
	if err != nil {
		t.Fatalf("connect (%q): %v", version, err)
	}
	return cs
}

// result is a tool's answer: its structured content as JSON, or the API's
// error it carries.
type result struct {
	JSON  []byte
	Error *client.ErrorDetail
}

func (r result) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.JSON, v); err != nil {
		t.Fatalf("structured content %s: %v", r.JSON, err)
	}
}

// call calls a tool; a tool error must carry the API's error object.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) result {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks", name, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content %T", name, res.Content[0])
	}
	if res.IsError {
		var env struct {
			Error *client.ErrorDetail `json:"error"`
		}
		if err := json.Unmarshal([]byte(text.Text), &env); err != nil || env.Error == nil {
			return result{Error: &client.ErrorDetail{Message: text.Text}}
		}
		return result{Error: env.Error}
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil || res.StructuredContent == nil {
		t.Fatalf("%s: no structured content", name)
	}
	if !jsonEqual(b, []byte(text.Text)) {
		t.Errorf("%s: the text block %s is not the structured content %s", name, text.Text, b)
	}
	return result{JSON: b}
}

func ok(t *testing.T, cs *mcp.ClientSession, name string, args any) result {
	t.Helper()
	r := call(t, cs, name, args)
	if r.Error != nil {
		t.Fatalf("%s: tool error %+v", name, *r.Error)
	}
	return r
}

func refused(t *testing.T, cs *mcp.ClientSession, name string, args any, code string) client.ErrorDetail {
	t.Helper()
	r := call(t, cs, name, args)
	if r.Error == nil || r.Error.Code != code {
		t.Fatalf("%s: %s %+v; want the tool error %s", name, r.JSON, r.Error, code)
	}
	if r.Error.RequestID == "" || r.Error.Message == "" {
		t.Errorf("%s: the error %+v has no message or request id", name, *r.Error)
	}
	return *r.Error
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// TestMCPThroughServe: the Go SDK's client against aivis serve, in both
// revisions: every tool, scopes, an agency client's isolation, rate
// limits, authentication and the protected-resource metadata.
func TestMCPThroughServe(t *testing.T) {
	e := serve(t)

	for _, rev := range []struct{ ask, want string }{{"2025-11-25", "2025-11-25"}, {"", "2026-07-28"}} {
		t.Run("revision "+rev.want, func(t *testing.T) {
			rec := &exchanges{}
			cs := mustConnect(t, e, e.Key, rev.ask, rec)
			if got := cs.InitializeResult().ProtocolVersion; got != rev.want {
				t.Fatalf("negotiated %s; want %s", got, rev.want)
			}
			listTools(t, cs)
			everyTool(t, e, cs)
			checkWire(t, rec.list(), rev.want)
			if rev.want == "2025-11-25" {
				sessionBoundToKey(t, e, rec.list())
			}
		})
	}
	t.Run("protocol errors", func(t *testing.T) {
		cs := mustConnect(t, e, e.Key, "", nil)
		// An unknown tool is the protocol's error; arguments that fail the
		// input schema a tool error the model can correct (2025-11-25).
		if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "drop_tables", Arguments: map[string]any{}}); err == nil {
			t.Errorf("an unknown tool: %+v; want a JSON-RPC error", res)
		}
		r := call(t, cs, "get_visibility", map[string]any{"domain": 7})
		if r.Error == nil || r.Error.Code != "" || !strings.Contains(r.Error.Message, "domain") {
			t.Errorf("get_visibility with a number for domain: %s %+v; want a tool error naming domain", r.JSON, r.Error)
		}
		// Names are matched exactly: "Domain" is no domain, but a property
		// the schema does not have; and domain is required.
		for _, args := range []map[string]any{{"Domain": e.Domain}, {"domain": e.Domain, "market": "de-DE"}, {}} {
			r := call(t, cs, "get_visibility", args)
			if r.Error == nil || r.Error.Code != "" || !strings.Contains(r.Error.Message, `validating "arguments"`) {
				t.Errorf("get_visibility with %v: %s %+v; want a tool error of its arguments", args, r.JSON, r.Error)
			}
		}
	})
	t.Run("scopes", func(t *testing.T) {
		cs := mustConnect(t, e, e.ReadKey, "", nil)
		refused(t, cs, "start_scan", map[string]any{"domain": e.Domain}, "INSUFFICIENT_SCOPE")
		refused(t, cs, "create_content_request", map[string]any{"domain": e.Domain, "budget": 1, "content": "Hello"}, "INSUFFICIENT_SCOPE")
		ok(t, cs, "get_visibility", map[string]any{"domain": e.Domain})
	})
	t.Run("agency client isolation", func(t *testing.T) { isolation(t, e) })
	t.Run("each tool call counts as its API calls", func(t *testing.T) { counted(t, e) })
	t.Run("rate limit", func(t *testing.T) {
		cs := mustConnect(t, e, e.StarterKey, "", nil)
		for i := 0; ; i++ {
			r := call(t, cs, "get_budget_status", map[string]any{})
			if r.Error == nil {
				if i > 2*60 {
					t.Fatalf("%d calls of a Starter key (60 a minute) admitted", i)
				}
				continue
			}
			if r.Error.Code != "RATE_LIMIT_EXCEEDED" || r.Error.RetryAfter == nil {
				t.Fatalf("after %d calls: %+v; want RATE_LIMIT_EXCEEDED with retry_after", i, *r.Error)
			}
			break
		}
	})
	t.Run("authentication", func(t *testing.T) { authentication(t, e) })
	t.Run("sessions per key", func(t *testing.T) { sessionsPerKey(t, e) })
	t.Run("protected resource metadata", func(t *testing.T) { metadata(t, e) })
}

func listTools(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		in, _ := json.Marshal(tool.InputSchema)
		out, _ := json.Marshal(tool.OutputSchema)
		if !strings.Contains(string(in), `"type":"object"`) || !strings.Contains(string(out), `"type":"object"`) {
			t.Errorf("%s: input schema %s, output schema %s; want objects", tool.Name, in, out)
		}
		var schema any
		json.Unmarshal(out, &schema)
		if path := booleanSchema(schema, "outputSchema"); path != "" {
			t.Errorf("%s: %s is a boolean schema; clients (the TypeScript SDK) want an object", tool.Name, path)
		}
		if tool.Annotations == nil || tool.Description == "" {
			t.Errorf("%s: no annotations or description", tool.Name)
		}
	}
	var want []string
	for _, tool := range aivismcp.Tools {
		want = append(want, tool.Name)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("tools %v; want %v", names, want)
	}
}

// booleanSchema is the path of a property or items schema of s that is
// true or false, "" if none is.
func booleanSchema(s any, path string) string {
	m, ok := s.(map[string]any)
	if !ok {
		return path
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, p := range props {
			if bad := booleanSchema(p, path+".properties."+name); bad != "" {
				return bad
			}
		}
	}
	if items, ok := m["items"]; ok {
		return booleanSchema(items, path+".items")
	}
	return ""
}

// completed starts a scan of domain and waits for it to complete.
func completed(t *testing.T, cs *mcp.ClientSession, domain string) string {
	t.Helper()
	var sc struct{ ID, Status string }
	ok(t, cs, "start_scan", map[string]any{"domain": domain}).decode(t, &sc)
	if sc.ID == "" || (sc.Status != "queued" && sc.Status != "running") {
		t.Fatalf("start_scan: %+v", sc)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		var st struct {
			Status          string
			VisibilityScore *int    `json:"visibility_score"`
			Result          *string `json:"result"`
		}
		r := ok(t, cs, "get_scan", map[string]any{"scan_id": sc.ID})
		r.decode(t, &st)
		if strings.Contains(string(r.JSON), `"result"`) {
			t.Fatalf("get_scan passes the breakdown: %s", r.JSON)
		}
		switch st.Status {
		case "completed":
			if st.VisibilityScore == nil {
				t.Fatalf("get_scan: a completed scan without its score: %s", r.JSON)
			}
			return sc.ID
		case "failed":
			t.Fatalf("scan failed: %s", r.JSON)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scan did not complete in 90 s: %s", r.JSON)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

type rate struct {
	Value    float64 `json:"value"`
	Hits     int     `json:"hits"`
	Of       int     `json:"of"`
	Interval *struct {
		Low  float64 `json:"low"`
		High float64 `json:"high"`
	} `json:"interval_95"`
}

func (r *rate) check(t *testing.T, what string) {
	t.Helper()
	if r == nil || r.Interval == nil || r.Of == 0 || r.Interval.Low > r.Value || r.Interval.High < r.Value {
		t.Errorf("%s: %+v; want a rate with its 95%% interval", what, r)
	}
}

func everyTool(t *testing.T, e *env, cs *mcp.ClientSession) {
	var domains struct {
		Items []struct{ ID, Domain string }
	}
	ok(t, cs, "list_domains", map[string]any{}).decode(t, &domains)
	if len(domains.Items) != 1 || domains.Items[0].Domain != e.Domain {
		t.Errorf("list_domains: %+v", domains)
	}

	first := completed(t, cs, e.Domain)
	second := completed(t, cs, e.Domain)

	var vis struct {
		Domain          string `json:"domain"`
		VisibilityScore *int   `json:"visibility_score"`
		LastScan        struct {
			ID        string `json:"id"`
			Breakdown struct {
				Overall struct {
					Mention *rate `json:"mention_rate"`
				} `json:"overall"`
			} `json:"breakdown"`
		} `json:"last_scan"`
	}
	ok(t, cs, "get_visibility", map[string]any{"domain": e.Domain}).decode(t, &vis)
	if vis.Domain != e.Domain || vis.VisibilityScore == nil || vis.LastScan.ID != second {
		t.Errorf("get_visibility: %+v", vis)
	}
	vis.LastScan.Breakdown.Overall.Mention.check(t, "get_visibility's last scan's mention rate")

	var hist struct {
		Items   []struct{ Domain string }
		HasMore bool `json:"has_more"`
	}
	ok(t, cs, "get_visibility_history", map[string]any{"domain": e.Domain, "limit": 1}).decode(t, &hist)
	if len(hist.Items) != 1 || !hist.HasMore {
		t.Errorf("get_visibility_history (limit 1, two readings): %+v", hist)
	}

	// The figures are the API's scan's, as it gives them.
	var sc struct {
		Result struct {
			Breakdown map[string]json.RawMessage `json:"breakdown"`
		} `json:"result"`
	}
	if err := json.Unmarshal(e.api(t, e.Key, http.MethodGet, "/v1/visibility/scans/"+second, nil, http.StatusOK), &sc); err != nil {
		t.Fatal(err)
	}
	var figs map[string]json.RawMessage
	ok(t, cs, "get_scan_figures", map[string]any{"scan_id": second}).decode(t, &figs)
	for _, part := range []string{"overall", "engines", "surfaces", "markets"} {
		if !jsonEqual(figs[part], sc.Result.Breakdown[part]) && (figs[part] != nil || sc.Result.Breakdown[part] != nil) &&
			string(sc.Result.Breakdown[part]) != "null" {
			t.Errorf("get_scan_figures %s: %s; the API's %s", part, figs[part], sc.Result.Breakdown[part])
		}
	}
	var engines []struct {
		Label    string `json:"label"`
		Mention  *rate  `json:"mention_rate"`
		Citation *rate  `json:"citation_rate"`
	}
	json.Unmarshal(figs["engines"], &engines)
	if len(engines) != 1 || engines[0].Label != "Fake" {
		t.Fatalf("get_scan_figures engines: %s", figs["engines"])
	}
	engines[0].Mention.check(t, "get_scan_figures's engine's mention rate")
	engines[0].Citation.check(t, "get_scan_figures's engine's citation rate")

	var cited struct {
		ScanID  string `json:"scan_id"`
		Engines []struct {
			Label        string          `json:"label"`
			CitedDomains json.RawMessage `json:"cited_domains"`
		} `json:"engines"`
	}
	ok(t, cs, "get_cited_sources", map[string]any{"scan_id": second}).decode(t, &cited)
	if cited.ScanID != second || len(cited.Engines) != 1 || cited.Engines[0].Label != "Fake" {
		t.Errorf("get_cited_sources: %+v", cited)
	}

	var answers struct {
		Items []struct {
			Text  string `json:"text"`
			Cited bool   `json:"cited"`
		}
	}
	ok(t, cs, "search_answers", map[string]any{"scan_id": second, "q": "Globex", "cited": false}).decode(t, &answers)
	if len(answers.Items) == 0 {
		t.Errorf("search_answers q=Globex cited=false: none")
	}
	for _, a := range answers.Items {
		if !strings.Contains(a.Text, "Globex") || a.Cited {
			t.Errorf("search_answers q=Globex cited=false: %+v", a)
		}
	}

	var cmp struct {
		Domain  string `json:"domain"`
		From    struct{ ID string }
		To      struct{ ID string }
		Engines []struct {
			Label   string `json:"label"`
			Mention struct {
				From, To *rate
				Change   *float64 `json:"change"`
			} `json:"mention_rate"`
			Citation struct{ From, To *rate } `json:"citation_rate"`
		} `json:"engines"`
	}
	ok(t, cs, "compare_scans", map[string]any{"from_scan_id": first, "to_scan_id": second}).decode(t, &cmp)
	if cmp.Domain != e.Domain || cmp.From.ID != first || cmp.To.ID != second || len(cmp.Engines) != 1 || cmp.Engines[0].Label != "Fake" {
		t.Fatalf("compare_scans: %+v", cmp)
	}
	m := cmp.Engines[0].Mention
	m.From.check(t, "compare_scans from")
	m.To.check(t, "compare_scans to")
	if m.Change == nil || *m.Change != m.To.Value-m.From.Value {
		t.Errorf("compare_scans change %v of %v and %v", m.Change, m.From, m.To)
	}
	refused(t, cs, "compare_scans", map[string]any{"from_scan_id": first, "to_scan_id": "scan_none"}, "NOT_FOUND")

	var cr struct {
		ID, Status string
		Budget     float64 `json:"budget"`
	}
	ok(t, cs, "create_content_request", map[string]any{"domain": e.Domain, "budget": 2.5, "content": "Acme makes rocket skates.",
		"type": "analyze"}).decode(t, &cr)
	if cr.ID == "" || cr.Status != "queued" || cr.Budget != 2.5 {
		t.Errorf("create_content_request: %+v", cr)
	}
	var got struct{ ID, Status string }
	ok(t, cs, "get_content_request", map[string]any{"id": cr.ID}).decode(t, &got)
	if got.ID != cr.ID {
		t.Errorf("get_content_request: %+v", got)
	}
	var list struct{ Items []struct{ ID string } }
	ok(t, cs, "list_content_requests", map[string]any{"domain": e.Domain}).decode(t, &list)
	if !slices.ContainsFunc(list.Items, func(i struct{ ID string }) bool { return i.ID == cr.ID }) {
		t.Errorf("list_content_requests: %+v has not %s", list, cr.ID)
	}
	refused(t, cs, "create_content_request", map[string]any{"domain": e.Domain, "budget": 30000, "content": "Too dear."},
		"BUDGET_EXCEEDS_TIER_LIMIT")
	// Cancelled (through the API) so that the other revision's request
	// is not refused for the tier's active requests.
	e.apiAI(t, e.Key, "/api/v1/ai/content-requests/"+cr.ID+"/cancel")

	var bs struct {
		QuotaTier string `json:"quota_tier"`
		Budget    struct {
			Reserved float64 `json:"reserved"`
		} `json:"budget"`
	}
	ok(t, cs, "get_budget_status", map[string]any{}).decode(t, &bs)
	if bs.QuotaTier != "Enterprise" {
		t.Errorf("get_budget_status: %+v", bs)
	}

	// Traffic: GPTBot, from OpenAI's published ranges, got a 404 on the
	// page the scans cite (the same log in both revisions: kept once).
	e.uploadLog(t, domains.Items[0].ID, `52.230.152.7 - - [`+time.Now().UTC().Truncate(24*time.Hour).Format("02/Jan/2006:15:04:05 -0700")+
		`] "GET /skates HTTP/1.1" 404 12 "-" "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot"`)
	var tr struct {
		Agents []struct {
			Agent          string           `json:"agent"`
			Hits           int64            `json:"hits"`
			ByVerification map[string]int64 `json:"by_verification"`
		} `json:"agents"`
		Problems []struct {
			Page, Agent, Status string
			Hits                int64
		} `json:"problems"`
	}
	ok(t, cs, "get_traffic", map[string]any{"domain": e.Domain}).decode(t, &tr)
	if len(tr.Agents) != 1 || tr.Agents[0].Agent != "GPTBot" || tr.Agents[0].Hits != 1 || tr.Agents[0].ByVerification["verified"] != 1 ||
		len(tr.Problems) != 1 || tr.Problems[0].Page != "/skates" || tr.Problems[0].Status != "4xx" {
		t.Errorf("get_traffic: %+v", tr)
	}
	var pages struct {
		Items []struct {
			Page    string `json:"page"`
			CitedBy []struct {
				Engine  string `json:"engine"`
				Answers int    `json:"answers"`
			} `json:"cited_by"`
		} `json:"items"`
	}
	ok(t, cs, "get_traffic_pages", map[string]any{"domain": e.Domain, "limit": 10}).decode(t, &pages)
	if len(pages.Items) != 1 || pages.Items[0].Page != "/skates" || len(pages.Items[0].CitedBy) != 1 || pages.Items[0].CitedBy[0].Engine != "Fake" {
		t.Errorf("get_traffic_pages: %+v", pages)
	}
	if r := call(t, cs, "get_traffic", map[string]any{"domain": "not-monitored.example"}); r.Error == nil || r.Error.Code != "NOT_FOUND" {
		t.Errorf("get_traffic of a domain not monitored: %s %+v", r.JSON, r.Error)
	}

	// A change recorded now, targeting the domain's prompt: listed, and
	// its lift insufficient (no scan after it yet).
	var ch struct {
		ID      string   `json:"id"`
		Title   string   `json:"title"`
		Prompts []string `json:"prompts"`
	}
	ok(t, cs, "record_change", map[string]any{"domain": e.Domain, "title": "FAQ schema on /skates", "pages": []string{"/skates"},
		"prompts": []string{"Which rocket skates should I buy?"}}).decode(t, &ch)
	if ch.ID == "" || ch.Title != "FAQ schema on /skates" || len(ch.Prompts) != 1 {
		t.Errorf("record_change: %+v", ch)
	}
	if r := call(t, cs, "record_change", map[string]any{"domain": e.Domain, "title": ""}); r.Error == nil || r.Error.Code != "VALIDATION_ERROR" {
		t.Errorf("record_change without a title: %s %+v", r.JSON, r.Error)
	}
	var changes struct {
		Items []struct{ ID string }
	}
	ok(t, cs, "list_changes", map[string]any{"domain": e.Domain}).decode(t, &changes)
	if !slices.ContainsFunc(changes.Items, func(c struct{ ID string }) bool { return c.ID == ch.ID }) {
		t.Errorf("list_changes: %+v; want %s among them", changes, ch.ID)
	}
	var lift struct {
		Change struct{ ID string } `json:"change"`
		Lift   struct {
			Targeted bool `json:"targeted"`
			Overall  struct {
				Measures []struct {
					Metric     string `json:"metric"`
					Difference struct {
						Status    string   `json:"status"`
						Estimate  *float64 `json:"estimate"`
						MoreScans int      `json:"more_scans"`
					} `json:"difference"`
				} `json:"measures"`
			} `json:"overall"`
		} `json:"lift"`
	}
	ok(t, cs, "get_change_lift", map[string]any{"domain": e.Domain, "change_id": ch.ID, "scans": 3}).decode(t, &lift)
	if lift.Change.ID != ch.ID || !lift.Lift.Targeted || len(lift.Lift.Overall.Measures) == 0 {
		t.Fatalf("get_change_lift: %+v", lift)
	}
	for _, m := range lift.Lift.Overall.Measures {
		// One prompt and no scan after: no window can tell (-1), or more
		// scans are needed; never a figure.
		if d := m.Difference; d.Status != "insufficient_data" || d.Estimate != nil || d.MoreScans == 0 {
			t.Errorf("get_change_lift %s before any scan after the change: %+v", m.Metric, d)
		}
	}
}

// uploadLog uploads a combined log of the domain id with the key.
func (e *env) uploadLog(t *testing.T, id, lines string) {
	t.Helper()
	r, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/domains/"+id+"/traffic/logs", strings.NewReader(lines+"\n"))
	r.Header.Set("Authorization", "Bearer "+e.Key.Key)
	r.Header.Set("Content-Type", "text/plain")
	resp, err := (&http.Client{Transport: e.transport(nil)}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST traffic/logs: %d %s", resp.StatusCode, b)
	}
}

// apiAI posts to the key-and-secret interface with k's key and secret.
func (e *env) apiAI(t *testing.T, k key, path string) {
	t.Helper()
	r, _ := http.NewRequest(http.MethodPost, e.URL+path, strings.NewReader("{}"))
	r.Header.Set("X-API-Key", k.Key)
	r.Header.Set("X-API-Secret", k.Secret)
	r.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: e.transport(nil)}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
}

// checkWire: a 2025-11-25 session is initialize, then requests with its
// Mcp-Session-Id, ended by DELETE; a 2026-07-28 client's every request
// names its revision, and no answer carries a session.
func checkWire(t *testing.T, xs []exchange, revision string) {
	t.Helper()
	if len(xs) < 3 {
		t.Fatalf("%d exchanges", len(xs))
	}
	if revision == "2026-07-28" {
		for _, x := range xs {
			if x.Method != http.MethodPost || x.ProtocolHeader != revision || x.RespHeader.Get("Mcp-Session-Id") != "" ||
				x.ReqHeader.Get("Mcp-Method") == "" {
				t.Errorf("2026-07-28: %s %d protocol %q method %q session %q", x.Method, x.Status, x.ProtocolHeader,
					x.ReqHeader.Get("Mcp-Method"), x.RespHeader.Get("Mcp-Session-Id"))
			}
		}
		if xs[0].ReqHeader.Get("Mcp-Method") != "server/discover" {
			t.Errorf("2026-07-28: the first request is %q, want server/discover", xs[0].ReqHeader.Get("Mcp-Method"))
		}
		return
	}
	id := xs[0].RespHeader.Get("Mcp-Session-Id")
	if id == "" || xs[0].ProtocolHeader != "" {
		t.Fatalf("2025-11-25: initialize answered with session %q (sent protocol %q)", id, xs[0].ProtocolHeader)
	}
	for _, x := range xs[1:] {
		if x.ReqHeader.Get("Mcp-Session-Id") != id || x.ProtocolHeader != revision {
			t.Errorf("2025-11-25: %s with session %q protocol %q; want %s and %s", x.Method, x.ReqHeader.Get("Mcp-Session-Id"),
				x.ProtocolHeader, id, revision)
		}
		if x.Method == http.MethodGet && x.Status != http.StatusMethodNotAllowed {
			t.Errorf("2025-11-25: GET answered %d; want 405", x.Status)
		}
	}
}

// sessionBoundToKey: another key cannot use a 2025-11-25 session.
func sessionBoundToKey(t *testing.T, e *env, xs []exchange) {
	t.Helper()
	id := xs[0].RespHeader.Get("Mcp-Session-Id")
	status, _, _ := e.post(t, e.ReadKey.Key, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`,
		map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"})
	if status != http.StatusNotFound {
		t.Errorf("another key with the session: %d; want 404: no such session for it", status)
	}
}

// post sends one JSON-RPC message to /mcp.
func (e *env) post(t *testing.T, key, body string, headers map[string]string) (int, http.Header, []byte) {
	t.Helper()
	r, _ := http.NewRequest(http.MethodPost, e.URL+"/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: e.transport(nil)}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func isolation(t *testing.T, e *env) {
	cs := mustConnect(t, e, e.ClientKey, "", nil)
	var domains struct{ Items []struct{ Domain string } }
	ok(t, cs, "list_domains", map[string]any{}).decode(t, &domains)
	if len(domains.Items) != 0 {
		t.Errorf("the client's key lists %+v; want none (its client monitors nothing)", domains.Items)
	}
	if r := call(t, cs, "list_domains", map[string]any{"client_id": e.OtherClientID}); r.Error == nil &&
		strings.Contains(string(r.JSON), e.OtherDomain) {
		t.Errorf("the client's key lists another client's domains: %s", r.JSON)
	}
	refused(t, cs, "start_scan", map[string]any{"domain": e.OtherDomain}, "NOT_FOUND")
	refused(t, cs, "get_visibility", map[string]any{"domain": e.OtherDomain, "client_id": e.OtherClientID}, "NOT_FOUND")
	// The agency's key sees its client's domain.
	agency := mustConnect(t, e, e.AgencyKey, "", nil)
	ok(t, agency, "list_domains", map[string]any{"client_id": e.OtherClientID}).decode(t, &domains)
	if len(domains.Items) != 1 || domains.Items[0].Domain != e.OtherDomain {
		t.Errorf("the agency's key lists %+v for its client", domains.Items)
	}
}

// counted: a tool call is as many requests in the account's windows as
// the API calls it makes (compare_scans two), and an MCP request that
// calls none (tools/list) is none.
func counted(t *testing.T, e *env) {
	cs := mustConnect(t, e, e.Key, "", nil)
	today := func() int {
		var bs struct {
			Usage struct {
				Today int `json:"requests_today"`
			} `json:"usage"`
		}
		ok(t, cs, "get_budget_status", map[string]any{}).decode(t, &bs)
		return bs.Usage.Today
	}
	var vis struct {
		LastScan struct{ ID string } `json:"last_scan"`
	}
	ok(t, cs, "get_visibility", map[string]any{"domain": e.Domain}).decode(t, &vis)
	n := today()
	ok(t, cs, "list_domains", map[string]any{})
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	ok(t, cs, "compare_scans", map[string]any{"from_scan_id": vis.LastScan.ID, "to_scan_id": vis.LastScan.ID})
	if got := today(); got != n+4 {
		t.Errorf("list_domains, tools/list, compare_scans and get_budget_status: %d requests; want 4", got-n)
	}
}

func authentication(t *testing.T, e *env) {
	resource := fmt.Sprintf(`resource_metadata="%s/.well-known/oauth-protected-resource"`, e.URL)
	for _, tc := range []struct {
		key, challenge string
	}{
		{"", resource},
		{"svc_" + strings.Repeat("x", 40), `error="invalid_token"`},
		{"not a key", `error="invalid_token"`},
	} {
		status, h, _ := e.post(t, tc.key, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
			`"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
		www := h.Get("WWW-Authenticate")
		if status != http.StatusUnauthorized || !strings.HasPrefix(www, "Bearer ") || !strings.Contains(www, resource) ||
			!strings.Contains(www, tc.challenge) {
			t.Errorf("key %q: %d WWW-Authenticate %q; want 401 with %s", tc.key, status, www, tc.challenge)
		}
	}
	// A browser's page of another origin is refused before its key is
	// looked at.
	if status, _, _ := e.post(t, e.Key.Key, initialize, map[string]string{"Origin": "https://elsewhere.example",
		"Sec-Fetch-Site": "cross-site"}); status != http.StatusForbidden {
		t.Errorf("a cross-origin request from a browser: %d; want 403", status)
	}
	if _, err := connect(t, e, key{}, "", nil); err == nil {
		t.Error("the Go SDK's client connected without a key")
	}
	if _, err := connect(t, e, key{Key: "svc_" + strings.Repeat("y", 40)}, "2025-11-25", nil); err == nil {
		t.Error("the Go SDK's client connected with an unknown key")
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
	`"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// sessionsPerKey: a key holds at most MaxSessionsPerKey sessions; ending
// one frees its place.
func sessionsPerKey(t *testing.T, e *env) {
	var ids []string
	for range aivismcp.MaxSessionsPerKey {
		status, h, body := e.post(t, e.AgencyKey.Key, initialize, nil)
		if status != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize %d: %d %s", len(ids)+1, status, body)
		}
		ids = append(ids, h.Get("Mcp-Session-Id"))
	}
	if status, _, body := e.post(t, e.AgencyKey.Key, initialize, nil); status != http.StatusTooManyRequests {
		t.Fatalf("initialize past %d sessions: %d %s; want 429", aivismcp.MaxSessionsPerKey, status, body)
	}
	// Another key is not held back by this one's sessions.
	if status, _, body := e.post(t, e.ClientKey.Key, initialize, nil); status != http.StatusOK {
		t.Fatalf("another key's initialize: %d %s", status, body)
	}
	end := func(id string) {
		r, _ := http.NewRequest(http.MethodDelete, e.URL+"/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+e.AgencyKey.Key)
		r.Header.Set("Mcp-Session-Id", id)
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := (&http.Client{Transport: e.transport(nil)}).Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %d", resp.StatusCode)
		}
	}
	end(ids[0])
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, h, _ := e.post(t, e.AgencyKey.Key, initialize, nil)
		if status == http.StatusOK {
			ids[0] = h.Get("Mcp-Session-Id")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("initialize after a session ended: %d", status)
		}
		time.Sleep(20 * time.Millisecond) // the session's end is counted as it closes
	}
	for _, id := range ids {
		end(id)
	}
}

func metadata(t *testing.T, e *env) {
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		r, _ := http.NewRequest(http.MethodGet, e.URL+path, nil)
		resp, err := (&http.Client{Transport: e.transport(nil)}).Do(r)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		scopes := make([]any, len(auth.Scopes))
		for i, s := range auth.Scopes {
			scopes[i] = s
		}
		want := map[string]any{"resource": e.URL + "/mcp", "scopes_supported": scopes, "bearer_methods_supported": []any{"header"},
			"resource_name": "aivis"}
		if !reflect.DeepEqual(doc, want) {
			t.Errorf("GET %s: %v; want %v", path, doc, want)
		}
	}
}
