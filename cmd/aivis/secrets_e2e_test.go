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
)

// officialConnectors builds every official connector, and the host's test
// plugin, and registers them.
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
