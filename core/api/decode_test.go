package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/fault"
)

func fieldsOf(fe *fault.Error) []string {
	var out []string
	for _, d := range fe.Details {
		out = append(out, d.Field)
	}
	return out
}

// TestDecodeStrict: what decodeStrict makes of request bodies, into the
// create-content-request shape.
func TestDecodeStrict(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  string
		code  fault.Code // "" for success
		field string     // for VALIDATION_ERROR
		msg   string     // part of the message or detail
		check func(t *testing.T, in client.CreateContentRequest)
	}{
		{name: "minimal", body: `{"domain":"example.com","budget":25}`, check: func(t *testing.T, in client.CreateContentRequest) {
			if in.Domain != "example.com" || in.Budget != 25*dollarUSD {
				t.Fatalf("decoded %+v", in)
			}
		}},
		{name: "every field", body: `{"domain":"example.com","budget":12.5,"url":"https://example.com/a","content":"c",
			"target_queries":["q1","q2"],"type":"analyze","client_id":"cli_1","metadata":{"k":"v"}}`,
			check: func(t *testing.T, in client.CreateContentRequest) {
				want := client.CreateContentRequest{Domain: "example.com", Budget: 12_500_000, URL: "https://example.com/a", Content: "c",
					TargetQueries: []string{"q1", "q2"}, Type: "analyze", ClientID: "cli_1", Metadata: map[string]string{"k": "v"}}
				if !equalCreate(in, want) {
					t.Fatalf("decoded %+v", in)
				}
			}},
		{name: "surrounding whitespace", body: " \n\t{\"domain\":\"example.com\",\"budget\":1}\r\n "},
		{name: "budget six decimals", body: `{"budget":0.000001}`, check: budgetIs(1)},
		{name: "budget exponent", body: `{"budget":1E+3}`, check: budgetIs(1_000 * dollarUSD)},
		{name: "budget negative exponent", body: `{"budget":125e-1}`, check: budgetIs(12_500_000)},
		{name: "budget trailing zeros", body: `{"budget":1.50000000000}`, check: budgetIs(1_500_000)},
		{name: "budget -1 decodes (validation refuses it)", body: `{"budget":-1}`, check: budgetIs(-dollarUSD)},
		{name: "budget at the decoding bound", body: `{"budget":1000000000}`, check: budgetIs(client.MaxUSD)},

		{name: "empty", body: ``, code: fault.InvalidJSON},
		{name: "truncated", body: `{"domain":"example.com"`, code: fault.InvalidJSON, msg: "ends too early"},
		{name: "malformed", body: `{"domain":example.com}`, code: fault.InvalidJSON, msg: "not valid JSON"},
		{name: "single quotes", body: `{'domain':'example.com'}`, code: fault.InvalidJSON},
		{name: "trailing comma", body: `{"domain":"example.com",}`, code: fault.InvalidJSON},
		{name: "comment", body: `{"domain":"example.com" /* hi */}`, code: fault.InvalidJSON},
		{name: "trailing garbage", body: `{"domain":"example.com"} x`, code: fault.InvalidJSON, msg: "exactly one JSON object"},
		{name: "two objects", body: `{"domain":"a.com"}{"domain":"b.com"}`, code: fault.InvalidJSON, msg: "exactly one JSON object"},
		{name: "object then array", body: `{} []`, code: fault.InvalidJSON},
		{name: "extra brace", body: `{}}`, code: fault.InvalidJSON},
		{name: "top-level array", body: `[{"domain":"example.com","budget":1}]`, code: fault.InvalidJSON, msg: "must be a JSON object"},
		{name: "empty array", body: `[]`, code: fault.InvalidJSON, msg: "must be a JSON object"},
		{name: "top-level string", body: `"example.com"`, code: fault.InvalidJSON, msg: "must be a JSON object"},
		{name: "top-level number", body: `42`, code: fault.InvalidJSON, msg: "must be a JSON object"},
		{name: "deep nesting", body: strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000), code: fault.InvalidJSON},

		{name: "unknown field", body: `{"domain":"example.com","budget":1,"priority":"high"}`, code: fault.ValidationError, field: "priority", msg: "not a known field"},
		{name: "unknown nested-looking field", body: `{"metadata.k":"v"}`, code: fault.ValidationError, field: "metadata.k"},
		{name: "domain not a string", body: `{"domain":5}`, code: fault.ValidationError, field: "domain", msg: "must be a string"},
		{name: "domain an object", body: `{"domain":{"name":"x"}}`, code: fault.ValidationError, field: "domain", msg: "must be a string"},
		{name: "url a number", body: `{"url":1}`, code: fault.ValidationError, field: "url"},
		{name: "target_queries a string", body: `{"target_queries":"q"}`, code: fault.ValidationError, field: "target_queries", msg: "must be an array"},
		{name: "target_queries an object", body: `{"target_queries":{"0":"q"}}`, code: fault.ValidationError, field: "target_queries", msg: "must be an array"},
		{name: "target_queries of numbers", body: `{"target_queries":[1]}`, code: fault.ValidationError, field: "target_queries[0]", msg: "must be a string"},
		{name: "target_queries with null", body: `{"target_queries":["q",null]}`, code: fault.ValidationError, field: "target_queries[1]", msg: "must be a string"},
		{name: "metadata an array", body: `{"metadata":["a"]}`, code: fault.ValidationError, field: "metadata", msg: "must be an object"},
		{name: "metadata value a number", body: `{"metadata":{"a":1}}`, code: fault.ValidationError, field: "metadata.a", msg: "must be a string"},
		{name: "metadata value null", body: `{"metadata":{"a":null}}`, code: fault.ValidationError, field: "metadata.a", msg: "must be a string"},
		{name: "type a boolean", body: `{"type":true}`, code: fault.ValidationError, field: "type"},

		{name: "budget as a string", body: `{"budget":"12.5"}`, code: fault.ValidationError, field: "budget", msg: "number of dollars"},
		{name: "budget too precise", body: `{"budget":1.0000001}`, code: fault.ValidationError, field: "budget", msg: "six decimal places"},
		{name: "budget tiny", body: `{"budget":1e-7}`, code: fault.ValidationError, field: "budget", msg: "six decimal places"},
		{name: "budget 1e400", body: `{"budget":1e400}`, code: fault.ValidationError, field: "budget", msg: "at most"},
		{name: "budget -1e400", body: `{"budget":-1e400}`, code: fault.ValidationError, field: "budget", msg: "at most"},
		{name: "budget just over a billion", body: `{"budget":1000000000.000001}`, code: fault.ValidationError, field: "budget"},
		{name: "budget huge exponent", body: `{"budget":1e999999999}`, code: fault.ValidationError, field: "budget"},
		{name: "budget very long number", body: `{"budget":` + strings.Repeat("9", 100) + `}`, code: fault.ValidationError, field: "budget"},
		{name: "budget NaN string", body: `{"budget":"NaN"}`, code: fault.ValidationError, field: "budget"},
		{name: "budget Infinity string", body: `{"budget":"Infinity"}`, code: fault.ValidationError, field: "budget"},
		{name: "budget NaN bare", body: `{"budget":NaN}`, code: fault.InvalidJSON},
		{name: "budget Infinity bare", body: `{"budget":Infinity}`, code: fault.InvalidJSON},
		{name: "budget hex", body: `{"budget":0x10}`, code: fault.InvalidJSON},
		{name: "budget leading plus", body: `{"budget":+1}`, code: fault.InvalidJSON},
		{name: "budget leading zero", body: `{"budget":01}`, code: fault.InvalidJSON},
		{name: "budget null is absent", body: `{"budget":null}`, check: budgetIs(0)},
		{name: "budget true", body: `{"budget":true}`, code: fault.ValidationError, field: "budget"},
		{name: "budget an object", body: `{"budget":{"amount":1}}`, code: fault.ValidationError, field: "budget"},
		{name: "budget an array", body: `{"budget":[1]}`, code: fault.ValidationError, field: "budget"},
		{name: "budget a fraction string", body: `{"budget":"1/3"}`, code: fault.ValidationError, field: "budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in client.CreateContentRequest
			err := decodeStrict([]byte(tc.body), &in)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("decodeStrict: %v", err)
				}
				if tc.check != nil {
					tc.check(t, in)
				}
				return
			}
			f, ok := fault.As(err)
			if !ok {
				t.Fatalf("error %v (%T), want %s", err, err, tc.code)
			}
			if f.Code != tc.code || f.Code.Status() != http.StatusBadRequest {
				t.Fatalf("got %s: %s; want %s", f.Code, f.Message, tc.code)
			}
			if tc.field != "" && !slices.Equal(fieldsOf(f), []string{tc.field}) {
				t.Fatalf("fields %v, want [%s] (%s)", fieldsOf(f), tc.field, f.Message)
			}
			if tc.code == fault.InvalidJSON && len(f.Details) != 0 {
				t.Fatalf("INVALID_JSON with details %+v", f.Details)
			}
			text := f.Message
			for _, d := range f.Details {
				text += " " + d.Message
			}
			if tc.msg != "" && !strings.Contains(text, tc.msg) {
				t.Fatalf("message %q does not contain %q", text, tc.msg)
			}
			if strings.Contains(text, "json:") || strings.Contains(text, "client.") || strings.Contains(text, "USD") {
				t.Fatalf("message %q shows Go internals", text)
			}
		})
	}
}

const dollarUSD client.USD = 1_000_000

func budgetIs(want client.USD) func(*testing.T, client.CreateContentRequest) {
	return func(t *testing.T, in client.CreateContentRequest) {
		t.Helper()
		if in.Budget != want {
			t.Fatalf("budget %d, want %d", in.Budget, want)
		}
	}
}

func equalCreate(a, b client.CreateContentRequest) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// TestDecodeStrictEmptyObjectShapes: the cancel body is decoded into an
// empty struct: only {} (or nothing) is accepted.
func TestDecodeStrictCancelBody(t *testing.T) {
	for _, tc := range []struct {
		body string
		code fault.Code
	}{
		{`{}`, ""},
		{` { } `, ""},
		{`{"reason":"x"}`, fault.ValidationError},
		{`[]`, fault.InvalidJSON},
		{`{} {}`, fault.InvalidJSON},
	} {
		err := decodeStrict([]byte(tc.body), &struct{}{})
		if tc.code == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.body, err)
			}
			continue
		}
		if f, ok := fault.As(err); !ok || f.Code != tc.code {
			t.Errorf("%s: %v, want %s", tc.body, err, tc.code)
		}
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestReadBody(t *testing.T) {
	small := []byte(`{"domain":"example.com","budget":1}`)
	atLimit := bytes.Repeat([]byte(" "), MaxBody)
	copy(atLimit, small)
	overLimit := bytes.Repeat([]byte(" "), MaxBody+1)
	copy(overLimit, small)
	for _, tc := range []struct {
		name        string
		body        []byte
		contentType []string // nil: no header
		chunked     bool     // no Content-Length
		length      int64    // declared Content-Length when not 0 (and not chunked)
		optional    bool
		code        fault.Code // "" for success
		wantNil     bool
	}{
		{name: "json", body: small, contentType: []string{"application/json"}},
		{name: "json with charset", body: small, contentType: []string{"application/json; charset=utf-8"}},
		{name: "json upper case", body: small, contentType: []string{"Application/JSON"}},
		{name: "json with spaces", body: small, contentType: []string{"application/json ; charset=UTF-8"}},
		{name: "no content type", body: small, code: fault.UnsupportedMediaType},
		{name: "empty content type", body: small, contentType: []string{""}, code: fault.UnsupportedMediaType},
		{name: "text/plain", body: small, contentType: []string{"text/plain"}, code: fault.UnsupportedMediaType},
		{name: "form", body: small, contentType: []string{"application/x-www-form-urlencoded"}, code: fault.UnsupportedMediaType},
		{name: "multipart", body: small, contentType: []string{"multipart/form-data; boundary=x"}, code: fault.UnsupportedMediaType},
		{name: "json suffix type", body: small, contentType: []string{"application/problem+json"}, code: fault.UnsupportedMediaType},
		{name: "json prefix", body: small, contentType: []string{"application/jsonx"}, code: fault.UnsupportedMediaType},
		{name: "malformed parameters", body: small, contentType: []string{"application/json; charset"}, code: fault.UnsupportedMediaType},
		{name: "header injection", body: small, contentType: []string{"application/json\r\nX-Evil: 1"}, code: fault.UnsupportedMediaType},
		{name: "second header ignored", body: small, contentType: []string{"application/json", "text/plain"}},
		{name: "empty required body", body: nil, contentType: []string{"application/json"}, code: fault.InvalidJSON},
		{name: "whitespace-only body", body: []byte(" \n\t"), contentType: []string{"application/json"}, code: fault.InvalidJSON},
		{name: "empty required body without type", body: nil, code: fault.UnsupportedMediaType},
		{name: "empty optional body", body: nil, optional: true, wantNil: true},
		{name: "whitespace-only optional body", body: []byte(" \r\n"), optional: true, wantNil: true},
		{name: "empty optional body, json", body: nil, contentType: []string{"application/json"}, optional: true, wantNil: true},
		{name: "optional body present needs json", body: []byte(`{}`), optional: true, code: fault.UnsupportedMediaType},
		{name: "optional body present", body: []byte(`{}`), contentType: []string{"application/json"}, optional: true},
		{name: "exactly 1 MiB", body: atLimit, contentType: []string{"application/json"}},
		{name: "exactly 1 MiB chunked", body: atLimit, contentType: []string{"application/json"}, chunked: true},
		{name: "1 MiB + 1 by Content-Length", body: overLimit, contentType: []string{"application/json"}, code: fault.PayloadTooLarge},
		{name: "1 MiB + 1 chunked", body: overLimit, contentType: []string{"application/json"}, chunked: true, code: fault.PayloadTooLarge},
		{name: "large chunked", body: bytes.Repeat([]byte("x"), 5*MaxBody), contentType: []string{"application/json"}, chunked: true, code: fault.PayloadTooLarge},
		{name: "declared too large, small body", body: small, contentType: []string{"application/json"}, length: MaxBody + 1, code: fault.PayloadTooLarge},
		{name: "too large beats wrong type", body: overLimit, contentType: []string{"text/plain"}, code: fault.PayloadTooLarge},
		{name: "too large optional", body: overLimit, optional: true, chunked: true, code: fault.PayloadTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/api/v1/ai/content-requests", bytes.NewReader(tc.body))
			if tc.contentType != nil {
				r.Header["Content-Type"] = tc.contentType
			}
			switch {
			case tc.chunked:
				r.ContentLength = -1
				r.Body = io.NopCloser(bytes.NewReader(tc.body))
			case tc.length != 0:
				r.ContentLength = tc.length
			}
			b, err := readBody(r, tc.optional)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("readBody: %v", err)
				}
				if tc.wantNil {
					if b != nil {
						t.Fatalf("got %q, want nil", b)
					}
					return
				}
				if !bytes.Equal(b, tc.body) {
					t.Fatalf("got %d bytes, want %d", len(b), len(tc.body))
				}
				return
			}
			f, ok := fault.As(err)
			if !ok || f.Code != tc.code {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
			want := map[fault.Code]int{fault.UnsupportedMediaType: 415, fault.PayloadTooLarge: 413, fault.InvalidJSON: 400}[tc.code]
			if f.Code.Status() != want {
				t.Fatalf("%s has status %d, want %d", f.Code, f.Code.Status(), want)
			}
			if b != nil {
				t.Fatal("body returned with an error")
			}
		})
	}

	// A body that fails while being read is a client error, not a 500.
	r := httptest.NewRequest(http.MethodPost, "/x", errReader{})
	r.Header.Set("Content-Type", "application/json")
	if _, err := readBody(r, false); err == nil {
		t.Fatal("a failing body read succeeded")
	} else if f, ok := fault.As(err); !ok || f.Code.Status() >= 500 {
		t.Fatalf("failing read: %v", err)
	}
}

// TestCreateThroughHandler: bodies sent to POST /api/v1/ai/content-requests
// on a real server: decoding and validation errors reach the client as
// the documented status, code and field.
func TestCreateThroughHandler(t *testing.T) {
	s := newTestServer(t, func() time.Time { return fuzzBase }, 20)
	for _, tc := range []struct {
		name   string
		body   string
		ct     string
		status int
		code   fault.Code
		field  string
	}{
		{"created", `{"domain":"Example.COM","budget":25}`, "application/json", 201, "", ""},
		{"budget as string", `{"domain":"example.com","budget":"12.5"}`, "application/json", 400, fault.ValidationError, "budget"},
		{"budget too precise", `{"domain":"example.com","budget":1.0000001}`, "application/json", 400, fault.ValidationError, "budget"},
		{"budget negative", `{"domain":"example.com","budget":-1}`, "application/json", 400, fault.ValidationError, "budget"},
		{"budget zero", `{"domain":"example.com","budget":0}`, "application/json", 400, fault.ValidationError, "budget"},
		{"budget 1e400", `{"domain":"example.com","budget":1e400}`, "application/json", 400, fault.ValidationError, "budget"},
		{"budget NaN", `{"domain":"example.com","budget":NaN}`, "application/json", 400, fault.InvalidJSON, ""},
		{"budget missing", `{"domain":"example.com"}`, "application/json", 400, fault.ValidationError, "budget"},
		{"budget null", `{"domain":"example.com","budget":null}`, "application/json", 400, fault.ValidationError, "budget"},
		{"domain null", `{"domain":null,"budget":1}`, "application/json", 400, fault.ValidationError, "domain"},
		{"content with NUL", `{"domain":"example.com","budget":1,"content":"a\u0000b"}`, "application/json", 400, fault.ValidationError, "content"},
		{"budget over the tier", `{"domain":"example.com","budget":20000.01}`, "application/json", 422, fault.BudgetExceedsTierLimit, "budget"},
		{"unknown field", `{"domain":"example.com","budget":1,"colour":"red"}`, "application/json", 400, fault.ValidationError, "colour"},
		{"wrong type", `{"domain":"example.com","budget":1,"target_queries":"q"}`, "application/json", 400, fault.ValidationError, "target_queries"},
		{"bad domain", `{"domain":"localhost","budget":1}`, "application/json", 400, fault.ValidationError, "domain"},
		{"malformed", `{"domain":`, "application/json", 400, fault.InvalidJSON, ""},
		{"trailing garbage", `{"domain":"example.com","budget":1}garbage`, "application/json", 400, fault.InvalidJSON, ""},
		{"array", `[{"domain":"example.com","budget":1}]`, "application/json", 400, fault.InvalidJSON, ""},
		{"no content type", `{"domain":"example.com","budget":1}`, "", 415, fault.UnsupportedMediaType, ""},
		{"too large", `{"domain":"example.com","budget":1,"content":"` + strings.Repeat("x", MaxBody) + `"}`, "application/json", 413, fault.PayloadTooLarge, ""},
		{"other client", `{"domain":"example.com","budget":1,"client_id":"cli_nope"}`, "application/json", 404, fault.NotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/api/v1/ai/content-requests", strings.NewReader(tc.body))
			r.Header.Set("X-API-Key", fuzzKey)
			r.Header.Set("X-API-Secret", fuzzSecret)
			if tc.ct != "" {
				r.Header.Set("Content-Type", tc.ct)
			}
			w := s.serve(r)
			env := checkEnvelope(t, w)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body.String())
			}
			if tc.code == "" {
				var got client.Envelope[client.ContentRequest]
				if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.Data.Domain != "example.com" ||
					got.Data.Budget != 25*dollarUSD || w.Header().Get("Location") != "/api/v1/ai/content-requests/"+got.Data.ID {
					t.Fatalf("created %s (%v), Location %q", w.Body.String(), err, w.Header().Get("Location"))
				}
				return
			}
			if env.Error.Code != string(tc.code) {
				t.Fatalf("code %s, want %s: %s", env.Error.Code, tc.code, env.Error.Message)
			}
			if tc.field != "" && (len(env.Error.Details) == 0 || env.Error.Details[0].Field != tc.field) {
				t.Fatalf("details %+v, want field %s", env.Error.Details, tc.field)
			}
		})
	}
}

// TestDecodeStrictFieldNamesAreExact: JSON names are case-sensitive, and
// decisions.md refuses unknown fields, but encoding/json matches names
// without regard to case: {"DOMAIN": ...} is taken as domain, and in
// {"domain": "a.com", "Domain": "b.com"} the second silently wins.
func TestDecodeStrictFieldNamesAreExact(t *testing.T) {
	for _, tc := range []struct{ body, field string }{
		{`{"DOMAIN":"example.com","budget":1}`, "DOMAIN"},
		{`{"domain":"example.com","Budget":1}`, "Budget"},
		{`{"domain":"good.example","Domain":"evil.example","budget":1}`, "Domain"},
		{`{"domain":"example.com","budget":1,"Target_Queries":["q"]}`, "Target_Queries"},
	} {
		var in client.CreateContentRequest
		err := decodeStrict([]byte(tc.body), &in)
		f, ok := fault.As(err)
		if !ok || f.Code != fault.ValidationError || !slices.Equal(fieldsOf(f), []string{tc.field}) {
			t.Errorf("%s: decoded %+v, %v; want VALIDATION_ERROR on %s", tc.body, in, err, tc.field)
		}
	}
}

// TestDecodeBudgetHugeExponentIsCheap: client.ParseUSD bounds the length
// of a budget (64 characters) but not its exponent, and big.Rat.SetString
// works the power out: {"budget":1e999999} (19 bytes) costs some 30 ms of
// CPU before it is refused, against microseconds for an ordinary amount,
// on every request a key may send.
func TestDecodeBudgetHugeExponentIsCheap(t *testing.T) {
	for _, body := range []string{`{"budget":1e999999}`, `{"budget":1e-999999}`, `{"budget":-9e999999}`} {
		best := time.Hour
		for range 3 {
			var in client.CreateContentRequest
			start := time.Now()
			err := decodeStrict([]byte(body), &in)
			best = min(best, time.Since(start))
			if f, ok := fault.As(err); !ok || f.Code != fault.ValidationError {
				t.Fatalf("%s: %v", body, err)
			}
		}
		if best > 5*time.Millisecond {
			t.Errorf("%s took %v to refuse", body, best)
		}
	}
}

// TestDecodeBudgetLongExactAmount: trailing zeros are accepted
// (1.50000000000 is $1.50), but past 64 characters ParseUSD refuses the
// same amount with "must be at most 1000000000", which is false.
func TestDecodeBudgetLongExactAmount(t *testing.T) {
	body := `{"budget":1.` + strings.Repeat("0", 70) + `}`
	var in client.CreateContentRequest
	err := decodeStrict([]byte(body), &in)
	if err != nil && strings.Contains(err.Error(), "at most 1000000000") {
		t.Fatalf("$1 written with 70 zeros: %v", err)
	}
	if err == nil && in.Budget != dollarUSD {
		t.Fatalf("decoded %d", in.Budget)
	}
}
