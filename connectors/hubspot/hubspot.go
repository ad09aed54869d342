package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aivis/aivis/connectors/internal/kit"
	"github.com/aivis/aivis/plugins/sdk"
)

// DefaultAPIURL is HubSpot's API.
const DefaultAPIURL = "https://api.hubapi.com"

// HubSpot's limits and ids.
const (
	maxBatch       = 20
	maxNote        = 65536
	noteToCompany  = 190
	propertyPrefix = "aivis_"
)

type settings struct {
	AccessToken string `json:"access_token"`
	Notes       *bool  `json:"notes"`
	APIURL      string `json:"api_url"`
}

var schema = json.RawMessage(`{
  "type": "object",
  "title": "HubSpot",
  "required": ["access_token"],
  "properties": {
    "access_token": {"type": "string", "title": "Private app access token", "description": "pat-... with the crm.objects.companies.write, crm.objects.notes.write (or crm.objects.companies.write for notes) and crm.schemas.companies.write scopes."},
    "notes": {"type": "boolean", "default": true, "title": "Add a note to the company on each alert"},
    "api_url": {"type": "string", "format": "uri", "default": "https://api.hubapi.com", "title": "API URL"}
  },
  "additionalProperties": false
}`)

// Property is one company property aivis writes.
type Property struct {
	Name, Label, Type, FieldType string
}

// Properties are the company properties aivis keeps; Test creates the
// missing ones.
var Properties = []Property{
	{"aivis_visibility_score", "AI visibility score", "number", "number"},
	{"aivis_score_change", "AI visibility change", "number", "number"},
	{"aivis_sentiment", "AI sentiment", "string", "text"},
	{"aivis_sentiment_score", "AI sentiment score", "number", "number"},
	{"aivis_readiness_score", "AI readiness score", "number", "number"},
	{"aivis_last_change", "AI visibility last change", "datetime", "date"},
	{"aivis_last_event", "aivis last event", "string", "text"},
	{"aivis_citation_rate", "AI citation rate (%)", "number", "number"},
	{"aivis_source_share", "AI source share (%)", "number", "number"},
	{"aivis_citation_change", "AI citation change (points)", "number", "number"},
	{"aivis_citation_engine", "AI engine of the last citation change", "string", "text"},
	{"aivis_crawler_errors", "AI crawler errors on cited pages", "number", "number"},
	{"aivis_crawler_error_page", "Cited page with the most AI crawler errors", "string", "text"},
}

type connector struct{ client *http.Client }

func (c *connector) Info() sdk.Info {
	return sdk.Info{Name: "hubspot", Kind: "crm", Version: "1.0.0", DisplayName: "HubSpot",
		Description:    "Keeps each domain's HubSpot company up to date with its AI visibility, with a note on each alert.",
		SettingsSchema: schema, SecretFields: []string{"access_token"}, DestinationFields: []string{"api_url"}, MaxBatch: maxBatch}
}

func parse(raw json.RawMessage) (settings, kit.Fields) {
	var s settings
	if f := kit.Decode(raw, &s); f != nil {
		return s, f
	}
	var f kit.Fields
	if s.AccessToken == "" {
		f.Add("access_token", "is required")
	} else if !strings.HasPrefix(s.AccessToken, "pat-") {
		f.Add("access_token", "must be a private app access token (pat-...)")
	}
	f.URL("api_url", s.APIURL, false, false)
	return s, f
}

func (c *connector) ValidateSettings(_ context.Context, raw json.RawMessage) []sdk.FieldError {
	_, f := parse(raw)
	return f
}

// api is one connection's HubSpot.
type api struct {
	c    *http.Client
	base string
	auth http.Header
}

func (c *connector) api(s settings) api {
	base := s.APIURL
	if base == "" {
		base = DefaultAPIURL
	}
	return api{c: c.client, base: strings.TrimRight(base, "/"), auth: http.Header{"Authorization": {"Bearer " + s.AccessToken}}}
}

// call sends a request; a result that is not Delivered says what to do.
func (a api) call(ctx context.Context, method, path string, in, out any) (int, sdk.Result) {
	var body []byte
	if in != nil {
		body, _ = json.Marshal(in)
	}
	r, err := kit.Do(ctx, a.c, method, a.base+path, a.auth.Clone(), body)
	if err != nil {
		return 0, kit.Unreachable("HubSpot", err)
	}
	if !r.OK() {
		return r.Status, refusal(r, time.Now())
	}
	if out != nil {
		if err := json.Unmarshal(r.Body, out); err != nil {
			return r.Status, sdk.RetryResult(0, "HubSpot answered something else than its JSON: "+r.Snippet())
		}
	}
	return r.Status, sdk.DeliveredResult()
}

// refusal reads a HubSpot error: {"status":"error","message","category"}
// and, when throttled, {"errorType":"RATE_LIMIT","policyName"}.
func refusal(r kit.Response, now time.Time) sdk.Result {
	var e struct {
		Message    string `json:"message"`
		Category   string `json:"category"`
		PolicyName string `json:"policyName"`
	}
	json.Unmarshal(r.Body, &e)
	why := fmt.Sprintf("HubSpot answered %d", r.Status)
	if e.Category != "" {
		why += " " + kit.Quote(e.Category, 40)
	}
	if e.Message != "" {
		why += ": " + kit.Quote(e.Message, 150)
	}
	switch {
	case r.Status == http.StatusTooManyRequests:
		after := kit.RetryAfter(r.Header)
		if e.PolicyName == "DAILY" {
			// The daily limit resets at midnight (in the portal's time
			// zone, which the API does not say): try at the next UTC one.
			after = max(after, now.UTC().Truncate(24*time.Hour).Add(24*time.Hour).Sub(now))
			return sdk.RetryResult(after, why+" (daily limit)")
		}
		if after == 0 {
			ms, _ := strconv.Atoi(r.Header.Get("X-HubSpot-RateLimit-Interval-Milliseconds"))
			after = time.Duration(max(ms, 1000)) * time.Millisecond
		}
		return sdk.RetryResult(after, why)
	case r.Status == http.StatusUnauthorized:
		return sdk.FailedResult(why + " (the access token is invalid or expired)")
	case r.Status == http.StatusForbidden:
		return sdk.FailedResult(why + " (the private app lacks a scope)")
	case strings.Contains(e.Message, "does not exist") && strings.Contains(e.Message, propertyPrefix):
		return sdk.FailedResult(why + needProperties)
	}
	if kit.Retryable(r.Status) {
		return sdk.RetryResult(kit.RetryAfter(r.Header), why)
	}
	return sdk.FailedResult(why)
}

// needProperties ends the reason of a write HubSpot refused for an aivis
// property that does not exist.
const needProperties = " (press Test on the connection to create the aivis properties)"

// companyProps are the properties an alert sets on its company.
func companyProps(a kit.Alert) map[string]string {
	p := map[string]string{"domain": a.Domain, "aivis_last_event": a.Kind}
	if a.Score != nil {
		p["aivis_visibility_score"] = strconv.Itoa(*a.Score)
		p["aivis_last_change"] = a.Time.Format(time.RFC3339)
	}
	if a.ScoreChange != nil {
		p["aivis_score_change"] = strconv.Itoa(*a.ScoreChange)
	}
	if a.Sentiment != "" {
		p["aivis_sentiment"] = a.Sentiment
	}
	if a.SentimentScore != nil {
		p["aivis_sentiment_score"] = strconv.FormatFloat(*a.SentimentScore, 'f', 3, 64)
	}
	if a.ReadinessScore != nil {
		p["aivis_readiness_score"] = strconv.Itoa(*a.ReadinessScore)
	}
	if a.Engine == "" && a.CitationRate != nil { // the scan's, over every engine
		p["aivis_citation_rate"] = kit.Number(a.CitationRate.Percent(), 2)
		p["aivis_source_share"] = ""
		if a.SourceShare != nil {
			p["aivis_source_share"] = kit.Number(a.SourceShare.Percent(), 2)
		}
	}
	if a.Engine != "" && a.CitationChange != nil {
		p["aivis_citation_change"] = kit.Number(*a.CitationChange, 2)
		p["aivis_citation_engine"] = a.Engine
	}
	if a.CrawlerErrors != nil {
		p["aivis_crawler_errors"] = strconv.FormatInt(*a.CrawlerErrors, 10)
		p["aivis_crawler_error_page"] = ""
		if len(a.ErrorPages) > 0 {
			p["aivis_crawler_error_page"] = a.ErrorPages[0].Path
		}
	}
	return p
}

// Note is the HTML body of the note of an alert.
func Note(a kit.Alert) string {
	var b strings.Builder
	b.WriteString("<p><strong>aivis: " + html.EscapeString(a.Headline()) + "</strong></p><ul>")
	for _, f := range a.Facts() {
		b.WriteString("<li>" + html.EscapeString(f.Label) + ": " + html.EscapeString(f.Value) + "</li>")
	}
	b.WriteString("</ul>")
	if b.Len() > maxNote {
		return kit.Truncate(b.String(), maxNote)
	}
	return b.String()
}

type upsertInput struct {
	ID         string            `json:"id"`
	IDProperty string            `json:"idProperty"`
	Properties map[string]string `json:"properties"`
}

type object struct {
	ID         string            `json:"id"`
	Properties map[string]string `json:"properties"`
}

// Deliver upserts the companies of the events' domains in one request
// (the latest event of a domain wins), then adds one note per event.
func (c *connector) Deliver(ctx context.Context, raw json.RawMessage, evs []sdk.Event) []sdk.Result {
	s, f := parse(raw)
	if len(f) > 0 {
		return kit.All(len(evs), sdk.FailedResult(f.Err()))
	}
	a := c.api(s)
	out := make([]sdk.Result, len(evs))
	alerts := make([]kit.Alert, len(evs))
	order := make([]int, 0, len(evs))
	for i, ev := range evs {
		alerts[i] = kit.Parse(ev)
		if alerts[i].Domain == "" {
			out[i] = sdk.FailedResult("HubSpot companies are found by domain, and this " + ev.Kind + " event has none")
			continue
		}
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(x, y int) int { return alerts[x].Time.Compare(alerts[y].Time) })
	props := map[string]map[string]string{}
	var domains []string
	for _, i := range order {
		d := strings.ToLower(alerts[i].Domain)
		if props[d] == nil {
			props[d] = map[string]string{}
			domains = append(domains, d)
		}
		for k, v := range companyProps(alerts[i]) {
			props[d][k] = v
		}
		props[d]["domain"] = d
	}
	if len(domains) == 0 {
		return out
	}
	in := struct {
		Inputs []upsertInput `json:"inputs"`
	}{}
	for _, d := range domains {
		in.Inputs = append(in.Inputs, upsertInput{ID: d, IDProperty: "domain", Properties: props[d]})
	}
	var res struct {
		Results []object `json:"results"`
		Errors  []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	_, r := a.call(ctx, http.MethodPost, "/crm/v3/objects/companies/batch/upsert", in, &res)
	if r.Outcome == sdk.PermanentFailure && strings.HasSuffix(r.Reason, needProperties) {
		// A property that the connection's Test did not make (it ran
		// before this version added the property, or never): made now.
		if r = a.properties(ctx); r.Outcome == sdk.Delivered {
			_, r = a.call(ctx, http.MethodPost, "/crm/v3/objects/companies/batch/upsert", in, &res)
		}
	}
	if r.Outcome != sdk.Delivered {
		for _, i := range order {
			out[i] = r
		}
		return out
	}
	ids := map[string]string{}
	for _, o := range res.Results {
		ids[strings.ToLower(o.Properties["domain"])] = o.ID
	}
	for _, i := range order {
		id := ids[strings.ToLower(alerts[i].Domain)]
		switch {
		case id == "":
			why := "HubSpot did not upsert the company"
			if len(res.Errors) > 0 {
				why += ": " + kit.Quote(res.Errors[0].Message, 200)
			}
			out[i] = sdk.FailedResult(why)
		case s.Notes != nil && !*s.Notes:
			out[i] = sdk.DeliveredResult()
		default:
			out[i] = a.note(ctx, id, alerts[i])
		}
	}
	return out
}

func (a api) note(ctx context.Context, companyID string, al kit.Alert) sdk.Result {
	type assocType struct {
		Category string `json:"associationCategory"`
		TypeID   int    `json:"associationTypeId"`
	}
	type assoc struct {
		To struct {
			ID string `json:"id"`
		} `json:"to"`
		Types []assocType `json:"types"`
	}
	as := assoc{Types: []assocType{{"HUBSPOT_DEFINED", noteToCompany}}}
	as.To.ID = companyID
	body := map[string]any{
		"properties":   map[string]string{"hs_timestamp": al.Time.Format(time.RFC3339Nano), "hs_note_body": Note(al)},
		"associations": []assoc{as},
	}
	_, r := a.call(ctx, http.MethodPost, "/crm/v3/objects/notes", body, nil)
	return r
}

// Test makes sure the aivis company properties exist (creating the
// missing ones, which also proves the token and its scopes), then delivers
// the test event when it names a domain.
func (c *connector) Test(ctx context.Context, raw json.RawMessage, ev sdk.Event) sdk.Result {
	s, f := parse(raw)
	if len(f) > 0 {
		return sdk.FailedResult(f.Err())
	}
	if r := c.api(s).properties(ctx); r.Outcome != sdk.Delivered || ev.Domain == "" {
		return r
	}
	return c.Deliver(ctx, raw, []sdk.Event{ev})[0]
}

// properties creates the aivis company properties that are missing.
func (a api) properties(ctx context.Context) sdk.Result {
	for _, p := range Properties {
		status, r := a.call(ctx, http.MethodGet, "/crm/v3/properties/companies/"+p.Name, nil, nil)
		if status == http.StatusNotFound {
			_, r = a.call(ctx, http.MethodPost, "/crm/v3/properties/companies", map[string]string{
				"name": p.Name, "label": p.Label, "type": p.Type, "fieldType": p.FieldType, "groupName": "companyinformation",
				"description": "Written by aivis."}, nil)
		}
		if r.Outcome != sdk.Delivered {
			return r
		}
	}
	return sdk.DeliveredResult()
}
