package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/fault"
)

// requestBodies are the types the API decodes request bodies into.
var requestBodies = []any{
	client.CreateContentRequest{}, client.RecordReading{}, client.CreateWebhook{}, client.UpdateWebhook{},
	client.RotateSecret{}, client.Replay{}, client.CreateConnection{}, client.UpdateConnection{},
	client.ZapierSubscribe{}, client.CreateDomain{}, client.UpdateDomain{}, client.PutPrompts{},
	client.RequestScan{}, client.Prompt{},
}

// goInternals matches what a message that leaves the system may not say: a
// Go type, package or function.
var goInternals = regexp.MustCompile(`json:|Unmarshal|Marshal|time\.|strconv\.|reflect|Go value|Go struct|struct|\.go:|` +
	`\*[a-z]+\.[A-Z]|\b[a-z]+\.[A-Z][A-Za-z]+\b|parsing time|2006-01-02|0x[0-9a-f]+`)

// faultOf decodes body into a new value of v's type.
func faultOf(t *testing.T, v any, body string) (any, *fault.Error) {
	t.Helper()
	p := reflect.New(reflect.TypeOf(v))
	err := decodeStrict([]byte(body), p.Interface())
	if err == nil {
		return p.Elem().Interface(), nil
	}
	fe, ok := fault.As(err)
	if !ok {
		t.Fatalf("%s: %v is not a fault", body, err)
	}
	msgs := []string{fe.Message}
	for _, d := range fe.Details {
		msgs = append(msgs, d.Message)
	}
	for _, m := range msgs {
		if goInternals.MatchString(m) {
			t.Errorf("%s: the message %q names Go's internals", body, m)
		}
	}
	return nil, fe
}

// TestDecodeNullIsAbsent: a member sent as null is taken as absent, in
// every request body: each field null decodes as {} does, a PATCH's
// included (no field is cleared by null), and null members anywhere in
// an object leave the others as they would be alone.
func TestDecodeNullIsAbsent(t *testing.T) {
	for _, v := range requestBodies {
		var names []string
		for name := range jsonFields(reflect.TypeOf(v)) {
			names = append(names, `"`+name+`":null`)
		}
		slices.Sort(names)
		got, fe := faultOf(t, v, "{"+strings.Join(names, ",")+"}")
		if fe != nil {
			t.Errorf("%T with every field null: %v", v, fe)
			continue
		}
		if !reflect.DeepEqual(got, reflect.Zero(reflect.TypeOf(v)).Interface()) {
			t.Errorf("%T with every field null decoded as %+v, not as {}", v, got)
		}
	}
	on, off, five := true, false, 5
	url := "https://example.com/hook"
	for _, tc := range []struct {
		body string
		want client.UpdateWebhook
	}{
		{`{"url":null}`, client.UpdateWebhook{}},
		{`{"url":null,"enabled":true}`, client.UpdateWebhook{Enabled: &on}},
		{`{"enabled":true,"url":null}`, client.UpdateWebhook{Enabled: &on}},
		{` { "url" : null , "events" : null , "enabled" : false } `, client.UpdateWebhook{Enabled: &off}},
		{`{"min_score_change":5,"url":null,"events":null,"enabled":true}`, client.UpdateWebhook{MinScoreChange: &five, Enabled: &on}},
		{`{"url":null,"min_score_change":5,"events":null}`, client.UpdateWebhook{MinScoreChange: &five}},
		{"{\n\t\"events\": null,\n\t\"url\": \"" + url + "\",\n\t\"enabled\": null\n}", client.UpdateWebhook{URL: &url}},
	} {
		got, fe := faultOf(t, client.UpdateWebhook{}, tc.body)
		if fe != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: decoded %+v (%v), want %+v", tc.body, got, fe, tc.want)
		}
	}
	// Within a connection's settings, a JSON merge patch, null stays: it
	// removes that setting.
	got, fe := faultOf(t, client.UpdateConnection{}, `{"settings":{"channel":null,"b":1},"name":null}`)
	if fe != nil || string(got.(client.UpdateConnection).Settings) != `{"channel":null,"b":1}` || got.(client.UpdateConnection).Name != nil {
		t.Errorf("settings with a null member: %+v (%v)", got, fe)
	}
}

// TestDecodeRefusesControlCharacters: a string of a body, anywhere (a
// field, an element, a map's name or value, a connection's settings),
// holding a control character other than tab, line feed and carriage
// return, or bytes that are not UTF-8, is a VALIDATION_ERROR naming its
// path.
func TestDecodeRefusesControlCharacters(t *testing.T) {
	for _, tc := range []struct {
		v     any
		body  string
		field string
	}{
		{client.PutPrompts{}, `{"prompts":[{"text":"ok"},{"text":"hello\u0000"}]}`, "prompts[1].text"},
		{client.CreateContentRequest{}, `{"domain":"example.com","content":"a\u0000b"}`, "content"},
		{client.CreateContentRequest{}, `{"target_queries":["a","b\u0007"]}`, "target_queries[1]"},
		{client.CreateContentRequest{}, `{"metadata":{"k":"\u001b[31mred"}}`, "metadata.k"},
		{client.CreateContentRequest{}, `{"metadata":{"k\u0001":"v"}}`, "metadata.k\x01"},
		{client.CreateContentRequest{}, `{"content":"delete \u007f"}`, "content"},
		{client.CreateContentRequest{}, `{"content":"next line \u0085"}`, "content"},
		{client.CreateContentRequest{}, "{\"content\":\"a\xffb\"}", "content"},
		{client.CreateContentRequest{}, "{\"metadata\":{\"a\xfe\":\"v\"}}", "metadata.a\ufffd"},
		{client.UpdateConnection{}, `{"settings":{"channel":"#general\u0000"}}`, "settings.channel"},
		{client.UpdateConnection{}, `{"settings":{"a":{"b":["x","\u0002"]}}}`, "settings.a.b[1]"},
		{client.CreateDomain{}, `{"domain":"example.com","brands":["Acme\u0000"]}`, "brands[0]"},
		{client.UpdateDomain{}, `{"competitors":["x\u0000"]}`, "competitors[0]"},
		{client.ZapierSubscribe{}, `{"target_url":"https://example.com/\u0000","event":"x"}`, "target_url"},
		{client.RecordReading{}, `{"domain":"example.com","sentiment":"positive\u0000"}`, "sentiment"},
	} {
		_, fe := faultOf(t, tc.v, tc.body)
		if fe == nil || fe.Code != fault.ValidationError || !slices.Equal(fieldsOf(fe), []string{tc.field}) {
			t.Errorf("%q: %v; want VALIDATION_ERROR of %q", tc.body, fe, tc.field)
		}
	}
	for _, body := range []string{
		`{"content":"tab\tline\nreturn\r"}`, `{"content":"\ufffd is a character"}`, `{"content":"😀 \ud83d\ude00 é"}`,
		`{"metadata":{"k":"v"},"target_queries":["a"]}`,
	} {
		if _, fe := faultOf(t, client.CreateContentRequest{}, body); fe != nil {
			t.Errorf("%q: %v", body, fe)
		}
	}
}

// TestDecodeTimes: a date-time field of the wrong kind, or a string that
// is not an RFC 3339 time, is a VALIDATION_ERROR naming it, as any other
// field of the wrong kind is; null is absent.
func TestDecodeTimes(t *testing.T) {
	bad := []string{`5`, `1.5`, `{}`, `{"t":1}`, `[]`, `true`, `"yesterday"`, `""`, `"2026-01-02"`, `"2026-01-02T15:04:05"`,
		`"2026-13-02T15:04:05Z"`, `"2026-01-02 15:04:05Z"`}
	for _, tc := range []struct {
		v      any
		field  string
		prefix string
	}{
		{client.RecordReading{}, "measured_at", `{"domain":"example.com","measured_at":`},
		{client.Replay{}, "since", `{"since":`},
		{client.Replay{}, "until", `{"since":"2026-01-02T15:04:05Z","until":`},
	} {
		for _, b := range bad {
			_, fe := faultOf(t, tc.v, tc.prefix+b+"}")
			if fe == nil || fe.Code != fault.ValidationError || !slices.Equal(fieldsOf(fe), []string{tc.field}) ||
				!strings.Contains(fe.Details[0].Message, "RFC 3339") {
				t.Errorf("%s%s}: %v; want VALIDATION_ERROR of %s", tc.prefix, b, fe, tc.field)
			}
		}
		got, fe := faultOf(t, tc.v, tc.prefix+`"2026-01-02T15:04:05.5+01:00"}`)
		if fe != nil {
			t.Errorf("%s a good time: %v", tc.field, fe)
		}
		if r, ok := got.(client.Replay); ok && tc.field == "since" && !r.Since.Equal(time.Date(2026, 1, 2, 14, 4, 5, 5e8, time.UTC)) {
			t.Errorf("since decoded as %v", r.Since)
		}
		if _, fe := faultOf(t, tc.v, tc.prefix+`null}`); fe != nil {
			t.Errorf("%s null: %v", tc.field, fe)
		}
	}
}

// TestDecodeKinds: a value of the wrong kind is named by its whole path,
// with a message in the API's words, whatever the field's Go type.
func TestDecodeKinds(t *testing.T) {
	for _, tc := range []struct {
		v           any
		body, field string
		msg         string
	}{
		{client.PutPrompts{}, `{"prompts":[{"text":"a"},{"text":1}]}`, "prompts[1].text", "must be a string"},
		{client.PutPrompts{}, `{"prompts":[null]}`, "prompts[0]", "must be an object"},
		{client.PutPrompts{}, `{"prompts":{"text":"a"}}`, "prompts", "must be an array"},
		{client.RecordReading{}, `{"visibility_score":1.5}`, "visibility_score", "must be an integer"},
		{client.RecordReading{}, `{"visibility_score":1e3}`, "visibility_score", "must be an integer"},
		{client.RecordReading{}, `{"visibility_score":99999999999999999999}`, "visibility_score", "out of range"},
		{client.RecordReading{}, `{"visibility_score":"5"}`, "visibility_score", "must be an integer"},
		{client.RecordReading{}, `{"sentiment_score":1e400}`, "sentiment_score", "out of range"},
		{client.RecordReading{}, `{"sentiment_score":"x"}`, "sentiment_score", "must be a number"},
		{client.UpdateWebhook{}, `{"enabled":"yes"}`, "enabled", "must be a boolean"},
		{client.UpdateWebhook{}, `{"events":[1]}`, "events[0]", "must be a string"},
		{client.CreateContentRequest{}, `{"budget":"12.5"}`, "budget", "number of dollars"},
	} {
		_, fe := faultOf(t, tc.v, tc.body)
		if fe == nil || fe.Code != fault.ValidationError || !slices.Equal(fieldsOf(fe), []string{tc.field}) ||
			!strings.Contains(fe.Details[0].Message, tc.msg) {
			t.Errorf("%s: %v; want VALIDATION_ERROR of %s, %q", tc.body, fe, tc.field, tc.msg)
		}
	}
}

// TestParamsRefuseControlCharacters: a query parameter's value or a path
// parameter holding a control character is a VALIDATION_ERROR naming the
// parameter, on a real handler, before the operation reads it.
func TestParamsRefuseControlCharacters(t *testing.T) {
	s := newTestServer(t, func() time.Time { return fuzzBase }, 20)
	for _, tc := range []struct{ path, field string }{
		{"/api/v1/ai/content-requests?status=%00", "status"},
		{"/api/v1/ai/content-requests?domain=example.com&client_id=cli_%07", "client_id"},
		{"/api/v1/ai/content-requests?cursor=%FF", "cursor"},
		{"/api/v1/ai/content-requests/cr_%00", "id"},
		{"/api/v1/ai/content-requests/cr_%1B", "id"},
	} {
		r := httptest.NewRequest(http.MethodGet, tc.path, nil)
		r.Header.Set("X-API-Key", fuzzKey)
		r.Header.Set("X-API-Secret", fuzzSecret)
		w := s.serve(r)
		env := checkEnvelope(t, w)
		if w.Code != 400 || env.Error.Code != string(fault.ValidationError) || len(env.Error.Details) != 1 ||
			env.Error.Details[0].Field != tc.field {
			t.Errorf("GET %s: %d %s; want 400 VALIDATION_ERROR of %s", tc.path, w.Code, w.Body, tc.field)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/api/v1/ai/content-requests?status=queued&domain=caf%C3%A9.example", nil)
	r.Header.Set("X-API-Key", fuzzKey)
	r.Header.Set("X-API-Secret", fuzzSecret)
	if w := s.serve(r); w.Code != 200 {
		var env client.ErrorEnvelope
		_ = json.Unmarshal(w.Body.Bytes(), &env)
		t.Errorf("parameters of plain text: %d %+v", w.Code, env)
	}
}
