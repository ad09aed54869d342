package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/fault"
)

// MaxBody is the largest request body accepted.
const MaxBody = 1 << 20

// readBody reads a JSON request body: the content type must be JSON and
// the size at most MaxBody. An empty body is allowed only when optional.
func readBody(r *http.Request, optional bool) ([]byte, error) {
	if r.ContentLength > MaxBody {
		return nil, fault.New(fault.PayloadTooLarge, "the request body must be at most %d bytes", MaxBody)
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, fault.New(fault.PayloadTooLarge, "the request body must be at most %d bytes", MaxBody)
	}
	if err != nil {
		return nil, fault.New(fault.InvalidJSON, "the request body could not be read")
	}
	if len(body) == 0 && optional {
		return nil, nil
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, fault.New(fault.UnsupportedMediaType, "the request body must be JSON with Content-Type: application/json")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, fault.New(fault.InvalidJSON, "the request body is empty; send a JSON object")
	}
	return body, nil
}

// readJSON reads a request body into v with decodeStrict; an optional
// body may be empty, leaving v as it is.
func readJSON(r *http.Request, v any, optional bool) error {
	body, err := readBody(r, optional)
	if err != nil || body == nil {
		return err
	}
	return decodeStrict(body, v)
}

// decodeStrict decodes one JSON object into v, refusing unknown fields and
// trailing data, and turns decoding errors into field-level messages.
// Field names match exactly and appear once: encoding/json alone would take
// "DOMAIN" for "domain" and let the last of two spellings win.
func decodeStrict(body []byte, v any) error {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] != '{' && t[0] != '[' {
		if json.Valid(body) {
			return fault.New(fault.InvalidJSON, "the request body must be a JSON object")
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.New(fault.InvalidJSON, "the request body must hold exactly one JSON object")
	}
	// The body is valid JSON of the right shape: check its names.
	return checkNames(json.NewDecoder(bytes.NewReader(body)), reflect.TypeOf(v), "")
}

// checkNames walks one JSON value and refuses an object key that is not
// exactly the name of a field of t (where t is a struct) or that repeats a
// key of the same object.
func checkNames(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return decodeError(err)
	}
	switch tok {
	case json.Delim('{'):
		seen := make(map[string]bool)
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return decodeError(err)
			}
			key, _ := k.(string)
			name := path + key
			if seen[key] {
				return fault.Invalid(fault.FieldError{Field: name, Message: "appears more than once"})
			}
			seen[key] = true
			var child reflect.Type
			if t != nil {
				switch t.Kind() {
				case reflect.Struct:
					f, ok := jsonFields(t)[key]
					if !ok {
						return fault.Invalid(fault.FieldError{Field: name, Message: "is not a known field"})
					}
					child = f
				case reflect.Map:
					child = t.Elem()
				}
			}
			if err := checkNames(dec, child, name+"."); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := checkNames(dec, elem, fmt.Sprintf("%s%d.", path, i)); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	if err != nil {
		return decodeError(err)
	}
	return nil
}

// fieldTypes caches, per struct type, the JSON names of its fields.
var fieldTypes sync.Map // reflect.Type -> map[string]reflect.Type

func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldTypes.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := make(map[string]reflect.Type)
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || (f.Anonymous && f.Tag.Get("json") == "") {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		m[name] = f.Type
	}
	fieldTypes.Store(t, m)
	return m
}

func decodeError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fault.New(fault.InvalidJSON, "the request body is not valid JSON (at byte %d)", syn.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fault.New(fault.InvalidJSON, "the request body is not valid JSON: it ends too early")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fault.New(fault.InvalidJSON, "the request body must be a JSON object")
		}
		return fault.Invalid(fault.FieldError{Field: typ.Field, Message: "must be " + jsonKind(typ.Type.Kind().String())})
	case errors.Is(err, client.ErrUSDSyntax), errors.Is(err, client.ErrUSDPrecision), errors.Is(err, client.ErrUSDRange):
		return fault.Invalid(fault.FieldError{Field: "budget", Message: err.Error()})
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fault.Invalid(fault.FieldError{Field: strings.Trim(name, `"`), Message: "is not a known field"})
	}
	return fault.New(fault.InvalidJSON, "the request body could not be decoded: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "map", "struct":
		return "an object"
	case "bool":
		return "a boolean"
	default:
		return fmt.Sprintf("a %s", strings.TrimRight(k, "0123456789"))
	}
}
