package dashboard

import (
	"net/http"
	"net/url"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/csvexport"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/visibility"
)

// CSVLink is the address of a table of the domain page as CSV ("Download
// CSV"): the page itself with csv=table (visibility.ScanTableNames).
func (d domainData) CSVLink(table string) string {
	q := url.Values{"csv": {table}}
	if d.ClientID != "" {
		q.Set("client", d.ClientID)
	}
	return "/domains/" + d.Domain + "?" + q.Encode()
}

// domainCSV answers a table of the domain page's latest scan as CSV, the
// same the API gives (visibility.ScanTable): the header alone when no scan
// asked an engine.
func (s *Dashboard) domainCSV(w http.ResponseWriter, r *http.Request, d domainData, table string) {
	if table == "answers" {
		s.answersCSV(w, r, d)
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

// AnswersCSVLink is the address of the answers the page's form selects
// (every page of them) as CSV.
func (d domainData) AnswersCSVLink() string {
	q := url.Values{"csv": {"answers"}}
	for k, v := range map[string]string{"client": d.ClientID, "q": d.Ask.Q, "engine": d.Ask.Engine, "mentioned": d.Ask.Mentioned, "cited": d.Ask.Cited} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return "/domains/" + d.Domain + "?" + q.Encode()
}

// answersCSV answers every answer of the domain's latest scan that the
// form's filters select, as the API's CSV of them; the header alone when
// the scan asked no engine.
func (s *Dashboard) answersCSV(w http.ResponseWriter, r *http.Request, d domainData) {
	f, err := visibility.ParseAnswerFilter(r.URL.Query())
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	var as []store.ScanAnswer
	next := ""
	if d.Figures != nil {
		f.AccountID, f.ScanID, f.Limit = principal(r).AccountID(), d.Scan.ID, 100
		if as, next, err = s.Store.ListScanAnswers(r.Context(), f); err != nil {
			s.failWith(w, r, err)
			return
		}
	}
	cw, err := csvWriter(w, d.Domain+"-answers", visibility.AnswerColumns)
	for err == nil {
		for _, a := range as {
			var v client.ScanAnswer
			if v, err = visibility.AnswerView(a); err == nil {
				err = cw.Row(visibility.AnswerRow(v)...)
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			err = cw.Flush()
		}
		if err != nil || next == "" {
			break
		}
		f.Cursor = next
		as, next, err = s.Store.ListScanAnswers(r.Context(), f)
	}
	if err != nil {
		panic(http.ErrAbortHandler) // the response is cut short
	}
}

// deliveriesCSV answers every delivery of a webhook or connection (conn),
// newest first, as CSV: the columns and rows of the API's export, page
// after page. An error before the first page is the error page; one
// after it cuts the response short.
func (s *Dashboard) deliveriesCSV(w http.ResponseWriter, r *http.Request, svc *delivery.Service, conn bool, id string) {
	const pageSize = 100
	ds, next, err := svc.Deliveries(r.Context(), principal(r), id, "", "", pageSize)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	cw, err := csvWriter(w, "deliveries-"+id, delivery.CSVColumns)
	for err == nil {
		for _, d := range ds {
			if err = cw.Row(delivery.CSVRow(delivery.View(d, nil, conn))...); err != nil {
				break
			}
		}
		if err == nil {
			err = cw.Flush()
		}
		if err != nil || next == "" {
			break
		}
		ds, next, err = svc.Deliveries(r.Context(), principal(r), id, "", next, pageSize)
	}
	if err != nil {
		panic(http.ErrAbortHandler)
	}
}

// csvWriter starts a CSV attachment named name.csv (csvexport, the writer
// of every export) with its header row.
func csvWriter(w http.ResponseWriter, name string, header []string) (*csvexport.Writer, error) {
	h := w.Header()
	h.Set("Content-Type", csvexport.ContentType)
	h.Set("Content-Disposition", csvexport.Disposition(name))
	h.Set("Cache-Control", "no-store")
	return csvexport.New(w, header...)
}

// writeCSV answers a table as a CSV attachment.
func writeCSV(w http.ResponseWriter, name string, header []string, rows [][]string) {
	cw, err := csvWriter(w, name, header)
	for _, row := range rows {
		if err != nil {
			break
		}
		err = cw.Row(row...)
	}
	cw.Flush() // an error is the client's going: nothing to answer it
}
