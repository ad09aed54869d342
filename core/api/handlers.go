package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/domains"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/visibility"
)

func (s *Server) budgetStatus(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	d := decision(r)
	t, _ := limits.TierByName(p.Account.Tier)
	now := d.Now
	month := limits.Month(now)
	b, active, err := s.store.Budget(r.Context(), p.AccountID(), month)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	committed := b.Spent + b.Reserved
	bs := client.BudgetStatus{
		QuotaTier:  t.Title,
		RateLimits: client.RateLimits{PerMinute: t.PerMinute, PerHour: t.PerHour, PerDay: t.PerDay},
		Usage: client.RequestUsage{RequestsToday: d.Count[limits.Day], RequestsThisHour: d.Count[limits.Hour],
			RequestsThisMinute: d.Count[limits.Minute]},
		Remaining: client.Remaining{Today: d.Remaining(limits.Day), ThisHour: d.Remaining(limits.Hour),
			ThisMinute: d.Remaining(limits.Minute)},
		Resets: client.Resets{Minute: d.Reset[limits.Minute], Hour: d.Reset[limits.Hour], Day: d.Reset[limits.Day]},
		Budget: client.Budget{Currency: "usd", Month: month, MonthlyLimit: client.USD(t.MonthlyBudget),
			Spent: client.USD(b.Spent), Reserved: client.USD(b.Reserved), Committed: client.USD(committed),
			Remaining: client.USD(t.BudgetRemaining(committed)), MaxPerRequest: client.USD(t.MaxBudgetPerRequest),
			ResetsAt: limits.MonthEnd(now)},
		ActiveRequests: client.ActiveRequests{Limit: t.ActiveRequests, Current: active},
		AccountID:      p.AccountID(),
		ClientID:       optional(p.ClientID()),
	}
	writeRaw(w, http.StatusOK, appendBudgetStatus(make([]byte, 0, 768), bs))
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func contentView(cr store.ContentRequest, withContent bool) client.ContentRequest {
	v := client.ContentRequest{
		ID: cr.ID, Status: cr.Status, Step: optional(cr.Step), Type: cr.Type, Domain: cr.Domain, URL: optional(cr.URL),
		TargetQueries: cr.TargetQueries, ClientID: optional(cr.ClientID), Currency: "usd",
		Budget: client.USD(cr.Budget), Spent: client.USD(cr.Spent), Reserved: client.USD(content.Reserved(cr)),
		Metadata: cr.Metadata, FailureReason: optional(cr.FailureReason), Result: cr.Result,
		CreatedAt: cr.CreatedAt, UpdatedAt: cr.UpdatedAt,
	}
	if withContent {
		v.Content = optional(cr.Content)
	}
	if v.TargetQueries == nil {
		v.TargetQueries = []string{}
	}
	if v.Metadata == nil {
		v.Metadata = map[string]string{}
	}
	if v.Result == nil {
		v.Result = json.RawMessage("null")
	}
	if !cr.StartedAt.IsZero() {
		v.StartedAt = &cr.StartedAt
	}
	if !cr.EndedAt.IsZero() {
		v.EndedAt = &cr.EndedAt
	}
	return v
}

// idempotency reads the Idempotency-Key header; nil when there is none.
func idempotency(r *http.Request, body []byte, status int) (*content.Idempotency, error) {
	key, err := idempotencyKey(r)
	if key == "" || err != nil {
		return nil, err
	}
	return &content.Idempotency{Key: key, Hash: requestHash(r, body), Render: func(cr store.ContentRequest) (int, []byte, error) {
		b, err := json.Marshal(envelope(contentView(cr, true)))
		return status, b, err
	}}, nil
}

func writeReplay(w http.ResponseWriter, rp *content.Replay) {
	w.Header().Set("Idempotent-Replayed", "true")
	writeRaw(w, rp.Status, rp.Body)
}

func (s *Server) createContentRequest(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, false)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var in client.CreateContentRequest
	if err := decodeStrict(body, &in); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	idem, err := idempotency(r, body, http.StatusCreated)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	cr, replay, err := s.content.Create(r.Context(), principal(r), in, idem)
	if refused := limitRefusal(err); refused != "" {
		s.limits.Decision(refused, principal(r).Account.Tier)
	}
	switch {
	case err != nil:
		writeError(w, r, s.log, err)
	case replay != nil:
		writeReplay(w, replay)
	default:
		w.Header().Set("Location", "/api/v1/ai/content-requests/"+cr.ID)
		writeJSON(w, http.StatusCreated, envelope(contentView(cr, true)))
	}
}

func (s *Server) getContentRequest(w http.ResponseWriter, r *http.Request) {
	cr, err := s.content.Get(r.Context(), principal(r), chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, envelope(contentView(cr, true)))
}

func (s *Server) cancelContentRequest(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, true)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if body != nil {
		if err := decodeStrict(body, &struct{}{}); err != nil {
			writeError(w, r, s.log, err)
			return
		}
	}
	idem, err := idempotency(r, body, http.StatusOK)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	cr, replay, err := s.content.Cancel(r.Context(), principal(r), chi.URLParam(r, "id"), idem)
	switch {
	case err != nil:
		writeError(w, r, s.log, err)
	case replay != nil:
		writeReplay(w, replay)
	default:
		writeJSON(w, http.StatusOK, envelope(contentView(cr, true)))
	}
}

// pageParams reads limit and cursor.
func pageParams(r *http.Request) (int, string, error) {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return 0, "", fault.Invalid(fault.FieldError{Field: "limit", Message: "must be an integer from 1 to 100"})
		}
		limit = n
	}
	cursor := q.Get("cursor")
	if len(cursor) > 512 {
		return 0, "", fault.Invalid(fault.FieldError{Field: "cursor", Message: "is not a cursor this list returned"})
	}
	return limit, cursor, nil
}

func (s *Server) listContentRequests(w http.ResponseWriter, r *http.Request) {
	limit, cursor, err := pageParams(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	q := r.URL.Query()
	items, next, err := s.content.List(r.Context(), principal(r), store.ContentFilter{
		ClientID: q.Get("client_id"), Status: q.Get("status"), Domain: q.Get("domain"), Limit: limit, Cursor: cursor})
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	page := client.List[client.ContentRequest]{Items: make([]client.ContentRequest, 0, len(items)), HasMore: next != "", NextCursor: optional(next)}
	for _, cr := range items {
		page.Items = append(page.Items, contentView(cr, false))
	}
	writeJSON(w, http.StatusOK, envelope(page))
}

// readingFilter reads the domain and client of a visibility query; ok is
// false when the key may see nothing of it.
func readingFilter(p auth.Principal, q url.Values) (store.ReadingFilter, bool, error) {
	d, err := domains.Normalize(q.Get("domain"))
	if err != nil {
		return store.ReadingFilter{}, false, fault.Invalid(fault.FieldError{Field: "domain", Message: err.Error()})
	}
	f := store.ReadingFilter{AccountID: p.AccountID(), ClientID: p.ClientID(), Domain: d}
	if c := q.Get("client_id"); c != "" && p.ClientID() == "" {
		f.ClientID = c
	} else if c != "" && c != p.ClientID() {
		return f, false, nil
	}
	return f, true, nil
}

func (s *Server) getVisibility(w http.ResponseWriter, r *http.Request) {
	f, ok, err := readingFilter(principal(r), r.URL.Query())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var rd store.Reading
	if ok {
		rd, err = s.store.LatestReading(r.Context(), f)
	}
	if !ok || errors.Is(err, store.ErrNotFound) {
		writeError(w, r, s.log, fault.New(fault.NotFound, "no visibility reading for %s yet", f.Domain))
		return
	} else if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	out := client.VisibilityStatus{VisibilityReading: visibility.ReadingView(rd)}
	for _, tp := range []struct {
		days int
		dst  **client.TrendPoint
	}{{7, &out.Trend.Days7}, {30, &out.Trend.Days30}} {
		f.AtOrBefore = rd.MeasuredAt.AddDate(0, 0, -tp.days)
		then, err := s.store.LatestReading(r.Context(), f)
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		*tp.dst = &client.TrendPoint{VisibilityScore: then.VisibilityScore, Change: rd.VisibilityScore - then.VisibilityScore,
			MeasuredAt: then.MeasuredAt}
	}
	if sc, err := s.store.LatestScan(r.Context(), rd.AccountID, rd.ClientID, rd.Domain); err == nil {
		var res visibility.ScanResult
		if json.Unmarshal(sc.Result, &res) == nil {
			out.LastScan = &client.ScanSummary{ID: sc.ID, FinishedAt: sc.FinishedAt, ReadinessScore: res.ReadinessScore, Breakdown: res.Breakdown}
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) visibilityHistory(w http.ResponseWriter, r *http.Request) {
	f, ok, err := readingFilter(principal(r), r.URL.Query())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if tag := r.URL.Query().Get("market"); tag != "" {
		m, err := probe.ParseMarketTag(tag)
		if err != nil {
			writeError(w, r, s.log, fault.Invalid(fault.FieldError{Field: "market", Message: err.Error()}))
			return
		}
		s.marketHistory(w, r, f, ok, m)
		return
	}
	answerList(s, w, r, "readings", visibility.ReadingColumns, visibility.ReadingRow, func(cursor string, limit int) ([]client.VisibilityReading, string, error) {
		if !ok {
			return nil, "", nil
		}
		items, next, err := s.store.ListReadings(r.Context(), f, cursor, limit)
		if err = accounts.CursorError(err); err != nil {
			return nil, "", err
		}
		views := make([]client.VisibilityReading, 0, len(items))
		for _, rd := range items {
			views = append(views, visibility.ReadingView(rd))
		}
		return views, next, nil
	})
}

// marketHistory answers a domain's readings in one market: of each
// completed scan of one owner (a client key's client, the client_id an
// account key names, else the account's own) that asked the market, its
// reading there (visibility.MarketReading), the last finished first. A
// page holds the readings of up to limit scans: fewer when some did not
// ask the market.
func (s *Server) marketHistory(w http.ResponseWriter, r *http.Request, f store.ReadingFilter, ok bool, m probe.Market) {
	answerList(s, w, r, "readings", visibility.ReadingColumns, visibility.ReadingRow, func(cursor string, limit int) ([]client.VisibilityReading, string, error) {
		if !ok {
			return nil, "", nil
		}
		scans, next, err := s.store.ListScans(r.Context(), store.ScanFilter{AccountID: f.AccountID, ClientID: f.ClientID, Domain: f.Domain,
			Cursor: cursor, Limit: limit})
		if err = accounts.CursorError(err); err != nil {
			return nil, "", err
		}
		views := make([]client.VisibilityReading, 0, len(scans))
		for _, sc := range scans {
			if v, ok := visibility.MarketReading(sc, m); ok {
				views = append(views, v)
			}
		}
		return views, next, nil
	})
}
