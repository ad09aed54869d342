package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/visibility"
)

// listScanAnswers pages through a scan's answers, the evidence of its
// figures, filtered.
func (s *Server) listScanAnswers(w http.ResponseWriter, r *http.Request) {
	limit, cursor, err := pageParams(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	f, err := visibility.ParseAnswerFilter(r.URL.Query())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	f.Cursor, f.Limit = cursor, limit
	items, next, err := s.scans.Answers(r.Context(), principal(r), chi.URLParam(r, "id"), f)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	page := client.List[client.ScanAnswer]{Items: make([]client.ScanAnswer, 0, len(items)), HasMore: next != "", NextCursor: optional(next)}
	for _, a := range items {
		v, err := visibility.AnswerView(a)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		page.Items = append(page.Items, v)
	}
	writeJSON(w, http.StatusOK, page)
}
