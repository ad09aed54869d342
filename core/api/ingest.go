package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/traffic"
)

// IngestPath is where CDNs deliver a domain's logs (docs/traffic.md):
// IngestPath/cloudflare, /vercel and /fastly.
const IngestPath = "/ingest/v1"

// FastlyChallengePath is Fastly's ownership challenge (RFC 8615).
const FastlyChallengePath = "/.well-known/fastly/logging/challenge"

// MaxIngestBody is the most bytes one delivery may send, compressed or
// not (the batch's content, decompressed, has its own cap).
const MaxIngestBody = 64 << 20

// ingestRoutes serves the log deliveries, authenticated by an ingest
// token (Authorization: Bearer), not by an API key.
func (s *Server) ingestRoutes(r chi.Router) {
	if s.traffic == nil {
		return
	}
	r.Route(IngestPath, func(r chi.Router) {
		r.NotFound(s.notFound)
		r.MethodNotAllowed(s.methodNotAllowed)
		r.Post("/cloudflare", s.ingest(store.TrafficCloudflare))
		r.Post("/fastly", s.ingest(store.TrafficFastly))
		r.Post("/vercel", s.ingest(store.TrafficVercel))
		r.Get("/vercel", s.vercelVerification)
	})
	r.Get(FastlyChallengePath, fastlyChallenge)
}

// ingest takes one batch of source's logs: 200 once it is kept (or was
// already), so that a sender retries only what was not.
func (s *Server) ingest(source string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if source == store.TrafficVercel {
			vercelVerify(w, r)
		}
		secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			if source == store.TrafficVercel && r.Header.Get("x-vercel-signature") == "" && r.URL.Query().Get("verify") != "" {
				// Vercel's verification request, unsigned: answered
				// with the code alone.
				writeJSON(w, http.StatusOK, map[string]any{"verified": true})
				return
			}
			writeError(w, r, s.log, fault.New(fault.MissingCredentials, "send the ingest token as Authorization: Bearer"))
			return
		}
		tok, err := s.traffic.Authenticate(r.Context(), source, strings.TrimSpace(secret))
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		var body io.Reader = http.MaxBytesReader(w, r.Body, MaxIngestBody)
		if source == store.TrafficVercel {
			// The signature is over the bytes received: checked before
			// anything is read of them.
			raw, err := io.ReadAll(body)
			if err != nil {
				writeError(w, r, s.log, bodyError(err))
				return
			}
			if !s.traffic.SignedByVercel(tok, raw, r.Header.Get("x-vercel-signature")) {
				writeError(w, r, s.log, fault.New(fault.WebhookVerification, "x-vercel-signature is not the HMAC-SHA1 of the body under the drain's secret"))
				return
			}
			body = bytes.NewReader(raw)
		}
		res, err := s.traffic.Ingest(r.Context(), tok, body)
		if err != nil {
			writeError(w, r, s.log, bodyError(err))
			return
		}
		writeJSON(w, http.StatusOK, ingestResult(res))
	}
}

func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return fault.New(fault.PayloadTooLarge, "a delivery may send at most %d MiB", MaxIngestBody>>20)
	}
	if fe, ok := fault.As(err); ok && fe.Code == fault.ValidationError && len(fe.Details) == 0 {
		// A batch that cannot be read is the body's fault, named as every
		// VALIDATION_ERROR names its field.
		return fault.Invalid(fault.FieldError{Field: "body", Message: fe.Message})
	}
	return err
}

// ingestResult is what a delivery is answered with.
func ingestResult(res traffic.Result) map[string]any {
	if res.Validation {
		return map[string]any{"validation": true}
	}
	samples := res.Batch.Samples
	if samples == nil {
		samples = []store.MalformedLine{}
	}
	return map[string]any{"batch_id": res.Batch.ID, "duplicate": res.Duplicate, "lines": res.Batch.Lines,
		"malformed": res.Batch.Malformed, "malformed_samples": samples}
}

// vercelVerify answers Vercel's endpoint verification: the code the drain
// URL carries (?verify=CODE, as docs/traffic.md says to configure it) in
// x-vercel-verify, on every answer of the endpoint.
func vercelVerify(w http.ResponseWriter, r *http.Request) {
	if code := r.URL.Query().Get("verify"); code != "" && len(code) <= 128 && !strings.ContainsAny(code, "\r\n") {
		w.Header().Set("x-vercel-verify", code)
	}
}

func (s *Server) vercelVerification(w http.ResponseWriter, r *http.Request) {
	vercelVerify(w, r)
	writeJSON(w, http.StatusOK, map[string]any{"verified": r.URL.Query().Get("verify") != ""})
}

// fastlyChallenge allows any Fastly service to deliver here ("*"): every
// delivery still needs a domain's ingest token.
func fastlyChallenge(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("*\n"))
}
