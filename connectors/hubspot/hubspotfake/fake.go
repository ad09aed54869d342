// Package hubspotfake is a local stand-in for HubSpot's CRM v3 API with a
// private-app token: company batch upsert by domain, notes associated to
// companies (type 190), company properties, HubSpot's error bodies and
// its rate limits (429 with policyName TEN_SECONDLY_ROLLING or DAILY and
// the X-HubSpot-RateLimit headers).
package hubspotfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aivis/aivis/connectors/internal/fakekit"
)

// Token is the access token the fake accepts.
const Token = "pat-na1-fake"

// Company is a company of the fake CRM.
type Company struct {
	ID         string
	Properties map[string]string
}

// Note is a note of the fake CRM.
type Note struct {
	ID, CompanyID, Timestamp, Body string
}

// Fake is the fake HubSpot.
type Fake struct {
	*fakekit.Server
	mu        sync.Mutex
	props     map[string]bool
	companies map[string]*Company // by domain
	notes     []Note
	nextID    int
	window    []time.Time
	daily     int
	// TenSecondly and Daily, when set, are the request limits.
	TenSecondly, Daily int
}

// New starts a fake whose companies have the standard properties only
// (domain, name): the aivis ones must be created.
func New() *Fake {
	f := &Fake{props: map[string]bool{"domain": true, "name": true}, companies: map[string]*Company{}, nextID: 1000}
	f.Server = fakekit.New(f.handle)
	return f
}

// Company is the company of a domain, or nil.
func (f *Fake) Company(domain string) *Company {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.companies[domain]
	if c == nil {
		return nil
	}
	cp := *c
	cp.Properties = map[string]string{}
	for k, v := range c.Properties {
		cp.Properties[k] = v
	}
	return &cp
}

// Notes are the notes made.
func (f *Fake) Notes() []Note {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Note(nil), f.notes...)
}

// HasProperty says whether a company property exists.
func (f *Fake) HasProperty(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.props[name]
}

func (f *Fake) handle(w http.ResponseWriter, r *http.Request, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+Token {
		f.fail(w, http.StatusUnauthorized, "INVALID_AUTHENTICATION", "Authentication credentials not found.")
		return
	}
	if f.limited(w) {
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/crm/v3/objects/companies/batch/upsert":
		f.upsert(w, body)
	case r.Method == http.MethodPost && r.URL.Path == "/crm/v3/objects/notes":
		f.note(w, body)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/crm/v3/properties/companies/"):
		name := strings.TrimPrefix(r.URL.Path, "/crm/v3/properties/companies/")
		if !f.props[name] {
			f.fail(w, http.StatusNotFound, "OBJECT_NOT_FOUND", fmt.Sprintf("Unable to find property %s", name))
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"name": name})
	case r.Method == http.MethodPost && r.URL.Path == "/crm/v3/properties/companies":
		var p struct{ Name, Label, Type, FieldType, GroupName string }
		if json.Unmarshal(body, &p) != nil || p.Name == "" || p.Label == "" || p.Type == "" || p.FieldType == "" || p.GroupName == "" {
			f.fail(w, http.StatusBadRequest, "VALIDATION_ERROR", "name, label, type, fieldType and groupName are required")
			return
		}
		if f.props[p.Name] {
			f.fail(w, http.StatusConflict, "OBJECT_ALREADY_EXISTS", "A property named '"+p.Name+"' already exists.")
			return
		}
		f.props[p.Name] = true
		writeJSON(w, http.StatusCreated, map[string]string{"name": p.Name})
	default:
		f.fail(w, http.StatusNotFound, "OBJECT_NOT_FOUND", "no such endpoint")
	}
}

func (f *Fake) upsert(w http.ResponseWriter, body []byte) {
	var in struct {
		Inputs []struct {
			ID         string            `json:"id"`
			IDProperty string            `json:"idProperty"`
			Properties map[string]string `json:"properties"`
		} `json:"inputs"`
	}
	if json.Unmarshal(body, &in) != nil || len(in.Inputs) == 0 || len(in.Inputs) > 100 {
		f.fail(w, http.StatusBadRequest, "VALIDATION_ERROR", "Invalid input JSON: 1 to 100 inputs are required")
		return
	}
	seen := map[string]bool{}
	for _, i := range in.Inputs {
		if i.IDProperty != "domain" || i.ID == "" || seen[i.ID] {
			f.fail(w, http.StatusBadRequest, "VALIDATION_ERROR", "Each input needs a distinct id with idProperty domain")
			return
		}
		seen[i.ID] = true
		for k := range i.Properties {
			if !f.props[k] {
				f.fail(w, http.StatusBadRequest, "VALIDATION_ERROR", fmt.Sprintf("Property values were not valid: Property \"%s\" does not exist", k))
				return
			}
		}
	}
	var results []map[string]any
	for _, i := range in.Inputs {
		c := f.companies[i.ID]
		isNew := c == nil
		if isNew {
			f.nextID++
			c = &Company{ID: fmt.Sprint(f.nextID), Properties: map[string]string{"domain": i.ID}}
			f.companies[i.ID] = c
		}
		for k, v := range i.Properties {
			c.Properties[k] = v
		}
		// HubSpot does not promise the order of results.
		results = append([]map[string]any{{"id": c.ID, "properties": c.Properties, "new": isNew, "archived": false}}, results...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "COMPLETE", "results": results})
}

func (f *Fake) note(w http.ResponseWriter, body []byte) {
	var in struct {
		Properties   map[string]string `json:"properties"`
		Associations []struct {
			To    struct{ ID string } `json:"to"`
			Types []struct {
				AssociationCategory string
				AssociationTypeID   int `json:"associationTypeId"`
			} `json:"types"`
		} `json:"associations"`
	}
	if json.Unmarshal(body, &in) != nil {
		f.fail(w, http.StatusBadRequest, "VALIDATION_ERROR", "Invalid input JSON")
		return
	}
	ts, text := in.Properties["hs_timestamp"], in.Properties["hs_note_body"]
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		f.fail(w, http.StatusBadRequest, "VALIDATION_ERROR", "hs_timestamp must be an ISO 8601 time")
		return
	}
	if len([]rune(text)) > 65536 {
		f.fail(w, http.StatusBadRequest, "VALIDATION_ERROR", "hs_note_body is longer than 65,536 characters")
		return
	}
	if len(in.Associations) != 1 || len(in.Associations[0].Types) != 1 ||
		in.Associations[0].Types[0].AssociationCategory != "HUBSPOT_DEFINED" || in.Associations[0].Types[0].AssociationTypeID != 190 {
		f.fail(w, http.StatusBadRequest, "VALIDATION_ERROR", "a note to a company takes one association of HUBSPOT_DEFINED type 190")
		return
	}
	to := in.Associations[0].To.ID
	found := false
	for _, c := range f.companies {
		found = found || c.ID == to
	}
	if !found {
		f.fail(w, http.StatusBadRequest, "VALIDATION_ERROR", "company "+to+" does not exist")
		return
	}
	f.nextID++
	n := Note{ID: fmt.Sprint(f.nextID), CompanyID: to, Timestamp: ts, Body: text}
	f.notes = append(f.notes, n)
	writeJSON(w, http.StatusCreated, map[string]any{"id": n.ID, "properties": in.Properties})
}

// limited applies the limits, answering 429 as HubSpot does.
func (f *Fake) limited(w http.ResponseWriter) bool {
	now := time.Now()
	keep := f.window[:0]
	for _, t := range f.window {
		if now.Sub(t) < 10*time.Second {
			keep = append(keep, t)
		}
	}
	f.window = keep
	h := w.Header()
	if f.Daily > 0 {
		h.Set("X-HubSpot-RateLimit-Daily", fmt.Sprint(f.Daily))
		h.Set("X-HubSpot-RateLimit-Daily-Remaining", fmt.Sprint(max(f.Daily-f.daily, 0)))
		if f.daily >= f.Daily {
			f.rateLimited(w, "DAILY", "You have reached your daily limit.")
			return true
		}
	}
	if f.TenSecondly > 0 {
		h.Set("X-HubSpot-RateLimit-Max", fmt.Sprint(f.TenSecondly))
		h.Set("X-HubSpot-RateLimit-Remaining", fmt.Sprint(max(f.TenSecondly-len(f.window), 0)))
		h.Set("X-HubSpot-RateLimit-Interval-Milliseconds", "10000")
		if len(f.window) >= f.TenSecondly {
			f.rateLimited(w, "TEN_SECONDLY_ROLLING", "You have reached your ten_secondly_rolling limit.")
			return true
		}
	}
	f.window = append(f.window, now)
	f.daily++
	return false
}

func (f *Fake) rateLimited(w http.ResponseWriter, policy, msg string) {
	writeJSON(w, http.StatusTooManyRequests, map[string]string{"status": "error", "message": msg, "errorType": "RATE_LIMIT",
		"correlationId": fmt.Sprint(time.Now().UnixNano()), "policyName": policy})
}

func (f *Fake) fail(w http.ResponseWriter, status int, category, msg string) {
	writeJSON(w, status, map[string]string{"status": "error", "message": msg, "correlationId": fmt.Sprint(time.Now().UnixNano()), "category": category})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
