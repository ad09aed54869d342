package dashboard

import (
	"net/http"
	"net/url"

	"github.com/aivis/aivis/core/csvexport"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/visibility"
)

// exportPage is how many items a CSV export reads at a time.
const exportPage = 100

// CSVLink is the address of a table of the domain page as CSV ("Download
// CSV"): the page itself with csv=table (readings, or one of
// visibility.ScanTableNames).
func (d domainData) CSVLink(table string) string {
	q := url.Values{"csv": {table}}
	if d.ClientID != "" {
		q.Set("client", d.ClientID)
	}
	if d.Market != "" && table != "readings" {
		q.Set("market", d.Market)
	}
	return "/domains/" + d.Domain + "?" + q.Encode()
}

// AnswersCSVLink is the address of the answers the page's form selects
// (every page of them) as CSV.
func (d domainData) AnswersCSVLink() string {
	q := url.Values{"csv": {"answers"}}
	for k, v := range map[string]string{"client": d.ClientID, "q": d.Ask.Q, "engine": d.Ask.Engine, "market": d.Ask.Market,
		"mentioned": d.Ask.Mentioned, "cited": d.Ask.Cited} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return "/domains/" + d.Domain + "?" + q.Encode()
}

// domainCSV answers a table of the domain page as CSV, the same the API
// gives: its readings, its latest scan's answers, or a table of that
// scan's figures (visibility.ScanTable; the header alone when no scan
// asked an engine).
func (s *Dashboard) domainCSV(w http.ResponseWriter, r *http.Request, d domainData, table string) {
	switch table {
	case "answers":
		s.answersCSV(w, r, d)
		return
	case "readings":
		s.readingsCSV(w, r, d)
		return
	}
	var bd visibility.Breakdown
	if d.Figures != nil {
		bd = *d.Figures
	}
	header, rows, ok := visibility.ScanTable(d.Domain, bd, table)
	if !ok {
		s.fail(w, r, http.StatusBadRequest, "The domain page has no such table to download.")
		return
	}
	writeCSV(w, d.Domain+"-"+table, header, rows)
}

// answersCSV answers every answer of the domain's latest scan that the
// form's filters select, as the API's CSV of them.
func (s *Dashboard) answersCSV(w http.ResponseWriter, r *http.Request, d domainData) {
	f, err := visibility.ParseAnswerFilter(r.URL.Query())
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	more := func(cursor string) ([]store.ScanAnswer, string, error) {
		if d.Figures == nil {
			return nil, "", nil // a scan of no engine kept no answer
		}
		f.AccountID, f.ScanID, f.Cursor, f.Limit = principal(r).AccountID(), d.Scan.ID, cursor, exportPage
		return s.Store.ListScanAnswers(r.Context(), f)
	}
	as, next, err := more("")
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	streamCSV(w, d.Domain+"-answers", visibility.AnswerColumns, as, next, more, func(a store.ScanAnswer) ([]string, error) {
		v, err := visibility.AnswerView(a)
		return visibility.AnswerRow(v), err
	})
}

// readingsCSV answers every reading of the domain (the page's owner's),
// newest first, as the API's CSV of its history.
func (s *Dashboard) readingsCSV(w http.ResponseWriter, r *http.Request, d domainData) {
	f := store.ReadingFilter{AccountID: principal(r).AccountID(), ClientID: d.ClientID, Domain: d.Domain}
	more := func(cursor string) ([]store.Reading, string, error) {
		return s.Store.ListReadings(r.Context(), f, cursor, exportPage)
	}
	rs, next, err := more("")
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	streamCSV(w, d.Domain+"-readings", visibility.ReadingColumns, rs, next, more, func(rd store.Reading) ([]string, error) {
		return visibility.ReadingRow(visibility.ReadingView(rd)), nil
	})
}

// deliveriesCSV answers every delivery of a webhook or connection (conn),
// newest first, with the API's columns.
func (s *Dashboard) deliveriesCSV(w http.ResponseWriter, r *http.Request, svc *delivery.Service, conn bool, id string) {
	more := func(cursor string) ([]store.Delivery, string, error) {
		return svc.Deliveries(r.Context(), principal(r), id, "", cursor, exportPage)
	}
	ds, next, err := more("")
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	streamCSV(w, "deliveries-"+id, delivery.CSVColumns, ds, next, more, func(d store.Delivery) ([]string, error) {
		return delivery.CSVRow(delivery.View(d, nil, conn)), nil
	})
}

// streamCSV answers a list as a CSV attachment named name.csv through
// csvexport, the writer of every export: items and next are its first
// page, read before so that an error there is the error page; more reads
// the others, each sent as it is written. An error after the first page
// cuts the response short.
func streamCSV[T any](w http.ResponseWriter, name string, header []string, items []T, next string,
	more func(cursor string) ([]T, string, error), row func(T) ([]string, error)) {
	h := w.Header()
	h.Set("Content-Type", csvexport.ContentType)
	h.Set("Content-Disposition", csvexport.Disposition(name))
	h.Set("Cache-Control", "no-store")
	cw, err := csvexport.New(w, header...)
	if err == nil {
		err = csvexport.Pages(cw, items, next, more, row, func() { http.NewResponseController(w).Flush() })
	}
	if err != nil {
		panic(http.ErrAbortHandler)
	}
}

// writeCSV answers a table in hand as a CSV attachment.
func writeCSV(w http.ResponseWriter, name string, header []string, rows [][]string) {
	streamCSV(w, name, header, rows, "", nil, func(row []string) ([]string, error) { return row, nil })
}
