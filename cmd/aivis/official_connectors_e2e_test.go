package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/connectors/segment/segmentfake"
	"github.com/aivis/aivis/connectors/slack/slackfake"
	"github.com/aivis/aivis/connectors/zapier/zapierfake"
)

// TestOfficialConnectors runs official connectors as `make run` does
// (built, registered, started by the server) against local fakes of their
// destinations, configured through the API.
func TestOfficialConnectors(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"slack", "segment", "zapier"} {
		cli(t, dir, nil, "plugin", "register", buildPlugin(t, "../../connectors/"+name, name))
	}
	a := newAccount(t, dir, "professional", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "3s")
	sl, seg, zap := slackfake.New(), segmentfake.New(), zapierfake.New()
	defer sl.Close()
	defer seg.Close()
	defer zap.Close()

	var kinds client.List[client.ConnectorKind]
	s.do(t, req{method: "GET", path: "/v1/connectors", header: bearer(k)}).decode(t, &kinds)
	if len(kinds.Items) != 3 {
		t.Fatalf("connectors: %+v", kinds.Items)
	}

	create := func(connector, settings string) client.Connection {
		r := s.do(t, req{method: "POST", path: "/v1/connections", header: bearer(k), body: connectionBody(t, client.CreateConnection{
			Connector: connector, Events: []string{"ai_visibility_change"}, Domains: []string{"example.com"}, Settings: json.RawMessage(settings)})})
		var c client.Connection
		r.decode(t, &c)
		if r.Status != 201 {
			t.Fatalf("create %s: %d %s", connector, r.Status, r.Body)
		}
		return c
	}
	slackConn := create("slack", `{"bot_token":"`+slackfake.Token+`","channel":"#alerts","api_url":"`+sl.APIURL()+`"}`)
	segConn := create("segment", `{"write_key":"`+segmentfake.WriteKey+`","api_url":"`+seg.URL()+`"}`)
	if strings.Contains(string(slackConn.Settings), "xoxb") || strings.Contains(string(segConn.Settings), segmentfake.WriteKey) {
		t.Fatalf("a secret setting shown: %s %s", slackConn.Settings, segConn.Settings)
	}
	// The Slack connector refuses a bad channel before anything is kept.
	r := s.do(t, req{method: "POST", path: "/v1/connections", header: bearer(k),
		body: `{"connector":"slack","events":["ai_visibility_change"],"settings":{"bot_token":"xoxb-1","channel":"not a channel"}}`})
	if r.Status != 400 || !strings.Contains(string(r.Body), "settings.channel") {
		t.Fatalf("bad channel: %d %s", r.Status, r.Body)
	}

	// Test sends a real test event to Slack.
	var res client.ConnectionTestResult
	s.do(t, req{method: "POST", path: "/v1/connections/" + slackConn.ID + "/test", header: bearer(k)}).decode(t, &res)
	if res.Result != "delivered" || len(sl.Received()) != 1 || sl.Received()[0].Text != "Test from aivis: example.com" {
		t.Fatalf("slack test: %+v, received %+v", res, sl.Received())
	}

	// A Zapier app subscribes to the instant trigger: the hook accepts the
	// test event first.
	hook := zap.Hook("standard", "42")
	var sub client.ZapierSubscription
	r = s.do(t, req{method: "POST", path: "/v1/zapier/hooks", header: bearer(k), body: `{"target_url":"` + hook + `","event":"ai_visibility_change"}`})
	r.decode(t, &sub)
	if r.Status != 201 || sub.ID == "" || len(zap.Received()) != 1 || zap.Received()[0].Payload["event"] != "webhook_test" {
		t.Fatalf("subscribe: %d %s, received %+v", r.Status, r.Body, zap.Received())
	}

	// A reading reaches Slack, Segment and the Zap.
	var rec client.RecordedReading
	s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(k), body: `{"domain":"example.com","visibility_score":64,"sentiment":"positive"}`}).decode(t, &rec)
	waitFor(t, "the reading at all three", func() bool {
		return len(sl.Received()) == 2 && len(seg.Received()) == 1 && len(zap.Received()) == 2
	})
	if m := sl.Received()[1]; m.Channel != "#alerts" || !strings.Contains(m.Text, "example.com 64") {
		t.Errorf("slack message %+v", m)
	}
	if c := seg.Received()[0]; c.MessageID != *rec.EventID || c.Event != "AI Visibility Changed" || c.UserID != a.ID || c.Properties["visibility_score"] != 64.0 {
		t.Errorf("segment call %+v", c)
	}
	if p := zap.Received()[1].Payload; p["id"] != *rec.EventID || p["event"] != "ai_visibility_change" {
		t.Errorf("zap payload %+v", p)
	}

	// The Zap is turned off: Zapier answers 410 and the subscription is
	// deleted, its deliveries kept.
	zap.TurnOff(hook)
	s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(k), body: `{"domain":"example.com","visibility_score":50,"sentiment":"neutral"}`})
	var gone client.Connection
	waitFor(t, "the subscription deleted", func() bool {
		s.do(t, req{method: "GET", path: "/v1/connections/" + sub.ID, header: bearer(k)}).decode(t, &gone)
		return gone.DeletedAt != nil
	})
	if gone.DisabledReason == nil || !strings.Contains(*gone.DisabledReason, "410") {
		t.Errorf("why the subscription went: %v", gone.DisabledReason)
	}
	var log client.List[client.Delivery]
	s.do(t, req{method: "GET", path: "/v1/connections/" + sub.ID + "/deliveries", header: bearer(k)}).decode(t, &log)
	if len(log.Items) != 3 || log.Items[0].Status != "failed" || log.Items[2].Event != "webhook_test" {
		t.Errorf("the deleted subscription's deliveries: %+v", log.Items)
	}
	waitFor(t, "the other connections' deliveries", func() bool { return len(sl.Received()) == 3 && len(seg.Received()) == 2 })
	if r = s.do(t, req{method: "DELETE", path: "/v1/zapier/hooks/" + sub.ID, header: bearer(k)}); r.Status != 404 {
		t.Errorf("unsubscribe after deletion: %d", r.Status)
	}
}
