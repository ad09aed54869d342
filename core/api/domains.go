package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/visibility"
)

func domainView(d store.MonitoredDomain) client.MonitoredDomain {
	prompts, _ := store.SplitPrompts(d.Prompts)
	return client.MonitoredDomain{ID: d.ID, Domain: d.Domain, Brands: nonNilList(d.Brands), Aliases: nonNilList(d.Aliases),
		Markets:     visibility.MarketsView(d.Markets),
		Competitors: nonNilList(d.Competitors), Topics: nonNilList(d.Topics), Prompts: prompts,
		NextScanAt: optionalTime(d.NextScanAt), LastScanAt: optionalTime(d.LastScanAt), ClientID: optional(d.ClientID),
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
}

func nonNilList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func (s *Server) createDomain(w http.ResponseWriter, r *http.Request) {
	var in client.CreateDomain
	if err := readJSON(r, &in, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	d, err := s.domains.Create(r.Context(), principal(r), in)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.Header().Set("Location", "/v1/domains/"+d.ID)
	writeJSON(w, http.StatusCreated, domainView(d))
}

func (s *Server) listDomains(w http.ResponseWriter, r *http.Request) {
	limit, cursor, err := pageParams(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	items, next, err := s.domains.List(r.Context(), principal(r), r.URL.Query().Get("client_id"), cursor, limit)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	page := client.List[client.MonitoredDomain]{Items: make([]client.MonitoredDomain, 0, len(items)), HasMore: next != "",
		NextCursor: optional(next)}
	for _, d := range items {
		page.Items = append(page.Items, domainView(d))
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getDomain(w http.ResponseWriter, r *http.Request) {
	d, ok := s.pathDomain(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, domainView(d))
}

func (s *Server) updateDomain(w http.ResponseWriter, r *http.Request) {
	var in client.UpdateDomain
	if err := readJSON(r, &in, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	d, err := s.domains.Update(r.Context(), principal(r), chi.URLParam(r, "id"), in)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, domainView(d))
}

func (s *Server) deleteDomain(w http.ResponseWriter, r *http.Request) {
	if err := s.domains.Delete(r.Context(), principal(r), chi.URLParam(r, "id")); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) getPrompts(w http.ResponseWriter, r *http.Request) {
	ps, err := s.domains.Prompts(r.Context(), principal(r), chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, ps)
}

func (s *Server) putPrompts(w http.ResponseWriter, r *http.Request) {
	var in client.PutPrompts
	if err := readJSON(r, &in, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	ps, err := s.domains.SetPrompts(r.Context(), principal(r), chi.URLParam(r, "id"), in)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, ps)
}

func scanView(sc store.Scan) client.Scan {
	v := client.Scan{ID: sc.ID, Domain: sc.Domain, DomainID: sc.DomainID, Trigger: sc.Trigger, Status: sc.Status,
		Attempts: sc.Attempts, Result: sc.Result, Error: optional(sc.Error), ClientID: optional(sc.ClientID), CreatedAt: sc.CreatedAt}
	if !sc.StartedAt.IsZero() {
		v.StartedAt = &sc.StartedAt
	}
	if !sc.FinishedAt.IsZero() {
		v.FinishedAt = &sc.FinishedAt
	}
	return v
}

// requestScan queues a scan of a monitored domain now (or answers with the
// one already queued or running): 202, then GET /v1/visibility/scans/{id}.
func (s *Server) requestScan(w http.ResponseWriter, r *http.Request) {
	var in client.RequestScan
	if err := readJSON(r, &in, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	sc, err := s.scans.Request(r.Context(), principal(r), in)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.Header().Set("Location", "/v1/visibility/scans/"+sc.ID)
	writeJSON(w, http.StatusAccepted, scanView(sc))
}

// getScan answers a scan, or asked for CSV one table of its figures
// (table: engines, cited_domains or cited_pages; visibility.ScanTable).
func (s *Server) getScan(w http.ResponseWriter, r *http.Request) {
	asCSV, err := wantsCSV(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	table := r.URL.Query().Get("table")
	if asCSV && !slices.Contains(visibility.ScanTableNames, table) || !asCSV && table != "" {
		writeError(w, r, s.log, fault.Invalid(fault.FieldError{Field: "table",
			Message: "must be engines, cited_domains or cited_pages, with format=csv (or Accept: text/csv)"}))
		return
	}
	sc, err := s.scans.Get(r.Context(), principal(r), chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if !asCSV {
		writeJSON(w, http.StatusOK, scanView(sc))
		return
	}
	var res visibility.ScanResult
	var bd visibility.Breakdown
	if sc.Status == store.ScanCompleted && json.Unmarshal(sc.Result, &res) == nil {
		json.Unmarshal(res.Breakdown, &bd) // a breakdown of no engine: the header alone
	}
	header, rows, _ := visibility.ScanTable(sc.Domain, bd, table)
	writeCSV(s, w, r, sc.ID+"-"+strings.ReplaceAll(table, "_", "-"), header, rows)
}

// pathDomain reads the domain the path's {id} names, as the caller's key
// may see it; when it cannot, it writes the error and returns false.
func (s *Server) pathDomain(w http.ResponseWriter, r *http.Request) (store.MonitoredDomain, bool) {
	d, err := s.domains.Get(r.Context(), principal(r), chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return d, false
	}
	return d, true
}
