package traffic

import (
	"net/netip"
	"strings"
	"testing"
)

const gptbotUA = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot"

func TestReadCombined(t *testing.T) {
	log := strings.Join([]string{
		// sources.md's example.
		`203.0.113.7 - - [10/Oct/2026:13:55:36 +0000] "GET /pricing?utm_source=chatgpt.com HTTP/1.1" 200 5123 "https://chatgpt.com/" "` + gptbotUA + `"`,
		// Common Log Format: no referer, no user agent; Apache's "-" size.
		`198.51.100.2 - frank [10/Oct/2026:13:55:36 -0700] "POST /api/x HTTP/1.0" 304 -`,
		// Apache's escaped quotes, an IPv6 client, extra fields.
		`2001:db8::7 - - [01/Jan/2027:00:00:01 +0530] "GET /a%20b HTTP/2.0" 404 0 "-" "Mozilla/5.0 \"quoted\" Claude-User/1.0" 0.012 "10.0.0.1"`,
		// nginx's \x22.
		`192.0.2.9 - - [28/Feb/2026:23:59:59 +0000] "GET / HTTP/1.1" 500 12 "https://claude.ai/chat/1" "say \x22hi\x22 and \\ done"`,
		``,
		// A host name for an address, an absolute URI.
		`proxy.example - - [10/Oct/2026:13:55:36 +0000] "GET https://example.com/docs?q=1 HTTP/1.1" 200 7 "" ""`,
		// Windows line end.
		"192.0.2.10 - - [10/Oct/2026:13:55:36 +0000] \"HEAD /r HTTP/1.1\" 301 0 \"-\" \"-\"\r",
		// Malformed ones.
		`192.0.2.11 - - [10/Oct/2026:25:00:00 +0000] "GET / HTTP/1.1" 200 1`,
		`192.0.2.12 - - [10/Foo/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 1`,
		`192.0.2.13 - - [10/Oct/2026:13:55:36 +0000] "-" 400 0 "-" "-"`,
		`192.0.2.14 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" abc 0`,
		`garbage`,
		`192.0.2.15 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "unterminated`,
		// No newline at the end.
		`192.0.2.16 - - [10/Oct/2026:13:55:36 +0000] "GET /last HTTP/1.1" 200 1 "-" "curl/8.5"`,
	}, "\n")
	var c collector
	if err := ReadCombined(strings.NewReader(log), &c); err != nil {
		t.Fatal(err)
	}
	want := []Line{
		{Time: utc("2026-10-10T13:55:36Z"), Method: "GET", Path: "/pricing", Query: "utm_source=chatgpt.com", Status: 200, Bytes: 5123,
			Referer: "https://chatgpt.com/", UserAgent: gptbotUA, ClientIP: netip.MustParseAddr("203.0.113.7")},
		{Time: utc("2026-10-10T20:55:36Z"), Method: "POST", Path: "/api/x", Status: 304, ClientIP: netip.MustParseAddr("198.51.100.2")},
		{Time: utc("2026-12-31T18:30:01Z"), Method: "GET", Path: "/a%20b", Status: 404, UserAgent: `Mozilla/5.0 "quoted" Claude-User/1.0`,
			ClientIP: netip.MustParseAddr("2001:db8::7")},
		{Time: utc("2026-02-28T23:59:59Z"), Method: "GET", Path: "/", Status: 500, Bytes: 12, Referer: "https://claude.ai/chat/1",
			UserAgent: `say "hi" and \ done`, ClientIP: netip.MustParseAddr("192.0.2.9")},
		{Time: utc("2026-10-10T13:55:36Z"), Method: "GET", Path: "/docs", Query: "q=1", Status: 200, Bytes: 7},
		{Time: utc("2026-10-10T13:55:36Z"), Method: "HEAD", Path: "/r", Status: 301, ClientIP: netip.MustParseAddr("192.0.2.10")},
		{Time: utc("2026-10-10T13:55:36Z"), Method: "GET", Path: "/last", Status: 200, Bytes: 1, UserAgent: "curl/8.5",
			ClientIP: netip.MustParseAddr("192.0.2.16")},
	}
	if len(c.lines) != len(want) {
		t.Fatalf("%d lines, want %d: %+v", len(c.lines), len(want), c.lines)
	}
	for i := range want {
		if c.lines[i] != want[i] {
			t.Errorf("line %d:\n got %+v\nwant %+v", c.nums[i], c.lines[i], want[i])
		}
	}
	if got, want := c.nums, []int{1, 2, 3, 4, 6, 7, 14}; !equal(got, want) {
		t.Errorf("line numbers %v, want %v", got, want)
	}
	wantBad := []badRecord{
		{8, "", "unreadable time"}, {9, "", "unreadable time"}, {10, "", "unreadable request line"},
		{11, "", "unreadable status"}, {12, "", "truncated line"}, {13, "", "unterminated referer"},
	}
	if len(c.bad) != len(wantBad) {
		t.Fatalf("malformed %+v, want %+v", c.bad, wantBad)
	}
	for i, w := range wantBad {
		if c.bad[i].n != w.n || c.bad[i].reason != w.reason {
			t.Errorf("malformed %d: %d %q, want %d %q", i, c.bad[i].n, c.bad[i].reason, w.n, w.reason)
		}
	}
}

func TestReadCombinedLongLine(t *testing.T) {
	long := `192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] "GET /` + strings.Repeat("a", maxRecord) + ` HTTP/1.1" 200 1`
	next := `192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] "GET /b HTTP/1.1" 200 1`
	var c collector
	if err := ReadCombined(strings.NewReader(long+"\n"+next+"\n"), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.bad) != 1 || c.bad[0].reason != "line too long" || c.bad[0].n != 1 {
		t.Errorf("malformed %v", c.bad)
	}
	if len(c.lines) != 1 || c.lines[0].Path != "/b" || c.nums[0] != 2 {
		t.Errorf("lines %+v %v", c.lines, c.nums)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
