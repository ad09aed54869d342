package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"time"
)

// TrafficSummary is GET /v1/domains/{id}/traffic: a domain's AI crawler
// requests and AI referrals over the days FirstDay to LastDay (both
// included, YYYY-MM-DD, UTC).
type TrafficSummary struct {
	DomainID string `json:"domain_id"`
	FirstDay string `json:"first_day"`
	LastDay  string `json:"last_day"`
	// Agents are the AI agents seen, most requests first.
	Agents []AgentTraffic `json:"agents"`
	// Purposes are the requests per purpose (train, index, fetch, other),
	// spoofed requests left out.
	Purposes []PurposeTraffic `json:"purposes"`
	// TopPages are the pages AI agents requested most (at most 20),
	// spoofed requests left out.
	TopPages []PageTraffic `json:"top_pages"`
	// Problems are the 4xx and 5xx answers AI agents got, per page, agent
	// and status class, most first (at most 50).
	Problems []TrafficProblem `json:"problems"`
	// Referrals are the visits each AI assistant sent, most first.
	Referrals []AssistantTraffic `json:"referrals"`
	// LastBatchAt is when the domain's latest batch of logs came (null:
	// none yet).
	LastBatchAt *time.Time `json:"last_batch_at"`
}

// DayCount is a count on one UTC day (YYYY-MM-DD).
type DayCount struct {
	Day   string `json:"day"`
	Count int64  `json:"count"`
}

// AgentTraffic is one AI agent's requests.
type AgentTraffic struct {
	Agent    string `json:"agent"`
	Operator string `json:"operator"`
	Purpose  string `json:"purpose"`
	Hits     int64  `json:"hits"`
	// ByVerification counts the requests verified, unverified and spoofed.
	ByVerification Verifications `json:"by_verification"`
	Status         StatusClasses `json:"status"`
	Bytes          int64         `json:"bytes"`
	// Days are the requests of each day of the window, zeros included.
	Days []DayCount `json:"days"`
}

// Verifications counts requests by what their address says of their
// claim to be the agent.
type Verifications struct {
	Verified   int64 `json:"verified"`
	Unverified int64 `json:"unverified"`
	Spoofed    int64 `json:"spoofed"`
}

// StatusClasses counts answers by status class ("none": the log gave
// no status).
type StatusClasses struct {
	S2xx int64 `json:"2xx"`
	S3xx int64 `json:"3xx"`
	S4xx int64 `json:"4xx"`
	S5xx int64 `json:"5xx"`
	None int64 `json:"none"`
}

// PurposeTraffic is the requests of one purpose.
type PurposeTraffic struct {
	Purpose string     `json:"purpose"`
	Hits    int64      `json:"hits"`
	Days    []DayCount `json:"days"`
}

// PageTraffic is one page's AI agent requests.
type PageTraffic struct {
	Page   string `json:"page"`
	Hits   int64  `json:"hits"`
	Agents int    `json:"agents"`
}

// TrafficProblem is what AI agents got wrong on one page.
type TrafficProblem struct {
	Page   string `json:"page"`
	Agent  string `json:"agent"`
	Status string `json:"status"` // 4xx or 5xx
	Hits   int64  `json:"hits"`
}

// AssistantTraffic is the visits one AI assistant referred.
type AssistantTraffic struct {
	Assistant string     `json:"assistant"`
	Visits    int64      `json:"visits"`
	Days      []DayCount `json:"days"`
}

// TrafficPage is one page of GET /v1/domains/{id}/traffic/pages: the AI
// agents that requested it, the engines whose answers cited it in the
// domain's latest completed scan, and the assistants that sent visitors.
type TrafficPage struct {
	Page      string            `json:"page"`
	Crawls    []AgentHits       `json:"crawls"`
	CitedBy   []EngineCitation  `json:"cited_by"`
	Referrals []AssistantVisits `json:"referrals"`
}

// AgentHits is an agent's requests of a page, Errors the 4xx and 5xx
// answers among them.
type AgentHits struct {
	Agent  string `json:"agent"`
	Hits   int64  `json:"hits"`
	Errors int64  `json:"errors"`
}

// EngineCitation is how many of an engine's answers cited a page.
type EngineCitation struct {
	Engine  string `json:"engine"`
	Answers int    `json:"answers"`
}

// AssistantVisits is the visits an assistant sent to a page.
type AssistantVisits struct {
	Assistant string `json:"assistant"`
	Visits    int64  `json:"visits"`
}

// TrafficParams selects the days of a traffic read: From and To
// (YYYY-MM-DD, both included; "" for the last 30 days up to today).
type TrafficParams struct {
	From, To string
	Limit    int
	Cursor   string
}

func (p TrafficParams) query() string {
	return query("from", p.From, "to", p.To, "limit", itoa(p.Limit), "cursor", p.Cursor)
}

// GetTraffic reads a domain's AI crawler requests and referrals
// (getTraffic).
func (c *Client) GetTraffic(ctx context.Context, domainID string, p TrafficParams) (*TrafficSummary, error) {
	p.Limit, p.Cursor = 0, ""
	return call[TrafficSummary](ctx, c, http.MethodGet, "/v1/domains/"+esc(domainID)+"/traffic"+p.query(), nil, nil)
}

// ListTrafficPages returns one page of a domain's pages joined with the
// agents that crawled them, the engines that cite them and the assistants
// that referred visits (listTrafficPages).
func (c *Client) ListTrafficPages(ctx context.Context, domainID string, p TrafficParams) (*List[TrafficPage], error) {
	return call[List[TrafficPage]](ctx, c, http.MethodGet, "/v1/domains/"+esc(domainID)+"/traffic/pages"+p.query(), nil, nil)
}

// TrafficPages iterates over a domain's pages.
func (c *Client) TrafficPages(ctx context.Context, domainID string, p TrafficParams) iter.Seq2[TrafficPage, error] {
	return pages(func(cursor string) (*List[TrafficPage], error) {
		p.Cursor = cursor
		return c.ListTrafficPages(ctx, domainID, p)
	}, p.Cursor)
}

// IngestResult is what a batch of logs did: how many lines it had, how
// many could not be read (the first few with the reason), and whether the
// domain had the same batch already (Duplicate: nothing added).
// Validation is Cloudflare's validation upload, answered and not kept.
type IngestResult struct {
	Validation       bool            `json:"validation,omitempty"`
	BatchID          string          `json:"batch_id,omitempty"`
	Duplicate        bool            `json:"duplicate"`
	Lines            int64           `json:"lines"`
	Malformed        int64           `json:"malformed"`
	MalformedSamples []MalformedLine `json:"malformed_samples"`
}

// MalformedLine is a line of a batch that could not be read, its
// addresses blanked.
type MalformedLine struct {
	Line    int    `json:"line"`
	Reason  string `json:"reason"`
	Excerpt string `json:"excerpt"`
}

// UploadTrafficLogs uploads a combined (Apache, nginx) log file of a
// domain, gzip or plain (uploadTrafficLogs). A file uploaded twice is
// kept once.
func (c *Client) UploadTrafficLogs(ctx context.Context, domainID string, log []byte, opts ...RequestOption) (*IngestResult, error) {
	ct := "text/plain"
	if len(log) >= 2 && log[0] == 0x1f && log[1] == 0x8b {
		ct = "application/gzip"
	}
	opts = append([]RequestOption{func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+c.key) }}, opts...)
	return sendRaw[IngestResult](ctx, c, http.MethodPost, "/v1/domains/"+esc(domainID)+"/traffic/logs", ct, log, opts)
}

// IngestToken lets one log source (cloudflare, vercel, fastly, file)
// deliver a domain's logs. Token, the secret, is in the answer of its
// creation only.
type IngestToken struct {
	ID              string     `json:"id"`
	DomainID        string     `json:"domain_id"`
	Name            string     `json:"name"`
	Source          string     `json:"source"`
	Prefix          string     `json:"prefix"`
	FastlyServiceID *string    `json:"fastly_service_id"`
	ClientID        *string    `json:"client_id"`
	CreatedAt       time.Time  `json:"created_at"`
	LastUsedAt      *time.Time `json:"last_used_at"`
	RevokedAt       *time.Time `json:"revoked_at"`
	Token           string     `json:"token,omitempty"`
}

// CreateIngestToken is the body of POST /v1/domains/{id}/ingest-tokens.
type CreateIngestToken struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// SigningSecret is a Vercel drain's signature secret (vercel only,
	// required there).
	SigningSecret string `json:"signing_secret,omitempty"`
	// FastlyServiceID is the Fastly service that delivers (fastly only).
	FastlyServiceID string `json:"fastly_service_id,omitempty"`
}

// ListIngestTokens returns a domain's ingest tokens, revoked ones too,
// newest first (listIngestTokens).
func (c *Client) ListIngestTokens(ctx context.Context, domainID string) (*List[IngestToken], error) {
	return call[List[IngestToken]](ctx, c, http.MethodGet, "/v1/domains/"+esc(domainID)+"/ingest-tokens", nil, nil)
}

// CreateIngestToken makes an ingest token of a domain; its secret
// (Token) is shown only in this answer (createIngestToken).
func (c *Client) CreateIngestToken(ctx context.Context, domainID string, in CreateIngestToken, opts ...RequestOption) (*IngestToken, error) {
	return call[IngestToken](ctx, c, http.MethodPost, "/v1/domains/"+esc(domainID)+"/ingest-tokens", in, opts)
}

// RevokeIngestToken revokes an ingest token: its source's deliveries are
// refused from now on (revokeIngestToken).
func (c *Client) RevokeIngestToken(ctx context.Context, domainID, tokenID string) error {
	_, err := call[struct{}](ctx, c, http.MethodDelete, "/v1/domains/"+esc(domainID)+"/ingest-tokens/"+esc(tokenID), nil, nil)
	return err
}

// Crawler is an AI crawler or assistant of the catalog, matched by Token
// in the user agent, and the IP range lists that verify it.
type Crawler struct {
	Token    string        `json:"token"`
	Operator string        `json:"operator"`
	Purpose  string        `json:"purpose"`
	Lists    []CrawlerList `json:"lists"`
}

// CrawlerList is an IP range list: whether it is loaded, how many
// prefixes it holds and when its operator made it.
type CrawlerList struct {
	Name      string     `json:"name"`
	Loaded    bool       `json:"loaded"`
	Prefixes  int        `json:"prefixes"`
	CreatedAt *time.Time `json:"created_at"`
}

// ListCrawlers returns the catalog of AI crawlers and assistants
// (listCrawlers).
func (c *Client) ListCrawlers(ctx context.Context) (*List[Crawler], error) {
	return call[List[Crawler]](ctx, c, http.MethodGet, "/v1/crawlers", nil, nil)
}

// The ingest endpoints are what a CDN calls; a forwarder may deliver a
// batch with them, authenticated by the domain's ingest token (not the
// client's key).

func ingestToken(token string) RequestOption {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

// IngestCloudflare delivers a batch as Cloudflare Logpush does: NDJSON,
// gzip or plain (ingestCloudflare).
func (c *Client) IngestCloudflare(ctx context.Context, token string, batch []byte) (*IngestResult, error) {
	return sendRaw[IngestResult](ctx, c, http.MethodPost, "/ingest/v1/cloudflare", "application/x-ndjson", batch, []RequestOption{ingestToken(token)})
}

// IngestVercel delivers a batch as a Vercel log drain does, signed with
// the drain's secret: x-vercel-signature, the hex HMAC-SHA1 of batch
// (ingestVercel).
func (c *Client) IngestVercel(ctx context.Context, token, signature string, batch []byte) (*IngestResult, error) {
	return sendRaw[IngestResult](ctx, c, http.MethodPost, "/ingest/v1/vercel", "application/json", batch,
		[]RequestOption{ingestToken(token), func(r *http.Request) { r.Header.Set("x-vercel-signature", signature) }})
}

// IngestFastly delivers a batch as Fastly's HTTPS logging does
// (ingestFastly).
func (c *Client) IngestFastly(ctx context.Context, token string, batch []byte) (*IngestResult, error) {
	return sendRaw[IngestResult](ctx, c, http.MethodPost, "/ingest/v1/fastly", "application/json", batch, []RequestOption{ingestToken(token)})
}

// VercelVerification is the answer of Vercel's verification request.
type VercelVerification struct {
	Verified bool `json:"verified"`
}

// VerifyVercelDrain asks as Vercel does when a drain is added: the answer
// carries code in x-vercel-verify (verifyVercelDrain).
func (c *Client) VerifyVercelDrain(ctx context.Context, code string) (*VercelVerification, string, error) {
	res, err := c.open(ctx, http.MethodGet, c.apiURL+"/ingest/v1/vercel"+query("verify", code), authNone, nil, nil)
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	var v VercelVerification
	if err := json.NewDecoder(io.LimitReader(res.Body, maxResponse)).Decode(&v); err != nil {
		return nil, "", fmt.Errorf("aivis: decode vercel verification: %w", err)
	}
	return &v, res.Header.Get("x-vercel-verify"), nil
}

// FastlyChallenge reads Fastly's logging challenge: "*", any service may
// deliver (getFastlyChallenge).
func (c *Client) FastlyChallenge(ctx context.Context) (string, error) {
	res, err := c.open(ctx, http.MethodGet, c.apiURL+"/.well-known/fastly/logging/challenge", authNone, nil, nil)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxResponse))
	if err != nil {
		return "", fmt.Errorf("aivis: read fastly challenge: %w", err)
	}
	return string(bytes.TrimSpace(b)), nil
}

// sendRaw posts body as it is, of content type ct, and decodes the
// answer into a new T. It is not retried on 429.
func sendRaw[T any](ctx context.Context, c *Client, method, path, ct string, body []byte, opts []RequestOption) (*T, error) {
	opts = append([]RequestOption{func(r *http.Request) { r.Header.Set("Content-Type", ct) }}, opts...)
	req, err := http.NewRequestWithContext(ctx, method, c.apiURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("aivis: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	for _, o := range opts {
		o(req)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("aivis: %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxResponse))
	if err != nil {
		return nil, fmt.Errorf("aivis: read response: %w", err)
	}
	rl, hasRL := rateLimitOf(res.Header)
	if hasRL && c.onRateLimit != nil {
		c.onRateLimit(rl)
	}
	if res.StatusCode >= 300 {
		return nil, errorOf(res, b, rl)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("aivis: decode %s %s response: %w", method, path, err)
	}
	return &out, nil
}
