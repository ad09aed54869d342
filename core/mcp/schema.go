package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// outputSchema is the output schema of a tool whose result is Out: the
// schema the SDK would infer, except that a json.RawMessage field (a part
// of the API's answer passed on as it is) takes any value, and that an
// object may hold properties Out does not name and lack some it does, so
// that what the API adds to an answer reaches clients and what it leaves
// out is no protocol error.
func outputSchema[Out any]() *jsonschema.Schema {
	s, err := jsonschema.For[Out](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): anyJSON,
	}})
	if err != nil {
		panic(fmt.Sprintf("mcp: output schema of %T: %v", *new(Out), err))
	}
	open(s)
	return s
}

// anyJSON takes any JSON value. It is no empty schema, which marshals as
// true: clients (the TypeScript SDK) take a property's schema to be an
// object.
var anyJSON = &jsonschema.Schema{Types: []string{"object", "array", "string", "number", "boolean", "null"}}

func open(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if s.Type == "object" || len(s.Properties) > 0 {
		s.AdditionalProperties = nil
		s.Required = nil
	}
	for _, p := range s.Properties {
		open(p)
	}
	open(s.Items)
}

// passthrough makes a result the API's own JSON: embedded in an Out
// type, whose fields then only describe it (its schema), it marshals as
// the answer it holds, fields Out does not name included.
type passthrough struct{ raw json.RawMessage }

func (p passthrough) MarshalJSON() ([]byte, error) {
	if len(p.raw) == 0 {
		return []byte("{}"), nil
	}
	return p.raw, nil
}
