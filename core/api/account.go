package api

import (
	"net/http"
	"time"

	"github.com/aivis/aivis/core/accounts"
)

// exportAccount streams everything the key's account owns as JSON lines
// (accounts.Export), to an owner key only. An error before the first line
// is an error envelope; one after it cuts the response short, without
// its end line.
func (s *Server) exportAccount(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	if err := p.RequireOwner(); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	sw := &streamStart{w: w, contentType: "application/x-ndjson",
		disposition: `attachment; filename="aivis-export-` + p.AccountID() + `.jsonl"`}
	if err := accounts.Export(r.Context(), s.store, p.AccountID(), sw); err != nil {
		if !sw.started {
			writeError(w, r, s.log, err)
			return
		}
		s.log.ErrorContext(r.Context(), "account export cut short", "request_id", requestID(r), "account", p.AccountID(), "err", err)
		panic(http.ErrAbortHandler)
	}
}

// exportWindow is how long a write of an export may wait for the client:
// the export's writes move the connection's write deadline that far on,
// where the server's WriteTimeout would cut an export that takes longer.
var exportWindow = time.Minute

// streamStart writes an export's headers at its first line, and keeps the
// write deadline exportWindow ahead.
type streamStart struct {
	w                        http.ResponseWriter
	contentType, disposition string
	started                  bool
	extended                 time.Time
}

func (s *streamStart) Write(b []byte) (int, error) {
	if now := time.Now(); now.Sub(s.extended) > exportWindow/4 {
		http.NewResponseController(s.w).SetWriteDeadline(now.Add(exportWindow))
		s.extended = now
	}
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", s.contentType)
		h.Set("Content-Disposition", s.disposition)
		h.Set("Cache-Control", "no-store")
		s.w.WriteHeader(http.StatusOK)
	}
	return s.w.Write(b)
}
