package api

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
)

// connectionView shows a connection without its secrets: the public
// settings, and the names of the secret fields that are set.
func connectionView(c store.Webhook) client.Connection {
	v := client.Connection{ID: c.ID, Connector: c.Connector, Name: c.Name, Settings: c.PublicSettings, SecretFields: []string{},
		Events: c.Events, Domains: c.Domains, MinScoreChange: c.MinScoreChange,
		MinCitationChange: c.MinCitationChange, MinCrawlerErrors: c.MinCrawlerErrors, Enabled: c.Enabled,
		DisabledReason: optional(c.DisabledReason), DisabledAt: optionalTime(c.DisabledAt), FailingSince: optionalTime(c.FailingSince),
		Source: "api", ClientID: optional(c.ClientID), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, DeletedAt: optionalTime(c.DeletedAt)}
	if c.Subscription {
		v.Source = "zapier"
	}
	var set map[string]json.RawMessage
	_ = json.Unmarshal(c.Settings, &set)
	for _, f := range c.SecretFields {
		if _, ok := set[f]; ok {
			v.SecretFields = append(v.SecretFields, f)
		}
	}
	if v.Settings == nil {
		v.Settings = json.RawMessage(`{}`)
	}
	if v.Events == nil {
		v.Events = []string{}
	}
	if v.Domains == nil {
		v.Domains = []string{}
	}
	return v
}

func (s *Server) createConnection(w http.ResponseWriter, r *http.Request) {
	var in client.CreateConnection
	if err := readJSON(r, &in, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	c, err := s.connections.CreateConnection(r.Context(), principal(r), in)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.Header().Set("Location", "/v1/connections/"+c.ID)
	writeJSON(w, http.StatusCreated, connectionView(c))
}

func (s *Server) listConnections(w http.ResponseWriter, r *http.Request) {
	limit, cursor, err := pageParams(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	items, next, err := s.connections.List(r.Context(), principal(r), r.URL.Query().Get("client_id"), cursor, limit)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	page := client.List[client.Connection]{Items: make([]client.Connection, 0, len(items)), HasMore: next != "", NextCursor: optional(next)}
	for _, c := range items {
		page.Items = append(page.Items, connectionView(c))
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getConnection(w http.ResponseWriter, r *http.Request) {
	c, err := s.connections.Get(r.Context(), principal(r), chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, connectionView(c))
}

func (s *Server) updateConnection(w http.ResponseWriter, r *http.Request) {
	var in client.UpdateConnection
	if err := readJSON(r, &in, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	c, err := s.connections.UpdateConnection(r.Context(), principal(r), chi.URLParam(r, "id"), in)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, connectionView(c))
}

func (s *Server) testConnection(w http.ResponseWriter, r *http.Request) {
	if err := readJSON(r, &struct{}{}, true); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	res, err := s.connections.TestConnection(r.Context(), principal(r), chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// recentEvents lists the owner's newest events: Zapier's sample data and
// dedup list for its instant triggers, and the dashboard's feed.
func (s *Server) recentEvents(w http.ResponseWriter, r *http.Request) {
	limit, cursor, err := pageParams(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	q := r.URL.Query()
	evs, next, err := s.connections.Events(r.Context(), principal(r), q.Get("event"), q.Get("client_id"), cursor, limit)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	page := client.List[json.RawMessage]{Items: make([]json.RawMessage, 0, len(evs)), HasMore: next != "", NextCursor: optional(next)}
	for _, e := range evs {
		page.Items = append(page.Items, e.Payload)
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) zapierSubscribe(w http.ResponseWriter, r *http.Request) {
	var in client.ZapierSubscribe
	if err := readJSON(r, &in, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	c, err := s.connections.Subscribe(r.Context(), principal(r), in)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	out := client.ZapierSubscription{ID: c.ID, Event: in.Event, CreatedAt: c.CreatedAt}
	if len(c.Domains) > 0 {
		out.Domain = &c.Domains[0]
	}
	w.Header().Set("Location", "/v1/connections/"+c.ID)
	writeJSON(w, http.StatusCreated, out)
}

// zapierUnsubscribe deletes a subscription; only a Zapier subscription's
// id is accepted here.
func (s *Server) zapierUnsubscribe(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	c, err := s.connections.Get(r.Context(), principal(r), id)
	if err == nil && (!c.Subscription || c.Connector != delivery.ZapierConnector) {
		err = fault.New(fault.NotFound, "no Zapier subscription %s", id)
	}
	if err == nil {
		err = s.connections.Delete(r.Context(), principal(r), id)
	}
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
