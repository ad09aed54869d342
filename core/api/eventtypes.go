package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// EventType is one kind of the event catalog (GET /v1/event-types).
type EventType struct {
	Kind        string          `json:"kind"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Example     json.RawMessage `json:"example"`
}

// EventTypes is the event catalog, read from the OpenAPI document, its one
// source: the kinds of the EventKind schema in its order, and for each the
// body schema of its entry in the document's webhooks, whose description
// and first example the catalog gives, and which it gives as a JSON Schema
// 2020-12 of its own (the component schemas it refers to as its $defs).
var EventTypes = sync.OnceValues(func() ([]EventType, error) { return eventTypes(openAPI) })

// eventTypesPage is the body of GET /v1/event-types, made once.
var eventTypesPage = sync.OnceValues(func() ([]byte, error) {
	ts, err := EventTypes()
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Items      []EventType `json:"items"`
		HasMore    bool        `json:"has_more"`
		NextCursor *string     `json:"next_cursor"`
	}{Items: ts})
})

func (s *Server) listEventTypes(w http.ResponseWriter, r *http.Request) {
	b, err := eventTypesPage()
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeRaw(w, http.StatusOK, b)
}

const schemaRef = "#/components/schemas/"

func eventTypes(doc []byte) ([]EventType, error) {
	var d struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
		Webhooks map[string]struct {
			Post struct {
				RequestBody struct {
					Content map[string]struct {
						Schema struct {
							Ref string `json:"$ref"`
						} `json:"schema"`
					} `json:"content"`
				} `json:"requestBody"`
			} `json:"post"`
		} `json:"webhooks"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("event types: %w", err)
	}
	var kind struct {
		Enum []string `json:"enum"`
	}
	if err := json.Unmarshal(d.Components.Schemas["EventKind"], &kind); err != nil || len(kind.Enum) == 0 {
		return nil, fmt.Errorf("event types: no EventKind enum")
	}
	ts := make([]EventType, 0, len(kind.Enum))
	for _, k := range kind.Enum {
		ref := d.Webhooks[k].Post.RequestBody.Content["application/json"].Schema.Ref
		name, ok := strings.CutPrefix(ref, schemaRef)
		if !ok {
			return nil, fmt.Errorf("event types: %s has no body schema in webhooks", k)
		}
		var body map[string]any
		if err := json.Unmarshal(d.Components.Schemas[name], &body); err != nil {
			return nil, fmt.Errorf("event types: %s: schema %s: %w", k, name, err)
		}
		desc, _ := body["description"].(string)
		examples, _ := body["examples"].([]any)
		if desc == "" || len(examples) == 0 {
			return nil, fmt.Errorf("event types: %s: schema %s lacks a description or an example", k, name)
		}
		delete(body, "examples")
		defs := map[string]any{}
		if err := bundle(body, d.Components.Schemas, defs); err != nil {
			return nil, fmt.Errorf("event types: %s: %w", k, err)
		}
		body["$schema"] = "https://json-schema.org/draft/2020-12/schema"
		if len(defs) > 0 {
			body["$defs"] = defs
		}
		schema, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		example, err := json.Marshal(examples[0])
		if err != nil {
			return nil, err
		}
		ts = append(ts, EventType{Kind: k, Description: desc, Schema: schema, Example: example})
	}
	return ts, nil
}

// bundle rewrites the component references under v to $defs and copies
// each component they reach, once, into defs.
func bundle(v any, schemas map[string]json.RawMessage, defs map[string]any) error {
	switch v := v.(type) {
	case map[string]any:
		for key, x := range v {
			ref, isRef := x.(string)
			if key != "$ref" || !isRef {
				if err := bundle(x, schemas, defs); err != nil {
					return err
				}
				continue
			}
			name, ok := strings.CutPrefix(ref, schemaRef)
			if !ok {
				return fmt.Errorf("reference %q outside the component schemas", ref)
			}
			v[key] = "#/$defs/" + name
			if _, done := defs[name]; done {
				continue
			}
			var def any
			if err := json.Unmarshal(schemas[name], &def); err != nil {
				return fmt.Errorf("schema %s: %w", name, err)
			}
			defs[name] = def
			if err := bundle(def, schemas, defs); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := bundle(x, schemas, defs); err != nil {
				return err
			}
		}
	}
	return nil
}
