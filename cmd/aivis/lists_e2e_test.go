package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestListsSeeEveryOwner: every list of an agency account behaves alike
// (decisions.md section 3). An account-level key sees the account's own
// resources and every client's, and may filter by client_id ("*" is the
// same as none); a client key sees its client's only, and an empty page
// when it asks for another client's.
func TestListsSeeEveryOwner(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "enterprise", true)
	k := newKey(t, dir, a.ID)
	var cl, other struct {
		ID string `json:"id"`
	}
	cli(t, dir, &cl, "client", "create", "--account", a.ID, "--name", "Client")
	cli(t, dir, &other, "client", "create", "--account", a.ID, "--name", "Other client")
	ck := newKey(t, dir, a.ID, "--client", cl.ID)
	s := start(t, dir)

	// One of each resource for the account and for the client.
	made := map[string]map[string]string{} // list -> owner -> id
	for _, owner := range []struct {
		name string
		k    key
	}{{"account", k}, {"client", ck}} {
		var d struct{ ID string }
		r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(owner.k), body: `{"domain":"` + owner.name + `.example.com"}`})
		r.decode(t, &d)
		var cr struct{ Data struct{ ID string } }
		r2 := s.do(t, req{method: "POST", path: "/api/v1/ai/content-requests", header: keyed(owner.k),
			body: `{"domain":"` + owner.name + `.example.com","budget":1,"type":"analyze","content":"# Widgets\n\nA widget is a small device."}`})
		r2.decode(t, &cr)
		r3 := s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(owner.k),
			body: `{"domain":"` + owner.name + `.example.com","visibility_score":50,"sentiment":"neutral"}`})
		var rd struct {
			EventID string `json:"event_id"`
		}
		r3.decode(t, &rd)
		if r.Status != 201 || r2.Status != 201 || r3.Status != 201 || rd.EventID == "" {
			t.Fatalf("%s: domain %d %s; content request %d %s; reading %d %s", owner.name, r.Status, r.Body, r2.Status, r2.Body, r3.Status, r3.Body)
		}
		for list, id := range map[string]string{"domains": d.ID, "content": cr.Data.ID, "events": rd.EventID} {
			if made[list] == nil {
				made[list] = map[string]string{}
			}
			made[list][owner.name] = id
		}
	}
	// item is an entry of any of the lists: its id and its owner.
	type item struct {
		ID       string  `json:"id"`
		ClientID *string `json:"client_id"`
		Data     struct {
			ClientID *string `json:"client_id"`
		} `json:"data"` // an event's
	}
	list := func(list string, h map[string]string, query string) map[string]string {
		t.Helper()
		var page struct{ Items []item }
		switch list {
		case "domains":
			s.do(t, req{method: "GET", path: "/v1/domains" + query, header: h}).decode(t, &page)
		case "events": // the readings' events, not the content requests'
			s.do(t, req{method: "GET", path: "/v1/events?event=ai_visibility_change&" + strings.TrimPrefix(query, "?"), header: h}).decode(t, &page)
		case "content":
			var env struct{ Data json.RawMessage }
			s.do(t, req{method: "GET", path: "/api/v1/ai/content-requests" + query, header: h}).decode(t, &env)
			if err := json.Unmarshal(env.Data, &page); err != nil {
				t.Fatal(err)
			}
		}
		owners := map[string]string{} // id -> "account" or the client's id
		for _, it := range page.Items {
			owner, c := "account", it.ClientID
			if c == nil {
				c = it.Data.ClientID
			}
			if c != nil {
				owner = *c
			}
			owners[it.ID] = owner
		}
		return owners
	}
	// The events reach the log through the bus. (Monitoring a domain
	// starts a scan, whose reading adds events of its own.)
	waitFor(t, "both events in the log", func() bool {
		got := list("events", bearer(k), "")
		return got[made["events"]["account"]] != "" && got[made["events"]["client"]] != ""
	})
	for name, ids := range made {
		h, hc := bearer(k), bearer(ck)
		if name == "content" {
			h, hc = keyed(k), keyed(ck)
		}
		for _, tc := range []struct {
			who    string
			h      map[string]string
			query  string
			owners []string // whose items it lists: "account" or "client"
		}{
			{"account key", h, "", []string{"account", "client"}},
			{"account key, client_id=*", h, "?client_id=*", []string{"account", "client"}},
			{"account key, the client", h, "?client_id=" + cl.ID, []string{"client"}},
			{"account key, another client", h, "?client_id=" + other.ID, nil},
			{"client key", hc, "", []string{"client"}},
			{"client key, its client", hc, "?client_id=" + cl.ID, []string{"client"}},
			{"client key, another client", hc, "?client_id=" + other.ID, nil},
		} {
			got := list(name, tc.h, tc.query)
			allowed := map[string]bool{}
			for _, o := range tc.owners {
				allowed[map[string]string{"account": "account", "client": cl.ID}[o]] = true
				if _, ok := got[ids[o]]; !ok {
					t.Errorf("%s, %s: %v lacks the %s's %s", name, tc.who, got, o, ids[o])
				}
			}
			for id, owner := range got {
				if !allowed[owner] {
					t.Errorf("%s, %s: lists %s of %s", name, tc.who, id, owner)
				}
			}
		}
	}
}
