package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestOpenAPIExamplesMatchSchemas: every example in the document (of a
// media type, a parameter, a header or a schema, in paths, components and
// webhooks) validates against the schema beside it, as JSON Schema 2020-12.
func TestOpenAPIExamplesMatchSchemas(t *testing.T) {
	const docURL = "https://aivis.test/openapi.json"
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	res, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(docURL, res); err != nil {
		t.Fatal(err)
	}
	checked := 0
	check := func(schemaPtr, examplePtr string, example any) {
		s, err := c.Compile(docURL + "#" + schemaPtr)
		if err != nil {
			t.Errorf("compile %s: %v", schemaPtr, err)
			return
		}
		// Validate the value as the document's JSON gives it (numbers
		// as json.Number, as the validator expects).
		raw, _ := json.Marshal(example)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if err := s.Validate(v); err != nil {
			t.Errorf("the example at %s does not match its schema %s:\n%v", examplePtr, schemaPtr, err)
		}
	}
	for _, e := range openAPIExamples(doc, "") {
		check(e.schema, e.example, e.value)
	}
	if checked < 50 {
		t.Fatalf("only %d examples found: the walk misses the document's examples", checked)
	}
	t.Logf("%d examples checked", checked)
}

type openAPIExample struct {
	schema, example string // JSON pointers in the document
	value           any
}

// openAPIExamples walks the document and returns every example with the
// pointer of the schema it must match. An OpenAPI object with a schema
// (media type, parameter, header) has example or examples (a map of
// Example Objects) beside it; a schema has examples (an array) or the
// older example within it.
func openAPIExamples(node any, ptr string) []openAPIExample {
	var out []openAPIExample
	switch n := node.(type) {
	case map[string]any:
		_, hasSchema := n["schema"].(map[string]any)
		if hasSchema {
			if ex, ok := n["example"]; ok {
				out = append(out, openAPIExample{ptr + "/schema", ptr + "/example", ex})
			}
			if exs, ok := n["examples"].(map[string]any); ok {
				for name, e := range exs {
					if v, ok := e.(map[string]any)["value"]; ok {
						out = append(out, openAPIExample{ptr + "/schema", ptr + "/examples/" + escapePointer(name) + "/value", v})
					}
				}
			}
		}
		if isSchema(n) {
			if exs, ok := n["examples"].([]any); ok {
				for i, v := range exs {
					out = append(out, openAPIExample{ptr, fmt.Sprintf("%s/examples/%d", ptr, i), v})
				}
			}
			if ex, ok := n["example"]; ok && !hasSchema {
				out = append(out, openAPIExample{ptr, ptr + "/example", ex})
			}
		}
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			switch k {
			case "example", "examples":
				continue // values, not more of the document
			}
			out = append(out, openAPIExamples(n[k], ptr+"/"+escapePointer(k))...)
		}
	case []any:
		for i, v := range n {
			out = append(out, openAPIExamples(v, fmt.Sprintf("%s/%d", ptr, i))...)
		}
	}
	return out
}

// isSchema reports whether an object of the document is a JSON Schema
// (it has a keyword only a schema has).
func isSchema(n map[string]any) bool {
	for _, k := range []string{"type", "properties", "items", "allOf", "oneOf", "anyOf", "$ref", "enum", "const"} {
		if _, ok := n[k]; ok {
			return true
		}
	}
	return false
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
