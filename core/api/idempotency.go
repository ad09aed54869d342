package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
)

// idempotencyPending is how long a request that holds its key may take
// before a retry with the key may act in its stead: the holder's instance
// stopped before it acted. One that acted (its action's transaction marked
// the key acted, store.IdempotencyActed) and stopped before its response
// was kept is never acted again: a retry then is a conflict.
const idempotencyPending = 2 * time.Minute

// idempotencyKey reads the Idempotency-Key header ("" when there is none).
func idempotencyKey(r *http.Request) (string, error) {
	key := r.Header.Get("Idempotency-Key")
	if len(key) > 255 {
		return "", fault.Invalid(fault.FieldError{Field: "Idempotency-Key", Message: "must be at most 255 characters"})
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", fault.Invalid(fault.FieldError{Field: "Idempotency-Key", Message: "must be printable ASCII"})
		}
	}
	return key, nil
}

// requestHash identifies a request for its key: method, path and body.
func requestHash(r *http.Request, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(r.Method + " " + r.URL.Path + "\n"))
	h.Write(body)
	return h.Sum(nil)
}

// idempotent makes a POST with an Idempotency-Key act once: the key is
// held in the store (every instance sees it) while the request runs, and
// its 2xx response is kept 24 hours, replayed to a retry of the same
// request with Idempotent-Replayed: true; another request with the key is
// 409 IDEMPOTENCY_CONFLICT, and so is a retry while the first still runs.
// A response other than 2xx changed nothing and is not kept: the key is
// free again. The handler runs under store.Acting, so that each
// transaction of its action marks the key acted with what it commits; a
// retry that finds the key acted but its answer not kept, past
// idempotencyPending, is a conflict too, never a second action.
func (s *Server) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Idempotency-Key") == "" || s.store == nil {
			next.ServeHTTP(w, r)
			return
		}
		key, err := idempotencyKey(r)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		body, err := idempotentBody(r)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		r.Body = readCloser{bytes.NewReader(body)}
		scope, hash, now := content.IdempotencyScope(principal(r)), requestHash(r, body), s.now()
		hold := store.Idempotency{Scope: scope, Key: key, RequestHash: hash, Body: []byte{}, CreatedAt: now}
		var prev store.Idempotency
		held := false
		err = s.store.Update(r.Context(), func(tx store.Tx) error {
			var err error
			held = false
			prev, err = tx.Idempotency(scope, key, now.Add(-content.IdempotencyTTL))
			switch {
			case err == nil && (prev.Status != 0 || prev.CreatedAt.After(now.Add(-idempotencyPending))):
				// Kept, acted, or held by a request that may still act.
				// Only a pending key whose holder stopped before it
				// acted is taken.
				return nil
			case err != nil && !errors.Is(err, store.ErrNotFound):
				return err
			}
			held = true
			return tx.PutIdempotency(hold)
		})
		switch {
		case err != nil:
			writeError(w, r, s.log, err)
			return
		case !held && !bytes.Equal(prev.RequestHash, hash):
			writeError(w, r, s.log, fault.New(fault.IdempotencyConflict,
				"Idempotency-Key %q was already used with a different request in the last 24 hours", key))
			return
		case !held && (prev.Status == 0 || prev.Status == store.IdempotencyActed) && prev.CreatedAt.After(now.Add(-idempotencyPending)):
			writeError(w, r, s.log, fault.New(fault.IdempotencyConflict,
				"a request with Idempotency-Key %q is still in progress; retry it later", key))
			return
		case !held && prev.Status == store.IdempotencyActed:
			writeError(w, r, s.log, fault.New(fault.IdempotencyConflict,
				"the request with Idempotency-Key %q was carried out, but its server stopped before keeping the answer; "+
					"read the result rather than retrying", key))
			return
		case !held:
			w.Header().Set("Idempotent-Replayed", "true")
			writeRaw(w, prev.Status, prev.Body)
			return
		}
		rec := &recorder{statusWriter: statusWriter{ResponseWriter: w}}
		// The handler's actions mark the key acted as they commit; the
		// hold above and the keep below are not actions.
		next.ServeHTTP(rec, r.WithContext(store.Acting(r.Context(), hold)))
		// The request's context may be gone; its outcome is kept regardless.
		ctx := context.WithoutCancel(r.Context())
		err = s.store.Update(ctx, func(tx store.Tx) error {
			if rec.status < 200 || rec.status > 299 {
				return tx.DeleteIdempotency(scope, key)
			}
			return tx.PutIdempotency(store.Idempotency{Scope: scope, Key: key, RequestHash: hash, Status: rec.status,
				Body: rec.body.Bytes(), CreatedAt: now})
		})
		if err != nil {
			s.log.Error("idempotency: keeping the response", "status", strconv.Itoa(rec.status), "err", err)
		}
	})
}

// idempotentBody reads a POST's body for its key: a JSON body as every
// handler reads it, or a log file upload's as it is (up to
// MaxIngestBody, held in memory while the request runs).
func idempotentBody(r *http.Request) ([]byte, error) {
	if !strings.HasSuffix(r.URL.Path, "/traffic/logs") {
		return readBody(r, true)
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxIngestBody))
	if err != nil {
		return nil, bodyError(err)
	}
	return body, nil
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// recorder passes a response on and keeps a copy of its status and body.
type recorder struct {
	statusWriter
	body bytes.Buffer
}

func (rc *recorder) Write(b []byte) (int, error) {
	rc.body.Write(b)
	return rc.statusWriter.Write(b)
}
