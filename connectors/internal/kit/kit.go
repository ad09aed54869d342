// Package kit holds what the official connectors share: strict settings
// parsing, reading an aivis event into an alert, and classifying the
// answers of HTTP destinations into delivery results.
package kit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/aivis/aivis/plugins/sdk"
)

// Fields collects the problems of a connection's settings.
type Fields []sdk.FieldError

// Add records a problem of one field.
func (f *Fields) Add(field, format string, a ...any) {
	*f = append(*f, sdk.FieldError{Field: field, Message: fmt.Sprintf(format, a...)})
}

// URL checks an absolute http(s) URL; https only when secure. An empty
// value is a problem only when required.
func (f *Fields) URL(field, v string, required, secure bool) {
	if v == "" {
		if required {
			f.Add(field, "is required")
		}
		return
	}
	u, err := url.Parse(v)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		f.Add(field, "must be an absolute http(s) URL")
	case secure && u.Scheme != "https":
		f.Add(field, "must be an https URL")
	case u.User != nil:
		f.Add(field, "must not carry a user name or password")
	case len(v) > 2048:
		f.Add(field, "must be at most 2048 characters")
	}
}

// OneOf checks that v is one of allowed (or empty, meaning the default).
func (f *Fields) OneOf(field, v string, allowed ...string) {
	if v != "" && !slices.Contains(allowed, v) {
		f.Add(field, "must be one of %s", strings.Join(allowed, ", "))
	}
}

// Required checks that v is set.
func (f *Fields) Required(field, v string) {
	if strings.TrimSpace(v) == "" {
		f.Add(field, "is required")
	}
}

// Decode parses settings into v strictly: a JSON object whose fields v
// names, each of the right type. The problems name the field.
func Decode(raw json.RawMessage, v any) Fields {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Fields{{Message: "settings must be a JSON object"}}
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			return Fields{{Message: "settings must be one JSON object"}}
		}
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return Fields{{Field: te.Field, Message: "must be a " + jsonType(te.Type.Kind().String())}}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return Fields{{Field: strings.Trim(name, `"`), Message: "is not a setting of this connector"}}
	}
	return Fields{{Message: "settings must be one JSON object of this connector's settings"}}
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice":
		return "list"
	case "map", "struct":
		return "object"
	default:
		return "number"
	}
}

// Err is the first problem as one line, for the result of a delivery
// made with settings that are no longer valid.
func (f Fields) Err() string {
	if len(f) == 0 {
		return ""
	}
	if f[0].Field == "" {
		return "invalid settings: " + f[0].Message
	}
	return "invalid settings: " + f[0].Field + " " + f[0].Message
}

// All repeats one result for n events.
func All(n int, r sdk.Result) []sdk.Result {
	out := make([]sdk.Result, n)
	for i := range out {
		out[i] = r
	}
	return out
}
