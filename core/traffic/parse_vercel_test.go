package traffic

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Entries as a drain sends them: a static hit (proxy, no function), a
// function's output (no proxy), a revalidation (-1), a crash.
var vercelEntries = []string{
	`{"id":"1573817187330377061717300000","deploymentId":"dpl_233NRGRjVZX1caZrXWtz5g1TAksD","projectId":"prj_1","source":"static","host":"test.vercel.app","timestamp":1573817187330,"level":"info","requestId":"643af4e3-975a-4cc7-9e7a-1eda11539d90","statusCode":200,"path":"/pricing?utm_source=chatgpt.com","environment":"production","proxy":{"timestamp":1573817250172,"method":"GET","host":"test.vercel.app","path":"/pricing?utm_source=chatgpt.com","userAgent":["Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot"],"region":"sfo1","referer":"https://chatgpt.com/","statusCode":200,"clientIp":"120.75.16.101","scheme":"https","responseByteSize":1024,"cacheId":"pdx1::v8g4b-1573817250172-3f8a2c","pathType":"static"}}`,
	`{"id":"2","deploymentId":"dpl_2","source":"lambda","timestamp":1573817187331,"level":"info","message":"START RequestId: 643af4e3 \"quoted\"","type":"stdout","requestId":"643af4e3"}`,
	`{"id":"3","source":"edge","timestamp":1573817187332,"statusCode":-1,"proxy":{"timestamp":1573817187332,"method":"GET","host":"test.vercel.app","path":"/blog/post","userAgent":["Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X)"],"region":"iad1","referer":"","statusCode":-1,"clientIp":"2001:db8::5","scheme":"https"}}`,
	`{"id":"4","source":"lambda","timestamp":1573817187333,"statusCode":-1,"proxy":{"method":"POST","path":"/api/x","userAgent":[],"statusCode":-1,"clientIp":"120.75.16.102"}}`,
	`{"id":"5","source":"static","proxy":{"timestamp":1573817187334,"method":"GET"}}`,
}

func TestReadVercel(t *testing.T) {
	want := []Line{
		{Time: time.UnixMilli(1573817250172).UTC(), Method: "GET", Host: "test.vercel.app", Path: "/pricing", Query: "utm_source=chatgpt.com", Status: 200, Bytes: 1024,
			Referer: "https://chatgpt.com/", UserAgent: "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot",
			ClientIP: netip.MustParseAddr("120.75.16.101")},
		{Time: time.UnixMilli(1573817187332).UTC(), Method: "GET", Host: "test.vercel.app", Path: "/blog/post",
			UserAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X)", ClientIP: netip.MustParseAddr("2001:db8::5")},
		// No proxy timestamp: the entry's.
		{Time: time.UnixMilli(1573817187333).UTC(), Method: "POST", Path: "/api/x", ClientIP: netip.MustParseAddr("120.75.16.102")},
	}
	for _, body := range map[string]string{
		"json":         "[" + strings.Join(vercelEntries, ",") + "]",
		"json spaced":  "\n[\n  " + strings.Join(vercelEntries, " ,\n  ") + "\n]\n",
		"ndjson":       strings.Join(vercelEntries, "\n") + "\n",
		"ndjson no nl": strings.Join(vercelEntries, "\n"),
	} {
		var c collector
		if err := ReadVercel(strings.NewReader(body), &c); err != nil {
			t.Fatal(err)
		}
		if len(c.lines) != len(want) {
			t.Fatalf("%d lines, want %d: %+v", len(c.lines), len(want), c.lines)
		}
		for i := range want {
			if c.lines[i] != want[i] {
				t.Errorf("entry %d:\n got %+v\nwant %+v", c.nums[i], c.lines[i], want[i])
			}
		}
		if !equal(c.nums, []int{1, 3, 4}) {
			t.Errorf("entries %v", c.nums)
		}
		if len(c.bad) != 1 || c.bad[0].n != 5 || c.bad[0].reason != "no path" {
			t.Errorf("malformed %+v", c.bad)
		}
	}
}

func TestReadVercelBroken(t *testing.T) {
	for _, tc := range []struct {
		body string
		good int
		bad  []badRecord
	}{
		{"[" + vercelEntries[0] + ",", 1, nil},
		{"[" + vercelEntries[0] + `,{"proxy":{"path":"/x"`, 1, []badRecord{{n: 2, reason: "entry cut short"}}},
		{"[" + vercelEntries[0] + `,"text",[1,"]"],` + vercelEntries[0] + "]", 2, []badRecord{{n: 2, reason: "not a JSON object"}, {n: 3, reason: "not a JSON object"}}},
		{"[" + vercelEntries[0] + `,{"proxy":{"path":"/x","timestamp":1573817187334,"statusCode":}}` + "," + vercelEntries[0] + "]", 2,
			[]badRecord{{n: 2, reason: "proxy not a JSON object"}}},
		{vercelEntries[0] + "\n{\"proxy\":\n" + vercelEntries[0], 2, []badRecord{{n: 2, reason: "not a JSON object"}}},
		{"", 0, nil},
		{"[]", 0, nil},
	} {
		var c collector
		if err := ReadVercel(strings.NewReader(tc.body), &c); err != nil {
			t.Fatal(err)
		}
		if len(c.lines) != tc.good || len(c.bad) != len(tc.bad) {
			t.Errorf("%.80q...: %d lines, malformed %+v", tc.body, len(c.lines), c.bad)
			continue
		}
		for i, b := range tc.bad {
			if c.bad[i].n != b.n || c.bad[i].reason != b.reason {
				t.Errorf("%.80q...: malformed %+v, want %+v", tc.body, c.bad[i], b)
			}
		}
	}
}
