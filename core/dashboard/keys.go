package dashboard

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/store"
)

// keyRow is a key as the list shows it.
type keyRow struct {
	store.Key
	Client   string
	State    string
	Today    int64
	Month    int64
	LastUsed time.Time
}

type keysData struct {
	Keys    []keyRow
	Clients []store.Client
	Scopes  []string
	Created *auth.Created // the key just made: its secret is shown once
	Rolled  string        // the key a roll replaced
	Form    keyForm
	Filter  string // a client's id: only its keys
}

type keyForm struct {
	Name     string
	Expires  string
	ClientID string
	Scopes   []string
}

func keyState(k store.Key, now time.Time) string {
	switch {
	case !k.RevokedAt.IsZero() && !now.Before(k.RevokedAt):
		return "revoked"
	case !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt):
		return "expired"
	case !k.RevokedAt.IsZero():
		return "expiring"
	}
	return "active"
}

// keyRows lists an account's keys (one client's with clientID) with their usage.
func (s *Dashboard) keyRows(r *http.Request, accountID, clientID string) ([]keyRow, []store.Client, error) {
	ks, err := s.Store.ListKeys(r.Context(), accountID)
	if err != nil {
		return nil, nil, err
	}
	cs, err := s.Store.ListClients(r.Context(), accountID)
	if err != nil {
		return nil, nil, err
	}
	now := s.Now().UTC()
	us, err := s.Store.UsageSince(r.Context(), accountID, now.AddDate(0, 0, -30).Truncate(time.Hour))
	if err != nil {
		return nil, nil, err
	}
	today := now.Truncate(24 * time.Hour)
	var rows []keyRow
	for _, k := range ks {
		if clientID != "" && k.ClientID != clientID {
			continue
		}
		row := keyRow{Key: k, State: keyState(k, now), LastUsed: k.LastUsedAt}
		for _, c := range cs {
			if c.ID == k.ClientID {
				row.Client = c.Name
			}
		}
		for _, u := range us {
			if u.KeyID == k.ID {
				row.Month += u.Count
				if !u.Hour.Before(today) {
					row.Today += u.Count
				}
			}
		}
		rows = append(rows, row)
	}
	slices.Reverse(rows) // newest first
	return rows, cs, nil
}

func (s *Dashboard) keysPage(w http.ResponseWriter, r *http.Request) {
	s.showKeys(w, r, http.StatusOK, page{}, keysData{Form: keyForm{Scopes: auth.Scopes}})
}

func (s *Dashboard) showKeys(w http.ResponseWriter, r *http.Request, status int, p page, d keysData) {
	rows, cs, err := s.keyRows(r, viewerOf(r).Account.ID, "")
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	d.Keys, d.Clients, d.Scopes = rows, cs, auth.Scopes
	p.Title, p.Nav, p.D = "API keys", "keys", d
	s.render(w, r, status, "keys", p)
}

func (s *Dashboard) createKey(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f := keyForm{Name: r.PostFormValue("name"), Expires: r.PostFormValue("expires"), ClientID: r.PostFormValue("client_id"), Scopes: r.PostForm["scopes"]}
	fail := func(err error) {
		p, status := s.problemOf(r, err)
		s.showKeys(w, r, status, page{Problem: p}, keysData{Form: f})
	}
	var exp time.Time
	if f.Expires != "" {
		var err error
		if exp, err = auth.ParseExpiry(f.Expires); err != nil {
			s.showKeys(w, r, http.StatusUnprocessableEntity, page{Problem: &problem{Message: "Expiry: " + err.Error()}}, keysData{Form: f})
			return
		}
	}
	scopes, err := auth.ParseScopes(strings.Join(f.Scopes, ","))
	if err != nil {
		s.showKeys(w, r, http.StatusUnprocessableEntity, page{Problem: &problem{Message: err.Error()}}, keysData{Form: f})
		return
	}
	c, err := s.Auth.CreateKey(r.Context(), auth.NewKey{AccountID: viewerOf(r).Account.ID, ClientID: f.ClientID, Name: f.Name, ExpiresAt: exp, Scopes: scopes})
	if err != nil {
		fail(err)
		return
	}
	s.Log.Info("dashboard: key created", "key", c.Key.ID, "user", viewerOf(r).User.ID)
	s.showKeys(w, r, http.StatusCreated, page{}, keysData{Created: &c, Form: keyForm{Scopes: auth.Scopes}})
}

func (s *Dashboard) revokeKey(w http.ResponseWriter, r *http.Request) {
	k, err := s.Auth.RevokeOwned(r.Context(), viewerOf(r).Account.ID, chi.URLParam(r, "id"))
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	s.Log.Info("dashboard: key revoked", "key", k.ID, "user", viewerOf(r).User.ID)
	redirect(w, r, "/keys", "revoked")
}

func (s *Dashboard) rollKey(w http.ResponseWriter, r *http.Request) {
	grace, err := time.ParseDuration(r.PostFormValue("grace"))
	if err != nil {
		s.showKeys(w, r, http.StatusUnprocessableEntity, page{Problem: &problem{Message: "Choose how long the old key keeps working."}}, keysData{Form: keyForm{Scopes: auth.Scopes}})
		return
	}
	id := chi.URLParam(r, "id")
	c, err := s.Auth.Roll(r.Context(), viewerOf(r).Account.ID, id, grace)
	if err != nil {
		p, status := s.problemOf(r, err)
		s.showKeys(w, r, status, page{Problem: p}, keysData{Form: keyForm{Scopes: auth.Scopes}})
		return
	}
	s.Log.Info("dashboard: key rolled", "old", id, "new", c.Key.ID, "user", viewerOf(r).User.ID)
	s.showKeys(w, r, http.StatusCreated, page{}, keysData{Created: &c, Rolled: id, Form: keyForm{Scopes: auth.Scopes}})
}
