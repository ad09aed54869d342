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
	f, err := visibility.ParseAnswerFilter(r.URL.Query())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	id := chi.URLParam(r, "id")
	answerList(s, w, r, "answers-"+id, visibility.AnswerColumns, visibility.AnswerRow, func(cursor string, limit int) ([]client.ScanAnswer, string, error) {
		f.Cursor, f.Limit = cursor, limit
		items, next, err := s.scans.Answers(r.Context(), principal(r), id, f)
		if err != nil {
			return nil, "", err
		}
		views := make([]client.ScanAnswer, 0, len(items))
		for _, a := range items {
			v, err := visibility.AnswerView(a)
			if err != nil {
				return nil, "", err
			}
			views = append(views, v)
		}
		return views, next, nil
	})
}
