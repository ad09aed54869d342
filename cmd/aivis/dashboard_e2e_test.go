package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/aivis/aivis/connectors/slack/slackfake"
	"github.com/aivis/aivis/core/dashboard"
	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/internal/browsertest"
	"github.com/aivis/aivis/internal/npmtest"
)

// chromium finds the browser the dashboard tests drive (AIVIS_CHROMIUM,
// else Debian's chromium on the PATH). Without one the tests fail: CI
// installs it (make deps).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("AIVIS_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("AIVIS_CHROMIUM=%s: %v: the dashboard's browser tests need Chromium", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the dashboard's browser tests need Chromium: make deps installs it (or set AIVIS_CHROMIUM to a Chromium binary)")
	return ""
}

// screenshotDir is where the browser tests save screenshots:
// AIVIS_SCREENSHOTS (make screenshots sets docs/dashboard), else a
// directory under the system's temporary directory.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("AIVIS_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "aivis-dashboard-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// recorder is a local endpoint that answers 200 and keeps what it got:
// each request's headers and body (to verify a delivery's signature once
// the secret is known).
type recorder struct {
	*httptest.Server
	mu  sync.Mutex
	all []signed
}

type signed struct {
	header http.Header
	body   []byte
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.all = append(r.all, signed{req.Header.Clone(), b})
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(r.Close)
	return r
}

// deliveries are the requests it got, with their headers.
func (r *recorder) deliveries() []signed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}

// got are the bodies it got.
func (r *recorder) got() []string {
	var out []string
	for _, d := range r.deliveries() {
		out = append(out, string(d.body))
	}
	return out
}

var bootstrapLink = regexp.MustCompile(`(https://\S+/join\?token=[A-Za-z0-9]+)`)

// TestDashboardInBrowser drives headless Chromium through the dashboard
// served by the real binary: the bootstrap owner, a key used against the
// API and revoked, the usage charts, a webhook verified by a local
// endpoint, a connector configured and tested, a domain's chart.
// axeVersion pins axe-core, whose WCAG rules the browser test runs on
// every page.
const axeVersion = "4.10.2"

// searchModel is the browser test's search model: it cites its sources.
const searchModel = "gpt-4o-search-preview"

func TestDashboardInBrowser(t *testing.T) {
	browser := chromium(t)
	shots := screenshotDir(t)
	began := time.Now()

	hooks := newRecorder(t)
	chat := newRecorder(t)
	dir := t.TempDir()
	plugin := filepath.Join(t.TempDir(), "partner-connector")
	if out, err := exec.Command("go", "build", "-o", plugin, "../../examples/partner-connector").CombinedOutput(); err != nil {
		t.Fatalf("build the partner connector: %v\n%s", err, out)
	}
	cli(t, dir, nil, "plugin", "register", plugin)
	cli(t, dir, nil, "plugin", "register", buildPlugin(t, "../../connectors/slack", "slack"))
	slack := slackfake.New()
	defer slack.Close()
	// A fake AI engine answers the scans the browser asks for: a plain
	// model, which reports no sources, and a search model, which cites
	// them.
	engine := probefake.New()
	defer engine.Close()
	engine.Answer("fake-model", "The best options are Acme (https://acme.invalid/skates) and Globex. Acme is excellent.", "I recommend Globex.")
	engine.Script(searchModel,
		probefake.Reply{Text: "Acme makes the best rocket skates; Globex sells cheaper ones.", Citations: []probefake.Citation{
			{URL: "https://acme.invalid/skates", Title: "Acme skates", Quote: "Acme makes the best rocket skates"},
			{URL: "https://globex.example/prices", Title: "Globex prices", Quote: "Globex sells cheaper ones"}}},
		probefake.Reply{Text: "Reviewers prefer Globex <b>for speed</b>.", Citations: []probefake.Citation{
			{URL: "https://reviews.example/skates", Title: "Skate reviews", Quote: "Reviewers prefer Globex"}}})
	cfgFile := scanConfig(t, dir, engine, searchModel)
	s := start(t, dir, "--config", cfgFile, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--counter-flush-interval", "200ms")
	m := bootstrapLink.FindStringSubmatch(s.Stdout.String())
	if m == nil {
		t.Fatalf("the banner prints no one-time sign-in link:\n%s", s.Stdout)
	}
	link := m[1]

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// The server's certificate is self-signed, made for this run.
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.WindowSize(1280, 900),
	)
	// The viewer's browser profile; made here, it is removed after the
	// whole test, when that browser has long exited.
	viewerProfile, otherProfile := t.TempDir(), t.TempDir()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelTimeout()
	// Confirmations (revoke, delete) are accepted, and counted.
	var dialogs atomic.Int32
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			go chromedp.Run(ctx, page.HandleJavaScriptDialog(true))
		}
	})

	run := browserRun(t, ctx, s)
	// shot saves a screenshot of the whole page, or of what the element
	// sel shows.
	shot := func(name string, sel ...string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var buf []byte
			var take chromedp.Action = chromedp.FullScreenshot(&buf, 100)
			if len(sel) > 0 {
				take = chromedp.Screenshot(sel[0], &buf, chromedp.ByQuery)
			}
			if err := take.Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name+".png"), buf, 0o644)
		})
	}
	text := func(sel string) string {
		t.Helper()
		var s string
		run("read "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
		return s
	}

	t.Run("bootstrap owner signs in", func(t *testing.T) {
		run("join", chromedp.Navigate(link),
			chromedp.WaitVisible(`#account_name`, chromedp.ByQuery), shot("01-join"),
			chromedp.SendKeys(`#account_name`, "Acme Browsers", chromedp.ByQuery),
			chromedp.Click(`#agency`, chromedp.ByQuery),
			chromedp.SendKeys(`#email`, "owner@acme.example", chromedp.ByQuery),
			chromedp.SendKeys(`#password`, "a long owner password", chromedp.ByQuery),
			chromedp.SendKeys(`#password_again`, "a long owner password", chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#password_again`, chromedp.ByQuery)),
			chromedp.WaitVisible(`svg.chart`, chromedp.ByQuery))
		if h := text("h1"); h != "Overview" {
			t.Fatalf("after joining the page is %q, want Overview", h)
		}
		if who := text(".who"); !strings.Contains(who, "owner@acme.example") || !strings.Contains(who, "owner") {
			t.Fatalf("signed in as %q", who)
		}
		run("shot", shot("02-overview"))
	})

	var apiKey, secret string
	t.Run("generate a key and use it against the API", func(t *testing.T) {
		run("keys", chromedp.Navigate(s.URL+"/keys"),
			chromedp.WaitVisible(`#key-name`, chromedp.ByQuery),
			chromedp.SendKeys(`#key-name`, "browser key", chromedp.ByQuery),
			chromedp.Click(`#scope-content\:write`, chromedp.ByQuery), // leave one scope out
			browsertest.Leaving(chromedp.Submit(`#key-name`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#new-secret`, chromedp.ByQuery),
			chromedp.Value(`#new-key`, &apiKey, chromedp.ByQuery),
			chromedp.Value(`#new-secret`, &secret, chromedp.ByQuery),
			shot("03-key-created"))
		if !strings.HasPrefix(apiKey, "svc_") || len(apiKey) != 44 || len(secret) != 64 {
			t.Fatalf("the page shows key %q secret %q", apiKey, secret)
		}
		r := s.do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(key{Key: apiKey, Secret: secret})})
		if r.Status != 200 {
			t.Fatalf("budget-status with the dashboard's key: %d %s", r.Status, r.Body)
		}
		// The scope left out is refused by the API.
		r = s.do(t, req{method: "POST", path: "/api/v1/ai/content-requests", header: keyed(key{Key: apiKey, Secret: secret}),
			body: `{"domain":"acme.example","budget":1}`})
		if r.Status != 403 || r.errorCode(t) != "INSUFFICIENT_SCOPE" {
			t.Fatalf("content:write left out, create answered %d %s", r.Status, r.Body)
		}
		// The secret is not shown again.
		var html string
		run("reload", chromedp.Navigate(s.URL+"/keys"), chromedp.WaitVisible(`#keys`, chromedp.ByQuery),
			chromedp.OuterHTML("body", &html, chromedp.ByQuery))
		if strings.Contains(html, secret) || strings.Contains(html, apiKey) {
			t.Fatal("the keys page shows the credentials again")
		}
	})

	t.Run("usage chart", func(t *testing.T) {
		time.Sleep(500 * time.Millisecond) // the counter's flush interval
		var bars int
		run("usage", chromedp.Navigate(s.URL+"/usage"), chromedp.WaitVisible(`svg.chart`, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelectorAll("svg.chart rect.bar").length`, &bars), shot("04-usage"))
		if bars == 0 {
			t.Fatal("the usage charts draw no bar after the key's requests")
		}
		if w := text(".grid .card:nth-child(4) .big"); !strings.HasPrefix(w, "2") && !strings.HasPrefix(w, "3") {
			t.Errorf("requests today shows %q, want the 2 requests made", w)
		}
	})

	t.Run("revoke the key and the API refuses it", func(t *testing.T) {
		run("revoke", chromedp.Navigate(s.URL+"/keys"),
			chromedp.WaitVisible(`button[aria-label="Revoke browser key"]`, chromedp.ByQuery),
			browsertest.Leaving(chromedp.Click(`button[aria-label="Revoke browser key"]`, chromedp.ByQuery)),
			chromedp.WaitVisible(`.notice`, chromedp.ByQuery), shot("05-key-revoked"))
		if dialogs.Load() != 1 {
			t.Errorf("revoking asked %d confirmations, want 1", dialogs.Load())
		}
		if st := text(`#keys .state`); st != "revoked" {
			t.Fatalf("the key's state reads %q after revoking", st)
		}
		r := s.do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(key{Key: apiKey, Secret: secret})})
		if r.Status != 401 || r.errorCode(t) != "KEY_REVOKED" {
			t.Fatalf("the revoked key: %d %s, want 401 KEY_REVOKED", r.Status, r.Body)
		}
	})

	t.Run("webhook with its test delivery", func(t *testing.T) {
		run("webhook", chromedp.Navigate(s.URL+"/webhooks"),
			chromedp.WaitVisible(`#wh-domain`, chromedp.ByQuery),
			chromedp.SendKeys(`#wh-domain`, "acme.example", chromedp.ByQuery),
			chromedp.SendKeys(`#wh-url`, hooks.URL+"/aivis", chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#wh-domain`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#test-outcome`, chromedp.ByQuery), shot("06-webhook-created"))
		if o := text("#test-outcome"); !strings.Contains(o, "200") {
			t.Fatalf("the test outcome reads %q", o)
		}
		got := hooks.got()
		if len(got) != 1 || !strings.Contains(got[0], `"event":"webhook_test"`) {
			t.Fatalf("the endpoint got %q, want one webhook_test", got)
		}
		var secretShown string
		run("secret", chromedp.Value(`#wh-secret`, &secretShown, chromedp.ByQuery))
		if !strings.HasPrefix(secretShown, "whsec_") {
			t.Fatalf("the webhook's secret reads %q", secretShown)
		}
		run("deliveries", browsertest.Leaving(chromedp.Click(`a[href^="/webhooks/wh_"]`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#deliveries`, chromedp.ByQuery), shot("07-webhook-deliveries"))
		if d := text(`#deliveries tbody`); !strings.Contains(d, "webhook_test") || !strings.Contains(d, "succeeded") || !strings.Contains(d, "HTTP 200") {
			t.Fatalf("the deliveries read %q", d)
		}
	})

	t.Run("configure a connector and press Test", func(t *testing.T) {
		run("connectors", chromedp.Navigate(s.URL+"/connectors"),
			chromedp.WaitVisible(`a[href="/connectors/partner-chat"]`, chromedp.ByQuery), shot("08-connectors"))
		if h := text(`ul.cards`); !strings.Contains(h, "running") {
			t.Fatalf("the connector's health reads %q", h)
		}
		var inputType string
		run("form", browsertest.Leaving(chromedp.Click(`a[href="/connectors/partner-chat"]`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#f-webhook_url`, chromedp.ByQuery),
			chromedp.AttributeValue(`#f-webhook_url`, "type", &inputType, nil, chromedp.ByQuery),
			chromedp.SendKeys(`#con-name`, "Team chat", chromedp.ByQuery),
			chromedp.SendKeys(`#f-webhook_url`, chat.URL+"/incoming", chromedp.ByQuery),
			chromedp.SendKeys(`#f-username`, "aivis bot", chromedp.ByQuery),
			chromedp.SendKeys(`#min-citation`, "20", chromedp.ByQuery),
			chromedp.SendKeys(`#min-errors`, "5", chromedp.ByQuery),
			shot("09-connector-form"),
			browsertest.Leaving(chromedp.Submit(`#con-name`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#test-connection`, chromedp.ByQuery))
		if inputType != "password" {
			t.Errorf("the secret field's input is %q, want password (write-only)", inputType)
		}
		var html string
		run("saved", chromedp.OuterHTML("main", &html, chromedp.ByQuery))
		if strings.Contains(html, chat.URL) {
			t.Fatal("the connection page shows the secret webhook_url")
		}
		if !strings.Contains(html, "citation rate change 20 percentage points, crawler errors 5 error hits") {
			t.Errorf("the connection page does not show the thresholds typed: %s", html)
		}
		run("test", browsertest.Leaving(chromedp.Click(`#test-connection`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#test-result`, chromedp.ByQuery), shot("10-connection-tested"))
		if r := text(`#test-result h2`); r != "Test result: delivered" {
			t.Fatalf("the test result reads %q", r)
		}
		got := chat.got()
		if len(got) != 1 || !strings.Contains(got[0], "webhook_test") || !strings.Contains(got[0], "aivis bot") {
			t.Fatalf("the chat endpoint got %q", got)
		}
		// Edit: the secret left empty keeps its saved value.
		var secretValue string
		run("edit", chromedp.Click(`details.card summary`, chromedp.ByQuery),
			chromedp.WaitVisible(`#f-username`, chromedp.ByQuery),
			chromedp.Value(`#f-webhook_url`, &secretValue, chromedp.ByQuery),
			chromedp.SetValue(`#f-username`, "renamed bot", chromedp.ByQuery),
			chromedp.SetValue(`#min-score`, "7", chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#f-username`, chromedp.ByQuery)),
			chromedp.WaitVisible(`.notice`, chromedp.ByQuery),
			browsertest.Leaving(chromedp.Click(`#test-connection`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#test-result`, chromedp.ByQuery))
		if secretValue != "" {
			t.Errorf("the edit form shows the secret %q", secretValue)
		}
		if r := text(`#test-result h2`); r != "Test result: delivered" {
			t.Fatalf("after the edit the test result reads %q", r)
		}
		if got := chat.got(); len(got) != 2 || !strings.Contains(got[1], "renamed bot") {
			t.Fatalf("after the edit the chat endpoint got %q", got)
		}
		// The thresholds: the citation change's set at creation, the score
		// change's by the edit.
		if f := text(`dl.facts`); !strings.Contains(f, "score change 7 points, citation rate change 20 percentage points") {
			t.Errorf("the connection's facts read %q", f)
		}
	})

	var slackConnection string // its page
	t.Run("configure the official Slack connector from its schema and press Test", func(t *testing.T) {
		var tokenType, apiDefault string
		run("slack form", chromedp.Navigate(s.URL+"/connectors"),
			chromedp.WaitVisible(`a[href="/connectors/slack"]`, chromedp.ByQuery),
			browsertest.Leaving(chromedp.Click(`a[href="/connectors/slack"]`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#f-bot_token`, chromedp.ByQuery),
			chromedp.AttributeValue(`#f-bot_token`, "type", &tokenType, nil, chromedp.ByQuery),
			chromedp.Value(`#f-api_url`, &apiDefault, chromedp.ByQuery))
		if tokenType != "password" || apiDefault != "https://slack.com/api/" {
			t.Fatalf("the Slack form: bot_token input %q, api_url %q (want password, the schema's default)", tokenType, apiDefault)
		}
		// The connector's own validation answers in the form, which keeps
		// what was typed but the secret.
		var html, tokenAfter string
		run("bad channel", chromedp.SendKeys(`#con-name`, "Slack alerts", chromedp.ByQuery),
			chromedp.SendKeys(`#f-bot_token`, slackfake.Token, chromedp.ByQuery),
			chromedp.SendKeys(`#f-channel`, "not a channel", chromedp.ByQuery),
			chromedp.SetValue(`#f-api_url`, slack.APIURL(), chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#con-name`, chromedp.ByQuery)),
			chromedp.WaitVisible(`.problem`, chromedp.ByQuery),
			chromedp.OuterHTML("main", &html, chromedp.ByQuery),
			chromedp.Value(`#f-bot_token`, &tokenAfter, chromedp.ByQuery))
		if !strings.Contains(html, "channel") || strings.Contains(html, slackfake.Token) || tokenAfter != "" {
			t.Fatalf("after a bad channel the form shows the token (%q) or no reason:\n%s", tokenAfter, html)
		}
		var nameKept string
		run("name kept", chromedp.Value(`#con-name`, &nameKept, chromedp.ByQuery))
		if nameKept != "Slack alerts" {
			t.Errorf("the form lost the name: %q", nameKept)
		}
		run("good channel", chromedp.SendKeys(`#f-bot_token`, slackfake.Token, chromedp.ByQuery),
			chromedp.SetValue(`#f-channel`, "#alerts", chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#con-name`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#test-connection`, chromedp.ByQuery),
			chromedp.OuterHTML("main", &html, chromedp.ByQuery),
			chromedp.Location(&slackConnection))
		if strings.Contains(html, slackfake.Token) {
			t.Fatal("the Slack connection's page shows the bot token")
		}
		run("slack test", browsertest.Leaving(chromedp.Click(`#test-connection`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#test-result`, chromedp.ByQuery), shot("10b-slack-tested"))
		if r := text(`#test-result h2`); r != "Test result: delivered" {
			t.Fatalf("the Slack test result reads %q", r)
		}
		got := slack.Received()
		if len(got) != 1 || got[0].Via != "api" || got[0].Channel != "#alerts" || !strings.HasPrefix(got[0].Text, "Test from aivis") {
			t.Fatalf("Slack received %+v, want one test message in #alerts", got)
		}
	})

	t.Run("a domain's score chart", func(t *testing.T) {
		var k2 string
		run("key", chromedp.Navigate(s.URL+"/keys"), chromedp.WaitVisible(`#key-name`, chromedp.ByQuery),
			chromedp.SendKeys(`#key-name`, "readings", chromedp.ByQuery), browsertest.Leaving(chromedp.Submit(`#key-name`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#new-key`, chromedp.ByQuery), chromedp.Value(`#new-key`, &k2, chromedp.ByQuery))
		now := time.Now().UTC()
		for i, score := range []int{41, 55, 62, 70} {
			at := now.Add(time.Duration(i-4) * 24 * time.Hour).Format(time.RFC3339)
			body := fmt.Sprintf(`{"domain":"acme.example","visibility_score":%d,"sentiment":"positive","sentiment_score":0.%d,"measured_at":%q}`, score, 2+i, at)
			if r := s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(key{Key: k2}), body: body}); r.Status != 201 && r.Status != 200 {
				t.Fatalf("record a reading: %d %s", r.Status, r.Body)
			}
		}
		var points string
		run("domain", chromedp.Navigate(s.URL+"/domains/acme.example"),
			chromedp.WaitVisible(`svg.chart polyline`, chromedp.ByQuery),
			chromedp.AttributeValue(`svg.chart polyline`, "points", &points, nil, chromedp.ByQuery), shot("11-domain"))
		if n := len(strings.Fields(points)); n != 4 {
			t.Fatalf("the score line has %d points (%q), want 4", n, points)
		}
		if big := text(".grid .card .big"); !strings.HasPrefix(big, "70") {
			t.Errorf("the latest score reads %q", big)
		}
		// The readings' events reach Slack, and the connection's delivery
		// log shows them.
		if slackConnection == "" {
			t.Fatal("no Slack connection: the subtest that makes it failed")
		}
		var log string
		for deadline := time.Now().Add(15 * time.Second); ; {
			run("slack log", chromedp.Navigate(strings.SplitN(slackConnection, "?", 2)[0]),
				chromedp.WaitVisible(`#deliveries`, chromedp.ByQuery), chromedp.Text(`#deliveries tbody`, &log, chromedp.ByQuery))
			if strings.Contains(log, "ai_visibility_change") && strings.Contains(log, "succeeded") || time.Now().After(deadline) {
				break
			}
			time.Sleep(300 * time.Millisecond)
		}
		run("shot", shot("10c-slack-deliveries"))
		if !strings.Contains(log, "ai_visibility_change") || !strings.Contains(log, "succeeded") || !strings.Contains(log, "delivered") {
			t.Fatalf("the Slack connection's delivery log reads %q", log)
		}
		if n := len(slack.Received()); n < 2 {
			t.Errorf("Slack received %d messages, want the test and the readings' alerts", n)
		}
	})

	t.Run("monitor a domain, scan it, read its breakdown and readiness findings", func(t *testing.T) {
		// .invalid never resolves: the readiness audit finds the site
		// unreachable, and the fake engine carries the reading.
		run("monitor", chromedp.Navigate(s.URL+"/domains"), chromedp.WaitVisible(`#dom-name`, chromedp.ByQuery),
			chromedp.SendKeys(`#dom-name`, "acme.invalid", chromedp.ByQuery),
			chromedp.SendKeys(`#dom-comp`, "Globex", chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#dom-name`, chromedp.ByQuery)),
			chromedp.WaitVisible(`a[href="/domains/acme.invalid"]`, chromedp.ByQuery),
			browsertest.Leaving(chromedp.Click(`a[href="/domains/acme.invalid"]`, chromedp.ByQuery)),
			chromedp.WaitVisible(`form[action="/domains/acme.invalid/scan"] button`, chromedp.ByQuery),
			browsertest.Leaving(chromedp.Click(`form[action="/domains/acme.invalid/scan"] button`, chromedp.ByQuery)),
			chromedp.WaitVisible(`.notice`, chromedp.ByQuery))
		var findings, parts string
		for deadline := time.Now().Add(20 * time.Second); ; {
			var n int
			run("scan", chromedp.Navigate(s.URL+"/domains/acme.invalid"), chromedp.WaitVisible(`main`, chromedp.ByQuery),
				chromedp.Evaluate(`document.querySelectorAll("ul.findings li").length`, &n))
			if n > 0 {
				run("read", chromedp.Text(`ul.findings`, &findings, chromedp.ByQuery),
					chromedp.Text(`#breakdown tbody`, &parts, chromedp.ByQuery), shot("11b-domain-scanned", "#scan-breakdown"))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the scan's breakdown never shows; engine requests %d", engine.Requests())
			}
			time.Sleep(300 * time.Millisecond)
		}
		if !strings.Contains(findings, "critical") || !strings.Contains(findings, "The site cannot be read at all") || !strings.Contains(findings, "Fix:") {
			t.Errorf("the readiness findings read %q", findings)
		}
		if strings.Contains(findings, ":53") || strings.Contains(findings, "dial tcp") {
			t.Errorf("the readiness findings show the server's network details: %q", findings)
		}
		if !strings.Contains(parts, "readiness") || !strings.Contains(parts, "mention") {
			t.Errorf("the breakdown reads %q", parts)
		}
		if engine.Requests() == 0 {
			t.Error("the scan asked the engine nothing")
		}
		// A point per reading: the scan asked for, and the domain's first
		// scheduled scan, which is due at once and may come before or after
		// it. Once the schedule has moved past it (its next scan a week
		// away) and no scan is queued or running, the page shows them all.
		waitFor(t, "the domain's scans done", func() bool {
			return s.count(t, fmt.Sprintf(`SELECT count(*) FROM monitored_domains WHERE domain = 'acme.invalid' AND next_scan_at > %d`,
				time.Now().Add(24*time.Hour).UnixNano())) == 1 &&
				s.count(t, `SELECT count(*) FROM scans WHERE domain = 'acme.invalid' AND status IN ('queued', 'running')`) == 0
		})
		var points string
		run("line", chromedp.Navigate(s.URL+"/domains/acme.invalid"),
			chromedp.AttributeValue(`svg.chart polyline`, "points", &points, nil, chromedp.ByQuery))
		if n, readings := len(strings.Fields(points)), s.count(t, `SELECT count(*) FROM visibility_readings WHERE domain = 'acme.invalid'`); n < 1 || n != readings {
			t.Errorf("the score line has %d points for %d readings", n, readings)
		}
		// The figures per engine: the plain model reported no sources, the
		// search model did.
		var engines [][]string
		run("engines", chromedp.Evaluate(rowsJS("#engines tbody tr"), &engines), shot("11c-domain-figures", "#figures"))
		if len(engines) != 2 || engines[0][0] != "Fake" || engines[1][0] != searchModel {
			t.Fatalf("the per-engine rows read %q, want Fake and %s", engines, searchModel)
		}
		if share := engines[0][6]; !strings.HasPrefix(share, "no sources reported") || strings.Contains(share, "%") {
			t.Errorf("the plain model's source share reads %q, want no sources reported", share)
		}
		if share := engines[1][6]; !regexp.MustCompile(`^\d+(\.\d)?% \d`).MatchString(share) {
			t.Errorf("the search model's source share reads %q, want a share and its interval", share)
		}
		// The cited domains, the domain's own row marked, and its cited page.
		var cited [][]string
		var own string
		run("cited", chromedp.Evaluate(rowsJS("#cited-domains tbody tr"), &cited),
			chromedp.Text(`#cited-domains tr.own th`, &own, chromedp.ByQuery))
		names := map[string]bool{}
		for _, r := range cited {
			names[strings.TrimSuffix(r[0], " this domain")] = true
		}
		if !names["acme.invalid"] || !names["globex.example"] || !names["reviews.example"] || len(cited) != 3 {
			t.Errorf("the cited domains read %q", cited)
		}
		if own != "acme.invalid this domain" {
			t.Errorf("the row marked as the domain's own reads %q", own)
		}
		if page := text(`#cited-pages tbody`); !strings.Contains(page, "https://acme.invalid/skates") {
			t.Errorf("the cited pages read %q", page)
		}
		// The answers behind the scan, searched by their text, then by
		// engine: the search model's words are text, not markup.
		var answers []struct{ Engine, Text string }
		var marks, bold int
		run("search answers", chromedp.SendKeys(`#ans-q`, "reviewers PREFER", chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#ans-q`, chromedp.ByQuery)), chromedp.WaitVisible(`#answer-list mark`, chromedp.ByQuery),
			chromedp.Poll(`document.readyState === "complete"`, nil),
			chromedp.Evaluate(answersJS, &answers),
			chromedp.Evaluate(`document.querySelectorAll("#answer-list mark").length`, &marks),
			chromedp.Evaluate(`document.querySelectorAll("#answer-list .answer-text b").length`, &bold), shot("11d-domain-answers", "#answers-section"))
		if len(answers) == 0 || marks != len(answers) || bold != 0 {
			t.Fatalf("searching the answers lists %d (%d marked, %d bold): %+v", len(answers), marks, bold, answers)
		}
		for _, a := range answers {
			if a.Engine != searchModel || a.Text != "Reviewers prefer Globex <b>for speed</b>." {
				t.Errorf("the search lists %+v, want the search model's reviews answer as text", a)
			}
		}
		var all []struct{ Engine, Text string }
		run("filter answers", chromedp.Clear(`#ans-q`, chromedp.ByQuery),
			chromedp.SetValue(`#ans-engine`, "Fake", chromedp.ByQuery),
			// The next page keeps the engine chosen, as an attribute the
			// page it replaces does not have.
			browsertest.Leaving(chromedp.Submit(`#ans-q`, chromedp.ByQuery)), chromedp.WaitReady(`#ans-engine option[selected]`, chromedp.ByQuery),
			chromedp.Poll(`document.readyState === "complete"`, nil),
			chromedp.Evaluate(answersJS, &all))
		if len(all) == 0 {
			t.Fatal("the Fake engine's answers are not listed")
		}
		for _, a := range all {
			if a.Engine != "Fake" {
				t.Errorf("filtered by Fake, the answers list %+v", a)
			}
		}
	})

	t.Run("the Overview leads with the domains' scores and citation share", func(t *testing.T) {
		var first string
		var rows [][]string
		run("overview", chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(`#domain-visibility`, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelector("main table").id`, &first),
			chromedp.Evaluate(rowsJS("#domain-visibility tbody tr"), &rows), shot("02b-overview-domains"))
		if first != "domain-visibility" {
			t.Errorf("the Overview's first table is #%s, want the domains' visibility", first)
		}
		if len(rows) != 1 || rows[0][0] != "acme.invalid" {
			t.Fatalf("the Overview lists %q, want acme.invalid", rows)
		}
		// Domain, client (an agency's), score, trend, citation share, last scan.
		if score := rows[0][2]; !regexp.MustCompile(`^\d+ ?/100`).MatchString(score) {
			t.Errorf("acme.invalid's score reads %q", score)
		}
		if share := rows[0][4]; !regexp.MustCompile(`^\d+(\.\d)?% of the cited sources`).MatchString(share) {
			t.Errorf("acme.invalid's citation share reads %q", share)
		}
		var trend int
		run("trend", chromedp.Evaluate(`document.querySelectorAll("#domain-visibility svg.spark polyline").length`, &trend))
		if trend != 1 {
			t.Errorf("the Overview draws %d trends, want acme.invalid's", trend)
		}
	})

	t.Run("content requests with their state", func(t *testing.T) {
		var ck, cs string
		run("key", chromedp.Navigate(s.URL+"/keys"), chromedp.WaitVisible(`#key-name`, chromedp.ByQuery),
			chromedp.SendKeys(`#key-name`, "content", chromedp.ByQuery), browsertest.Leaving(chromedp.Submit(`#key-name`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#new-secret`, chromedp.ByQuery),
			chromedp.Value(`#new-key`, &ck, chromedp.ByQuery), chromedp.Value(`#new-secret`, &cs, chromedp.ByQuery))
		r := s.do(t, req{method: "POST", path: "/api/v1/ai/content-requests", header: keyed(key{Key: ck, Secret: cs}),
			body: `{"domain":"acme.invalid","budget":1,"url":"https://acme.invalid/post","target_queries":["best rocket skates"]}`})
		var env struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		r.decode(t, &env)
		cr := env.Data
		if r.Status != 201 || cr.ID == "" {
			t.Fatalf("create a content request: %d %s", r.Status, r.Body)
		}
		var row, state string
		run("content", chromedp.Navigate(s.URL+"/content"), chromedp.WaitVisible(`#content`, chromedp.ByQuery),
			chromedp.Text(`#content tbody tr`, &row, chromedp.ByQuery),
			chromedp.Text(`#content tbody tr .state`, &state, chromedp.ByQuery), shot("15-content"))
		if !strings.Contains(row, cr.ID) || !strings.Contains(row, "acme.invalid") || !strings.Contains(row, "$1") || state == "" {
			t.Fatalf("the content page's row reads %q (state %q)", row, state)
		}
		// Filtered by its state once it has ended (a worker takes it up
		// meanwhile: its state as first read may be gone by the filter),
		// it is listed; by another, not.
		ck2 := key{Key: ck, Secret: cs}
		waitFor(t, "the content request ended", func() bool {
			var got struct{ Data struct{ Status string } }
			s.do(t, req{method: "GET", path: "/api/v1/ai/content-requests/" + cr.ID, header: keyed(ck2)}).decode(t, &got)
			state = got.Data.Status
			return state != "queued" && state != "processing"
		})
		other := "cancelled"
		if state == other {
			other = "queued"
		}
		var listed, notListed string
		run("filter", chromedp.Navigate(s.URL+"/content?status="+state), chromedp.WaitVisible(`#content`, chromedp.ByQuery),
			chromedp.Text(`#content tbody`, &listed, chromedp.ByQuery),
			chromedp.Navigate(s.URL+"/content?status="+other), chromedp.WaitVisible(`#content`, chromedp.ByQuery),
			chromedp.Text(`#content tbody`, &notListed, chromedp.ByQuery))
		if !strings.Contains(listed, cr.ID) || strings.Contains(notListed, cr.ID) {
			t.Errorf("filtered by %s: %q; by %s: %q", state, listed, other, notListed)
		}
	})

	var clientURL string // the agency client's page
	t.Run("team and agency clients", func(t *testing.T) {
		var link string
		run("invite", chromedp.Navigate(s.URL+"/members"), chromedp.WaitVisible(`#invite-email`, chromedp.ByQuery),
			chromedp.SendKeys(`#invite-email`, "dev@acme.example", chromedp.ByQuery),
			chromedp.SetValue(`#invite-role`, "developer", chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#invite-email`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#invite-link`, chromedp.ByQuery),
			chromedp.Value(`#invite-link`, &link, chromedp.ByQuery), shot("13-members"))
		if !strings.HasPrefix(link, s.URL+"/join?token=") {
			t.Fatalf("the invitation link reads %q", link)
		}
		run("client", chromedp.Navigate(s.URL+"/clients"), chromedp.WaitVisible(`#client-name`, chromedp.ByQuery),
			chromedp.SendKeys(`#client-name`, "Globex", chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#client-name`, chromedp.ByQuery)),
			chromedp.WaitVisible(`.notice`, chromedp.ByQuery),
			chromedp.Location(&clientURL))
		clientID := strings.TrimSuffix(strings.TrimPrefix(clientURL, s.URL+"/clients/"), "?done=client")
		// A key for the client, made on the keys page, shows on the client's page.
		run("client key", chromedp.Navigate(s.URL+"/keys"), chromedp.WaitVisible(`#key-client`, chromedp.ByQuery),
			chromedp.SendKeys(`#key-name`, "globex site", chromedp.ByQuery),
			chromedp.SetValue(`#key-client`, clientID, chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#key-name`, chromedp.ByQuery)), chromedp.WaitVisible(`#new-key`, chromedp.ByQuery),
			chromedp.Navigate(clientURL), chromedp.WaitVisible(`svg.chart`, chromedp.ByQuery), shot("14-client"))
		if body := text("main"); !strings.Contains(body, "globex site") || strings.Contains(body, "browser key") {
			t.Fatalf("the client's page lists keys %q: want its own only", body)
		}
	})

	t.Run("a viewer cannot create keys", func(t *testing.T) {
		var link string
		run("invite viewer", chromedp.Navigate(s.URL+"/members"), chromedp.WaitVisible(`#invite-email`, chromedp.ByQuery),
			chromedp.SendKeys(`#invite-email`, "viewer@acme.example", chromedp.ByQuery),
			chromedp.SetValue(`#invite-role`, "viewer", chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#invite-email`, chromedp.ByQuery)),
			chromedp.WaitVisible(`#invite-link`, chromedp.ByQuery),
			chromedp.Value(`#invite-link`, &link, chromedp.ByQuery))
		// The viewer joins in a browser of their own (own cookies).
		vopts := append(opts[:len(opts):len(opts)], chromedp.UserDataDir(viewerProfile))
		valloc, cancelVA := chromedp.NewExecAllocator(ctx, vopts...)
		defer cancelVA()
		vctx, cancelV := chromedp.NewContext(valloc)
		defer cancelV()
		vrun := func(what string, actions ...chromedp.Action) {
			t.Helper()
			if err := chromedp.Run(vctx, actions...); err != nil {
				t.Fatalf("viewer: %s: %v", what, err)
			}
		}
		var who string
		var forms int
		vrun("join", chromedp.Navigate(link), chromedp.WaitVisible(`#password`, chromedp.ByQuery),
			chromedp.SendKeys(`#email`, "viewer@acme.example", chromedp.ByQuery),
			chromedp.SendKeys(`#password`, "a long viewer password", chromedp.ByQuery),
			chromedp.SendKeys(`#password_again`, "a long viewer password", chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#password_again`, chromedp.ByQuery)),
			chromedp.WaitVisible(`.who`, chromedp.ByQuery), chromedp.Text(`.who`, &who, chromedp.ByQuery),
			chromedp.Navigate(s.URL+"/keys"), chromedp.WaitVisible(`#keys`, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelectorAll('form[action="/keys"], button.danger').length`, &forms))
		if !strings.Contains(who, "viewer@acme.example") || !strings.Contains(who, "viewer") {
			t.Fatalf("the viewer is signed in as %q", who)
		}
		if forms != 0 {
			t.Errorf("the viewer's keys page offers %d key forms or buttons", forms)
		}
		// The form the page hides, sent anyway with the viewer's own token:
		// the handler refuses it.
		var status int
		vrun("forge", chromedp.Evaluate(`(async () => {
			const csrf = document.querySelector('input[name="csrf"]').value;
			const r = await fetch("/keys", {method: "POST", body: new URLSearchParams({csrf, name: "viewer key"})});
			return (await r.text()).includes("does not allow") ? r.status : -r.status; })()`, &status, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
		if status != http.StatusForbidden {
			t.Errorf("the viewer's POST /keys answered %d, want 403 for the role (negative: another reason)", status)
		}
		var keys string
		run("owner keys", chromedp.Navigate(s.URL+"/keys"), chromedp.WaitVisible(`#keys`, chromedp.ByQuery),
			chromedp.Text(`#keys`, &keys, chromedp.ByQuery))
		if strings.Contains(keys, "viewer key") {
			t.Fatal("the viewer made a key")
		}
	})

	t.Run("another account sees none of this one's data", func(t *testing.T) {
		other := newAccount(t, dir, "starter", false)
		var inv struct {
			Link string `json:"link"`
		}
		cli(t, dir, &inv, "user", "invite", "--account", other.ID, "--email", "eve@other.example", "--url", s.URL)
		oalloc, cancelOA := chromedp.NewExecAllocator(ctx, append(opts[:len(opts):len(opts)], chromedp.UserDataDir(otherProfile))...)
		defer cancelOA()
		octx, cancelO := chromedp.NewContext(oalloc)
		defer cancelO()
		orun := func(what string, actions ...chromedp.Action) {
			t.Helper()
			if err := chromedp.Run(octx, actions...); err != nil {
				t.Fatalf("other account: %s: %v", what, err)
			}
		}
		orun("join", chromedp.Navigate(inv.Link), chromedp.WaitVisible(`#password`, chromedp.ByQuery),
			chromedp.SendKeys(`#email`, "eve@other.example", chromedp.ByQuery),
			chromedp.SendKeys(`#password`, "a long other password", chromedp.ByQuery),
			chromedp.SendKeys(`#password_again`, "a long other password", chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#password_again`, chromedp.ByQuery)), chromedp.WaitVisible(`.who`, chromedp.ByQuery))
		leaks := []string{"Acme Browsers", "owner@acme.example", "browser key", "acme.example", "acme.invalid", "Team chat", "Slack alerts", "Globex"}
		for _, path := range []string{"/", "/keys", "/usage", "/webhooks", "/connectors", "/domains", "/content", "/members"} {
			var body string
			orun("read "+path, chromedp.Navigate(s.URL+path), chromedp.WaitVisible(`main`, chromedp.ByQuery),
				chromedp.Text(`body`, &body, chromedp.ByQuery))
			for _, l := range leaks {
				if strings.Contains(body, l) {
					t.Errorf("the other account's %s shows %q", path, l)
				}
			}
		}
		// This account's ids in the other's URLs: 404, nothing shown.
		ids := []string{"/domains/acme.invalid", "/domains/acme.example"}
		if clientURL != "" {
			ids = append(ids, strings.TrimPrefix(strings.SplitN(clientURL, "?", 2)[0], s.URL))
		}
		if slackConnection != "" {
			ids = append(ids, strings.TrimPrefix(strings.SplitN(slackConnection, "?", 2)[0], s.URL))
		}
		var webhookPath string
		run("a webhook", chromedp.Navigate(s.URL+"/webhooks"), chromedp.WaitVisible(`a[href^="/webhooks/wh_"]`, chromedp.ByQuery),
			chromedp.AttributeValue(`a[href^="/webhooks/wh_"]`, "href", &webhookPath, nil, chromedp.ByQuery))
		ids = append(ids, webhookPath)
		for _, path := range ids {
			var h1, body string
			orun("open "+path, chromedp.Navigate(s.URL+path), chromedp.WaitVisible(`main`, chromedp.ByQuery),
				chromedp.Text(`h1`, &h1, chromedp.ByQuery), chromedp.Text(`main`, &body, chromedp.ByQuery))
			if h1 != "Not Found" {
				t.Errorf("the other account opens %s: %q, want Not Found", path, h1)
			}
			for _, l := range []string{"Globex", "#alerts", "Slack alerts", hooks.URL} {
				if strings.Contains(body, l) {
					t.Errorf("the other account's %s shows %q", path, l)
				}
			}
		}
	})

	t.Run("phone-sized screen", func(t *testing.T) {
		paths := []string{"/keys", "/usage", "/webhooks", "/", "/connectors", "/connectors/slack", "/domains", "/domains/acme.example",
			"/domains/acme.invalid", "/content", "/members", "/clients", "/account"}
		if slackConnection != "" {
			paths = append(paths, strings.TrimPrefix(strings.SplitN(slackConnection, "?", 2)[0], s.URL))
		}
		for _, width := range []int64{390, 320} {
			for i, path := range paths {
				var scrollW, clientW int
				var wide []string
				actions := []chromedp.Action{emulation.SetDeviceMetricsOverride(width, 844, 2, true),
					chromedp.Navigate(s.URL + path), chromedp.WaitVisible(`main`, chromedp.ByQuery),
					chromedp.Evaluate(`document.documentElement.scrollWidth`, &scrollW),
					chromedp.Evaluate(`document.documentElement.clientWidth`, &clientW),
					chromedp.Evaluate(`Array.from(document.querySelectorAll("body *")).filter(e => !e.closest(".scroll") &&
					e.getBoundingClientRect().right > document.documentElement.clientWidth + 1).map(e => e.tagName + "." + e.className + "#" + e.id)`, &wide)}
				if width == 390 && i < 3 {
					actions = append(actions, shot("12-phone"+strings.ReplaceAll(path, "/", "-")))
				}
				run("phone", append(actions, emulation.ClearDeviceMetricsOverride())...)
				if scrollW > clientW+1 {
					t.Errorf("on a %d px phone %s is %d px wide; too wide: %v", width, path, scrollW, wide)
				}
			}
		}
	})

	t.Run("keyboard", func(t *testing.T) {
		var skip, outline string
		run("tab", chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(`main`, chromedp.ByQuery),
			chromedp.KeyEvent("\t"),
			chromedp.Evaluate(`document.activeElement.textContent`, &skip),
			chromedp.Evaluate(`getComputedStyle(document.activeElement).outlineStyle`, &outline))
		if skip != "Skip to content" || outline == "none" {
			t.Errorf("the first Tab focuses %q with outline %q: want the skip link, visibly", skip, outline)
		}
		// In the page's content, the focus ring stands out from what is
		// behind it by at least 3:1 (WCAG 1.4.11).
		var ring struct {
			Tag, Outline, Behind string
		}
		run("tab into main", chromedp.Navigate(s.URL+"/keys"), chromedp.WaitVisible(`#key-name`, chromedp.ByQuery),
			chromedp.ActionFunc(func(ctx context.Context) error {
				for range 40 {
					if err := chromedp.KeyEvent("\t").Do(ctx); err != nil {
						return err
					}
					var in bool
					if err := chromedp.Evaluate(`!!document.activeElement.closest("main form")`, &in).Do(ctx); err != nil {
						return err
					}
					if in {
						return nil
					}
				}
				return fmt.Errorf("40 Tabs never reach a form in main")
			}),
			chromedp.Evaluate(`(() => { const a = document.activeElement; let p = a.parentElement, bg = "";
				while (p && ((bg = getComputedStyle(p).backgroundColor) === "rgba(0, 0, 0, 0)" || bg === "transparent")) p = p.parentElement;
				return {Tag: a.tagName + "#" + a.id, Outline: getComputedStyle(a).outlineColor, Behind: bg}; })()`, &ring))
		if c := contrast(t, ring.Outline, ring.Behind); c < 3 {
			t.Errorf("the focus ring of %s is %s on %s: contrast %.2f, want at least 3", ring.Tag, ring.Outline, ring.Behind, c)
		}
	})

	t.Run("axe finds no accessibility violations", func(t *testing.T) {
		// axe-core comes from the npm registry (pinned), as CI's Node.js
		// and npm install it, not vendored.
		axe, err := os.ReadFile(filepath.Join(npmtest.Install(t, "axe-core", axeVersion), "node_modules", "axe-core", "axe.min.js"))
		if err != nil {
			t.Fatal(err)
		}
		paths := []string{"/", "/keys", "/usage", "/webhooks", "/connectors", "/connectors/slack", "/domains", "/domains/acme.invalid",
			"/content", "/members", "/clients", "/account"}
		if slackConnection != "" {
			paths = append(paths, strings.TrimPrefix(strings.SplitN(slackConnection, "?", 2)[0], s.URL))
		}
		for _, path := range paths {
			var found []string
			run("axe "+path, chromedp.Navigate(s.URL+path), chromedp.WaitVisible(`main`, chromedp.ByQuery),
				chromedp.Evaluate(string(axe), nil),
				chromedp.Evaluate(`axe.run(document, {runOnly: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}).then(r =>
					r.violations.map(v => v.impact + " " + v.id + ": " + v.nodes.map(n => n.target.join(" ")).slice(0, 3).join(", ")))`, &found,
					func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
			if len(found) > 0 {
				t.Errorf("axe on %s: %s", path, strings.Join(found, "; "))
			}
		}
	})

	t.Run("a form on another site is refused", func(t *testing.T) {
		// Another site's page posts a form to the dashboard in the signed-in
		// browser: no CSRF token, another origin.
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/keys"><input name="name" value="forged key"></form>`+
				`<script>document.getElementById("f").submit()</script>`, s.URL)
		}))
		defer evil.Close()
		var body string
		run("evil", chromedp.Navigate(evil.URL), chromedp.WaitVisible(`.problem`, chromedp.ByQuery),
			chromedp.Text(`.problem`, &body, chromedp.ByQuery))
		if !strings.Contains(body, "refused") && !strings.Contains(body, "expired") {
			t.Errorf("the forged form's answer reads %q", body)
		}
		var keys string
		run("keys", chromedp.Navigate(s.URL+"/keys"), chromedp.WaitVisible(`#keys`, chromedp.ByQuery),
			chromedp.Text(`#keys`, &keys, chromedp.ByQuery))
		if strings.Contains(keys, "forged key") {
			t.Fatal("another site's form made a key")
		}
		if !strings.Contains(keys, "browser key") {
			t.Fatalf("the keys page reads %q: the session did not survive", keys)
		}
	})

	// sessionCookie reads the browser's session cookie.
	sessionCookie := func() string {
		t.Helper()
		var v string
		run("cookies", chromedp.ActionFunc(func(ctx context.Context) error {
			cs, err := network.GetCookies().WithURLs([]string{s.URL}).Do(ctx)
			for _, c := range cs {
				if c.Name == dashboard.SessionCookie {
					v = c.Value
				}
			}
			return err
		}))
		return v
	}
	// opens tells whether a session token opens /keys, outside the browser.
	opens := func(token string) bool {
		t.Helper()
		c := &http.Client{Transport: s.HTTP.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		r, _ := http.NewRequest(http.MethodGet, s.URL+"/keys", nil)
		r.AddCookie(&http.Cookie{Name: dashboard.SessionCookie, Value: token})
		res, err := c.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}

	t.Run("sign out", func(t *testing.T) {
		before := sessionCookie()
		if before == "" || !opens(before) {
			t.Fatalf("the browser's session cookie %q does not open /keys", before)
		}
		run("signout", chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(`.who button`, chromedp.ByQuery),
			browsertest.Leaving(chromedp.Click(`.who button`, chromedp.ByQuery)), chromedp.WaitVisible(`#password`, chromedp.ByQuery),
			chromedp.Navigate(s.URL+"/keys"), chromedp.WaitVisible(`#password`, chromedp.ByQuery))
		if h := text("h1"); h != "Sign in" {
			t.Fatalf("after signing out /keys shows %q", h)
		}
		// A copy of the cookie kept from before no longer works.
		if opens(before) {
			t.Fatal("the signed-out session's token still opens /keys")
		}
	})

	t.Run("a session planted before sign-in is not adopted", func(t *testing.T) {
		planted := strings.Repeat("P", 43)
		u, _ := url.Parse(s.URL)
		run("plant", chromedp.ActionFunc(func(ctx context.Context) error {
			return network.SetCookie(dashboard.SessionCookie, planted).WithURL(s.URL + "/").WithPath("/").WithSecure(true).
				WithHTTPOnly(true).WithSameSite(network.CookieSameSiteLax).Do(ctx)
		}), chromedp.Navigate(s.URL+"/signin"), chromedp.WaitVisible(`#password`, chromedp.ByQuery))
		if got := sessionCookie(); got != planted {
			t.Fatalf("the planted cookie reads %q on %s", got, u.Host)
		}
		run("sign in", chromedp.SendKeys(`#email`, "owner@acme.example", chromedp.ByQuery),
			chromedp.SendKeys(`#password`, "a long owner password", chromedp.ByQuery),
			browsertest.Leaving(chromedp.Submit(`#password`, chromedp.ByQuery)), chromedp.WaitVisible(`.who`, chromedp.ByQuery))
		got := sessionCookie()
		if got == planted || got == "" || !opens(got) {
			t.Fatalf("after sign-in the session cookie is %q (planted %q)", got, planted)
		}
		if opens(planted) {
			t.Fatal("the planted token opens /keys")
		}
	})
	raw, _ := json.Marshal(map[string]any{"screenshots": shots, "seconds": time.Since(began).Seconds()})
	t.Logf("%s", raw)
}

// TestOperatorInvitesAUser gives an account made on the command line its
// first dashboard user, who joins with the printed link (plain HTTPS, no
// browser needed).
func TestOperatorInvitesAUser(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "starter", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir)
	if strings.Contains(s.Stdout.String(), "/join?token=") == false {
		t.Fatalf("no user exists, yet the banner prints no bootstrap link:\n%s", s.Stdout)
	}
	var inv struct {
		Link string `json:"link"`
		Role string `json:"role"`
	}
	cli(t, dir, &inv, "user", "invite", "--account", a.ID, "--email", "Ops@Example.com", "--role", "admin", "--url", s.URL)
	if inv.Role != "admin" || !strings.HasPrefix(inv.Link, s.URL+"/join?token=") {
		t.Fatalf("invite printed %+v", inv)
	}
	if msg := cliFails(t, dir, "user", "invite", "--account", "acct_missing", "--email", "x@example.com"); !strings.Contains(msg, "no account") {
		t.Fatalf("inviting to a missing account: %s", msg)
	}
	c := join(t, s, inv.Link, "ops@example.com")
	keys := dashGet(t, c, s.URL+"/keys")
	if !strings.Contains(keys, "ops@example.com") || !strings.Contains(keys, "admin") || !strings.Contains(keys, k.ID) {
		t.Fatalf("after joining, the keys page does not show the user and the account's key:\n%s", keys)
	}
	var users []map[string]any
	cli(t, dir, &users, "user", "list", "--account", a.ID)
	if len(users) != 1 || users[0]["email"] != "ops@example.com" || users[0]["role"] != "admin" {
		t.Fatalf("user list: %v", users)
	}
	// The API is unchanged beside the dashboard: unknown API paths still
	// answer the JSON error, and /openapi.json is the document.
	if r := s.do(t, req{method: "GET", path: "/v1/nothing-here", header: bearer(k)}); r.Status != 404 || r.errorCode(t) != "NOT_FOUND" {
		t.Errorf("GET /v1/nothing-here: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "GET", path: "/openapi.json"}); r.Status != 200 || !strings.Contains(string(r.Body), `"openapi"`) {
		t.Errorf("GET /openapi.json: %d", r.Status)
	}
}

// answersJS reads the answers the domain page lists: each one's engine
// and text.
const answersJS = `Array.from(document.querySelectorAll("#answer-list > li")).map(li =>
	({Engine: li.querySelector(".hint strong").textContent, Text: (li.querySelector(".answer-text") || {}).textContent}))`

// rowsJS reads the rows a selector finds, each as its cells' text.
func rowsJS(selector string) string {
	return fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(r =>
		Array.from(r.cells).map(c => c.textContent.replace(/\s+/g, " ").trim()))`, selector)
}

// contrast is the WCAG contrast ratio of two CSS rgb() colours.
func contrast(t *testing.T, a, b string) float64 {
	t.Helper()
	lum := func(css string) float64 {
		var r, g, bl float64
		if _, err := fmt.Sscanf(strings.Replace(css, "rgba", "rgb", 1), "rgb(%f, %f, %f", &r, &g, &bl); err != nil {
			t.Fatalf("colour %q: %v", css, err)
		}
		ch := func(v float64) float64 {
			v /= 255
			if v <= 0.03928 {
				return v / 12.92
			}
			return math.Pow((v+0.055)/1.055, 2.4)
		}
		return 0.2126*ch(r) + 0.7152*ch(g) + 0.0722*ch(bl)
	}
	la, lb := lum(a), lum(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}
