package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/connectors/internal/fakekit"
	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/connectors/slack/slackfake"
	"github.com/aivis/aivis/plugins/sdk"
	"github.com/aivis/aivis/plugins/sdk/sdktest"
)

func botSettings(f *slackfake.Fake, channel string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"bot_token": %q, "channel": %q, "api_url": %q, "dashboard_url": "https://aivis.example.com"}`,
		slackfake.Token, channel, f.APIURL()))
}

func hookSettings(f *slackfake.Fake, path string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"webhook_url": %q}`, f.WebhookURL(path)))
}

func TestValidateSettings(t *testing.T) {
	c := newConnector(nil)
	for _, tc := range []struct{ settings, field string }{
		{`{}`, "bot_token"},
		{`{"bot_token": "xoxb-1"}`, "channel"},
		{`{"bot_token": "abc", "channel": "C0123ABCD"}`, "bot_token"},
		{`{"bot_token": "xoxb-1", "channel": "general chat"}`, "channel"},
		{`{"webhook_url": "ftp://hooks.slack.com/services/x"}`, "webhook_url"},
		{`{"webhook_url": "https://hooks.slack.com/services/x", "channel": "#a"}`, "webhook_url"},
		{`{"webhook_url": "https://hooks.slack.com/services/x", "colour": "red"}`, "colour"},
		{`{"bot_token": 5, "channel": "#a"}`, "bot_token"},
		{`{"bot_token": "xoxb-1", "channel": "#a", "dashboard_url": "nope"}`, "dashboard_url"},
	} {
		fes := c.ValidateSettings(kittest.Ctx(t), json.RawMessage(tc.settings))
		if len(fes) == 0 || fes[0].Field != tc.field {
			t.Errorf("%s: field errors %+v, want one on %s", tc.settings, fes, tc.field)
		}
	}
	for _, ok := range []string{`{"bot_token": "xoxb-1", "channel": "#alerts"}`, `{"bot_token": "xoxb-1", "channel": "C0123ABCD"}`,
		`{"webhook_url": "https://hooks.slack.com/services/T0/B0/X"}`} {
		if fes := c.ValidateSettings(kittest.Ctx(t), json.RawMessage(ok)); len(fes) != 0 {
			t.Errorf("%s refused: %+v", ok, fes)
		}
	}
}

func TestBotMessage(t *testing.T) {
	f := slackfake.New()
	defer f.Close()
	c := newConnector(kittest.Client())
	rs := c.Deliver(kittest.Ctx(t), botSettings(f, "C0000OPEN"), []sdk.Event{kittest.Change("evt_1", "example.com", 72, 60, "positive")})
	if rs[0].Outcome != sdk.Delivered {
		t.Fatalf("result %+v", rs[0])
	}
	got := f.Received()
	if len(got) != 1 || got[0].Channel != "C0000OPEN" || got[0].Text != "AI visibility changed: example.com 72 (+12)" {
		t.Fatalf("received %+v", got)
	}
	blocks, _ := json.Marshal(got[0].Blocks)
	for _, want := range []string{`"type":"header"`, `AI visibility changed: example.com`, `72/100 (+12, was 60)`,
		`positive (0.40), was neutral`, `https://aivis.example.com/domains/example.com`, `\u003chttps://example.com|example.com\u003e`} {
		if !strings.Contains(string(blocks), want) {
			t.Errorf("blocks lack %s: %s", want, blocks)
		}
	}
}

// The citation events as Block Kit messages Slack takes: the engine, the
// rates with their counts and the change in the fields; the scan's figures
// per engine, one line each.
func TestCitationMessages(t *testing.T) {
	f := slackfake.New()
	defer f.Close()
	c := newConnector(kittest.Client())
	c.pace.every = 0
	rs := c.Deliver(kittest.Ctx(t), botSettings(f, "C0000OPEN"), []sdk.Event{kittest.Citation("evt_c", "example.com"), kittest.Scan("evt_s", "example.com")})
	if rs[0].Outcome != sdk.Delivered || rs[1].Outcome != sdk.Delivered {
		t.Fatalf("results %+v", rs)
	}
	got := f.Received()
	if len(got) != 2 || got[0].Text != "Citation rate changed: example.com in Perplexity (de-DE) 12.5% (-27.5 pts)" ||
		got[1].Text != "Visibility scan completed: example.com 64" {
		t.Fatalf("received %+v", got)
	}
	for i, wants := range [][]string{
		{`"text":"Citation rate changed: example.com"`, `*Engine*\nPerplexity (perplexity, search_api)`, `*Market*\nde-DE`,
			`*Citation rate*\n12.5% (1 of 8), was 40% (4 of 10): -27.5 pts`, `*Source share*\n3.3% (1 of 30), was 7.5% (3 of 40)`},
		{`*Citation rate*\n25% (5 of 20)`, `*Source share*\n7.5% (3 of 40)`,
			`*Citations by engine*\nChatGPT: cited in 10% (1 of 10)\nPerplexity: cited in 40% (4 of 10), 7.5% of sources`},
	} {
		blocks, _ := json.Marshal(got[i].Blocks)
		for _, want := range wants {
			if !strings.Contains(string(blocks), want) {
				t.Errorf("message %d lacks %s: %s", i, want, blocks)
			}
		}
	}
}

// crawler_errors is a message of its errors and cited pages: each page
// with its agents' errors by status class and the engines citing it.
func TestCrawlerErrorsMessage(t *testing.T) {
	f := slackfake.New()
	defer f.Close()
	c := newConnector(kittest.Client())
	c.pace.every = 0
	rs := c.Deliver(kittest.Ctx(t), botSettings(f, "C0000OPEN"), []sdk.Event{kittest.CrawlerErrors("evt_e", "example.com")})
	if rs[0].Outcome != sdk.Delivered {
		t.Fatalf("results %+v", rs)
	}
	got := f.Received()
	if len(got) != 1 || got[0].Text != "AI crawlers got errors: example.com 14 errors on 2 cited pages" {
		t.Fatalf("received %+v", got)
	}
	blocks, _ := json.Marshal(got[0].Blocks)
	for _, want := range []string{`"text":"AI crawlers got errors: example.com"`, `*Crawler errors*\n14 errors on 2 cited pages`, `*Days*\n2026-11-27`,
		`*Pages*\n/pricing: 11 errors (GPTBot 9 4xx, PerplexityBot 2 5xx), cited by ChatGPT (6), Perplexity (3)\n/docs/setup: 3 errors (OAI-SearchBot 3 5xx), cited by Perplexity (1)`} {
		if !strings.Contains(string(blocks), want) {
			t.Errorf("message lacks %s: %s", want, blocks)
		}
	}
}

// TestOutcomes: every documented answer of Slack becomes the right result.
func TestOutcomes(t *testing.T) {
	f := slackfake.New()
	defer f.Close()
	f.SetChannel("C0000ARCH", slackfake.Archived)
	f.SetChannel("C0000NOTIN", slackfake.NotInvited)
	f.SetWebhook("/services/T000/B000/ARCH", slackfake.Archived)
	f.SetWebhook("/services/T000/B000/GONE", slackfake.Removed)
	f.SetWebhook("/services/T000/B000/NOPE", slackfake.Prohibited)
	c := newConnector(kittest.Client())
	c.pace.every = 0
	ev := kittest.Change("evt_1", "example.com", 50, 61, "negative")
	badToken := json.RawMessage(fmt.Sprintf(`{"bot_token": "xoxb-wrong", "channel": "C0000OPEN", "api_url": %q}`, f.APIURL()))
	for _, tc := range []struct {
		name     string
		settings json.RawMessage
		script   []fakekit.Answer
		want     sdk.Outcome
		after    time.Duration
		reason   string
	}{
		{"bot ok", botSettings(f, "#alerts"), nil, sdk.Delivered, 0, ""},
		{"invalid_auth", badToken, nil, sdk.PermanentFailure, 0, "invalid_auth (check the bot token)"},
		{"channel_not_found", botSettings(f, "C0000NONE"), nil, sdk.PermanentFailure, 0, "channel_not_found"},
		{"not_in_channel", botSettings(f, "C0000NOTIN"), nil, sdk.PermanentFailure, 0, "/invite"},
		{"is_archived", botSettings(f, "C0000ARCH"), nil, sdk.Gone, 0, "is_archived"},
		{"429", botSettings(f, "C0000OPEN"), []fakekit.Answer{{Status: 429, Header: map[string]string{"Retry-After": "30"}}}, sdk.Retry, 30 * time.Second, "throttling"},
		{"429 with a date", botSettings(f, "C0000OPEN"), []fakekit.Answer{{Status: 429, Header: map[string]string{"Retry-After": "Fri, 27 Nov 2026 16:00:00 GMT"}}},
			sdk.Retry, 0, "Slack is throttling, with a Retry-After that is not whole seconds"},
		{"ok:false ratelimited", botSettings(f, "C0000OPEN"), []fakekit.Answer{{Status: 200, Body: `{"ok":false,"error":"ratelimited"}`}}, sdk.Retry, 0, "ratelimited"},
		{"msg_too_long", botSettings(f, "C0000OPEN"), []fakekit.Answer{{Status: 200, Body: `{"ok":false,"error":"msg_too_long"}`}}, sdk.PermanentFailure, 0, "msg_too_long"},
		{"500", botSettings(f, "C0000OPEN"), []fakekit.Answer{{Status: 503, Body: "<html>"}}, sdk.Retry, 0, "503"},
		{"webhook ok", hookSettings(f, "/services/T000/B000/OK"), nil, sdk.Delivered, 0, ""},
		{"webhook archived", hookSettings(f, "/services/T000/B000/ARCH"), nil, sdk.Gone, 0, "archived"},
		{"webhook removed", hookSettings(f, "/services/T000/B000/GONE"), nil, sdk.Gone, 0, "404"},
		{"webhook prohibited", hookSettings(f, "/services/T000/B000/NOPE"), nil, sdk.PermanentFailure, 0, "403"},
		{"webhook 429", hookSettings(f, "/services/T000/B000/OK"), []fakekit.Answer{{Status: 429, Header: map[string]string{"Retry-After": "4"}}}, sdk.Retry, 4 * time.Second, "throttling"},
		{"webhook 500", hookSettings(f, "/services/T000/B000/OK"), []fakekit.Answer{{Status: 500}}, sdk.Retry, 0, "500"},
	} {
		f.Script(tc.script...)
		rs := c.Deliver(kittest.Ctx(t), tc.settings, []sdk.Event{ev})
		if len(rs) != 1 || rs[0].Outcome != tc.want || rs[0].RetryAfter != tc.after || !strings.Contains(rs[0].Reason, tc.reason) {
			t.Errorf("%s: %+v, want outcome %d after %v with %q", tc.name, rs, tc.want, tc.after, tc.reason)
		}
	}
	if got := f.Received(); len(got) != 2 || got[0].Via != "api" || got[1].Via != "webhook" {
		t.Errorf("accepted %+v, want the two good messages", got)
	}
	// A dead Slack is retried.
	f.Close()
	if rs := c.Deliver(kittest.Ctx(t), botSettings(f, "C0000OPEN"), []sdk.Event{ev}); rs[0].Outcome != sdk.Retry {
		t.Errorf("dead Slack: %+v", rs)
	}
}

// TestPacing: messages to one channel are spaced to Slack's one a second,
// so a burst is not throttled; a wait past the limit goes back to the
// server as a retry.
func TestPacing(t *testing.T) {
	f := slackfake.New()
	defer f.Close()
	f.PerChannel = 900 * time.Millisecond
	c := newConnector(kittest.Client())
	for i := range 3 {
		rs := c.Deliver(kittest.Ctx(t), botSettings(f, "C0000OPEN"), []sdk.Event{kittest.Change(fmt.Sprint("evt_", i), "example.com", 70+i, 60, "positive")})
		if rs[0].Outcome != sdk.Delivered {
			t.Fatalf("message %d: %+v", i, rs[0])
		}
	}
	if n := len(f.Received()); n != 3 {
		t.Fatalf("%d messages accepted", n)
	}
	c.pace.next[settings{BotToken: slackfake.Token, Channel: "C0000OPEN"}.slot()] = time.Now().Add(time.Minute)
	rs := c.Deliver(kittest.Ctx(t), botSettings(f, "C0000OPEN"), []sdk.Event{kittest.Change("evt_x", "example.com", 1, 2, "negative")})
	if rs[0].Outcome != sdk.Retry || rs[0].RetryAfter < 50*time.Second {
		t.Errorf("a far slot: %+v", rs[0])
	}
}

// TestPacingPerWorkspace: Slack paces a channel of a workspace, so two
// workspaces posting to channels of the same name (or two webhooks) do not
// wait for each other, while a second message to the same channel of the
// same workspace does. The pacer spaces messages an hour apart here, so
// that a paced message comes back at once as a retry, not after a wait.
func TestPacingPerWorkspace(t *testing.T) {
	f := slackfake.New()
	defer f.Close()
	const other = "xoxb-other-workspace"
	f.AddWorkspace(other)
	c := newConnector(kittest.Client())
	c.pace.every = time.Hour
	otherBot := json.RawMessage(fmt.Sprintf(`{"bot_token": %q, "channel": "#alerts", "api_url": %q}`, other, f.APIURL()))
	f.SetWebhook("/services/T111/B111/OTHER", slackfake.Open)
	for i, tc := range []struct {
		name     string
		settings json.RawMessage
		want     sdk.Outcome
	}{
		{"first workspace, #alerts", botSettings(f, "#alerts"), sdk.Delivered},
		{"second workspace, #alerts", otherBot, sdk.Delivered},
		{"first workspace, another channel", botSettings(f, "C0000OPEN"), sdk.Delivered},
		{"first workspace, #alerts again", botSettings(f, "#alerts"), sdk.Retry},
		{"second workspace, #alerts again", otherBot, sdk.Retry},
		{"a webhook", hookSettings(f, "/services/T000/B000/OK"), sdk.Delivered},
		{"another webhook", hookSettings(f, "/services/T111/B111/OTHER"), sdk.Delivered},
		{"the first webhook again", hookSettings(f, "/services/T000/B000/OK"), sdk.Retry},
	} {
		rs := c.Deliver(kittest.Ctx(t), tc.settings, []sdk.Event{kittest.Change(fmt.Sprint("evt_", i), "example.com", 70, 60, "positive")})
		if rs[0].Outcome != tc.want || (tc.want == sdk.Retry && rs[0].RetryAfter < 50*time.Minute) {
			t.Errorf("%s: %+v, want outcome %d", tc.name, rs[0], tc.want)
		}
	}
	var got []string
	for _, m := range f.Received() {
		got = append(got, m.Token+" "+m.Channel)
	}
	want := []string{slackfake.Token + " #alerts", other + " #alerts", slackfake.Token + " C0000OPEN",
		" /services/T000/B000/OK", " /services/T111/B111/OTHER"}
	if !slices.Equal(got, want) {
		t.Errorf("Slack received %q, want %q", got, want)
	}
	// The pacer knows workspaces by hashes, never by their secrets.
	held := fmt.Sprint(c.pace.next)
	for _, secret := range []string{slackfake.Token, other, "/services/"} {
		if strings.Contains(held, secret) {
			t.Errorf("the pacer keeps %q in clear: %s", secret, held)
		}
	}
}

// TestLongTextFitsBlockKit: values past Block Kit's limits are cut, not
// refused by Slack.
func TestLongTextFitsBlockKit(t *testing.T) {
	f := slackfake.New()
	defer f.Close()
	c := newConnector(kittest.Client())
	long := strings.Repeat("ü", 5000)
	ev := kittest.Event("evt_long", "content_request_failed", strings.Repeat("a", 60)+".example.com", map[string]any{"failure_reason": long, "url": "https://x/" + long})
	if rs := c.Deliver(kittest.Ctx(t), botSettings(f, "C0000OPEN"), []sdk.Event{ev}); rs[0].Outcome != sdk.Delivered {
		t.Fatalf("%+v", rs)
	}
}

// TestPlugin runs the built connector as the server does: the SDK's
// conformance kit, then a delivery through the plugin process.
func TestPlugin(t *testing.T) {
	f := slackfake.New()
	defer f.Close()
	bin := kittest.Build(t)
	sdktest.Run(t, sdktest.Suite{Binary: bin, Env: kittest.Loopback,
		Valid:       []json.RawMessage{json.RawMessage(`{"webhook_url": "https://hooks.slack.com/services/T0/B0/X"}`), json.RawMessage(`{"bot_token": "xoxb-1", "channel": "#alerts"}`)},
		Invalid:     []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`{"bot_token": "xoxb-1"}`)},
		Deliverable: botSettings(f, "#alerts")})
	c := kittest.Start(t, bin)
	rs := c.Deliver(kittest.Ctx(t), botSettings(f, "C0000ARCH"), []sdk.Event{kittest.Change("evt_p", "example.com", 1, 2, "negative")})
	if rs[0].Outcome != sdk.PermanentFailure || !strings.Contains(rs[0].Reason, "channel_not_found") {
		t.Errorf("through the plugin: %+v", rs)
	}
	if n := len(f.Received()); n != 2 {
		t.Errorf("%d messages, want the conformance kit's delivery and its test", n)
	}
}
