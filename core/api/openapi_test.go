package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/traffic"
)

// TestOpenAPIMatchesRouter: every route the router serves is in the
// document, and every operation in the document is routed.
func TestOpenAPIMatchesRouter(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi version %q, want 3.1.x", doc.OpenAPI)
	}
	var documented []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "post", "put", "patch", "delete", "head", "options":
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	// The MCP endpoint and its metadata are routed, but are no API
	// operations (docs/mcp.md).
	s := New(Config{}, Deps{MCP: func(*Server) http.Handler { return http.NotFoundHandler() }, Traffic: &traffic.Service{},
		Changes: &changes.Service{}})
	var routed []string
	err := chi.Walk(s.Router(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if slices.Contains(MCPPaths, route) {
			return nil
		}
		routed = append(routed, method+" "+strings.TrimSuffix(strings.ReplaceAll(route, "/*/", "/"), "/"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(documented)
	slices.Sort(routed)
	for _, r := range routed {
		if !slices.Contains(documented, r) {
			t.Errorf("routed but not documented: %s", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routed, d) {
			t.Errorf("documented but not routed: %s", d)
		}
	}
	if len(routed) < 7 {
		t.Errorf("only %d routes walked: %v", len(routed), routed)
	}
}

// TestOpenAPIListsEveryEventKind: the document's event kinds are the
// catalog's (core/events), each with its webhook operation and its event
// schema among those GET /v1/events lists.
func TestOpenAPIListsEveryEventKind(t *testing.T) {
	var doc struct {
		Webhooks   map[string]json.RawMessage `json:"webhooks"`
		Components struct {
			Schemas map[string]struct {
				Enum  []string `json:"enum"`
				OneOf []struct {
					Ref string `json:"$ref"`
				} `json:"oneOf"`
				Properties map[string]struct {
					Const any `json:"const"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	schemas := doc.Components.Schemas
	if enum := schemas["EventKind"].Enum; !slices.Equal(enum, events.Kinds) {
		t.Errorf("EventKind %v, want the catalog's %v", enum, events.Kinds)
	}
	var listed []string
	for _, ref := range schemas["AnyEvent"].OneOf {
		kind, _ := schemas[strings.TrimPrefix(ref.Ref, "#/components/schemas/")].Properties["event"].Const.(string)
		listed = append(listed, kind)
	}
	for _, k := range events.Kinds {
		if _, ok := doc.Webhooks[k]; !ok {
			t.Errorf("%s: no webhook operation", k)
		}
		if !slices.Contains(listed, k) {
			t.Errorf("%s: no event schema in AnyEvent (%v)", k, listed)
		}
	}
	if len(doc.Webhooks) != len(events.Kinds) || len(listed) != len(events.Kinds) {
		t.Errorf("%d webhook operations and %d event schemas for %d kinds", len(doc.Webhooks), len(listed), len(events.Kinds))
	}
}
