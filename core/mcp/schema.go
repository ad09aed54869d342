package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inputSchema is the input schema of a tool whose arguments are In, as
// the SDK infers it (properties In does not name are refused).
func inputSchema[In any]() *jsonschema.Schema {
	s, err := jsonschema.For[In](&jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("mcp: input schema of %T: %v", *new(In), err))
	}
	return s
}

func resolve(s *jsonschema.Schema) *jsonschema.Resolved {
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("mcp: schema: %v", err))
	}
	return r
}

// typed is fn as a tool handler of the SDK, doing what the SDK's typed
// tools do: the arguments, with the input schema's defaults, checked
// against it, then read into In; fn's error a result with isError (a
// JSON-RPC error as itself); Out marshalled as the structured result,
// checked against the output schema, and as its text. It reads JSON with
// encoding/json, where the SDK's decoder takes a 32 KB buffer for each
// value it reads: three of those a call (the arguments twice, the result
// once) were a third of a tool call's garbage.
func typed[In, Out any](in, out *jsonschema.Resolved, fn mcp.ToolHandlerFor[In, Out]) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args any = map[string]any{}
		if raw := req.Params.Arguments; len(raw) > 0 {
			if err := json.Unmarshal(raw, &args); err != nil {
				return failed(fmt.Errorf(`validating "arguments": unmarshaling arguments: %w`, err)), nil
			}
		}
		if _, ok := args.(map[string]any); ok {
			if err := in.ApplyDefaults(&args); err != nil {
				return failed(fmt.Errorf(`validating "arguments": applying schema defaults: %w`, err)), nil
			}
		}
		if err := in.Validate(args); err != nil {
			return failed(fmt.Errorf(`validating "arguments": %w`, err)), nil
		}
		var v In
		if b, err := json.Marshal(args); err != nil {
			return failed(err), nil
		} else if err := json.Unmarshal(b, &v); err != nil {
			return failed(err), nil
		}
		res, o, err := fn(ctx, req, v)
		if err != nil {
			if werr, ok := err.(*jsonrpc.Error); ok {
				return nil, werr
			}
			return failed(err), nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		b, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("marshaling output: %w", err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("validating tool output: %w", err)
		}
		if err := out.Validate(doc); err != nil {
			return nil, fmt.Errorf("validating tool output: %w", err)
		}
		res.StructuredContent = json.RawMessage(b)
		if res.Content == nil {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
		}
		return res, nil
	}
}

func failed(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}

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
