package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
)

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"success":false,"error":{"code":"INTERNAL_ERROR","message":"the response could not be encoded"}}`)
	}
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h["Content-Type"] = contentJSON
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	w.Write(b)
}

// Header values every response carries. They are shared: a header is
// only ever replaced (Set) or added to (Add, which copies a full slice),
// never written in place.
var (
	contentJSON = []string{"application/json"}
	nosniff     = []string{"nosniff"}
	noStore     = []string{"no-store"}
)

// envelope wraps data for the key-and-secret interface.
func envelope(data any) client.Envelope[any] { return client.Envelope[any]{Success: true, Data: data} }

// writeError is the one place an error becomes an HTTP response. Errors
// that are not a *fault.Error are internal: logged, never shown; those
// that say the store cannot be reached are SERVICE_UNAVAILABLE, logged
// with the reason alone (the error may name the server).
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	fe, ok := fault.As(err)
	if !ok {
		if errors.Is(err, http.ErrAbortHandler) {
			panic(err)
		}
		if why, down := store.Unavailable(err); down {
			log.WarnContext(r.Context(), "request refused: the store cannot be reached", "request_id", requestID(r), "method", r.Method,
				"path", r.URL.Path, "reason", why)
			fe = fault.Unavailable()
		} else {
			log.ErrorContext(r.Context(), "request failed", "request_id", requestID(r), "method", r.Method, "path", r.URL.Path, "err", err)
			fe = fault.New(fault.Internal, "an internal error occurred; quote request id %s when you contact support", requestID(r))
		}
	}
	body := client.ErrorEnvelope{Error: client.ErrorDetail{Code: string(fe.Code), Message: fe.Message, RequestID: requestID(r)}}
	if fe.RetryAfter > 0 {
		ra := fe.RetryAfter
		body.Error.RetryAfter = &ra
		w.Header().Set("Retry-After", strconv.Itoa(ra))
	}
	for _, d := range fe.Details {
		body.Error.Details = append(body.Error.Details, client.FieldError{Field: d.Field, Message: d.Message})
	}
	writeJSON(w, fe.Code.Status(), body)
}
