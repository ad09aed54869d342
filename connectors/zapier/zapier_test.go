package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/aivis/aivis/connectors/internal/fakekit"
	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/connectors/zapier/zapierfake"
	"github.com/aivis/aivis/plugins/sdk"
	"github.com/aivis/aivis/plugins/sdk/sdktest"
)

func target(url string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"target_url": %q}`, url))
}

// The citation events and crawler_errors reach a Zap as aivis sends them: the event's body,
// the same object GET /v1/events lists as sample data.
func TestCitationPayloads(t *testing.T) {
	f := zapierfake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	evs := []sdk.Event{kittest.Citation("evt_c", "example.com"), kittest.Scan("evt_s", "example.com"),
		kittest.CrawlerErrors("evt_e", "example.com")}
	for _, ev := range evs {
		if rs := c.Deliver(kittest.Ctx(t), target(f.Hook("standard", "123")), []sdk.Event{ev}); rs[0].Outcome != sdk.Delivered {
			t.Fatalf("%s: %+v", ev.Kind, rs)
		}
	}
	got := f.Received()
	if len(got) != 3 {
		t.Fatalf("received %+v", got)
	}
	for i, ev := range evs {
		var sent map[string]any
		json.Unmarshal(ev.Body, &sent)
		if !reflect.DeepEqual(got[i].Payload, sent) {
			t.Errorf("%s: received %v, want the body %s", ev.Kind, got[i].Payload, ev.Body)
		}
	}
	change := got[0].Payload["data"].(map[string]any)
	if got[0].Payload["event"] != "citation_change" || change["citation_change"] != -27.5 || change["engine"] != "Perplexity" ||
		change["citation_rate"].(map[string]any)["hits"] != 1.0 {
		t.Errorf("citation_change %v", got[0].Payload)
	}
	if engines := got[1].Payload["data"].(map[string]any)["engines"].([]any); len(engines) != 2 {
		t.Errorf("scan_completed %v", got[1].Payload)
	}
	if pages := got[2].Payload["data"].(map[string]any)["pages"].([]any); got[2].Payload["event"] != "crawler_errors" || len(pages) != 2 {
		t.Errorf("crawler_errors %v", got[2].Payload)
	}
}

func TestDeliveries(t *testing.T) {
	f := zapierfake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	rest, catch := f.Hook("standard", "123"), f.Hook("catch", "1/abc")
	ev := kittest.Change("evt_1", "example.com", 72, 60, "positive")
	for _, u := range []string{rest, catch} {
		if rs := c.Deliver(kittest.Ctx(t), target(u), []sdk.Event{ev}); rs[0].Outcome != sdk.Delivered {
			t.Fatalf("%s: %+v", u, rs)
		}
	}
	got := f.Received()
	if len(got) != 2 || got[0].Payload["id"] != "evt_1" || got[0].Payload["event"] != "ai_visibility_change" ||
		got[0].Payload["data"].(map[string]any)["visibility_score"] != 72.0 {
		t.Fatalf("received %+v", got)
	}
	if k := f.Requests()[0].Header.Get("Idempotency-Key"); k != "evt_1" {
		t.Errorf("Idempotency-Key %q", k)
	}

	for _, tc := range []struct {
		name   string
		script []fakekit.Answer
		want   sdk.Outcome
	}{
		{"429", []fakekit.Answer{{Status: 429, Header: map[string]string{"Retry-After": "60"}}}, sdk.Retry},
		{"502", []fakekit.Answer{{Status: 502}}, sdk.Retry},
		{"400", []fakekit.Answer{{Status: 400, Body: `{"status":"error"}`}}, sdk.PermanentFailure},
		{"redirect", []fakekit.Answer{{Status: 301, Header: map[string]string{"Location": "https://elsewhere.example"}}}, sdk.PermanentFailure},
	} {
		f.Script(tc.script...)
		rs := c.Deliver(kittest.Ctx(t), target(rest), []sdk.Event{ev})
		if rs[0].Outcome != tc.want || rs[0].Reason == "" {
			t.Errorf("%s: %+v", tc.name, rs)
		}
		if tc.name == "429" && rs[0].RetryAfter.Seconds() != 60 {
			t.Errorf("Retry-After: %v", rs[0].RetryAfter)
		}
	}

	// Past Zapier's rate the fake throttles; the connector asks to retry.
	f.PerSecond = 2
	var throttled int
	for range 4 {
		if rs := c.Deliver(kittest.Ctx(t), target(catch), []sdk.Event{ev}); rs[0].Outcome == sdk.Retry {
			throttled++
		}
	}
	if throttled != 2 {
		t.Errorf("%d of 4 throttled, want 2", throttled)
	}
	f.PerSecond = 0

	// The Zap is turned off: the subscription is gone.
	f.TurnOff(rest)
	if rs := c.Deliver(kittest.Ctx(t), target(rest), []sdk.Event{ev}); rs[0].Outcome != sdk.Gone {
		t.Errorf("turned off: %+v", rs)
	}
	f.Close()
	if rs := c.Deliver(kittest.Ctx(t), target(catch), []sdk.Event{ev}); rs[0].Outcome != sdk.Retry {
		t.Errorf("dead Zapier: %+v", rs)
	}
}

func TestSettings(t *testing.T) {
	c := &connector{}
	for _, bad := range []string{`{}`, `{"target_url": ""}`, `{"target_url": "hooks.zapier.com/x"}`, `{"target_url": "https://h/x", "event": "x"}`} {
		if fes := c.ValidateSettings(kittest.Ctx(t), json.RawMessage(bad)); len(fes) == 0 {
			t.Errorf("%s accepted", bad)
		}
	}
	rs := c.Deliver(kittest.Ctx(t), json.RawMessage(`{}`), []sdk.Event{kittest.Change("e", "example.com", 1, 2, "neutral")})
	if rs[0].Outcome != sdk.PermanentFailure {
		t.Errorf("delivery with bad settings: %+v", rs)
	}
}

func TestPlugin(t *testing.T) {
	f := zapierfake.New()
	defer f.Close()
	hook := f.Hook("standard", "p")
	bin := kittest.Build(t)
	sdktest.Run(t, sdktest.Suite{Binary: bin, Env: kittest.Loopback,
		Valid:       []json.RawMessage{target("https://hooks.zapier.com/hooks/catch/1/abc/")},
		Invalid:     []json.RawMessage{json.RawMessage(`{}`)},
		Deliverable: target(hook)})
	if n := len(f.Received()); n != 2 {
		t.Errorf("%d payloads, want the kit's delivery and test", n)
	}
	f.TurnOff(hook)
	rs := kittest.Start(t, bin).Deliver(kittest.Ctx(t), target(hook), []sdk.Event{kittest.Change("e", "example.com", 1, 2, "neutral")})
	if rs[0].Outcome != sdk.Gone {
		t.Errorf("through the plugin, a hook turned off: %+v", rs)
	}
}
