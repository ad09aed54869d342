package dashboard

import (
	"net/http"
	"net/url"

	"github.com/aivis/aivis/core/csvexport"
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

// writeCSV answers a table as a CSV attachment (csvexport, the writer of
// every export).
func writeCSV(w http.ResponseWriter, name string, header []string, rows [][]string) {
	h := w.Header()
	h.Set("Content-Type", csvexport.ContentType)
	h.Set("Content-Disposition", csvexport.Disposition(name))
	h.Set("Cache-Control", "no-store")
	cw, err := csvexport.New(w, header...)
	for _, row := range rows {
		if err != nil {
			break
		}
		err = cw.Row(row...)
	}
	cw.Flush() // an error is the client's going: nothing to answer it
}
