package dashboard_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/internal/browsertest"
	"github.com/aivis/aivis/internal/npmtest"
)

// chromium finds the browser to drive (AIVIS_CHROMIUM, else Chromium on
// the PATH); without one the test fails and says how to get it.
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

// inBrowser is a headless Chromium of its own (cookies included), signed
// in as email; run runs actions in it and fails the test with the page
// shown, eval answers a script's value.
type inBrowser struct {
	t   *testing.T
	ctx context.Context
}

func (e *env) inBrowser(email string) *inBrowser {
	e.t.Helper()
	// The profile is removed once the browser has closed: Chromium's
	// helpers may still write in it as the test's own temporary
	// directories go, which then fails to remove a directory not empty.
	profile, err := os.MkdirTemp("", "aivis-browser-")
	if err != nil {
		e.t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(e.t)), chromedp.UserDataDir(profile),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("ignore-certificate-errors", true), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	e.t.Cleanup(func() {
		chromedp.Cancel(ctx) // closes the browser and waits for it
		cancel()
		cancelAlloc()
		if err := os.RemoveAll(profile); err != nil {
			e.t.Logf("the browser's profile %s stays: %v", profile, err)
		}
	})
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	e.t.Cleanup(cancelTimeout)
	// Confirmations (revoke) are accepted.
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*cdpage.EventJavascriptDialogOpening); ok {
			go chromedp.Run(ctx, cdpage.HandleJavaScriptDialog(true))
		}
	})
	b := &inBrowser{t: e.t, ctx: ctx}
	b.run("sign in", chromedp.Navigate(e.srv.URL+"/signin"), chromedp.WaitVisible(`#email`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery), chromedp.SendKeys(`#password`, password, chromedp.ByQuery),
		chromedp.Submit(`#password`, chromedp.ByQuery), chromedp.WaitVisible(`nav[aria-label="Main"]`, chromedp.ByQuery))
	return b
}

func (b *inBrowser) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	if err := chromedp.Run(b.ctx, actions...); err != nil {
		var html string
		_ = chromedp.Run(b.ctx, chromedp.OuterHTML("main", &html, chromedp.ByQuery))
		b.t.Fatalf("%s: %v\npage:\n%s", what, err, html)
	}
}

func (b *inBrowser) eval(what, script string, out any) {
	b.t.Helper()
	b.run(what, chromedp.Evaluate(script, out, awaitPromise))
}

// awaitPromise makes Evaluate answer a promise's value.
func awaitPromise(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }

// shot saves a screenshot of the page as name.png where AIVIS_SCREENSHOTS
// says (docs/dashboard for the docs), else nowhere.
func (b *inBrowser) shot(name string) {
	b.t.Helper()
	dir := os.Getenv("AIVIS_SCREENSHOTS")
	if dir == "" {
		return
	}
	var buf []byte
	b.run("screenshot "+name, chromedp.FullScreenshot(&buf, 100))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// axe runs axe-core's WCAG 2.1 A/AA and best-practice rules on the page
// shown, and fails the test on any violation.
func (b *inBrowser) axe(what string) {
	b.t.Helper()
	axe, err := os.ReadFile(filepath.Join(npmtest.Install(b.t, "axe-core", "4.10.2"), "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		b.t.Fatal(err)
	}
	var found []string
	b.run("axe on "+what, chromedp.Evaluate(string(axe), nil),
		chromedp.Evaluate(`axe.run(document, {runOnly: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}).then(r =>
			r.violations.map(v => v.id + ": " + v.nodes.map(n => n.target.join(" ")).join(", ")))`, &found, awaitPromise))
	if len(found) > 0 {
		b.t.Errorf("axe on %s: %s", what, strings.Join(found, "; "))
	}
}

// TestTrafficInBrowser drives headless Chromium through the Traffic tab:
// a domain without logs shows how to send them and no chart; one with
// logs imported through the traffic service draws both charts with the
// bars sent, their numbers and the tables as sent, and switches windows;
// an ingest token made in the form is shown once and works, then revoked
// from its row stops working; a form sent without the CSRF token, and a
// viewer's, are refused; axe-core finds no accessibility violation.
func TestTrafficInBrowser(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	md := e.monitor(c, u.AccountID, "acme.example", "")
	e.monitor(c, u.AccountID, "quiet.example", "")
	today := time.Now().UTC().Truncate(24 * time.Hour).Add(10 * time.Hour)
	e.importLog(md, sampleTraffic(today))
	e.member(u.AccountID, "viewer@example.com", store.RoleViewer)
	b := e.inBrowser("owner@example.com")

	// No logs yet: how to send them, and no chart.
	var n int
	b.run("the quiet domain's traffic tab", chromedp.Navigate(e.srv.URL+"/domains/quiet.example"),
		browsertest.Leaving(chromedp.Click(`nav.tabs a[href="/domains/quiet.example/traffic"]`, chromedp.ByQuery)),
		chromedp.WaitVisible(`#traffic-empty`, chromedp.ByQuery))
	b.eval("count charts", `document.querySelectorAll("svg").length`, &n)
	if n != 0 {
		t.Errorf("the empty state draws %d charts", n)
	}
	var empty string
	b.run("read the empty state", chromedp.Text(`#traffic-empty`, &empty, chromedp.ByQuery))
	if !strings.Contains(empty, "aivis traffic token create") || !strings.Contains(empty, "/traffic/logs") {
		t.Errorf("the empty state does not say how to send logs: %q", empty)
	}

	// With logs: the charts' bars and descriptions, and the tables.
	b.run("the traffic tab", chromedp.Navigate(e.srv.URL+"/domains/acme.example/traffic?days=7"), chromedp.WaitVisible(`#agents`, chromedp.ByQuery))
	b.shot("16-domain-traffic")
	var charts []struct {
		Title string
		Desc  string
		Bars  []string
	}
	b.eval("read the charts", `[...document.querySelectorAll("svg.chart")].map(s => ({
		Title: s.querySelector("title").textContent, Desc: s.querySelector("desc").textContent,
		Bars: [...s.querySelectorAll("rect.bar title")].map(t => t.textContent)}))`, &charts)
	day := func(d time.Time) string { return d.Format("Jan 2") }
	ago := today.AddDate(0, 0, -2)
	want := []struct {
		title string
		bars  []string
		desc  []string
	}{
		{"AI agent requests to acme.example per day, by purpose",
			[]string{"train " + day(ago) + ": 2", "index " + day(ago) + ": 4", "other " + day(ago) + ": 1",
				"train " + day(today) + ": 6", "index " + day(today) + ": 1", "fetch " + day(today) + ": 2"},
			[]string{"7 points", "train: 8 in all", "index: 5 in all", "fetch: 2 in all", "other: 1 in all"}},
		{"Visits to acme.example referred by AI assistants per day",
			[]string{"chatgpt " + day(ago) + ": 1", "perplexity " + day(ago) + ": 2", "chatgpt " + day(today) + ": 3"},
			[]string{"chatgpt: 4 in all", "perplexity: 2 in all"}},
	}
	if len(charts) != len(want) {
		t.Fatalf("%d charts, want %d: %+v", len(charts), len(want), charts)
	}
	for i, w := range want {
		got := charts[i]
		if got.Title != w.title {
			t.Errorf("chart %d: %q, want %q", i, got.Title, w.title)
		}
		if strings.Join(got.Bars, "|") != strings.Join(w.bars, "|") {
			t.Errorf("%s: bars\n %q\nwant %q", w.title, got.Bars, w.bars)
		}
		for _, d := range w.desc {
			if !strings.Contains(got.Desc, d) {
				t.Errorf("%s: its description %q does not say %q", w.title, got.Desc, d)
			}
		}
	}
	var agents, problems [][]string
	b.eval("read the agents", `[...document.querySelectorAll("#agents tbody tr")].map(r => [...r.cells].map(c => c.textContent.trim()))`, &agents)
	if len(agents) != 4 || strings.Join(agents[0], " ") != "GPTBot OpenAI train 11 8 0 3 2 0" {
		t.Errorf("agents %q", agents)
	}
	b.eval("read the problems", `[...document.querySelectorAll("#problems tbody tr.bad")].map(r => [...r.cells].map(c => c.textContent.trim()))`, &problems)
	if len(problems) != 2 || strings.Join(problems[0], " ") != "/old GPTBot 4xx 2" {
		t.Errorf("problems (highlighted) %q", problems)
	}
	var current string
	b.run("switch to 90 days", browsertest.Leaving(chromedp.Click(`nav.window a[href*="days=90"]`, chromedp.ByQuery)),
		chromedp.WaitVisible(`nav.window a[aria-current="page"][href*="days=90"]`, chromedp.ByQuery),
		chromedp.Text(`nav.window a[aria-current="page"]`, &current, chromedp.ByQuery))
	b.eval("count days", `document.querySelectorAll("svg.chart")[0].querySelectorAll("text.axis").length`, &n)
	if current != "Last 90 days" || n < 10 {
		t.Errorf("after the switch: %q, %d axis labels", current, n)
	}

	// A token made in the form: shown once, with its setup.
	var secret, setup string
	b.run("make a token", chromedp.SendKeys(`#token-name`, "edge", chromedp.ByQuery),
		chromedp.SetValue(`#token-source`, "fastly", chromedp.ByQuery), browsertest.Leaving(chromedp.Submit(`#token-name`, chromedp.ByQuery)),
		chromedp.WaitVisible(`#new-token`, chromedp.ByQuery), chromedp.Value(`#new-token`, &secret, chromedp.ByQuery),
		chromedp.Value(`#new-setup`, &setup, chromedp.ByQuery))
	b.shot("17-ingest-token")
	b.axe("a token shown")
	b.run("read the window", chromedp.Text(`nav.window a[aria-current="page"]`, &current, chromedp.ByQuery))
	if current != "Last 90 days" {
		t.Errorf("after making a token the tab shows %q, want the window it was made from", current)
	}
	if !strings.HasPrefix(secret, "aivt_") || !strings.Contains(setup, "/ingest/v1/fastly") || !strings.Contains(setup, "Bearer "+secret) {
		t.Fatalf("the token %q and its setup %q", secret, setup)
	}
	tok, err := e.traffic.Authenticate(context.Background(), store.TrafficFastly, secret)
	if err != nil {
		t.Fatalf("the token shown does not work: %v", err)
	}
	// A form sent without the session's CSRF token is refused.
	var status int
	b.eval("post without csrf", `fetch("/domains/acme.example/traffic/tokens", {method: "POST",
		headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "name=forged&source=cloudflare"}).then(r => r.status)`, &status)
	if status != 403 {
		t.Errorf("a form without the CSRF token: %d, want 403", status)
	}
	// Revoked from its row.
	var state string
	b.run("revoke", chromedp.Navigate(e.srv.URL+"/domains/acme.example/traffic"),
		browsertest.Leaving(chromedp.Click(`tr[data-token="`+tok.ID+`"] button.danger`, chromedp.ByQuery)),
		chromedp.WaitVisible(`p.notice`, chromedp.ByQuery),
		chromedp.Text(`tr[data-token="`+tok.ID+`"] .state`, &state, chromedp.ByQuery))
	if state != "revoked" {
		t.Errorf("after revoking: %q", state)
	}
	if _, err := e.traffic.Authenticate(context.Background(), store.TrafficFastly, secret); err == nil {
		t.Error("a revoked token still works")
	}
	if ts, _ := e.db.ListIngestTokens(context.Background(), u.AccountID, md.ID); len(ts) != 1 {
		t.Errorf("%d tokens, want the one made (none forged)", len(ts))
	}

	for _, path := range []string{"/domains/acme.example/traffic", "/domains/quiet.example/traffic"} {
		b.run("open "+path, chromedp.Navigate(e.srv.URL+path), chromedp.WaitVisible(`main`, chromedp.ByQuery))
		b.axe(path)
	}

	// A viewer sees the tab without the form, and is refused a token.
	v := e.inBrowser("viewer@example.com")
	v.run("the viewer's tab", chromedp.Navigate(e.srv.URL+"/domains/acme.example/traffic"), chromedp.WaitVisible(`#tokens`, chromedp.ByQuery))
	v.eval("count forms", `document.querySelectorAll("#token-form, #tokens button").length`, &n)
	if n != 0 {
		t.Errorf("the viewer is offered %d token actions", n)
	}
	v.eval("post as a viewer", `fetch("/domains/acme.example/traffic/tokens", {method: "POST",
		headers: {"Content-Type": "application/x-www-form-urlencoded"},
		body: "name=viewer&source=cloudflare&csrf=" + encodeURIComponent(document.querySelector("input[name=csrf]").value)}).then(r => r.status)`, &status)
	if status != 403 {
		t.Errorf("a viewer's token form: %d, want 403", status)
	}
}
