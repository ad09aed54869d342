package api

import (
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/csvexport"
	"github.com/aivis/aivis/core/fault"
)

// wantsCSV says whether a request asks for CSV: format=csv, or an Accept
// header that prefers text/csv to application/json. format=json asks for
// JSON whatever Accept says; another format is refused.
func wantsCSV(r *http.Request) (bool, error) {
	switch f := r.URL.Query().Get("format"); f {
	case "csv":
		return true, nil
	case "json":
		return false, nil
	case "":
	default:
		return false, fault.Invalid(fault.FieldError{Field: "format", Message: "must be json or csv"})
	}
	type choice struct {
		csv bool
		q   float64
	}
	var choices []choice
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		switch mt {
		case "text/csv":
			choices = append(choices, choice{true, q})
		case "application/json", "application/*", "*/*":
			choices = append(choices, choice{false, q})
		}
	}
	sort.SliceStable(choices, func(i, j int) bool { return choices[i].q > choices[j].q })
	return len(choices) > 0 && choices[0].csv && choices[0].q > 0, nil
}

// csvPageSize is how many items an export reads at a time.
const csvPageSize = 100

// streamCSV answers a list as CSV: every item from cursor on (the
// list's pages read one after another, limit not applying), a row each,
// under header, the response named name.csv. Each page is sent as soon
// as it is read. An error before the first page is the error envelope;
// one after it cuts the response short (the client sees it end without
// its last chunk).
func streamCSV[T any](s *Server, w http.ResponseWriter, r *http.Request, name string, header []string,
	page func(cursor string, limit int) ([]T, string, error), cursor string, row func(T) []string) {
	items, next, err := page(cursor, csvPageSize)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	cw, err := csvexport.New(&streamStart{w: w, contentType: csvexport.ContentType, disposition: csvexport.Disposition(name)}, header...)
	if err == nil {
		err = csvexport.Pages(cw, items, next, func(c string) ([]T, string, error) { return page(c, csvPageSize) },
			func(it T) ([]string, error) { return row(it), nil }, func() { http.NewResponseController(w).Flush() })
	}
	if err != nil {
		s.log.WarnContext(r.Context(), "CSV export cut short", "request_id", requestID(r), "path", r.URL.Path, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// writeCSV answers a table already in hand as CSV.
func writeCSV(s *Server, w http.ResponseWriter, r *http.Request, name string, header []string, rows [][]string) {
	streamCSV(s, w, r, name, header, func(string, int) ([][]string, string, error) { return rows, "", nil }, "",
		func(row []string) []string { return row })
}

// answerList answers a list endpoint: a page of JSON ({items, has_more,
// next_cursor}) or, asked for CSV (wantsCSV), every item from the cursor
// on as CSV named name.csv, a row each (row, under header).
func answerList[T any](s *Server, w http.ResponseWriter, r *http.Request, name string, header []string, row func(T) []string,
	page func(cursor string, limit int) ([]T, string, error)) {
	limit, cursor, err := pageParams(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	asCSV, err := wantsCSV(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if asCSV {
		streamCSV(s, w, r, name, header, page, cursor, row)
		return
	}
	items, next, err := page(cursor, limit)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if items == nil {
		items = []T{}
	}
	writeJSON(w, http.StatusOK, client.List[T]{Items: items, HasMore: next != "", NextCursor: optional(next)})
}

// The columns of each list's CSV, and its row of an item.
