package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aivis/aivis/connectors/internal/fakekit"
	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/connectors/workflow/workflowfake"
	"github.com/aivis/aivis/plugins/sdk"
	"github.com/aivis/aivis/plugins/sdk/sdktest"
)

func set(v map[string]string) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// The citation events and crawler_errors start a scenario or workflow as aivis sends them,
// named by X-Aivis-Event.
func TestCitationPayloads(t *testing.T) {
	f := workflowfake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	evs := []sdk.Event{kittest.Citation("evt_c", "example.com"), kittest.Scan("evt_s", "example.com"),
		kittest.CrawlerErrors("evt_e", "example.com")}
	for _, ev := range evs {
		if rs := c.Deliver(kittest.Ctx(t), set(map[string]string{"platform": "make", "webhook_url": f.MakeHook("tok1")}), []sdk.Event{ev}); rs[0].Outcome != sdk.Delivered {
			t.Fatalf("%s: %+v", ev.Kind, rs)
		}
	}
	got, reqs := f.Received(), f.Requests()
	if len(got) != 3 || len(reqs) != 3 {
		t.Fatalf("runs %+v", got)
	}
	for i, ev := range evs {
		var sent map[string]any
		json.Unmarshal(ev.Body, &sent)
		if !reflect.DeepEqual(got[i].Payload, sent) || reqs[i].Header.Get("X-Aivis-Event") != ev.Kind {
			t.Errorf("%s: received %v (%s), want the body %s", ev.Kind, got[i].Payload, reqs[i].Header.Get("X-Aivis-Event"), ev.Body)
		}
	}
}

func TestDeliveries(t *testing.T) {
	f := workflowfake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	ev := kittest.Change("evt_1", "example.com", 72, 60, "positive")
	mk := f.MakeHook("tok123")
	basic := f.N8nWebhook("aivis-basic", workflowfake.Auth{User: "aivis", Password: "pw"})
	header := f.N8nWebhook("aivis-header", workflowfake.Auth{HeaderName: "X-Key", HeaderValue: "k1"})
	bearer := f.N8nWebhook("aivis-jwt", workflowfake.Auth{Token: "eyJ.jwt"})
	for _, tc := range []struct {
		name     string
		settings map[string]string
		want     sdk.Outcome
		reason   string
	}{
		{"make", map[string]string{"platform": "make", "webhook_url": mk}, sdk.Delivered, ""},
		{"n8n basic", map[string]string{"platform": "n8n", "webhook_url": basic, "auth": "basic", "username": "aivis", "password": "pw"}, sdk.Delivered, ""},
		{"n8n header", map[string]string{"platform": "n8n", "webhook_url": header, "auth": "header", "header_name": "X-Key", "header_value": "k1"}, sdk.Delivered, ""},
		{"n8n bearer", map[string]string{"platform": "n8n", "webhook_url": bearer, "auth": "bearer", "token": "eyJ.jwt"}, sdk.Delivered, ""},
		{"n8n wrong password", map[string]string{"platform": "n8n", "webhook_url": basic, "auth": "basic", "username": "aivis", "password": "no"}, sdk.PermanentFailure, "credentials"},
		{"n8n inactive", map[string]string{"platform": "n8n", "webhook_url": f.URL() + "/webhook/nothing"}, sdk.PermanentFailure, "activate the workflow"},
		{"make deleted", map[string]string{"platform": "make", "webhook_url": f.URL() + "/make/deleted"}, sdk.Gone, "410"},
	} {
		rs := c.Deliver(kittest.Ctx(t), set(tc.settings), []sdk.Event{ev})
		if rs[0].Outcome != tc.want || !strings.Contains(rs[0].Reason, tc.reason) {
			t.Errorf("%s: %+v", tc.name, rs)
		}
	}
	got := f.Received()
	if len(got) != 4 || got[0].Platform != "make" || got[0].Payload["id"] != "evt_1" || got[3].Hook != "aivis-jwt" {
		t.Fatalf("runs %+v", got)
	}
	for _, tc := range []struct {
		status int
		want   sdk.Outcome
	}{{429, sdk.Retry}, {500, sdk.Retry}, {504, sdk.Retry}, {413, sdk.PermanentFailure}, {400, sdk.PermanentFailure}} {
		f.Script(fakekit.Answer{Status: tc.status})
		if rs := c.Deliver(kittest.Ctx(t), set(map[string]string{"webhook_url": mk}), []sdk.Event{ev}); rs[0].Outcome != tc.want {
			t.Errorf("%d: %+v", tc.status, rs)
		}
	}
	f.Close()
	if rs := c.Deliver(kittest.Ctx(t), set(map[string]string{"webhook_url": mk}), []sdk.Event{ev}); rs[0].Outcome != sdk.Retry {
		t.Errorf("dead: %+v", rs)
	}
}

func TestSettings(t *testing.T) {
	c := &connector{}
	for _, tc := range []struct{ settings, field string }{
		{`{}`, "webhook_url"},
		{`{"webhook_url": "https://h/x", "platform": "zapier"}`, "platform"},
		{`{"webhook_url": "https://n8n.example/webhook-test/x", "platform": "n8n"}`, "webhook_url"},
		{`{"webhook_url": "https://h/x", "auth": "basic", "password": "p"}`, "username"},
		{`{"webhook_url": "https://h/x", "auth": "header", "header_name": "Bad Name", "header_value": "v"}`, "header_name"},
		{`{"webhook_url": "https://h/x", "auth": "bearer"}`, "token"},
		{`{"webhook_url": "https://h/x", "auth": "digest"}`, "auth"},
	} {
		fes := c.ValidateSettings(kittest.Ctx(t), json.RawMessage(tc.settings))
		if len(fes) == 0 || fes[0].Field != tc.field {
			t.Errorf("%s: %+v, want an error on %s", tc.settings, fes, tc.field)
		}
	}
}

func TestPlugin(t *testing.T) {
	f := workflowfake.New()
	defer f.Close()
	url := f.N8nWebhook("p", workflowfake.Auth{HeaderName: "X-Key", HeaderValue: "k"})
	sdktest.Run(t, sdktest.Suite{Binary: kittest.Build(t), Env: kittest.Loopback,
		Valid:       []json.RawMessage{json.RawMessage(`{"platform": "make", "webhook_url": "https://hook.eu1.make.com/abc"}`)},
		Invalid:     []json.RawMessage{json.RawMessage(`{"platform": "make"}`)},
		Deliverable: json.RawMessage(fmt.Sprintf(`{"platform": "n8n", "webhook_url": %q, "auth": "header", "header_name": "X-Key", "header_value": "k"}`, url))})
	if n := len(f.Received()); n != 2 {
		t.Errorf("%d runs, want the kit's delivery and test", n)
	}
}
