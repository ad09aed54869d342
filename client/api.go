package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aivis/aivis/webhook"
)

// The methods below are the operations of the bearer interface (/v1) and
// of the unauthenticated endpoints; openapi.json names each by the
// operationId in its comment.

// call sends a bearer call to path under the API URL and decodes the
// answer into a new T.
func call[T any](ctx context.Context, c *Client, method, path string, body any, opts []RequestOption) (*T, error) {
	var out T
	if err := c.do(ctx, method, c.apiURL+path, authBearer, body, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// query encodes the pairs of name and value whose value is not "".
func query(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

func itoa(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func boolParam(b *bool) string {
	if b == nil {
		return ""
	}
	return strconv.FormatBool(*b)
}

func esc(s string) string { return url.PathEscape(s) }

// PageParams selects a page of webhooks, connections or domains; zero
// fields do not filter.
type PageParams struct {
	Limit    int
	Cursor   string
	ClientID string
}

func (p PageParams) query() string {
	return query("limit", itoa(p.Limit), "cursor", p.Cursor, "client_id", p.ClientID)
}

// DeliveryParams selects a page of a webhook's or a connection's
// deliveries; Status filters by state (pending, succeeded, failed, ...).
type DeliveryParams struct {
	Limit  int
	Cursor string
	Status string
}

func (p DeliveryParams) query() string {
	return query("limit", itoa(p.Limit), "cursor", p.Cursor, "status", p.Status)
}

// Health is the answer of /healthz and /livez.
type Health struct {
	Status string `json:"status"`
}

// Readiness is the answer of /readyz: ready, or unavailable (an Error
// of status 503) naming the parts that did not answer, or draining.
type Readiness struct {
	Status   string   `json:"status"`
	Failing  []string `json:"failing,omitempty"`
	Degraded []string `json:"degraded,omitempty"`
}

// Health reports whether the server process serves (getHealth).
func (c *Client) Health(ctx context.Context) (*Health, error) {
	return bare[Health](ctx, c, "/healthz")
}

// Liveness reports whether the server process serves (getLiveness).
func (c *Client) Liveness(ctx context.Context) (*Health, error) {
	return bare[Health](ctx, c, "/livez")
}

// Readiness reports whether the server is ready to serve (getReadiness).
// A server that is not answers 503: the error is an *Error of that status,
// and the Readiness returned with it says why (unavailable, with the
// failing parts, or draining).
func (c *Client) Readiness(ctx context.Context) (*Readiness, error) {
	r, err := bare[Readiness](ctx, c, "/readyz")
	var e *Error
	if errors.As(err, &e) && e.StatusCode == http.StatusServiceUnavailable {
		var not Readiness
		if json.Unmarshal(e.body, &not) == nil && not.Status != "" {
			return &not, err
		}
	}
	return r, err
}

// OpenAPIDocument returns the server's OpenAPI 3.1 document
// (getOpenAPIDocument).
func (c *Client) OpenAPIDocument(ctx context.Context) (json.RawMessage, error) {
	doc, err := bare[json.RawMessage](ctx, c, "/openapi.json")
	if err != nil {
		return nil, err
	}
	return *doc, nil
}

// bare is an unauthenticated GET.
func bare[T any](ctx context.Context, c *Client, path string) (*T, error) {
	var out T
	if err := c.do(ctx, http.MethodGet, c.apiURL+path, authNone, nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// RecordReading records a visibility reading from another source
// (recordVisibilityReading).
func (c *Client) RecordReading(ctx context.Context, in RecordReading, opts ...RequestOption) (*RecordedReading, error) {
	return call[RecordedReading](ctx, c, http.MethodPost, "/v1/visibility", in, opts)
}

// HistoryParams selects a page of a domain's readings, newest first.
type HistoryParams struct {
	Domain   string
	ClientID string
	Market   string // a market's history: its language and country, "de-DE"
	Limit    int
	Cursor   string
}

// ListVisibilityHistory returns one page of a domain's readings
// (getVisibilityHistory).
func (c *Client) ListVisibilityHistory(ctx context.Context, p HistoryParams) (*List[VisibilityReading], error) {
	return call[List[VisibilityReading]](ctx, c, http.MethodGet, "/v1/visibility/history"+
		query("domain", p.Domain, "client_id", p.ClientID, "market", p.Market, "limit", itoa(p.Limit), "cursor", p.Cursor), nil, nil)
}

// VisibilityHistory iterates over a domain's readings, newest first.
func (c *Client) VisibilityHistory(ctx context.Context, p HistoryParams) iter.Seq2[VisibilityReading, error] {
	return pages(func(cursor string) (*List[VisibilityReading], error) {
		p.Cursor = cursor
		return c.ListVisibilityHistory(ctx, p)
	}, p.Cursor)
}

// ListDomains returns one page of the monitored domains (listDomains).
func (c *Client) ListDomains(ctx context.Context, p PageParams) (*List[MonitoredDomain], error) {
	return call[List[MonitoredDomain]](ctx, c, http.MethodGet, "/v1/domains"+p.query(), nil, nil)
}

// Domains iterates over every monitored domain.
func (c *Client) Domains(ctx context.Context, p PageParams) iter.Seq2[MonitoredDomain, error] {
	return pages(func(cursor string) (*List[MonitoredDomain], error) {
		p.Cursor = cursor
		return c.ListDomains(ctx, p)
	}, p.Cursor)
}

// CreateDomain starts monitoring a domain (createDomain).
func (c *Client) CreateDomain(ctx context.Context, in CreateDomain, opts ...RequestOption) (*MonitoredDomain, error) {
	return call[MonitoredDomain](ctx, c, http.MethodPost, "/v1/domains", in, opts)
}

// GetDomain reads a monitored domain (getDomain).
func (c *Client) GetDomain(ctx context.Context, id string) (*MonitoredDomain, error) {
	return call[MonitoredDomain](ctx, c, http.MethodGet, "/v1/domains/"+esc(id), nil, nil)
}

// UpdateDomain changes a monitored domain's lists (updateDomain).
func (c *Client) UpdateDomain(ctx context.Context, id string, in UpdateDomain) (*MonitoredDomain, error) {
	return call[MonitoredDomain](ctx, c, http.MethodPatch, "/v1/domains/"+esc(id), in, nil)
}

// DeleteDomain stops monitoring a domain (deleteDomain).
func (c *Client) DeleteDomain(ctx context.Context, id string) error {
	_, err := call[struct{}](ctx, c, http.MethodDelete, "/v1/domains/"+esc(id), nil, nil)
	return err
}

// GetDomainPrompts returns a domain's own prompts and the generated ones
// (getDomainPrompts).
func (c *Client) GetDomainPrompts(ctx context.Context, id string) (*DomainPrompts, error) {
	return call[DomainPrompts](ctx, c, http.MethodGet, "/v1/domains/"+esc(id)+"/prompts", nil, nil)
}

// PutDomainPrompts replaces a domain's own prompts (putDomainPrompts).
func (c *Client) PutDomainPrompts(ctx context.Context, id string, in PutPrompts) (*DomainPrompts, error) {
	return call[DomainPrompts](ctx, c, http.MethodPut, "/v1/domains/"+esc(id)+"/prompts", in, nil)
}

// RequestScan queues a scan of a monitored domain (requestScan).
func (c *Client) RequestScan(ctx context.Context, in RequestScan, opts ...RequestOption) (*Scan, error) {
	return call[Scan](ctx, c, http.MethodPost, "/v1/visibility/scans", in, opts)
}

// GetScan reads a scan (getScan).
func (c *Client) GetScan(ctx context.Context, id string) (*Scan, error) {
	return call[Scan](ctx, c, http.MethodGet, "/v1/visibility/scans/"+esc(id), nil, nil)
}

// AnswerParams selects a page of a scan's answers; zero fields do not
// filter.
type AnswerParams struct {
	Limit     int
	Cursor    string
	Engine    string
	Market    string // the answers of one market, its language and country: "de-DE"
	Prompt    *int   // the prompt's index in the scan's prompt set
	Mentioned *bool
	Cited     *bool
	Q         string // text the answer contains, ignoring case
}

// ListScanAnswers returns one page of a scan's answers (listScanAnswers).
func (c *Client) ListScanAnswers(ctx context.Context, scanID string, p AnswerParams) (*List[ScanAnswer], error) {
	prompt := ""
	if p.Prompt != nil {
		prompt = strconv.Itoa(*p.Prompt)
	}
	return call[List[ScanAnswer]](ctx, c, http.MethodGet, "/v1/visibility/scans/"+esc(scanID)+"/answers"+
		query("limit", itoa(p.Limit), "cursor", p.Cursor, "engine", p.Engine, "market", p.Market, "prompt", prompt,
			"mentioned", boolParam(p.Mentioned), "cited", boolParam(p.Cited), "q", p.Q), nil, nil)
}

// ScanAnswers iterates over a scan's answers.
func (c *Client) ScanAnswers(ctx context.Context, scanID string, p AnswerParams) iter.Seq2[ScanAnswer, error] {
	return pages(func(cursor string) (*List[ScanAnswer], error) {
		p.Cursor = cursor
		return c.ListScanAnswers(ctx, scanID, p)
	}, p.Cursor)
}

// ListWebhooks returns one page of webhooks (listWebhooks).
func (c *Client) ListWebhooks(ctx context.Context, p PageParams) (*List[Webhook], error) {
	return call[List[Webhook]](ctx, c, http.MethodGet, "/v1/webhooks"+p.query(), nil, nil)
}

// Webhooks iterates over every webhook.
func (c *Client) Webhooks(ctx context.Context, p PageParams) iter.Seq2[Webhook, error] {
	return pages(func(cursor string) (*List[Webhook], error) {
		p.Cursor = cursor
		return c.ListWebhooks(ctx, p)
	}, p.Cursor)
}

// CreateWebhook registers a webhook; the answer holds its secret, shown
// once (createWebhook).
func (c *Client) CreateWebhook(ctx context.Context, in CreateWebhook, opts ...RequestOption) (*Webhook, error) {
	return call[Webhook](ctx, c, http.MethodPost, "/v1/webhooks", in, opts)
}

// GetWebhook reads a webhook (getWebhook).
func (c *Client) GetWebhook(ctx context.Context, id string) (*Webhook, error) {
	return call[Webhook](ctx, c, http.MethodGet, "/v1/webhooks/"+esc(id), nil, nil)
}

// UpdateWebhook changes a webhook (updateWebhook).
func (c *Client) UpdateWebhook(ctx context.Context, id string, in UpdateWebhook) (*Webhook, error) {
	return call[Webhook](ctx, c, http.MethodPatch, "/v1/webhooks/"+esc(id), in, nil)
}

// DeleteWebhook deletes a webhook (deleteWebhook).
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	_, err := call[struct{}](ctx, c, http.MethodDelete, "/v1/webhooks/"+esc(id), nil, nil)
	return err
}

// RotateWebhookSecret gives a webhook a new secret, the old one staying
// valid for the grace period (rotateWebhookSecret).
func (c *Client) RotateWebhookSecret(ctx context.Context, id string, in RotateSecret, opts ...RequestOption) (*Webhook, error) {
	return call[Webhook](ctx, c, http.MethodPost, "/v1/webhooks/"+esc(id)+"/rotate-secret", in, opts)
}

// TestWebhook sends a webhook_test event to a webhook (testWebhook).
func (c *Client) TestWebhook(ctx context.Context, id string, opts ...RequestOption) (*WebhookTestResult, error) {
	return call[WebhookTestResult](ctx, c, http.MethodPost, "/v1/webhooks/"+esc(id)+"/test", nil, opts)
}

// ReplayWebhookDeliveries schedules a webhook's failed deliveries again
// (replayWebhookDeliveries).
func (c *Client) ReplayWebhookDeliveries(ctx context.Context, id string, in Replay, opts ...RequestOption) (*ReplayResult, error) {
	return call[ReplayResult](ctx, c, http.MethodPost, "/v1/webhooks/"+esc(id)+"/replay", in, opts)
}

// ListWebhookDeliveries returns one page of a webhook's deliveries
// (listWebhookDeliveries).
func (c *Client) ListWebhookDeliveries(ctx context.Context, id string, p DeliveryParams) (*List[Delivery], error) {
	return call[List[Delivery]](ctx, c, http.MethodGet, "/v1/webhooks/"+esc(id)+"/deliveries"+p.query(), nil, nil)
}

// WebhookDeliveries iterates over a webhook's deliveries.
func (c *Client) WebhookDeliveries(ctx context.Context, id string, p DeliveryParams) iter.Seq2[Delivery, error] {
	return pages(func(cursor string) (*List[Delivery], error) {
		p.Cursor = cursor
		return c.ListWebhookDeliveries(ctx, id, p)
	}, p.Cursor)
}

// GetWebhookDelivery reads a delivery with its attempts
// (getWebhookDelivery).
func (c *Client) GetWebhookDelivery(ctx context.Context, id, deliveryID string) (*Delivery, error) {
	return call[Delivery](ctx, c, http.MethodGet, "/v1/webhooks/"+esc(id)+"/deliveries/"+esc(deliveryID), nil, nil)
}

// RedeliverWebhookDelivery schedules a delivery again
// (redeliverWebhookDelivery).
func (c *Client) RedeliverWebhookDelivery(ctx context.Context, id, deliveryID string, opts ...RequestOption) (*Delivery, error) {
	return call[Delivery](ctx, c, http.MethodPost, "/v1/webhooks/"+esc(id)+"/deliveries/"+esc(deliveryID)+"/redeliver", nil, opts)
}

// ListConnectors returns the connectors the server runs (listConnectors).
func (c *Client) ListConnectors(ctx context.Context) (*List[ConnectorKind], error) {
	return call[List[ConnectorKind]](ctx, c, http.MethodGet, "/v1/connectors", nil, nil)
}

// ListConnections returns one page of connections (listConnections).
func (c *Client) ListConnections(ctx context.Context, p PageParams) (*List[Connection], error) {
	return call[List[Connection]](ctx, c, http.MethodGet, "/v1/connections"+p.query(), nil, nil)
}

// Connections iterates over every connection.
func (c *Client) Connections(ctx context.Context, p PageParams) iter.Seq2[Connection, error] {
	return pages(func(cursor string) (*List[Connection], error) {
		p.Cursor = cursor
		return c.ListConnections(ctx, p)
	}, p.Cursor)
}

// CreateConnection configures a connector (createConnection).
func (c *Client) CreateConnection(ctx context.Context, in CreateConnection, opts ...RequestOption) (*Connection, error) {
	return call[Connection](ctx, c, http.MethodPost, "/v1/connections", in, opts)
}

// GetConnection reads a connection (getConnection).
func (c *Client) GetConnection(ctx context.Context, id string) (*Connection, error) {
	return call[Connection](ctx, c, http.MethodGet, "/v1/connections/"+esc(id), nil, nil)
}

// UpdateConnection changes a connection (updateConnection).
func (c *Client) UpdateConnection(ctx context.Context, id string, in UpdateConnection) (*Connection, error) {
	return call[Connection](ctx, c, http.MethodPatch, "/v1/connections/"+esc(id), in, nil)
}

// DeleteConnection deletes a connection (deleteConnection).
func (c *Client) DeleteConnection(ctx context.Context, id string) error {
	_, err := call[struct{}](ctx, c, http.MethodDelete, "/v1/connections/"+esc(id), nil, nil)
	return err
}

// TestConnection sends a test event through a connection's connector
// (testConnection).
func (c *Client) TestConnection(ctx context.Context, id string, opts ...RequestOption) (*ConnectionTestResult, error) {
	return call[ConnectionTestResult](ctx, c, http.MethodPost, "/v1/connections/"+esc(id)+"/test", nil, opts)
}

// ReplayConnectionDeliveries schedules a connection's failed deliveries
// again (replayConnectionDeliveries).
func (c *Client) ReplayConnectionDeliveries(ctx context.Context, id string, in Replay, opts ...RequestOption) (*ReplayResult, error) {
	return call[ReplayResult](ctx, c, http.MethodPost, "/v1/connections/"+esc(id)+"/replay", in, opts)
}

// ListConnectionDeliveries returns one page of a connection's deliveries
// (listConnectionDeliveries).
func (c *Client) ListConnectionDeliveries(ctx context.Context, id string, p DeliveryParams) (*List[Delivery], error) {
	return call[List[Delivery]](ctx, c, http.MethodGet, "/v1/connections/"+esc(id)+"/deliveries"+p.query(), nil, nil)
}

// ConnectionDeliveries iterates over a connection's deliveries.
func (c *Client) ConnectionDeliveries(ctx context.Context, id string, p DeliveryParams) iter.Seq2[Delivery, error] {
	return pages(func(cursor string) (*List[Delivery], error) {
		p.Cursor = cursor
		return c.ListConnectionDeliveries(ctx, id, p)
	}, p.Cursor)
}

// GetConnectionDelivery reads a delivery with its attempts
// (getConnectionDelivery).
func (c *Client) GetConnectionDelivery(ctx context.Context, id, deliveryID string) (*Delivery, error) {
	return call[Delivery](ctx, c, http.MethodGet, "/v1/connections/"+esc(id)+"/deliveries/"+esc(deliveryID), nil, nil)
}

// RedeliverConnectionDelivery schedules a delivery again
// (redeliverConnectionDelivery).
func (c *Client) RedeliverConnectionDelivery(ctx context.Context, id, deliveryID string, opts ...RequestOption) (*Delivery, error) {
	return call[Delivery](ctx, c, http.MethodPost, "/v1/connections/"+esc(id)+"/deliveries/"+esc(deliveryID)+"/redeliver", nil, opts)
}

// ZapierSubscribe subscribes a Zapier REST Hook (zapierSubscribe).
func (c *Client) ZapierSubscribe(ctx context.Context, in ZapierSubscribe, opts ...RequestOption) (*ZapierSubscription, error) {
	return call[ZapierSubscription](ctx, c, http.MethodPost, "/v1/zapier/hooks", in, opts)
}

// ZapierUnsubscribe removes a Zapier REST Hook (zapierUnsubscribe).
func (c *Client) ZapierUnsubscribe(ctx context.Context, id string) error {
	_, err := call[struct{}](ctx, c, http.MethodDelete, "/v1/zapier/hooks/"+esc(id), nil, nil)
	return err
}

// Event is an event as receivers get it: its kind's data in Data, whose
// schema the catalog (ListEventTypes) gives.
type Event struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// EventParams selects a page of recent events, newest first.
type EventParams struct {
	Event    string // only events of this kind
	ClientID string
	Limit    int
	Cursor   string
}

// ListEvents returns one page of the account's recent events
// (listRecentEvents).
func (c *Client) ListEvents(ctx context.Context, p EventParams) (*List[Event], error) {
	return call[List[Event]](ctx, c, http.MethodGet, "/v1/events"+
		query("event", p.Event, "client_id", p.ClientID, "limit", itoa(p.Limit), "cursor", p.Cursor), nil, nil)
}

// Events iterates over the account's recent events, newest first.
func (c *Client) Events(ctx context.Context, p EventParams) iter.Seq2[Event, error] {
	return pages(func(cursor string) (*List[Event], error) {
		p.Cursor = cursor
		return c.ListEvents(ctx, p)
	}, p.Cursor)
}

// EventType is one kind of the event catalog: the JSON Schema (2020-12)
// of its body and an example.
type EventType struct {
	Kind        string          `json:"kind"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Example     json.RawMessage `json:"example"`
}

// ListEventTypes returns the event catalog: every kind with its
// description, schema and an example; any key may read it
// (listEventTypes).
func (c *Client) ListEventTypes(ctx context.Context) (*List[EventType], error) {
	return call[List[EventType]](ctx, c, http.MethodGet, "/v1/event-types", nil, nil)
}

// ExportRecord is one line of an account's export: a row of one of the
// account's tables, or the end line (Kind "end", Data {"records": N}).
type ExportRecord struct {
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
}

// ExportAccount streams everything the key's account owns, line by line;
// it needs an account-level key with every scope (exportAccount). The
// iteration stops at the first error, which it yields; an export that
// ends without its end line yields io.ErrUnexpectedEOF.
func (c *Client) ExportAccount(ctx context.Context) iter.Seq2[ExportRecord, error] {
	return func(yield func(ExportRecord, error) bool) {
		res, err := c.open(ctx, http.MethodGet, c.apiURL+"/v1/account/export", authBearer, nil, nil)
		if err != nil {
			yield(ExportRecord{}, err)
			return
		}
		defer res.Body.Close()
		dec := json.NewDecoder(res.Body)
		for {
			var r ExportRecord
			if err := dec.Decode(&r); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				yield(ExportRecord{}, fmt.Errorf("aivis: export: %w", err))
				return
			}
			if !yield(r, nil) || r.Kind == "end" {
				return
			}
		}
	}
}

// VerifyEvent checks a webhook delivery's signature with v (see the
// webhook package: NewVerifier takes the webhook's secrets, the previous
// one too during a rotation) and decodes its body.
func VerifyEvent(v *webhook.Verifier, h http.Header, body []byte) (*Event, error) {
	if err := v.Verify(h, body); err != nil {
		return nil, err
	}
	var e Event
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, fmt.Errorf("aivis: webhook body: %w", err)
	}
	return &e, nil
}

// UsageCount is the number of requests one key made in one UTC hour:
// every authenticated request of either interface that was not refused
// with 429.
type UsageCount struct {
	Hour     time.Time `json:"hour"`
	KeyID    string    `json:"key_id"`
	KeyName  string    `json:"key_name"`
	KeyHint  string    `json:"key_hint"`
	ClientID *string   `json:"client_id"`
	Requests int64     `json:"requests"`
}

// UsageParams selects the hourly counts of the hours that start at From
// or later and before To (the zero From: 30 days before now; the zero To:
// no end), of one key (KeyID) or of a client's keys (ClientID).
type UsageParams struct {
	From, To time.Time
	KeyID    string
	ClientID string
	Limit    int
	Cursor   string
}

func (p UsageParams) query() string {
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	return query("from", stamp(p.From), "to", stamp(p.To), "key_id", p.KeyID, "client_id", p.ClientID,
		"limit", itoa(p.Limit), "cursor", p.Cursor)
}

// ListUsage returns one page of the requests made per key and hour,
// oldest hour first (listUsage).
func (c *Client) ListUsage(ctx context.Context, p UsageParams) (*List[UsageCount], error) {
	return call[List[UsageCount]](ctx, c, http.MethodGet, "/v1/usage"+p.query(), nil, nil)
}

// Usage iterates over the requests made per key and hour, oldest first.
func (c *Client) Usage(ctx context.Context, p UsageParams) iter.Seq2[UsageCount, error] {
	return pages(func(cursor string) (*List[UsageCount], error) {
		p.Cursor = cursor
		return c.ListUsage(ctx, p)
	}, p.Cursor)
}
