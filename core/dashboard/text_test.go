package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestFormsRefuseControlCharacters: a form whose field holds a NUL,
// another control character or bytes that are not UTF-8 is refused with
// 400 naming the field, before any form is acted on, and changes nothing;
// tab and line breaks are text.
func TestFormsRefuseControlCharacters(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	good := csrf(t, e.get(c, "/keys"))
	for _, bad := range []string{"key\x00", "bell\a", "\x1b[2J", "a\xffb", "next\u0085line"} {
		p := e.post(c, "/keys", url.Values{"name": {bad}, "csrf": {good}})
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, `field &#34;name&#34;`) {
			t.Errorf("a key named %q: %d\n%s", bad, p.status, p.body)
		}
	}
	if n := keyCount(t, e, u.AccountID); n != 0 {
		t.Fatalf("%d keys were made by refused forms", n)
	}
	// Before sign-in too.
	anon := e.browser()
	token := csrf(t, e.get(anon, "/signin"))
	if p := e.post(anon, "/signin", url.Values{"email": {"owner@example.com\x00"}, "password": {password}, "csrf": {token}}); p.status != http.StatusBadRequest {
		t.Errorf("sign-in with a NUL in the email: %d", p.status)
	}
	if p := e.post(c, "/keys", url.Values{"name": {"tab\tand\r\nline"}, "csrf": {good}}); p.status != http.StatusCreated {
		t.Fatalf("a key named with tab and line breaks: %d\n%s", p.status, p.body)
	}
}
