package api

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/text"
)

// bodyTypes are the request bodies of every operation that takes one, by
// the operation, with a body each as its docs give it.
var bodyTypes = []struct {
	name string
	new  func() any
	seed string
}{
	{"CreateContentRequest", func() any { return new(client.CreateContentRequest) },
		`{"domain":"example.com","budget":25,"url":"https://example.com/a","content":"<p>Hi</p>","target_queries":["q"],"type":"optimize","metadata":{"k":"v"}}`},
	{"RecordReading", func() any { return new(client.RecordReading) },
		`{"domain":"example.com","visibility_score":72,"sentiment":"positive","sentiment_score":0.4,"measured_at":"2026-01-02T03:04:05Z"}`},
	{"CreateWebhook", func() any { return new(client.CreateWebhook) },
		`{"domain":"example.com","events":["ai_visibility_change"],"url":"https://hooks.example.com/a","min_score_change":5,"min_citation_change":10}`},
	{"UpdateWebhook", func() any { return new(client.UpdateWebhook) }, `{"url":"https://hooks.example.com/b","enabled":false,"events":null}`},
	{"RotateSecret", func() any { return new(client.RotateSecret) }, `{"expire_previous_in":3600}`},
	{"Replay", func() any { return new(client.Replay) }, `{"since":"2026-01-01T00:00:00Z","until":"2026-01-02T00:00:00Z"}`},
	{"CreateConnection", func() any { return new(client.CreateConnection) },
		`{"connector":"slack","name":"Alerts","events":["ai_visibility_change"],"domains":["example.com"],"settings":{"channel":"#seo","bot_token":"xoxb-1"}}`},
	{"UpdateConnection", func() any { return new(client.UpdateConnection) }, `{"name":"x","settings":{"channel":null},"enabled":true}`},
	{"ZapierSubscribe", func() any { return new(client.ZapierSubscribe) }, `{"target_url":"https://hooks.zapier.com/1/2","event":"ai_visibility_change"}`},
	{"CreateDomain", func() any { return new(client.CreateDomain) },
		`{"domain":"bücher.example","brands":["Acme"],"aliases":["Acme Corp"],"competitors":["Globex"],"topics":["skates"]}`},
	{"UpdateDomain", func() any { return new(client.UpdateDomain) }, `{"brands":["Acme"],"aliases":null}`},
	{"PutPrompts", func() any { return new(client.PutPrompts) }, `{"prompts":[{"text":"Which skates?","intent":"discovery"},{"text":"Who?"}]}`},
	{"RequestScan", func() any { return new(client.RequestScan) }, `{"domain":"example.com","client_id":"cli_1"}`},
	{"an action's empty object", func() any { return new(struct{}) }, `{}`},
}

// goWords are words of Go that no message leaving the system may carry.
var goWords = regexp.MustCompile(`\bjson:|UnmarshalJSON|\bUnmarshal|\breflect\b|\bstrconv\.|\btime\.[A-Z]|Go (struct|value)|\*[a-z]+\.[A-Z]|\.go:|interface \{`)

// FuzzRequestBodies puts arbitrary bytes through decodeStrict into each
// operation's body type (the first byte chooses it). Nothing may panic;
// a refusal is 400 INVALID_JSON or VALIDATION_ERROR in words without Go
// in them, its fields named as valid text; what is accepted holds only
// text a tenant may send, in every string (map keys too), and a time only
// where one was given: what the services store is clean text.
func FuzzRequestBodies(f *testing.F) {
	for i, b := range bodyTypes {
		f.Add(byte(i), []byte(b.seed))
		f.Add(byte(i), []byte(strings.Replace(b.seed, `"`, `"\u0000`, 3)))
		f.Add(byte(i), []byte(strings.Replace(b.seed, `:`, `:null,"x":`, 1)))
		f.Add(byte(i), []byte(strings.Replace(b.seed, `"2026`, `2026`, 1)))
	}
	f.Add(byte(0), []byte("{\"domain\":\"ex\xffample.com\",\"budget\":1}"))
	f.Add(byte(1), []byte(`{"domain":"a.example","visibility_score":1,"sentiment":"neutral","measured_at":{"t":1}}`))
	f.Add(byte(11), []byte(`{"prompts":[{"text":"bell\u0007"}]}`))
	f.Add(byte(6), []byte(`{"connector":"slack","settings":{"\u0085key":"v"}}`))
	f.Fuzz(func(t *testing.T, which byte, body []byte) {
		bt := bodyTypes[int(which)%len(bodyTypes)]
		v := bt.new()
		err := decodeStrict(body, v)
		if err != nil {
			fe, ok := fault.As(err)
			if !ok || (fe.Code != fault.InvalidJSON && fe.Code != fault.ValidationError) || fe.Code.Status() != 400 {
				t.Fatalf("%s: %v (%T) is not a 400 of the body", bt.name, err, err)
			}
			// The words are the server's; a field's name is the tenant's own,
			// said back.
			said := fe.Message
			for _, d := range fe.Details {
				said = strings.ReplaceAll(said, d.Field, "")
				if !utf8.ValidString(d.Field) || !utf8.ValidString(d.Message) || goWords.MatchString(strings.ReplaceAll(d.Message, d.Field, "")) {
					t.Fatalf("%s: the refusal's detail %+v", bt.name, d)
				}
			}
			if !utf8.ValidString(said) || goWords.MatchString(said) {
				t.Fatalf("%s: the refusal says %q", bt.name, fe.Message)
			}
			return
		}
		walkStrings(reflect.ValueOf(v), func(s string) {
			if r, bad := text.Control(s); bad {
				t.Fatalf("%s: accepted %q, which holds %U", bt.name, s, r)
			}
		})
		// What was accepted is accepted again from its own encoding, and
		// comes to the same: nothing was lost between the check and the use.
		again := bt.new()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", bt.name, err)
		}
		if err := decodeStrict(b, again); err != nil {
			t.Fatalf("%s: %s decoded to %+v, encoded as %s, is refused: %v", bt.name, body, v, b, err)
		}
		if b2, _ := json.Marshal(again); string(b2) != string(b) {
			t.Fatalf("%s: %s decoded to %s, which decodes to %s", bt.name, body, b, b2)
		}
	})
}

// walkStrings calls f with every string v holds: fields, elements, map
// keys and values, JSON kept raw.
func walkStrings(v reflect.Value, f func(string)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkStrings(v.Elem(), f)
		}
	case reflect.String:
		f(v.String())
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walkStrings(v.Field(i), f)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			var x any
			if json.Unmarshal(v.Bytes(), &x) == nil {
				walkStrings(reflect.ValueOf(&x), f)
			}
			return
		}
		for i := range v.Len() {
			walkStrings(v.Index(i), f)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			walkStrings(it.Key(), f)
			walkStrings(it.Value(), f)
		}
	}
}
