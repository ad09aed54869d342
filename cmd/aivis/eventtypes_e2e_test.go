package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aivis/aivis/core/events"
)

// TestEventTypesEndToEnd: GET /v1/event-types answers any key, whatever its
// scopes, with every kind the server knows, and the events the server emits and lists
// pass the catalog's schema of their kind, while another kind's fails them.
func TestEventTypesEndToEnd(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	narrow := newKey(t, dir, a.ID, "--scopes", "budget:read")
	s := start(t, dir)

	if r := s.do(t, req{method: "GET", path: "/v1/event-types"}); r.Status != 401 {
		t.Fatalf("without a key: %d %s", r.Status, r.Body)
	}
	r := s.do(t, req{method: "GET", path: "/v1/event-types", header: bearer(narrow)})
	var page struct {
		Items []struct {
			Kind    string          `json:"kind"`
			Schema  json.RawMessage `json:"schema"`
			Example json.RawMessage `json:"example"`
		} `json:"items"`
		HasMore bool `json:"has_more"`
	}
	r.decode(t, &page)
	if r.Status != 200 || page.HasMore {
		t.Fatalf("event types: %d %s %s", r.Status, r.Header, r.Body)
	}
	schemas := map[string]*jsonschema.Schema{}
	var kinds []string
	for _, it := range page.Items {
		kinds = append(kinds, it.Kind)
		res, err := jsonschema.UnmarshalJSON(bytes.NewReader(it.Schema))
		if err != nil {
			t.Fatalf("%s: %v", it.Kind, err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(it.Kind+".json", res); err != nil {
			t.Fatal(err)
		}
		if schemas[it.Kind], err = c.Compile(it.Kind + ".json"); err != nil {
			t.Fatalf("%s: %v", it.Kind, err)
		}
	}
	if !slices.Equal(kinds, events.Kinds) {
		t.Fatalf("kinds %v, want %v", kinds, events.Kinds)
	}

	// Events the server makes: readings' and a content request's.
	for _, body := range []string{`{"domain":"example.com","visibility_score":50,"sentiment":"neutral"}`,
		`{"domain":"example.com","visibility_score":61,"sentiment":"positive","sentiment_score":0.5}`} {
		if r := s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(k), body: body}); r.Status != 201 {
			t.Fatalf("reading: %d %s", r.Status, r.Body)
		}
	}
	var cr struct{ Data struct{ ID string } }
	s.do(t, req{method: "POST", path: "/api/v1/ai/content-requests", header: keyed(k),
		body: `{"domain":"example.com","budget":1,"type":"analyze","content":"# Widgets\n\nA widget is a small device."}`}).decode(t, &cr)
	if cr.Data.ID == "" {
		t.Fatal("no content request made")
	}
	// The fan-out logs each event once it has handled it, a moment after
	// its request answered: the list is read once it holds the three.
	var evs struct{ Items []json.RawMessage }
	waitFor(t, "the three events listed", func() bool {
		s.do(t, req{method: "GET", path: "/v1/events", header: bearer(k)}).decode(t, &evs)
		return len(evs.Items) >= 3
	})
	seen := map[string]int{}
	for _, raw := range evs.Items {
		var head struct{ Event string }
		json.Unmarshal(raw, &head)
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err := schemas[head.Event].Validate(v); err != nil {
			t.Errorf("%s fails the catalog's schema: %v", raw, err)
		}
		other := events.WebhookTest
		if head.Event == other {
			other = events.VisibilityChange
		}
		if schemas[other].Validate(v) == nil {
			t.Errorf("%s passes the schema of %s", raw, other)
		}
		seen[head.Event]++
	}
	if seen[events.VisibilityChange] != 2 || seen[events.ContentRequestCreated] != 1 {
		t.Errorf("events listed: %v", seen)
	}
}
