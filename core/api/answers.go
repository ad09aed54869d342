package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
)

// answerFilter reads the filters of a scan's answers.
func answerFilter(q url.Values) (store.AnswerFilter, error) {
	var f fault.Fields
	af := store.AnswerFilter{Engine: q.Get("engine"), Query: q.Get("q")}
	for _, p := range [][2]string{{"engine", af.Engine}, {"q", af.Query}} {
		if !utf8.ValidString(p[1]) || utf8.RuneCountInString(p[1]) > 200 {
			f.Add(p[0], "must be at most 200 characters of valid UTF-8")
		}
	}
	if v := q.Get("prompt"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			f.Add("prompt", "must be the index of a prompt of the scan's prompt set: an integer from 0")
		}
		af.Prompt = &n
	}
	for _, b := range []struct {
		name string
		dst  **bool
	}{{"mentioned", &af.Mentioned}, {"cited", &af.Cited}} {
		switch v := q.Get(b.name); v {
		case "":
		case "true", "false":
			yes := v == "true"
			*b.dst = &yes
		default:
			f.Add(b.name, "must be true or false")
		}
	}
	return af, f.Err()
}

// answerView is an answer as the API shows it: its columns, and its
// detail, kept in the API's shape.
func answerView(a store.ScanAnswer) (client.ScanAnswer, error) {
	var v client.ScanAnswer
	if err := json.Unmarshal(a.Detail, &v); err != nil {
		return v, fmt.Errorf("scan %s, answer %d: %w", a.ScanID, a.Seq, err)
	}
	v.Seq, v.Prompt, v.Run = a.Seq, client.AnswerPrompt{Index: a.PromptIndex, Text: a.Prompt, Intent: a.Intent}, a.Run
	v.Engine, v.Kind, v.Text, v.Error, v.SourcesReported = a.Engine, a.Kind, a.Text, optional(a.Error), a.SourcesReported
	v.Mentioned, v.Cited, v.Position = a.Mentioned, a.Cited, a.Position
	v.Queries, v.Competitors = nonNilList(v.Queries), nonNilList(v.Competitors)
	if v.Sources == nil {
		v.Sources = []client.AnswerSource{}
	}
	if v.Citations == nil {
		v.Citations = []client.AnswerCitation{}
	}
	if v.Sentences == nil {
		v.Sentences = []client.AnswerSentence{}
	}
	return v, nil
}

// listScanAnswers pages through a scan's answers, the evidence of its
// figures, filtered.
func (s *Server) listScanAnswers(w http.ResponseWriter, r *http.Request) {
	limit, cursor, err := pageParams(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	f, err := answerFilter(r.URL.Query())
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
		v, err := answerView(a)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		page.Items = append(page.Items, v)
	}
	writeJSON(w, http.StatusOK, page)
}
