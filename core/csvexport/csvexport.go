// Package csvexport writes tables as CSV, the one writer behind every CSV
// export of aivis (the API's lists and the dashboard's tables): RFC 4180
// (comma separated, CRLF line ends, a field quoted when it holds a comma,
// a quote or a line break, a quote doubled; line breaks within a field are
// CRLF too, a lone carriage return dropped), a header row first, and each
// cell a spreadsheet would read as a formula made text. UTF-8, no BOM.
package csvexport

import (
	"encoding/csv"
	"io"
	"mime"
	"strconv"
	"strings"
	"time"
)

// ContentType is the media type of an export.
const ContentType = "text/csv; charset=utf-8"

// Disposition is the Content-Disposition of an export saved as name
// (name.csv).
func Disposition(name string) string {
	return mime.FormatMediaType("attachment", map[string]string{"filename": name + ".csv"})
}

// Writer writes one table. Rows are buffered: Flush sends them on.
type Writer struct {
	cw *csv.Writer
}

// New returns a Writer on w that has written the header row.
func New(w io.Writer, header ...string) (*Writer, error) {
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	out := &Writer{cw: cw}
	return out, out.Row(header...)
}

// Row writes one row, each cell made safe (Cell).
func (w *Writer) Row(cells ...string) error {
	safe := make([]string, len(cells))
	for i, c := range cells {
		safe[i] = Cell(c)
	}
	return w.cw.Write(safe)
}

// Flush writes the buffered rows to the underlying writer and reports an
// error of this or any earlier write.
func (w *Writer) Flush() error {
	w.cw.Flush()
	return w.cw.Error()
}

// Cell neutralises formula injection (CWE-1236): a cell that starts with
// =, +, -, @, a tab or a carriage return, which a spreadsheet may run as a
// formula, gets a leading apostrophe, so that it reads as the text it is.
// A number (-3, -0.25) is left as it is: it is no formula, and stays a
// number.
func Cell(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return s
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return s
	}
	return "'" + s
}

// Int, Float, Bool and Time format a value as a cell.
func Int(n int) string { return strconv.Itoa(n) }

// Float formats f in the fewest digits that read back as f.
func Float(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// Bool is true or false.
func Bool(b bool) string { return strconv.FormatBool(b) }

// Time is RFC 3339 in UTC with the fraction of a second, as the API's
// JSON gives times; the zero time is empty.
func Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// String is *s, or empty for nil (a JSON null).
func String(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// IntPtr is *n, or empty for nil.
func IntPtr(n *int) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(*n)
}

// TimePtr is Time(*t), or empty for nil.
func TimePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return Time(*t)
}

// Pages writes a list to w, page after page: the rows of items (a page
// read already), then of each page more reads at the cursor next gives,
// until next is empty; it flushes after each page, then calls flushed (to
// send the page on: an HTTP response's Flush).
func Pages[T any](w *Writer, items []T, next string, more func(cursor string) ([]T, string, error),
	row func(T) ([]string, error), flushed func()) error {
	for {
		for _, it := range items {
			cells, err := row(it)
			if err == nil {
				err = w.Row(cells...)
			}
			if err != nil {
				return err
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
		flushed()
		if next == "" {
			return nil
		}
		var err error
		if items, next, err = more(next); err != nil {
			return err
		}
	}
}
