package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/text"
)

// MaxBody is the largest request body accepted.
const MaxBody = 1 << 20

// readBody reads a JSON request body: the content type must be JSON and
// the size at most MaxBody. An empty body (or one of white space alone) is
// allowed only when optional: an action that takes no required field
// (cancel, test, redeliver, rotate-secret) takes none, or a JSON object.
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
	if optional && len(bytes.TrimSpace(body)) == 0 {
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
// trailing data. Before encoding/json sees the body, a walker checks it
// against v's type and names each fault by its JSON path (prompts[0].text,
// settings.channel): a name must be exactly a field's and appear once
// (encoding/json alone would take "DOMAIN" for "domain" and let the last of
// two spellings win); a value must be of its field's kind, a time an RFC
// 3339 string; every string, names of maps included, must be text a tenant
// may send (text.Control). A member of an object sent as null is taken out
// of the body: it is absent, whatever its type.
func decodeStrict(body []byte, v any) error {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] != '{' && t[0] != '[' {
		if json.Valid(body) {
			return fault.New(fault.InvalidJSON, "the request body must be a JSON object")
		}
	}
	w := walker{body: body, dec: json.NewDecoder(bytes.NewReader(body)), checkUTF8: !utf8.Valid(body)}
	w.dec.UseNumber()
	if _, err := w.value(reflect.TypeOf(v), "", 0); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(w.cut()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.New(fault.InvalidJSON, "the request body must hold exactly one JSON object")
	}
	return nil
}

// walker reads a request body token by token for decodeStrict.
type walker struct {
	body      []byte
	dec       *json.Decoder
	checkUTF8 bool       // the body holds bytes that are not UTF-8: find the string
	cuts      [][2]int64 // the spans of body to take out: members sent as null
}

// maxDepth bounds the nesting of a body, as encoding/json's does.
const maxDepth = 10000

var (
	timeType        = reflect.TypeFor[time.Time]()
	rawType         = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// value reads one JSON value, named name, that is to go into a t (nil:
// any value), and reports whether it is null, which the caller judges.
func (w *walker) value(t reflect.Type, name string, depth int) (null bool, err error) {
	if depth > maxDepth {
		return false, fault.New(fault.InvalidJSON, "the request body is nested too deeply")
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t.Kind() == reflect.Interface || t == rawType) {
		t = nil
	}
	if t != nil && t != timeType && reflect.PointerTo(t).Implements(unmarshalerType) {
		return w.unmarshaler(t, name)
	}
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		return false, decodeError(err)
	}
	switch tok := tok.(type) {
	case nil:
		return true, nil
	case json.Delim:
		if tok == '{' && (t == nil || t != timeType && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map)) {
			return false, w.object(t, name, depth)
		}
		if tok == '[' && (t == nil || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			var elem reflect.Type
			if t != nil {
				elem = t.Elem()
			}
			for i := 0; w.dec.More(); i++ {
				ename := name + "[" + strconv.Itoa(i) + "]"
				if null, err := w.value(elem, ename, depth+1); err != nil {
					return false, err
				} else if null && elem != nil {
					return false, wrongKind(ename, elem)
				}
			}
			_, err := w.dec.Token()
			return false, decodeError(err)
		}
	case string:
		if t == nil || t == timeType || t.Kind() == reflect.String {
			if w.checkUTF8 && !utf8.Valid(w.body[start:w.dec.InputOffset()]) {
				return false, fault.Invalid(fault.FieldError{Field: name, Message: "must be UTF-8 text"})
			}
			if err := textFault(name, tok); err != nil {
				return false, err
			}
			var at time.Time
			if t == timeType && at.UnmarshalText([]byte(tok)) != nil {
				return false, wrongKind(name, t)
			}
			return false, nil
		}
	case json.Number:
		if t == nil {
			return false, nil
		}
		return false, numberFault(name, t, tok)
	case bool:
		if t == nil || t.Kind() == reflect.Bool {
			return false, nil
		}
	}
	return false, wrongKind(name, t)
}

// object reads the members of an object, into a struct, a map or (t nil)
// anything. A member of a struct sent as null is cut from the body with its
// comma, and so is the comma before the first member kept after it.
func (w *walker) object(t reflect.Type, name string, depth int) error {
	var fields map[string]reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = jsonFields(t)
	}
	seen := make(map[string]bool)
	kept := 0
	for i := 0; w.dec.More(); i++ {
		start := w.dec.InputOffset() // before the comma of a member after the first
		k, err := w.dec.Token()
		if err != nil {
			return decodeError(err)
		}
		key, _ := k.(string)
		mname := join(name, key)
		if w.checkUTF8 && !utf8.Valid(w.body[start:w.dec.InputOffset()]) {
			return fault.Invalid(fault.FieldError{Field: mname, Message: "has a name that is not UTF-8 text"})
		}
		if seen[key] {
			return fault.Invalid(fault.FieldError{Field: mname, Message: "appears more than once"})
		}
		seen[key] = true
		var child reflect.Type
		switch {
		case fields != nil:
			f, ok := fields[key]
			if !ok {
				return fault.Invalid(fault.FieldError{Field: mname, Message: "is not a known field"})
			}
			child = f
		case t != nil:
			child = t.Elem()
		}
		if err := textFault(mname, key); err != nil {
			return err
		}
		null, err := w.value(child, mname, depth+1)
		switch {
		case err != nil:
			return err
		case null && fields != nil:
			w.cuts = append(w.cuts, [2]int64{start, w.dec.InputOffset()})
			continue
		case null && child != nil:
			return wrongKind(mname, child)
		case kept == 0 && i > 0:
			comma := int64(bytes.IndexByte(w.body[start:], ','))
			w.cuts = append(w.cuts, [2]int64{start, start + comma + 1})
		}
		kept++
	}
	_, err := w.dec.Token()
	return decodeError(err)
}

// unmarshaler reads a value that a type of its own decodes (an amount of
// dollars), and has it decode the value to name what is wrong with it.
func (w *walker) unmarshaler(t reflect.Type, name string) (null bool, err error) {
	var raw json.RawMessage
	if err := w.dec.Decode(&raw); err != nil {
		return false, decodeError(err)
	}
	if string(raw) == "null" {
		return true, nil
	}
	if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
		msg := "is not valid"
		if errors.Is(err, client.ErrUSDSyntax) || errors.Is(err, client.ErrUSDPrecision) || errors.Is(err, client.ErrUSDRange) {
			msg = err.Error()
		}
		return false, fault.Invalid(fault.FieldError{Field: name, Message: msg})
	}
	return false, nil
}

// cut is the body without the spans cut from it.
func (w *walker) cut() []byte {
	if len(w.cuts) == 0 {
		return w.body
	}
	out := make([]byte, 0, len(w.body))
	var at int64
	for _, c := range w.cuts {
		out = append(out, w.body[at:c[0]]...)
		at = c[1]
	}
	return append(out, w.body[at:]...)
}

// join is the JSON path of a member of the object at path; an element of
// an array at path is path[i], as the services name them.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// textFault refuses, as a VALIDATION_ERROR of field, a string that holds a
// character a tenant's text may not (text.Control): what the API decodes
// and reads of a query or a path.
func textFault(field, s string) error {
	r, bad := text.Control(s)
	switch {
	case !bad:
		return nil
	case r == utf8.RuneError:
		return fault.Invalid(fault.FieldError{Field: field, Message: "must be UTF-8 text"})
	default:
		return fault.Invalid(fault.FieldError{Field: field, Message: fmt.Sprintf("must not hold the control character U+%04X", r)})
	}
}

// paramsFault refuses a query parameter's value or a path parameter that
// holds a character a tenant's text may not, naming the parameter.
func paramsFault(r *http.Request) error {
	if r.URL.RawQuery != "" {
		q := r.URL.Query()
		for _, name := range slices.Sorted(maps.Keys(q)) {
			for _, v := range q[name] {
				if err := textFault(name, v); err != nil {
					return err
				}
			}
		}
	}
	if rc := chi.RouteContext(r.Context()); rc != nil {
		for i, name := range rc.URLParams.Keys {
			if err := textFault(name, rc.URLParams.Values[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// numberFault checks that n fits a field of type t.
func numberFault(name string, t reflect.Type, n json.Number) error {
	var err error
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		_, err = strconv.ParseInt(string(n), 10, t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		_, err = strconv.ParseUint(string(n), 10, t.Bits())
	case reflect.Float32, reflect.Float64:
		_, err = strconv.ParseFloat(string(n), t.Bits())
	default:
		return wrongKind(name, t)
	}
	if errors.Is(err, strconv.ErrRange) {
		return fault.Invalid(fault.FieldError{Field: name, Message: "is out of range"})
	} else if err != nil {
		return wrongKind(name, t)
	}
	return nil
}

// wrongKind refuses a value not of the kind its field takes; the body
// itself must be an object.
func wrongKind(name string, t reflect.Type) error {
	if name == "" {
		return fault.New(fault.InvalidJSON, "the request body must be a JSON object")
	}
	kind := "a JSON value of another kind"
	switch k := t.Kind(); {
	case t == timeType:
		kind = "an RFC 3339 time as a string, such as \"2026-01-02T15:04:05Z\""
	case k == reflect.String:
		kind = "a string"
	case k == reflect.Bool:
		kind = "a boolean"
	case k >= reflect.Int && k <= reflect.Uint64:
		kind = "an integer"
	case k == reflect.Float32 || k == reflect.Float64:
		kind = "a number"
	case k == reflect.Slice || k == reflect.Array:
		kind = "an array"
	case k == reflect.Struct || k == reflect.Map:
		kind = "an object"
	}
	return fault.Invalid(fault.FieldError{Field: name, Message: "must be " + kind})
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

// decodeError turns an error of encoding/json into a message that names
// nothing of Go (nil for nil).
func decodeError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syn):
		return fault.New(fault.InvalidJSON, "the request body is not valid JSON (at byte %d)", syn.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fault.New(fault.InvalidJSON, "the request body is not valid JSON: it ends too early")
	case errors.As(err, &typ) && typ.Field != "":
		return fault.Invalid(fault.FieldError{Field: typ.Field, Message: "is not of the kind this field takes"})
	case errors.As(err, &typ):
		return fault.New(fault.InvalidJSON, "the request body must be a JSON object")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fault.Invalid(fault.FieldError{Field: strings.Trim(name, `"`), Message: "is not a known field"})
	}
	return fault.New(fault.InvalidJSON, "the request body could not be decoded")
}
