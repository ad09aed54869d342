package dashboard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/store"
)

// field is one input of a form generated from a settings schema.
type field struct {
	Name        string
	Title       string
	Description string
	Type        string // string, integer, number, boolean, array
	Input       string // the input's type attribute
	Enum        []string
	Required    bool
	Secret      bool
	Value       string // never set for a secret
	Default     string // the schema's default, shown where an edit leaves the value unset
	Checked     bool
}

type connectorView struct {
	hub.Connector
	Fields []field
}

// schemaProps reads a JSON Schema's properties in the order written.
func schemaProps(raw json.RawMessage) ([]string, map[string]json.RawMessage, []string) {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	_ = json.Unmarshal(raw, &s)
	var order []string
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		if props, ok := obj["properties"]; ok {
			dec := json.NewDecoder(bytes.NewReader(props))
			depth := 0
			for {
				t, err := dec.Token()
				if err != nil {
					break
				}
				switch v := t.(type) {
				case json.Delim:
					if v == '{' || v == '[' {
						depth++
					} else {
						depth--
					}
				case string:
					if depth == 1 {
						order = append(order, v)
						var skip json.RawMessage
						if dec.Decode(&skip) != nil {
							break
						}
					}
				}
			}
		}
	}
	return order, s.Properties, s.Required
}

// fields builds a connector's form from its settings schema; values are
// the saved public settings (secret fields are never shown), or for a new
// connection (public nil) the schema's defaults. An edit leaves a setting
// that is not saved empty, showing its default, so that saving sends no
// value nobody typed: a destination setting filled in would move the
// connection's secrets, which the server refuses unless they are typed
// again. A checkbox has no empty state and shows the default.
func fields(c hub.Connector, public json.RawMessage) []field {
	order, props, required := schemaProps(c.Info.SettingsSchema)
	var saved map[string]any
	_ = json.Unmarshal(public, &saved)
	var out []field
	for _, name := range order {
		var p struct {
			Type        string            `json:"type"`
			Title       string            `json:"title"`
			Description string            `json:"description"`
			Format      string            `json:"format"`
			Enum        []json.RawMessage `json:"enum"`
			Default     any               `json:"default"`
		}
		_ = json.Unmarshal(props[name], &p)
		f := field{Name: name, Title: p.Title, Description: p.Description, Type: p.Type, Input: "text",
			Required: slices.Contains(required, name), Secret: slices.Contains(c.Info.SecretFields, name)}
		if f.Title == "" {
			f.Title = name
		}
		for _, e := range p.Enum {
			var v any
			_ = json.Unmarshal(e, &v)
			f.Enum = append(f.Enum, toString(v))
		}
		switch {
		case f.Secret:
			f.Input = "password"
		case p.Type == "integer" || p.Type == "number":
			f.Input = "number"
		case p.Format == "uri":
			f.Input = "url"
		case p.Format == "email":
			f.Input = "email"
		}
		v, ok := saved[name]
		if !ok && (public == nil || p.Type == "boolean") {
			v = p.Default
		} else if !ok && p.Default != nil {
			f.Default = toString(p.Default)
		}
		if !f.Secret && v != nil {
			if b, isBool := v.(bool); isBool {
				f.Checked = b
			} else {
				f.Value = toString(v)
			}
		}
		out = append(out, f)
	}
	return out
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, toString(e))
		}
		return strings.Join(parts, ", ")
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// settingsFromForm turns the form's inputs into a settings object, by the
// schema's types; empty inputs are left out, or, with clear (an update,
// a merge patch), empty non-secret inputs become null and remove the
// saved value; a secret left empty keeps it.
func settingsFromForm(r *http.Request, fs []field, clear bool) (json.RawMessage, error) {
	m := map[string]any{}
	for _, f := range fs {
		key := "s." + f.Name
		if f.Type == "boolean" {
			if _, sent := r.PostForm[key]; sent || r.PostFormValue(key+".present") != "" {
				m[f.Name] = r.PostFormValue(key) == "on"
			}
			continue
		}
		v := strings.TrimSpace(r.PostFormValue(key))
		if v == "" {
			if _, sent := r.PostForm[key]; clear && sent && !f.Secret {
				m[f.Name] = nil
			}
			continue
		}
		switch f.Type {
		case "integer":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				m[f.Name] = v // the connector's validation names the field
			} else {
				m[f.Name] = n
			}
		case "number":
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				m[f.Name] = v
			} else {
				m[f.Name] = n
			}
		case "array":
			var list []string
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p != "" {
					list = append(list, p)
				}
			}
			m[f.Name] = list
		default:
			m[f.Name] = v
		}
	}
	return json.Marshal(m)
}

func (s *Dashboard) connector(name string) (connectorView, bool) {
	if s.Hub == nil {
		return connectorView{}, false
	}
	for _, c := range s.Hub.Connectors() {
		if c.Record.Name == name {
			return connectorView{Connector: c, Fields: fields(c, nil)}, true
		}
	}
	return connectorView{}, false
}

type connectorsData struct {
	Connectors  []hub.Connector
	Connections []store.Webhook
	Deleted     []store.Webhook // their history still kept
}

func (s *Dashboard) connectorsPage(w http.ResponseWriter, r *http.Request) {
	var d connectorsData
	if s.Hub != nil {
		d.Connectors = s.Hub.Connectors()
	}
	cs, _, err := s.connections.List(r.Context(), principal(r), "*", "", 100)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	d.Connections = cs
	if d.Deleted, _, err = s.connections.ListDeleted(r.Context(), principal(r), "*", "", 100); err != nil {
		s.failWith(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "connectors", page{Title: "Connectors", Nav: "connectors", D: d})
}

type connectorData struct {
	Connector connectorView
	Kinds     []string
	Clients   []store.Client
	Name      string
	Events    []string
	Domains   string
	ClientID  string
	// As typed: shown again when the form is refused.
	MinScore, MinCitation, MinErrors string
}

func (s *Dashboard) showConnector(w http.ResponseWriter, r *http.Request, status int, p page, d connectorData) {
	c, ok := s.connector(chi.URLParam(r, "name"))
	if !ok {
		s.fail(w, r, http.StatusNotFound, "No such connector is installed.")
		return
	}
	if d.Connector.Fields != nil {
		c.Fields = d.Connector.Fields
	}
	cs, err := s.Store.ListClients(r.Context(), viewerOf(r).Account.ID)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	d.Connector, d.Kinds, d.Clients = c, events.Kinds, cs
	if d.Events == nil {
		d.Events = []string{events.VisibilityChange}
	}
	p.Title, p.Nav, p.D = "New "+c.Info.DisplayName+" connection", "connectors", d
	if c.Info.DisplayName == "" {
		p.Title = "New " + c.Record.Name + " connection"
	}
	s.render(w, r, status, "connector", p)
}

func (s *Dashboard) connectorPage(w http.ResponseWriter, r *http.Request) {
	s.showConnector(w, r, http.StatusOK, page{}, connectorData{})
}

func (s *Dashboard) createConnection(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	name := chi.URLParam(r, "name")
	c, ok := s.connector(name)
	if !ok {
		s.fail(w, r, http.StatusNotFound, "No such connector is installed.")
		return
	}
	settings, err := settingsFromForm(r, c.Fields, false)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	var doms []string
	for _, d := range strings.FieldsFunc(r.PostFormValue("domains"), func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		doms = append(doms, d)
	}
	mins, err := minChanges(r)
	in := client.CreateConnection{Connector: name, Name: r.PostFormValue("name"), Settings: settings, Events: r.PostForm["events"],
		Domains: doms, ClientID: r.PostFormValue("client_id"), MinScoreChange: mins.score, MinCitationChange: mins.citation,
		MinCrawlerErrors: mins.errors}
	var con store.Webhook
	if err == nil {
		con, err = s.connections.CreateConnection(r.Context(), principal(r), in)
	}
	if err != nil {
		p, status := s.problemOf(r, err)
		// Keep what was typed, but never a secret.
		for i := range c.Fields {
			if !c.Fields[i].Secret {
				c.Fields[i].Value = r.PostFormValue("s." + c.Fields[i].Name)
				c.Fields[i].Checked = r.PostFormValue("s."+c.Fields[i].Name) == "on"
			}
		}
		s.showConnector(w, r, status, page{Problem: p}, connectorData{Connector: c, Name: in.Name, Events: in.Events,
			Domains: r.PostFormValue("domains"), ClientID: in.ClientID,
			MinScore: r.PostFormValue("min_score_change"), MinCitation: r.PostFormValue("min_citation_change"),
			MinErrors: r.PostFormValue("min_crawler_errors")})
		return
	}
	http.Redirect(w, r, "/connections/"+con.ID+"?done=enabled", http.StatusSeeOther)
}

func (s *Dashboard) connectionPage(w http.ResponseWriter, r *http.Request) {
	s.showTarget(w, r, true, http.StatusOK, page{}, targetData{})
}

func (s *Dashboard) testConnection(w http.ResponseWriter, r *http.Request) {
	res, err := s.connections.TestConnection(r.Context(), principal(r), chi.URLParam(r, "id"))
	if err != nil {
		p, status := s.problemOf(r, err)
		s.showTarget(w, r, true, status, page{Problem: p}, targetData{})
		return
	}
	s.showTarget(w, r, true, http.StatusOK, page{}, targetData{Test: &res})
}

func (s *Dashboard) setConnectionEnabled(w http.ResponseWriter, r *http.Request) {
	on := r.PostFormValue("enabled") == "true"
	id := chi.URLParam(r, "id")
	if _, err := s.connections.UpdateConnection(r.Context(), principal(r), id, client.UpdateConnection{Enabled: &on}); err != nil {
		s.failWith(w, r, err)
		return
	}
	redirect(w, r, "/connections/"+id, "enabled")
}

func (s *Dashboard) updateConnection(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	id := chi.URLParam(r, "id")
	cur, err := s.connections.Get(r.Context(), principal(r), id)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	c, ok := s.connector(cur.Connector)
	if !ok {
		s.fail(w, r, http.StatusServiceUnavailable, "The "+cur.Connector+" connector is not installed.")
		return
	}
	// A merge patch: a field left empty keeps its saved value (a secret
	// is never sent back to the browser, so it stays unless retyped).
	settings, err := settingsFromForm(r, c.Fields, true)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	name := r.PostFormValue("name")
	mins, err := minChanges(r)
	in := client.UpdateConnection{Name: &name, Settings: settings, Events: r.PostForm["events"], MinScoreChange: mins.score,
		MinCitationChange: mins.citation, MinCrawlerErrors: mins.errors}
	if err == nil {
		_, err = s.connections.UpdateConnection(r.Context(), principal(r), id, in)
	}
	if err != nil {
		p, status := s.problemOf(r, err)
		s.showTarget(w, r, true, status, page{Problem: p}, targetData{})
		return
	}
	redirect(w, r, "/connections/"+id, "enabled")
}
