package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/visibility"
)

func (s *Server) recordReading(w http.ResponseWriter, r *http.Request) {
	var in client.RecordReading
	if err := readJSON(r, &in, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	rd, ev, err := s.readings.Record(r.Context(), principal(r), in)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	out := client.RecordedReading{VisibilityReading: visibility.ReadingView(rd)}
	if ev != nil {
		out.Changed, out.EventID = true, &ev.ID
	}
	writeJSON(w, http.StatusCreated, out)
}

func webhookView(wh store.Webhook, withSecret bool) client.Webhook {
	v := client.Webhook{ID: wh.ID, Domain: wh.Domain, URL: wh.URL, Events: wh.Events, MinScoreChange: wh.MinScoreChange,
		MinCitationChange: wh.MinCitationChange, MinCrawlerErrors: wh.MinCrawlerErrors,
		Enabled: wh.Enabled, DisabledReason: optional(wh.DisabledReason), DisabledAt: optionalTime(wh.DisabledAt),
		FailingSince: optionalTime(wh.FailingSince), ClientID: optional(wh.ClientID), CreatedAt: wh.CreatedAt, UpdatedAt: wh.UpdatedAt,
		DeletedAt: optionalTime(wh.DeletedAt)}
	if v.Events == nil {
		v.Events = []string{}
	}
	if withSecret {
		v.Secret = wh.Secret
	}
	if wh.PrevSecret != "" && time.Now().Before(wh.PrevSecretEnd) {
		v.PreviousSecretExpiresAt = optionalTime(wh.PrevSecretEnd)
	}
	return v
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) {
	var in client.CreateWebhook
	if err := readJSON(r, &in, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	wh, err := s.webhooks.Create(r.Context(), principal(r), in)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.Header().Set("Location", "/v1/webhooks/"+wh.ID)
	writeJSON(w, http.StatusCreated, webhookView(wh, true))
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	limit, cursor, err := pageParams(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	items, next, err := s.webhooks.List(r.Context(), principal(r), r.URL.Query().Get("client_id"), cursor, limit)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	page := client.List[client.Webhook]{Items: make([]client.Webhook, 0, len(items)), HasMore: next != "", NextCursor: optional(next)}
	for _, wh := range items {
		page.Items = append(page.Items, webhookView(wh, false))
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) {
	wh, err := s.webhooks.Get(r.Context(), principal(r), chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookView(wh, false))
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request) {
	var in client.UpdateWebhook
	if err := readJSON(r, &in, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	wh, err := s.webhooks.Update(r.Context(), principal(r), chi.URLParam(r, "id"), in)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookView(wh, false))
}

// deleteTarget deletes a webhook or a connection, as svc sees them.
func (s *Server) deleteTarget(svc *delivery.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := svc.Delete(r.Context(), principal(r), chi.URLParam(r, "id")); err != nil {
			writeError(w, r, s.log, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) {
	var in client.RotateSecret
	if err := readJSON(r, &in, true); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	grace := delivery.DefaultGrace
	if in.GracePeriod != nil {
		grace = time.Duration(*in.GracePeriod) * time.Second
	}
	wh, err := s.webhooks.Rotate(r.Context(), principal(r), chi.URLParam(r, "id"), grace)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookView(wh, true))
}

func (s *Server) testWebhook(w http.ResponseWriter, r *http.Request) {
	if err := readJSON(r, &struct{}{}, true); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	id, err := s.webhooks.SendTest(r.Context(), principal(r), chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusAccepted, client.WebhookTestResult{EventID: id})
}

// The delivery log of webhooks and of connections: svc is the service of
// one kind.

func (s *Server) listDeliveries(svc *delivery.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		answerList(s, w, r, "deliveries-"+id, delivery.CSVColumns, delivery.CSVRow, func(cursor string, limit int) ([]client.Delivery, string, error) {
			items, next, err := svc.Deliveries(r.Context(), principal(r), id, r.URL.Query().Get("status"), cursor, limit)
			if err != nil {
				return nil, "", err
			}
			views := make([]client.Delivery, 0, len(items))
			for _, d := range items {
				views = append(views, delivery.View(d, nil, svc == s.connections))
			}
			return views, next, nil
		})
	}
}

func (s *Server) getDelivery(svc *delivery.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d, as, err := svc.Delivery(r.Context(), principal(r), chi.URLParam(r, "id"), chi.URLParam(r, "delivery_id"))
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		if as == nil {
			as = []store.Attempt{}
		}
		writeJSON(w, http.StatusOK, delivery.View(d, as, svc == s.connections))
	}
}

func (s *Server) redeliver(svc *delivery.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := readJSON(r, &struct{}{}, true); err != nil {
			writeError(w, r, s.log, err)
			return
		}
		d, err := svc.Redeliver(r.Context(), principal(r), chi.URLParam(r, "id"), chi.URLParam(r, "delivery_id"))
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		writeJSON(w, http.StatusAccepted, delivery.View(d, nil, svc == s.connections))
	}
}

func (s *Server) replay(svc *delivery.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in client.Replay
		if err := readJSON(r, &in, false); err != nil {
			writeError(w, r, s.log, err)
			return
		}
		if in.Since.IsZero() {
			writeError(w, r, s.log, fault.Invalid(fault.FieldError{Field: "since", Message: "is required (RFC 3339 time)"}))
			return
		}
		var until time.Time
		if in.Until != nil {
			until = *in.Until
		}
		n, err := svc.Replay(r.Context(), principal(r), chi.URLParam(r, "id"), in.Since, until)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		writeJSON(w, http.StatusAccepted, client.ReplayResult{Scheduled: n})
	}
}
