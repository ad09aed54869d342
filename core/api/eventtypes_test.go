package api

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aivis/aivis/core/events"
)

// dataTypes are the Go types the code makes each kind's data of.
var dataTypes = map[string]any{
	events.VisibilityChange: events.VisibilityChangeData{}, events.ContentOptimized: events.ContentOptimizedData{},
	events.WebhookTest: events.WebhookTestData{}, events.ContentRequestCreated: events.ContentRequestData{},
	events.ContentRequestFailed: events.ContentRequestData{}, events.ContentRequestCancelled: events.ContentRequestData{},
	events.ScanCompleted: events.ScanCompletedData{}, events.WebhookDisabled: events.WebhookDisabledData{},
	events.ConnectionDisabled: events.ConnectionDisabledData{}, events.CitationChange: events.CitationChangeData{},
	events.CrawlerErrors: events.CrawlerErrorsData{}, events.LiftMeasured: events.LiftMeasuredData{},
}

// TestEventTypesAgree: the catalog lists every kind the code knows, in its
// order, each with a description, a schema of its own that its example
// passes and a body of another kind fails, and an example whose data the
// code's type for the kind reads in full and writes back the same; and
// docs/events.md shows each example.
func TestEventTypesAgree(t *testing.T) {
	ts, err := EventTypes()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, et := range ts {
		kinds = append(kinds, et.Kind)
	}
	if !slices.Equal(kinds, events.Kinds) {
		t.Fatalf("catalog kinds %v, want the code's %v", kinds, events.Kinds)
	}
	docs, err := os.ReadFile("../../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	var shown []any
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(docs, -1) {
		var v any
		if json.Unmarshal(m[1], &v) == nil {
			shown = append(shown, v)
		}
	}
	for i, et := range ts {
		if et.Description == "" {
			t.Errorf("%s: no description", et.Kind)
		}
		c := jsonschema.NewCompiler()
		res, err := jsonschema.UnmarshalJSON(bytes.NewReader(et.Schema))
		if err != nil {
			t.Fatalf("%s: %v", et.Kind, err)
		}
		if err := c.AddResource("event.json", res); err != nil {
			t.Fatalf("%s: %v", et.Kind, err)
		}
		sch, err := c.Compile("event.json")
		if err != nil {
			t.Fatalf("%s: schema: %v", et.Kind, err)
		}
		example, _ := jsonschema.UnmarshalJSON(bytes.NewReader(et.Example))
		if err := sch.Validate(example); err != nil {
			t.Errorf("%s: the example fails its schema: %v", et.Kind, err)
		}
		other, _ := jsonschema.UnmarshalJSON(bytes.NewReader(ts[(i+1)%len(ts)].Example))
		if sch.Validate(other) == nil {
			t.Errorf("%s: the schema passes a %s body", et.Kind, ts[(i+1)%len(ts)].Kind)
		}

		var body events.Body
		if err := json.Unmarshal(et.Example, &body); err != nil || body.Event != et.Kind {
			t.Errorf("%s: the example's body: %v, event %q", et.Kind, err, body.Event)
			continue
		}
		data := reflect.New(reflect.TypeOf(dataTypes[et.Kind]))
		dec := json.NewDecoder(bytes.NewReader(body.Data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(data.Interface()); err != nil {
			t.Errorf("%s: the code's data type does not read the example: %v", et.Kind, err)
			continue
		}
		again, _ := json.Marshal(data.Interface())
		var want, got any
		json.Unmarshal(body.Data, &want)
		json.Unmarshal(again, &got)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: the code writes the example's data as\n%s\nwant\n%s", et.Kind, again, body.Data)
		}
		var whole any
		json.Unmarshal(et.Example, &whole)
		if !slices.ContainsFunc(shown, func(v any) bool { return reflect.DeepEqual(v, whole) }) {
			t.Errorf("%s: docs/events.md does not show the example\n%s", et.Kind, et.Example)
		}
	}
}
