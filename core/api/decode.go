package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

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

// decodeStrict decodes one JSON object into v, refusing unknown fields and
// trailing data, and turns decoding errors into field-level messages.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.New(fault.InvalidJSON, "the request body must hold exactly one JSON object")
	}
	return nil
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
