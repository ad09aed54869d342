package dashboard

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
)

type webhooksData struct {
	Webhooks   []store.Webhook
	Deleted    []store.Webhook // their history still kept
	Clients    []store.Client
	Kinds      []string
	DefaultURL string
	Created    *store.Webhook // just made: its secret and test outcome shown once
	Test       *store.Attempt
	Form       webhookForm
}

type webhookForm struct {
	Domain   string
	URL      string
	ClientID string
	Events   []string
	// As typed: shown again when the form is refused.
	MinScore, MinCitation, MinErrors string
}

// minimums are the thresholds a form sets; nil for an empty input.
type minimums struct{ score, citation, errors *int }

// minChanges reads a webhook's or connection's thresholds from a form: an
// empty input is none (the default, or what is saved); one that is not a
// whole number is refused as the API refuses one out of range.
func minChanges(r *http.Request) (minimums, error) {
	var f fault.Fields
	read := func(name string, max int) *int {
		v := strings.TrimSpace(r.PostFormValue(name))
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			f.Add(name, "must be a whole number between 0 and %d", max)
			return nil
		}
		return &n
	}
	m := minimums{read("min_score_change", 100), read("min_citation_change", 100),
		read("min_crawler_errors", delivery.MaxMinCrawlerErrors)}
	return m, f.Err()
}

func (s *Dashboard) showWebhooks(w http.ResponseWriter, r *http.Request, status int, p page, d webhooksData) {
	pr := principal(r)
	ws, _, err := s.Webhooks.List(r.Context(), pr, "*", "", 100)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	if d.Deleted, _, err = s.Webhooks.ListDeleted(r.Context(), pr, "*", "", 100); err != nil {
		s.failWith(w, r, err)
		return
	}
	cs, err := s.Store.ListClients(r.Context(), pr.AccountID())
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	def, err := s.Store.DefaultWebhookURL(r.Context(), pr.AccountID(), "")
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	d.Webhooks, d.Clients, d.Kinds, d.DefaultURL = ws, cs, events.Kinds, def
	p.Title, p.Nav, p.D = "Webhooks", "webhooks", d
	s.render(w, r, status, "webhooks", p)
}

func (s *Dashboard) webhooksPage(w http.ResponseWriter, r *http.Request) {
	s.showWebhooks(w, r, http.StatusOK, page{}, webhooksData{Form: webhookForm{Events: []string{events.VisibilityChange}}})
}

func (s *Dashboard) setDefaultURL(w http.ResponseWriter, r *http.Request) {
	if err := s.Webhooks.SetDefaultURL(r.Context(), principal(r), r.PostFormValue("client_id"), r.PostFormValue("url")); err != nil {
		p, status := s.problemOf(r, err)
		s.showWebhooks(w, r, status, page{Problem: p}, webhooksData{})
		return
	}
	redirect(w, r, "/webhooks", "default")
}

func (s *Dashboard) createWebhook(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f := webhookForm{Domain: r.PostFormValue("domain"), URL: r.PostFormValue("url"), ClientID: r.PostFormValue("client_id"), Events: r.PostForm["events"],
		MinScore: r.PostFormValue("min_score_change"), MinCitation: r.PostFormValue("min_citation_change"),
		MinErrors: r.PostFormValue("min_crawler_errors")}
	mins, err := minChanges(r)
	var wh store.Webhook
	if err == nil {
		wh, err = s.Webhooks.Create(r.Context(), principal(r), client.CreateWebhook{Domain: f.Domain, Events: f.Events, URL: f.URL, ClientID: f.ClientID,
			MinScoreChange: mins.score, MinCitationChange: mins.citation, MinCrawlerErrors: mins.errors})
	}
	if err != nil {
		p, status := s.problemOf(r, err)
		s.showWebhooks(w, r, status, page{Problem: p}, webhooksData{Form: f})
		return
	}
	d := webhooksData{Created: &wh, Form: webhookForm{Events: []string{events.VisibilityChange}}}
	if ds, _, err := s.Webhooks.Deliveries(r.Context(), principal(r), wh.ID, "", "", 1); err == nil && len(ds) == 1 {
		if _, as, err := s.Webhooks.Delivery(r.Context(), principal(r), wh.ID, ds[0].ID); err == nil && len(as) > 0 {
			d.Test = &as[len(as)-1]
		}
	}
	s.showWebhooks(w, r, http.StatusCreated, page{}, d)
}

// delivery is a delivery with its attempts.
type deliveryRow struct {
	store.Delivery
	Attempts []store.Attempt
}

type targetData struct {
	Target     store.Webhook
	Deliveries []deliveryRow
	Secret     string // a rotated secret, shown once
	Test       *client.ConnectionTestResult
	Connector  *connectorView
	Since      string
	Until      string
	Base       string // the target's page
	Kinds      []string
}

func (s *Dashboard) target(conn bool) *delivery.Service {
	if conn {
		return s.connections
	}
	return s.Webhooks
}

func (s *Dashboard) showTarget(w http.ResponseWriter, r *http.Request, conn bool, status int, p page, d targetData) {
	svc, pr, id := s.target(conn), principal(r), chi.URLParam(r, "id")
	t, err := svc.Get(r.Context(), pr, id)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	if r.Method == http.MethodGet && r.URL.Query().Get("csv") == "deliveries" {
		s.deliveriesCSV(w, r, svc, conn, t.ID)
		return
	}
	ds, _, err := svc.Deliveries(r.Context(), pr, id, "", "", 50)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	d.Target, d.Base = t, "/webhooks/"+t.ID
	if conn {
		d.Base = "/connections/" + t.ID
	}
	for _, dl := range ds {
		_, as, err := svc.Delivery(r.Context(), pr, id, dl.ID)
		if err != nil {
			s.failWith(w, r, err)
			return
		}
		d.Deliveries = append(d.Deliveries, deliveryRow{Delivery: dl, Attempts: as})
	}
	now := s.Now().UTC()
	if d.Since == "" {
		d.Since = now.Add(-24 * time.Hour).Format("2006-01-02T15:04")
		d.Until = now.Add(time.Minute).Format("2006-01-02T15:04")
	}
	name := "webhook"
	p.Nav, p.Title = "webhooks", "Webhook for "+t.Domain
	if conn {
		name, p.Nav, p.Title = "connection", "connectors", "Connection "+t.Name
		if c, ok := s.connector(t.Connector); ok {
			c.Fields = fields(c.Connector, t.PublicSettings)
			d.Connector = &c
		}
		d.Kinds = events.Kinds
	}
	p.D = d
	s.render(w, r, status, name, p)
}

func (s *Dashboard) webhookPage(w http.ResponseWriter, r *http.Request) {
	s.showTarget(w, r, false, http.StatusOK, page{}, targetData{})
}

func (s *Dashboard) setWebhookEnabled(w http.ResponseWriter, r *http.Request) {
	on := r.PostFormValue("enabled") == "true"
	id := chi.URLParam(r, "id")
	if _, err := s.Webhooks.Update(r.Context(), principal(r), id, client.UpdateWebhook{Enabled: &on}); err != nil {
		s.failWith(w, r, err)
		return
	}
	redirect(w, r, "/webhooks/"+id, "enabled")
}

func (s *Dashboard) rotateWebhook(w http.ResponseWriter, r *http.Request) {
	grace, err := time.ParseDuration(r.PostFormValue("grace"))
	if err != nil {
		grace = delivery.DefaultGrace
	}
	wh, err := s.Webhooks.Rotate(r.Context(), principal(r), chi.URLParam(r, "id"), grace)
	if err != nil {
		p, status := s.problemOf(r, err)
		s.showTarget(w, r, false, status, page{Problem: p}, targetData{})
		return
	}
	s.showTarget(w, r, false, http.StatusOK, page{Notice: "The signing secret is rotated. Copy the new one now: it is not shown again."}, targetData{Secret: wh.Secret})
}

func (s *Dashboard) testWebhook(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if _, err := s.Webhooks.SendTest(r.Context(), principal(r), id); err != nil {
		s.failWith(w, r, err)
		return
	}
	redirect(w, r, "/webhooks/"+id, "test")
}

func (s *Dashboard) replay(conn bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		since, err1 := time.Parse("2006-01-02T15:04", r.PostFormValue("since"))
		until, err2 := time.Parse("2006-01-02T15:04", r.PostFormValue("until"))
		d := targetData{Since: r.PostFormValue("since"), Until: r.PostFormValue("until")}
		if err1 != nil || err2 != nil {
			s.showTarget(w, r, conn, http.StatusUnprocessableEntity, page{Problem: &problem{Message: "Give both ends of the range (UTC)."}}, d)
			return
		}
		n, err := s.target(conn).Replay(r.Context(), principal(r), chi.URLParam(r, "id"), since.UTC(), until.UTC())
		if err != nil {
			p, status := s.problemOf(r, err)
			s.showTarget(w, r, conn, status, page{Problem: p}, d)
			return
		}
		s.showTarget(w, r, conn, http.StatusOK, page{Notice: strconv.Itoa(n) + " failed deliveries are scheduled again."}, d)
	}
}

func (s *Dashboard) redeliver(conn bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		if _, err := s.target(conn).Redeliver(r.Context(), principal(r), id, chi.URLParam(r, "did")); err != nil {
			p, status := s.problemOf(r, err)
			s.showTarget(w, r, conn, status, page{Problem: p}, targetData{})
			return
		}
		base := "/webhooks/"
		if conn {
			base = "/connections/"
		}
		redirect(w, r, base+id, "redeliver")
	}
}

func (s *Dashboard) deleteTarget(conn bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.target(conn).Delete(r.Context(), principal(r), chi.URLParam(r, "id")); err != nil {
			s.failWith(w, r, err)
			return
		}
		if conn {
			redirect(w, r, "/connectors", "deleted")
			return
		}
		redirect(w, r, "/webhooks", "deleted")
	}
}
