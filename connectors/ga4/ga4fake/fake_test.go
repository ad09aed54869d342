package ga4fake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, f *Fake, path, secret string, body []byte) (int, []byte) {
	t.Helper()
	q := url.Values{"measurement_id": {MeasurementID}, "api_secret": {secret}}
	r, err := http.Post(f.URL()+path+"?"+q.Encode(), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, b
}

// events are n events named e0, e1... with the params each.
func events(n int, params map[string]any) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"name": fmt.Sprint("e", i), "params": params}
	}
	return out
}

func body(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLimits: what is at GA4's limits is kept, what is past them dropped
// in silence (204 all the same) and reported by the validation server.
func TestLimits(t *testing.T) {
	wide := map[string]any{}
	for i := range 25 {
		wide[fmt.Sprintf("p%02d_%s", i, strings.Repeat("x", 36))] = strings.Repeat("v", 100) // 40-character names
	}
	tooWide := map[string]any{"extra": 1.0}
	for k, v := range wide {
		tooWide[k] = v
	}
	now := time.Now()
	good := map[string]any{"client_id": "c", "timestamp_micros": now.Add(-71 * time.Hour).UnixMicro(), "events": events(25, wide)}
	with := func(edit func(p map[string]any)) []byte {
		p := map[string]any{"client_id": "c", "events": events(2, map[string]any{"n": 1.0, "s": "text"})}
		edit(p)
		return body(t, p)
	}
	event := func(name string, params map[string]any) func(p map[string]any) {
		return func(p map[string]any) {
			p["events"].([]map[string]any)[1] = map[string]any{"name": name, "params": params}
		}
	}
	for _, tc := range []struct {
		name          string
		body          []byte
		kept, dropped int
		code          string // the first validation code, "" when valid
	}{
		{"25 events of 25 params at their limits, 71 h old", body(t, good), 25, 0, ""},
		{"26 events", with(func(p map[string]any) { p["events"] = events(26, nil) }), 0, 26, "EXCEEDED_MAX_ENTITIES"},
		{"no events", with(func(p map[string]any) { delete(p, "events") }), 0, 1, "VALUE_REQUIRED"},
		{"no client_id", with(func(p map[string]any) { delete(p, "client_id") }), 0, 2, "VALUE_REQUIRED"},
		{"73 h old", with(func(p map[string]any) { p["timestamp_micros"] = now.Add(-73 * time.Hour).UnixMicro() }), 0, 2, "VALUE_OUT_OF_BOUNDS"},
		{"130 kB", with(func(p map[string]any) { p["user_id"] = strings.Repeat("u", 130_000) }), 0, 2, "VALUE_INVALID"},
		{"not JSON", []byte(`{"client_id": "c", "events": [`), 0, 1, "VALUE_INVALID"},
		{"events not a list", []byte(`{"client_id": "c", "events": {}}`), 0, 1, "VALUE_INVALID"},
		{"26 params", with(event("wide", tooWide)), 1, 1, "EXCEEDED_MAX_ENTITIES"},
		{"41-character name", with(event("e"+strings.Repeat("x", 40), nil)), 1, 1, "NAME_INVALID"},
		{"digit first", with(event("1e", nil)), 1, 1, "NAME_INVALID"},
		{"dash", with(event("aivis-scan", nil)), 1, 1, "NAME_INVALID"},
		{"underscore first", with(event("_e", nil)), 1, 1, "NAME_INVALID"},
		{"empty name", with(event("", nil)), 1, 1, "NAME_INVALID"},
		{"google_ event", with(event("google_e", nil)), 1, 1, "NAME_RESERVED"},
		{"ga_ event", with(event("ga_e", nil)), 1, 1, "NAME_RESERVED"},
		{"firebase_ event", with(event("firebase_e", nil)), 1, 1, "NAME_RESERVED"},
		{"session_start", with(event("session_start", nil)), 1, 1, "NAME_RESERVED"},
		{"ad_activeview", with(event("ad_activeview", nil)), 1, 1, "NAME_RESERVED"},
		{"user_engagement", with(event("user_engagement", nil)), 1, 1, "NAME_RESERVED"},
		{"100 characters of two bytes", with(event("e", map[string]any{"v": strings.Repeat("é", 100)})), 2, 0, ""},
		{"a reserved event name as a param", with(event("e", map[string]any{"session_start": 1.0})), 2, 0, ""},
		{"google_ param", with(event("e", map[string]any{"google_p": 1.0})), 1, 1, "NAME_RESERVED"},
		{"ga_ param", with(event("e", map[string]any{"ga_p": 1.0})), 1, 1, "NAME_RESERVED"},
		{"firebase_ param", with(event("e", map[string]any{"firebase_conversion": 1.0})), 1, 1, "NAME_RESERVED"},
		{"41-character param", with(event("e", map[string]any{"p" + strings.Repeat("x", 40): 1.0})), 1, 1, "NAME_INVALID"},
		{"101 characters", with(event("e", map[string]any{"v": strings.Repeat("é", 101)})), 1, 1, "VALUE_INVALID"},
		{"an object value", with(event("e", map[string]any{"v": map[string]any{}})), 1, 1, "VALUE_INVALID"},
		{"a true value", with(event("e", map[string]any{"v": true})), 1, 1, "VALUE_INVALID"},
	} {
		f := New()
		status, _ := post(t, f, "/mp/collect", APISecret, tc.body)
		if status != http.StatusNoContent || len(f.Received()) != tc.kept || len(f.Dropped()) != tc.dropped {
			t.Errorf("%s: %d, %d kept, %d dropped; want 204, %d kept, %d dropped", tc.name, status, len(f.Received()), len(f.Dropped()), tc.kept, tc.dropped)
		}
		for _, d := range f.Dropped() {
			if len(d.Why) == 0 || d.Why[0].ValidationCode != tc.code || d.Why[0].Description == "" {
				t.Errorf("%s: dropped %s for %+v, want %s", tc.name, d.Event.Name, d.Why, tc.code)
			}
		}
		status, b := post(t, f, "/debug/mp/collect", APISecret, tc.body)
		var v struct{ ValidationMessages []Message }
		if err := json.Unmarshal(b, &v); status != http.StatusOK || err != nil || v.ValidationMessages == nil {
			t.Fatalf("%s: the validation server answered %d %s", tc.name, status, b)
		}
		if tc.code == "" && len(v.ValidationMessages) != 0 || tc.code != "" && (len(v.ValidationMessages) == 0 || v.ValidationMessages[0].ValidationCode != tc.code) {
			t.Errorf("%s: validation messages %+v, want %q", tc.name, v.ValidationMessages, tc.code)
		}
		if n := len(f.Received()); n != tc.kept {
			t.Errorf("%s: the validation server kept events", tc.name)
		}
		f.Close()
	}
}

// TestUnknownStream: a wrong secret is dropped in silence like a bad
// payload; the validation server does not check the secret.
func TestUnknownStream(t *testing.T) {
	f := New()
	defer f.Close()
	b := body(t, map[string]any{"client_id": "c", "events": events(3, nil)})
	if status, _ := post(t, f, "/mp/collect", "wrong", b); status != http.StatusNoContent || len(f.Received()) != 0 || len(f.Dropped()) != 3 {
		t.Errorf("%d, %d kept, %d dropped", status, len(f.Received()), len(f.Dropped()))
	}
	if _, got := post(t, f, "/debug/mp/collect", "wrong", b); string(got) != `{"validationMessages":[]}`+"\n" {
		t.Errorf("the validation server: %s", got)
	}
	if status, _ := post(t, f, "/mp/collect", APISecret, b); status != http.StatusNoContent || len(f.Received()) != 3 {
		t.Fatalf("the right secret: %d, %+v", status, f.Received())
	}
	if h := f.Received()[2]; h.Name != "e2" || h.ClientID != "c" {
		t.Errorf("kept %+v", h)
	}
}
