package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var nextRE = regexp.MustCompile(`name="next" value="([^"]*)"`)

// TestSignInNextStaysOnThisSite: whatever next= says, the redirect after
// sign-in is a path of this site, as a browser reads it (browsers drop
// tabs and newlines from a URL and read a backslash as a slash).
func TestSignInNextStaysOnThisSite(t *testing.T) {
	e := newEnv(t)
	e.owner("owner@example.com", false)
	for _, next := range []string{
		"https://evil.example/", "//evil.example", "/\\evil.example", "\\\\evil.example",
		"/\t/evil.example", "/\n/evil.example", "/\r\n/evil.example", "\t//evil.example", "/%09/evil.example",
		"/\\/evil.example", "javascript:alert(1)", "/.//evil.example", " //evil.example",
	} {
		c := e.browser()
		p := e.get(c, "/signin?next="+url.QueryEscape(next))
		if m := nextRE.FindStringSubmatch(p.body); m == nil || m[1] != "/" && m[1] != html.EscapeString(next) {
			t.Errorf("next=%q: the form carries %q", next, m)
		}
		// The transport, not the client: a client refuses to parse a
		// Location with a control character, which a browser would follow.
		form := url.Values{"csrf": {csrf(t, p)}, "email": {"owner@example.com"}, "password": {password}, "next": {next}}
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/signin", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		u, _ := url.Parse(e.srv.URL)
		for _, ck := range c.Jar.Cookies(u) {
			req.AddCookie(ck)
		}
		res, err := c.Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		loc := res.Header.Get("Location")
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("next=%q: sign-in answered %d", next, res.StatusCode)
		}
		if pu, err := url.Parse(loc); err != nil || pu.Scheme != "" || pu.Host != "" || !strings.HasPrefix(loc, "/") ||
			strings.HasPrefix(loc, "//") || strings.ContainsFunc(loc, func(r rune) bool { return r == '\\' || r < 0x20 }) {
			t.Errorf("next=%q redirects to %q, off this site", next, loc)
		}
	}
}

// A path of this site is kept, with its query.
func TestSignInNextKeepsAPath(t *testing.T) {
	e := newEnv(t)
	e.owner("owner@example.com", false)
	c := e.browser()
	p := e.get(c, "/webhooks?x=1")
	if p.status != http.StatusSeeOther || p.loc != "/signin?next=%2Fwebhooks%3Fx%3D1" {
		t.Fatalf("signed out, /webhooks?x=1: %d %q", p.status, p.loc)
	}
	p = e.get(c, p.loc)
	p = e.post(c, "/signin", url.Values{"csrf": {csrf(t, p)}, "email": {"owner@example.com"}, "password": {password}, "next": {"/webhooks?x=1"}})
	if p.status != http.StatusSeeOther || p.loc != "/webhooks?x=1" {
		t.Fatalf("sign-in with next=/webhooks?x=1: %d %q", p.status, p.loc)
	}
}
