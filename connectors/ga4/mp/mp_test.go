package mp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	now := time.Now()
	ok := Payload{ClientID: "c", TimestampMicros: now.Add(-time.Hour).UnixMicro(), Events: []Event{{Name: "aivis_scan", Params: map[string]any{"domain": "example.com", "score": 72.0}}}}
	if ms := Validate(ok, nil, now); len(ms) != 0 {
		t.Fatalf("a good payload: %+v", ms)
	}
	many := map[string]any{}
	for i := range 26 {
		many["p"+strings.Repeat("x", i)] = 1.0
	}
	for _, tc := range []struct {
		name string
		edit func(p *Payload)
		body int
		code string
	}{
		{"no client", func(p *Payload) { p.ClientID = "" }, 0, "VALUE_REQUIRED"},
		{"no events", func(p *Payload) { p.Events = nil }, 0, "VALUE_REQUIRED"},
		{"26 events", func(p *Payload) { p.Events = make([]Event, 26); fill(p.Events) }, 0, "MAX_EVENTS_EXCEEDED"},
		{"digit first", func(p *Payload) { p.Events[0].Name = "1scan" }, 0, "NAME_INVALID"},
		{"dash", func(p *Payload) { p.Events[0].Name = "aivis-scan" }, 0, "NAME_INVALID"},
		{"41 chars", func(p *Payload) { p.Events[0].Name = "a" + strings.Repeat("b", 40) }, 0, "NAME_INVALID"},
		{"reserved prefix", func(p *Payload) { p.Events[0].Name = "google_scan" }, 0, "NAME_INVALID"},
		{"reserved name", func(p *Payload) { p.Events[0].Name = "session_start" }, 0, "NAME_INVALID"},
		{"param name", func(p *Payload) { p.Events[0].Params = map[string]any{"ga_x": 1.0} }, 0, "NAME_INVALID"},
		{"26 params", func(p *Payload) { p.Events[0].Params = many }, 0, "MAX_PARAMS_EXCEEDED"},
		{"101 chars", func(p *Payload) { p.Events[0].Params = map[string]any{"v": strings.Repeat("é", 101)} }, 0, "VALUE_INVALID"},
		{"object value", func(p *Payload) { p.Events[0].Params = map[string]any{"v": map[string]any{}} }, 0, "VALUE_INVALID"},
		{"73 h old", func(p *Payload) { p.TimestampMicros = now.Add(-73 * time.Hour).UnixMicro() }, 0, "VALUE_OUT_OF_BOUNDS"},
		{"130 kB", func(*Payload) {}, MaxBody, "VALUE_INVALID"},
	} {
		b, _ := json.Marshal(ok)
		var p Payload
		json.Unmarshal(b, &p)
		tc.edit(&p)
		ms := Validate(p, make([]byte, tc.body), now)
		if len(ms) == 0 || ms[0].ValidationCode != tc.code || ms[0].Description == "" {
			t.Errorf("%s: %+v, want %s", tc.name, ms, tc.code)
		}
	}
	// 100 characters exactly is fine.
	p := ok
	p.Events = []Event{{Name: "a", Params: map[string]any{"v": strings.Repeat("é", 100)}}}
	if ms := Validate(p, nil, now); len(ms) != 0 {
		t.Errorf("100 characters: %+v", ms)
	}
}

func fill(evs []Event) {
	for i := range evs {
		evs[i].Name = "e"
	}
}
