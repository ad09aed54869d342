package client

import (
	"context"
	"iter"
	"net/http"
	"strconv"
	"time"
)

// Change is what changed on a monitored domain's site and when it went
// live: made by hand (POST /v1/domains/{id}/changes) or by a content
// request's result marked published (ContentRequestID).
type Change struct {
	ID       string  `json:"id"`
	DomainID string  `json:"domain_id"`
	ClientID *string `json:"client_id"`
	Title    string  `json:"title"`
	Notes    string  `json:"notes"`
	// At is when the change went live.
	At time.Time `json:"at"`
	// Pages are the paths it targets; Prompts, the domain's prompts it
	// targets (empty when none).
	Pages            []string  `json:"pages"`
	Prompts          []string  `json:"prompts"`
	ContentRequestID *string   `json:"content_request_id"`
	CreatedAt        time.Time `json:"created_at"`
	// LiftMeasuredAt is when the window after the change first filled
	// and lift_measured fired (null until then).
	LiftMeasuredAt *time.Time `json:"lift_measured_at"`
}

// CreateChange is the body of POST /v1/domains/{id}/changes. At nil is
// now; Pages are URLs on the domain or paths; Prompts, the domain's
// prompts by text.
type CreateChange struct {
	Title   string     `json:"title"`
	Notes   string     `json:"notes,omitempty"`
	At      *time.Time `json:"at,omitempty"`
	Pages   []string   `json:"pages,omitempty"`
	Prompts []string   `json:"prompts,omitempty"`
}

// ChangeParams selects a page of a domain's changes: those that went
// live at or after From and before To (RFC 3339; "" is no bound).
type ChangeParams struct {
	From, To string
	Limit    int
	Cursor   string
}

func (p ChangeParams) query() string {
	return query("from", p.From, "to", p.To, "limit", itoa(p.Limit), "cursor", p.Cursor)
}

// LiftParams are what a caller may set of a lift: Scans, the window on
// each side of the change (0: 14); Effect, the difference of a rate or
// share the scans needed are computed for (0.10 is 10 points; 0: 0.10);
// PositionEffect, of the average position in ranks (0: 0.5).
type LiftParams struct {
	Scans          int
	Effect         float64
	PositionEffect float64
}

func (p LiftParams) query() string {
	return query("scans", itoa(p.Scans), "effect", ftoa(p.Effect), "position_effect", ftoa(p.PositionEffect))
}

func ftoa(f float64) string {
	if f == 0 {
		return ""
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// ChangeLift is GET /v1/domains/{id}/changes/{change_id}/lift: a change
// and its lift.
type ChangeLift struct {
	Change Change     `json:"change"`
	Lift   LiftReport `json:"lift"`
}

// LiftReport is the lift of a change over the answers of Scans scans on
// each side of it: overall and per engine, for each measure.
type LiftReport struct {
	Scans  int        `json:"scans"`
	Before LiftWindow `json:"before"`
	After  LiftWindow `json:"after"`
	// Targeted says the change targets some prompts: each measure's
	// figures are the targeted prompts', Control the others' and DiD the
	// difference of their differences.
	Targeted bool         `json:"targeted"`
	Overall  EngineLift   `json:"overall"`
	Engines  []EngineLift `json:"engines"`
}

// LiftWindow is the scans with answers on one side of the change: when
// the first and the last of them ended (null when none).
type LiftWindow struct {
	Scans   int        `json:"scans"`
	FirstAt *time.Time `json:"first_at"`
	LastAt  *time.Time `json:"last_at"`
}

// EngineLift is the lift of one engine's answers ("" over every engine).
type EngineLift struct {
	Engine   string        `json:"engine"`
	Measures []MeasureLift `json:"measures"`
}

// MeasureLift is the lift of one measure: mention_rate, citation_rate,
// share_of_voice, source_share or average_position.
type MeasureLift struct {
	Metric     string   `json:"metric"`
	Before     LiftSide `json:"before"`
	After      LiftSide `json:"after"`
	Difference LiftDiff `json:"difference"`
	// Control is the prompts the change did not target and DiD the
	// difference-in-differences; null when it targets none.
	Control *LiftArm  `json:"control"`
	DiD     *LiftDiff `json:"did"`
}

// LiftArm is a set of prompts on both sides of the change.
type LiftArm struct {
	Before     LiftSide `json:"before"`
	After      LiftSide `json:"after"`
	Difference LiftDiff `json:"difference"`
}

// LiftSide is a measure over one side's answers: Value is a rate or
// share (0 to 1) or a mean rank, over Units answers of Prompts prompts in
// Scans scans; DesignEffect is how much clustering on prompts inflates
// its variance.
type LiftSide struct {
	Value        float64 `json:"value"`
	Units        int     `json:"units"`
	Prompts      int     `json:"prompts"`
	Scans        int     `json:"scans"`
	DesignEffect float64 `json:"design_effect"`
}

// LiftDiff is a difference after − before with its 95% interval (status
// ok), or insufficient_data with the Reason and no figure. ScansNeeded is
// the window that detects a difference of Effect with 80% power at the
// 5% level, MoreScans how many scans after the change it still awaits
// (both -1 when no window can).
type LiftDiff struct {
	Status      string        `json:"status"`
	Reason      string        `json:"reason,omitempty"`
	Method      string        `json:"method,omitempty"`
	Estimate    *float64      `json:"estimate,omitempty"`
	Interval    *LiftInterval `json:"interval_95,omitempty"`
	Effect      float64       `json:"effect"`
	ScansNeeded int           `json:"scans_needed"`
	MoreScans   int           `json:"more_scans"`
}

// LiftInterval is a 95% confidence interval.
type LiftInterval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// PublishContent is the body of POST
// /api/v1/ai/content-requests/{id}/published: where the result went live
// ("" is the request's URL) and when (nil: now).
type PublishContent struct {
	URL         string     `json:"url,omitempty"`
	PublishedAt *time.Time `json:"published_at,omitempty"`
}

// ListChanges returns one page of a domain's changes, the latest first
// (listChanges).
func (c *Client) ListChanges(ctx context.Context, domainID string, p ChangeParams) (*List[Change], error) {
	return call[List[Change]](ctx, c, http.MethodGet, "/v1/domains/"+esc(domainID)+"/changes"+p.query(), nil, nil)
}

// Changes iterates over a domain's changes.
func (c *Client) Changes(ctx context.Context, domainID string, p ChangeParams) iter.Seq2[Change, error] {
	return pages(func(cursor string) (*List[Change], error) {
		p.Cursor = cursor
		return c.ListChanges(ctx, domainID, p)
	}, p.Cursor)
}

// CreateChange records a change of a domain (createChange).
func (c *Client) CreateChange(ctx context.Context, domainID string, in CreateChange, opts ...RequestOption) (*Change, error) {
	return call[Change](ctx, c, http.MethodPost, "/v1/domains/"+esc(domainID)+"/changes", in, opts)
}

// GetChange reads a change of a domain (getChange).
func (c *Client) GetChange(ctx context.Context, domainID, changeID string) (*Change, error) {
	return call[Change](ctx, c, http.MethodGet, "/v1/domains/"+esc(domainID)+"/changes/"+esc(changeID), nil, nil)
}

// DeleteChange deletes a change of a domain (deleteChange).
func (c *Client) DeleteChange(ctx context.Context, domainID, changeID string) error {
	_, err := call[struct{}](ctx, c, http.MethodDelete, "/v1/domains/"+esc(domainID)+"/changes/"+esc(changeID), nil, nil)
	return err
}

// GetChangeLift measures the lift of a change (getChangeLift).
func (c *Client) GetChangeLift(ctx context.Context, domainID, changeID string, p LiftParams) (*ChangeLift, error) {
	return call[ChangeLift](ctx, c, http.MethodGet, "/v1/domains/"+esc(domainID)+"/changes/"+esc(changeID)+"/lift"+p.query(), nil, nil)
}

// PublishContentRequest marks a completed content request's result
// published: the change it makes on the monitored domain that covers the
// page (the same change when marked again) (publishContentRequest).
func (c *Client) PublishContentRequest(ctx context.Context, id string, in PublishContent, opts ...RequestOption) (*Change, error) {
	var out Change
	if err := c.keyed(ctx, http.MethodPost, "/content-requests/"+esc(id)+"/published", in, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}
