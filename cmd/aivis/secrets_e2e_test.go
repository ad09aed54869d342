package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/connectors/hubspot/hubspotfake"
	"github.com/aivis/aivis/connectors/segment/segmentfake"
	"github.com/aivis/aivis/connectors/slack/slackfake"
	"github.com/aivis/aivis/connectors/workflow/workflowfake"
)

// officialConnectors builds every official connector, and the host's test
// plugin (which names no destination settings), and registers them.
func officialConnectors(t *testing.T, dir string) {
	for _, name := range []string{"slack", "zapier", "hubspot", "ga4", "segment", "workflow"} {
		cli(t, dir, nil, "plugin", "register", buildPlugin(t, "../../connectors/"+name, name))
	}
	cli(t, dir, nil, "plugin", "register", buildPlugin(t, "../../plugins/host/testdata/testplugin", "testplugin"))
}

// join accepts an invitation link over plain HTTPS, as a browser would:
// the client it returns is signed in to the dashboard.
func join(t *testing.T, s *server, link, email string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Transport: s.HTTP.Transport, Jar: jar}
	token := strings.TrimPrefix(link, s.URL+"/join?token=")
	res, err := c.PostForm(s.URL+"/join", url.Values{"csrf": {csrfOf(t, dashGet(t, c, link))}, "token": {token}, "email": {email},
		"password": {"twelve characters"}, "password_again": {"twelve characters"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return c
}

// dashboardUser invites a user of the role on the command line and has
// them join.
func dashboardUser(t *testing.T, s *server, accountID, email, role string) *http.Client {
	t.Helper()
	var inv struct {
		Link string `json:"link"`
	}
	cli(t, s.DataDir, &inv, "user", "invite", "--account", accountID, "--email", email, "--role", role, "--url", s.URL)
	return join(t, s, inv.Link, email)
}

// dashGet reads a dashboard page, which must answer 200.
func dashGet(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d\n%s", u, res.StatusCode, b)
	}
	return string(b)
}

// dashPost submits a dashboard form without following the redirect.
func dashPost(t *testing.T, c *http.Client, u string, form url.Values) (int, string) {
	t.Helper()
	nc := *c
	nc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := nc.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no form on the page:\n%s", page)
	}
	return m[1]
}

var (
	editForm = regexp.MustCompile(`(?s)<form method="post" action="(/connections/con_[^"/]+)">(.*?)</form>`)
	inputTag = regexp.MustCompile(`<input ([^>]*)>`)
	selectEl = regexp.MustCompile(`(?s)<select [^>]*name="([^"]+)"[^>]*>(.*?)</select>`)
	attr     = regexp.MustCompile(`([a-z-]+)(?:="([^"]*)")?`)
	selected = regexp.MustCompile(`<option selected>([^<]*)</option>`)
)

// formOf reads a connection page's edit form as a browser would submit
// it untouched: its action and every input's value (checked boxes only).
func formOf(t *testing.T, page string) (string, url.Values) {
	t.Helper()
	m := editForm.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no edit form on the page:\n%s", page)
	}
	v := url.Values{}
	for _, in := range inputTag.FindAllStringSubmatch(m[2], -1) {
		a := map[string]string{}
		for _, kv := range attr.FindAllStringSubmatch(in[1], -1) {
			a[kv[1]] = kv[2]
		}
		if _, checked := a["checked"]; a["name"] == "" || a["type"] == "checkbox" && !checked {
			continue
		}
		if a["type"] == "checkbox" && a["value"] == "" {
			a["value"] = "on"
		}
		v.Add(a["name"], a["value"])
	}
	for _, sel := range selectEl.FindAllStringSubmatch(m[2], -1) {
		val := ""
		if o := selected.FindStringSubmatch(sel[2]); o != nil {
			val = o[1]
		}
		v.Set(sel[1], val)
	}
	return m[1], v
}

// fieldErrors reads the details of a VALIDATION_ERROR.
func fieldErrors(t *testing.T, r resp) []string {
	t.Helper()
	if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" {
		t.Fatalf("want 400 VALIDATION_ERROR, got %d %s", r.Status, r.Body)
	}
	var e struct {
		Error struct {
			Details []struct{ Field, Message string } `json:"details"`
		} `json:"error"`
	}
	r.decode(t, &e)
	var fields []string
	for _, d := range e.Error.Details {
		if !strings.Contains(d.Message, "given again") {
			t.Errorf("detail %s: %q does not say to give it again", d.Field, d.Message)
		}
		fields = append(fields, d.Field)
	}
	return fields
}

// TestEditedDestinationNeedsTheSecretsAgain: a connection's saved secrets
// never follow an edited address. Through the API and the dashboard, with
// the real plugins: a change of a destination setting without the secrets
// is refused naming each, and nothing reaches the new address; given
// again, they go there.
func TestEditedDestinationNeedsTheSecretsAgain(t *testing.T) {
	dir := t.TempDir()
	officialConnectors(t, dir)
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "3s")

	// Every official connector names where its secrets go.
	var kinds client.List[client.ConnectorKind]
	s.do(t, req{method: "GET", path: "/v1/connectors", header: bearer(k)}).decode(t, &kinds)
	want := map[string][]string{"slack": {"api_url", "webhook_url"}, "zapier": {"target_url"}, "hubspot": {"api_url"},
		"ga4": {"api_url"}, "segment": {"region", "api_url"}, "workflow": {"webhook_url"}, "test": {}}
	for _, c := range kinds.Items {
		if w, ok := want[c.Name]; !ok || !slices.Equal(c.DestinationFields, w) {
			t.Errorf("%s: destination_fields %q, want %q", c.Name, c.DestinationFields, w)
		}
		delete(want, c.Name)
	}
	if len(want) != 0 {
		t.Fatalf("connectors not listed: %v", want)
	}

	patch := func(c client.Connection, settings string) resp {
		t.Helper()
		return s.do(t, req{method: "PATCH", path: "/v1/connections/" + c.ID, header: bearer(k), body: `{"settings":` + settings + `}`})
	}
	test := func(c client.Connection) client.ConnectionTestResult {
		t.Helper()
		var res client.ConnectionTestResult
		s.do(t, req{method: "POST", path: "/v1/connections/" + c.ID + "/test", header: bearer(k)}).decode(t, &res)
		return res
	}
	refused := func(c client.Connection, settings string, secrets ...string) {
		t.Helper()
		before := s.do(t, req{method: "GET", path: "/v1/connections/" + c.ID, header: bearer(k)})
		if got := fieldErrors(t, patch(c, settings)); !slices.Equal(got, secrets) {
			t.Errorf("%s %s: the refusal names %q, want %q", c.Connector, settings, got, secrets)
		}
		if after := s.do(t, req{method: "GET", path: "/v1/connections/" + c.ID, header: bearer(k)}); string(after.Body) != string(before.Body) {
			t.Errorf("a refused change changed the connection:\n%s\n%s", before.Body, after.Body)
		}
	}

	// HubSpot: the token stays with the API it was typed for.
	hsHome, hsElsewhere := hubspotfake.New(), hubspotfake.New()
	defer hsHome.Close()
	defer hsElsewhere.Close()
	hs := connect(t, s, k, "hubspot", `{"access_token":"`+hubspotfake.Token+`","api_url":"`+hsHome.URL()+`"}`)
	refused(hs, `{"api_url":"`+hsElsewhere.URL()+`"}`, "settings.access_token")
	refused(hs, `{"api_url":null}`, "settings.access_token")
	if res := test(hs); res.Result != "delivered" || len(hsHome.Requests()) == 0 {
		t.Fatalf("hubspot test at home: %+v, %d requests", res, len(hsHome.Requests()))
	}
	if n := len(hsElsewhere.Requests()); n != 0 {
		t.Fatalf("the other HubSpot got %d requests before the token was given again", n)
	}
	if r := patch(hs, `{"api_url":"`+hsElsewhere.URL()+`","access_token":"`+hubspotfake.Token+`"}`); r.Status != 200 {
		t.Fatalf("a move with the token: %d %s", r.Status, r.Body)
	}
	if res := test(hs); res.Result != "delivered" || len(hsElsewhere.Requests()) == 0 {
		t.Fatalf("hubspot test after the move: %+v", res)
	}

	// n8n with basic authentication: the password stays with its URL (the
	// URL itself, a secret, is given by the change).
	wfHome, wfElsewhere := workflowfake.New(), workflowfake.New()
	defer wfHome.Close()
	defer wfElsewhere.Close()
	home := wfHome.N8nWebhook("aivis", workflowfake.Auth{User: "aivis", Password: "home-password"})
	elsewhere := wfElsewhere.N8nWebhook("aivis", workflowfake.Auth{User: "aivis", Password: "other-password"})
	wf := connect(t, s, k, "workflow", `{"platform":"n8n","webhook_url":"`+home+`","auth":"basic","username":"aivis","password":"home-password"}`)
	refused(wf, `{"webhook_url":"`+elsewhere+`"}`, "settings.password")
	if res := test(wf); res.Result != "delivered" || len(wfHome.Received()) != 1 {
		t.Fatalf("n8n test at home: %+v", res)
	}
	if n := len(wfElsewhere.Requests()); n != 0 {
		t.Fatalf("the other n8n got %d requests before the password was given again", n)
	}
	if r := patch(wf, `{"webhook_url":"`+elsewhere+`","password":"other-password"}`); r.Status != 200 {
		t.Fatalf("a move with the password: %d %s", r.Status, r.Body)
	}
	if res := test(wf); res.Result != "delivered" || len(wfElsewhere.Received()) != 1 {
		t.Fatalf("n8n test after the move: %+v", res)
	}

	// Segment: a region is a destination too.
	seg := segmentfake.New()
	defer seg.Close()
	sc := connect(t, s, k, "segment", `{"write_key":"`+segmentfake.WriteKey+`","api_url":"`+seg.URL()+`"}`)
	refused(sc, `{"api_url":null,"region":"eu"}`, "settings.write_key")

	// Slack: a setting that sends nothing elsewhere needs no secret.
	sl := slackfake.New()
	defer sl.Close()
	slc := connect(t, s, k, "slack", `{"bot_token":"`+slackfake.Token+`","channel":"#alerts","api_url":"`+sl.APIURL()+`"}`)
	if r := patch(slc, `{"dashboard_url":"https://aivis.example.com","api_url":"`+sl.APIURL()+`"}`); r.Status != 200 {
		t.Fatalf("slack: a change of the dashboard URL: %d %s", r.Status, r.Body)
	}
	refused(slc, `{"api_url":"https://slack.example.com/api/"}`, "settings.bot_token")

	// A connector that names no destination: every change needs its secrets.
	tc := connect(t, s, k, "test", `{"mode":"ok","secret":"plugin-secret"}`)
	refused(tc, `{"note":"y"}`, "settings.secret")
	if r := patch(tc, `{"note":"y","secret":"plugin-secret"}`); r.Status != 200 {
		t.Fatalf("test: with the secret: %d %s", r.Status, r.Body)
	}

	// The dashboard's edit form goes through the same rule and shows the
	// refusal; a form saved as shown, over a connection whose default
	// destination is not saved, moves nothing.
	dev := dashboardUser(t, s, a.ID, "dev@example.com", "developer")
	action, form := formOf(t, dashGet(t, dev, s.URL+"/connections/"+hs.ID))
	form.Set("s.api_url", hsHome.URL())
	status, page := dashPost(t, dev, s.URL+action, form)
	if status != 400 || !strings.Contains(page, "settings.access_token") || !strings.Contains(page, "given again") {
		t.Fatalf("the dashboard's refused edit: %d\n%s", status, page)
	}
	ga := connect(t, s, k, "ga4", `{"measurement_id":"G-AIVIS1234","api_secret":"ga4-secret"}`)
	action, form = formOf(t, dashGet(t, dev, s.URL+"/connections/"+ga.ID))
	form.Set("name", "GA4 renamed")
	if status, page := dashPost(t, dev, s.URL+action, form); status != http.StatusSeeOther {
		t.Fatalf("the dashboard's edit of a name: %d\n%s", status, page)
	}
	var got client.Connection
	s.do(t, req{method: "GET", path: "/v1/connections/" + ga.ID, header: bearer(k)}).decode(t, &got)
	if got.Name != "GA4 renamed" || !slices.Equal(got.SecretFields, []string{"api_secret"}) {
		t.Fatalf("after the dashboard's edit: %+v", got)
	}
}

// TestFailedDeliveriesTellNoSecret points every official connector, and
// a webhook, at addresses that do not answer, with distinctive secrets in
// their settings and URLs: no secret, in any encoding, is in anything the
// API, the dashboard (a viewer's pages, a developer's test results) or
// the server's and plugins' logs show.
func TestFailedDeliveriesTellNoSecret(t *testing.T) {
	dir := t.TempDir()
	officialConnectors(t, dir)
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "3s", "--log-level", "debug")

	var outputs []string // every byte shown to anyone
	do := func(r req) resp {
		t.Helper()
		res := s.do(t, r)
		outputs = append(outputs, string(res.Body))
		return res
	}
	// The secrets, and the parts of secret URLs that are secrets too.
	secrets := []string{"ga4+Secret/Qz7&x", "pat-hubspotSecretU9", "segmentWriteSecretV1", "xoxb-slackBotSecretT8",
		"zapPathSecretK3y", "makePathSecretW9", "n8nPathSecretP4", "n8nQuerySecretQ5", "n8nPassSecretR6", "slackHookSecretS7",
		"whPathSecretW2", "whQuerySecretX3", "testPluginSecretY4", "leakPathSecretZ5", "leakQuerySecretZ6"}
	ids := map[string]string{} // by connector and id
	for _, c := range []struct{ connector, settings string }{
		{"ga4", `{"measurement_id":"G-AIVIS1234","api_secret":"ga4+Secret/Qz7&x","api_url":"https://ga4.aivis-test.invalid"}`},
		{"hubspot", `{"access_token":"pat-hubspotSecretU9","api_url":"https://hubspot.aivis-test.invalid"}`},
		{"segment", `{"write_key":"segmentWriteSecretV1","api_url":"https://segment.aivis-test.invalid"}`},
		{"slack", `{"bot_token":"xoxb-slackBotSecretT8","channel":"#alerts","api_url":"https://slack.aivis-test.invalid/api/"}`},
		{"slack", `{"webhook_url":"https://hooks.slack.aivis-test.invalid/services/T0AIVIS/B0AIVIS/slackHookSecretS7"}`},
		{"zapier", `{"target_url":"https://hooks.aivis-test.invalid/hooks/catch/987654/zapPathSecretK3y/"}`},
		{"workflow", `{"platform":"make","webhook_url":"https://hook.eu1.aivis-test.invalid/makePathSecretW9"}`},
		{"workflow", `{"platform":"n8n","webhook_url":"https://n8n.aivis-test.invalid/webhook/n8nPathSecretP4?tok=n8nQuerySecretQ5",` +
			`"auth":"basic","username":"aivis","password":"n8nPassSecretR6"}`},
		// The test plugin's reason tells its secret settings in every form:
		// the server redacts it.
		{"test", `{"mode":"leak","secret":"testPluginSecretY4","url":"https://leak.aivis-test.invalid/p/leakPathSecretZ5?x=leakQuerySecretZ6"}`},
	} {
		id := connect(t, s, k, c.connector, c.settings).ID
		ids[c.connector+" "+id] = id
	}
	do(req{method: "GET", path: "/v1/connections", header: bearer(k)})

	// A webhook whose verification cannot reach it, and one whose endpoint
	// goes away after it was made.
	r := do(req{method: "POST", path: "/v1/webhooks", header: bearer(k), body: jsonBody(client.CreateWebhook{Domain: "example.com",
		Events: []string{"ai_visibility_change"}, URL: "https://wh.aivis-test.invalid/hook/whPathSecretW2?token=whQuerySecretX3"})})
	if r.Status < 400 || !strings.Contains(string(r.Body), "wh.aivis-test.invalid") {
		t.Fatalf("a webhook that cannot be reached: %d %s", r.Status, r.Body)
	}
	t.Logf("a webhook that cannot be reached: %s", r.Body)
	rc := newHookReceiver(t)
	var wh client.Webhook
	// Its URL is the owner's to read (GET /v1/webhooks shows it): only
	// what is said of its deliveries is searched.
	r = s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k), body: jsonBody(client.CreateWebhook{Domain: "example.com",
		Events: []string{"ai_visibility_change"}, URL: rc.URL + "/hook/whPathSecretW2?token=whQuerySecretX3"})})
	r.decode(t, &wh)
	if r.Status != 201 {
		t.Fatalf("create the webhook: %d %s", r.Status, r.Body)
	}
	rc.Close()

	// Each connection's test, and a reading's deliveries, fail.
	for name, id := range ids {
		var res client.ConnectionTestResult
		do(req{method: "POST", path: "/v1/connections/" + id + "/test", header: bearer(k)}).decode(t, &res)
		if res.Result != "retry" || res.Reason == nil || !strings.Contains(*res.Reason, "aivis-test.invalid") && !strings.Contains(*res.Reason, "[redacted]") {
			t.Errorf("%s: the test says %+v, want a retry naming the host", name, res)
			continue
		}
		t.Logf("%s: %s", name, *res.Reason)
	}
	do(req{method: "POST", path: "/v1/visibility", header: bearer(k), body: `{"domain":"example.com","visibility_score":61,"sentiment":"positive"}`})
	// The reading's delivery to base, once an attempt of it failed.
	failed := func(base string) (client.Delivery, bool) {
		var dl client.List[client.Delivery]
		s.do(t, req{method: "GET", path: base + "/deliveries", header: bearer(k)}).decode(t, &dl)
		i := slices.IndexFunc(dl.Items, func(d client.Delivery) bool { return d.Event == "ai_visibility_change" && d.LastError != nil })
		if i < 0 {
			return client.Delivery{}, false
		}
		return dl.Items[i], true
	}
	bases := []string{"/v1/webhooks/" + wh.ID}
	for _, id := range ids {
		bases = append(bases, "/v1/connections/"+id)
	}
	for _, base := range bases {
		waitFor(t, "a failed attempt at "+base, func() bool { _, ok := failed(base); return ok })
		d, _ := failed(base)
		do(req{method: "GET", path: base + "/deliveries", header: bearer(k)})
		one := do(req{method: "GET", path: base + "/deliveries/" + d.ID, header: bearer(k)})
		var got client.Delivery
		one.decode(t, &got)
		if len(got.AttemptLog) == 0 || got.AttemptLog[0].Error == nil ||
			!strings.Contains(*got.AttemptLog[0].Error, "aivis-test.invalid") && !strings.Contains(*got.AttemptLog[0].Error, "refused") &&
				!strings.Contains(*got.AttemptLog[0].Error, "[redacted]") {
			t.Errorf("%s: the attempt does not say what failed: %s", base, one.Body)
			continue
		}
		t.Logf("%s: %s", base, *got.AttemptLog[0].Error)
	}
	do(req{method: "GET", path: "/v1/connectors", header: bearer(k)})

	// The dashboard: a viewer's pages, a developer's test results.
	viewer := dashboardUser(t, s, a.ID, "viewer@example.com", "viewer")
	dev := dashboardUser(t, s, a.ID, "dev@example.com", "developer")
	outputs = append(outputs, dashGet(t, viewer, s.URL+"/connectors"))
	for name, id := range ids {
		page := dashGet(t, viewer, s.URL+"/connections/"+id)
		if !strings.Contains(page, "aivis-test.invalid") && !strings.Contains(page, "[redacted]") {
			t.Errorf("%s: the viewer's page shows no failed attempt:\n%s", name, page)
		}
		status, tested := dashPost(t, dev, s.URL+"/connections/"+id+"/test", url.Values{"csrf": {csrfOf(t, dashGet(t, dev, s.URL+"/connections/"+id))}})
		if status != 200 || !strings.Contains(tested, "Test result: retry") {
			t.Errorf("%s: the developer's test: %d\n%s", name, status, tested)
		}
		outputs = append(outputs, page, tested)
	}
	s.stop()
	outputs = append(outputs, s.Stdout.String(), s.Stderr.String())

	for _, secret := range secrets {
		for _, form := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret)} {
			for _, out := range outputs {
				if i := strings.Index(out, form); i >= 0 {
					t.Errorf("%q (a form of %q) is shown: …%s…", form, secret, out[max(0, i-200):min(len(out), i+100)])
				}
			}
		}
	}
}
