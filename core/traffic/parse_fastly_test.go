package traffic

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

func TestReadFastlyJSON(t *testing.T) {
	// A customer's format: Fastly's own field names for some, theirs for
	// others; a VCL-formatted time.
	entries := []string{
		`{"timestamp":"2026-10-10T13:55:36+0000","client_ip":"203.0.113.7","request_method":"GET","host":"example.com","url":"/pricing?utm_source=chatgpt.com","status":200,"response_body_size":5123,"referer":"https://chatgpt.com/","user_agent":"` + gptbotUA + `","geo_country":"us"}`,
		`{"time":1790000000,"ip":"2001:db8::9","method":"HEAD","path":"/a","status":"304","bytes":"0","referrer":"-","useragent":"-"}`,
		`{"Time":"[10/Oct/2026:13:55:36 -0100]","Client_IP":"198.51.100.1","URL":"/b","Status":404,"User_Agent":"curl/8","request_referer":null}`,
		`{"time":"2026-10-10T13:55:36.25Z","client_ip":"198.51.100.2","url":null}`,
	}
	want := []Line{
		{Time: utc("2026-10-10T13:55:36Z"), Method: "GET", Host: "example.com", Path: "/pricing", Query: "utm_source=chatgpt.com", Status: 200, Bytes: 5123,
			Referer: "https://chatgpt.com/", UserAgent: gptbotUA, ClientIP: netip.MustParseAddr("203.0.113.7")},
		{Time: time.Unix(1790000000, 0).UTC(), Method: "HEAD", Path: "/a", Status: 304, ClientIP: netip.MustParseAddr("2001:db8::9")},
		{Time: utc("2026-10-10T14:55:36Z"), Path: "/b", Status: 404, UserAgent: "curl/8", ClientIP: netip.MustParseAddr("198.51.100.1")},
	}
	for name, body := range map[string]string{
		"json_format 2": strings.Join(entries, "\n") + "\n",
		"json_format 1": "[" + strings.Join(entries, ",\n") + "]",
	} {
		var c collector
		if err := ReadFastly(strings.NewReader(body), &c); err != nil {
			t.Fatal(err)
		}
		if len(c.lines) != len(want) {
			t.Fatalf("%s: %d lines, want %d: %+v", name, len(c.lines), len(want), c.lines)
		}
		for i := range want {
			if c.lines[i] != want[i] {
				t.Errorf("%s: entry %d:\n got %+v\nwant %+v", name, c.nums[i], c.lines[i], want[i])
			}
		}
		if len(c.bad) != 1 || c.bad[0].n != 4 || c.bad[0].reason != "no path" {
			t.Errorf("%s: malformed %+v", name, c.bad)
		}
	}
}

func TestReadFastlyText(t *testing.T) {
	// json_format 0 in Fastly's default format (Common Log Format, no
	// user agent), one line with a syslog prefix, one in combined format.
	body := strings.Join([]string{
		`203.0.113.7 - - [10/Oct/2026:13:55:36 +0000] "GET /pricing?utm_source=chatgpt.com HTTP/1.1" 200 5123`,
		`<134>2026-10-10T13:55:37Z cache-sjc10043 aivis[300915]: 203.0.113.8 - - [10/Oct/2026:13:55:37 +0000] "GET /docs HTTP/1.1" 301 0`,
		`203.0.113.9 - - [10/Oct/2026:13:55:38 +0000] "GET /c HTTP/1.1" 200 10 "https://perplexity.ai/" "` + gptbotUA + `"`,
	}, "\n")
	agg := NewAggregator(NewCatalog(Snapshot()), Assistant, "acc", "dom")
	b, err := Read(store.TrafficFastly, bytes.NewReader(gz(t, []byte(body), "", time.Time{}, 9)), agg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b.Lines != 3 || b.Malformed != 0 {
		t.Fatalf("batch %+v", b)
	}
	day := utc("2026-10-10T00:00:00Z")
	// The first line's utm_source is a referral: it has no user agent.
	refs := agg.ReferralVisits()
	if len(refs) != 1 || refs[0] != (store.ReferralVisits{AccountID: "acc", DomainID: "dom", Day: day, Page: "/pricing", Assistant: "chatgpt", Visits: 1}) {
		t.Errorf("referrals %+v", refs)
	}
	hits := agg.CrawlerHits()
	if len(hits) != 1 || hits[0] != (store.CrawlerHits{AccountID: "acc", DomainID: "dom", Day: day, Page: "/c", Agent: "GPTBot",
		Verification: "spoofed", Hits: 1, Status: [5]int64{1, 0, 0, 0, 0}, Bytes: 10}) {
		t.Errorf("hits %+v", hits)
	}
}

func TestReadFastlyVCLNames(t *testing.T) {
	// Names of formats customers copy: VCL's req.request for the method,
	// begin:msec times, camel case.
	body := strings.Join([]string{
		`{"service_id":"SU1Z0isxPaozGVKXdv0eY","time_start":1790000000123,"client_ip":"203.0.113.7","request":"GET","host":"example.com","url":"/a?utm_source=chatgpt.com","request_referer":"","request_user_agent":"curl/8","response_status":200,"response_body_size":12}`,
		`{"timestamp":"2026-10-10T13:55:36UTC","ip":"203.0.113.8","request":"POST /b?x=1 HTTP/1.1","httpStatus":503,"bytesWritten":7}`,
		`{"timestamp":"2026-10-10 13:55:36","url":"/c"}`,
	}, "\n")
	var c collector
	if err := ReadFastly(strings.NewReader(body), &c); err != nil {
		t.Fatal(err)
	}
	want := []Line{
		{Time: time.UnixMilli(1790000000123).UTC(), Method: "GET", Host: "example.com", Path: "/a", Query: "utm_source=chatgpt.com", Status: 200, Bytes: 12,
			UserAgent: "curl/8", ClientIP: netip.MustParseAddr("203.0.113.7")},
		{Time: utc("2026-10-10T13:55:36Z"), Method: "POST", Path: "/b", Query: "x=1", Status: 503, Bytes: 7, ClientIP: netip.MustParseAddr("203.0.113.8")},
		{Time: utc("2026-10-10T13:55:36Z"), Path: "/c"},
	}
	if len(c.lines) != len(want) || len(c.bad) != 0 {
		t.Fatalf("lines %+v, malformed %+v", c.lines, c.bad)
	}
	for i := range want {
		if c.lines[i] != want[i] {
			t.Errorf("entry %d:\n got %+v\nwant %+v", c.nums[i], c.lines[i], want[i])
		}
	}
}

func TestTimeValue(t *testing.T) {
	for _, tc := range []struct {
		v    jsonValue
		want time.Time
	}{
		{jsonValue{jsonNumber, []byte("1790000000")}, time.Unix(1790000000, 0)},
		{jsonValue{jsonNumber, []byte("1790000000123")}, time.UnixMilli(1790000000123)},
		{jsonValue{jsonNumber, []byte("1790000000123456")}, time.UnixMicro(1790000000123456)},
		{jsonValue{jsonNumber, []byte("1506702504433000200")}, time.Unix(0, 1506702504433000200)},
		{jsonValue{jsonNumber, []byte("1790000000.5")}, time.Unix(1790000000, 5e8)},
		{jsonValue{jsonString, []byte("1790000000")}, time.Unix(1790000000, 0)},
		{jsonValue{jsonString, []byte("2026-10-10T13:55:36.123456789+02:00")}, utc("2026-10-10T11:55:36.123456789Z")},
		{jsonValue{jsonString, []byte("2026-10-10T13:55:36-0130")}, utc("2026-10-10T15:25:36Z")},
		{jsonValue{jsonString, []byte("2026-10-10T13:55:36 GMT")}, utc("2026-10-10T13:55:36Z")},
		{jsonValue{jsonString, []byte("[10/Oct/2026:13:55:36 +0000]")}, utc("2026-10-10T13:55:36Z")},
		{jsonValue{jsonString, []byte("10/Oct/2026:13:55:36 +0000")}, utc("2026-10-10T13:55:36Z")},
		{jsonValue{jsonString, []byte("2026-10-10T13:55:36+99:00")}, time.Time{}},
		{jsonValue{jsonString, []byte("2026-13-10T13:55:36Z")}, time.Time{}},
		{jsonValue{jsonString, []byte("yesterday")}, time.Time{}},
		{jsonValue{jsonString, []byte("")}, time.Time{}},
		{jsonValue{jsonNumber, []byte("-5")}, time.Time{}},
		{jsonValue{jsonNull, nil}, time.Time{}},
		{jsonValue{jsonBool, []byte("true")}, time.Time{}},
	} {
		got := timeValue(tc.v)
		if !got.Equal(tc.want) || (!got.IsZero() && got.Location() != time.UTC) {
			t.Errorf("timeValue(%s) = %v, want %v", tc.v.raw, got, tc.want)
		}
	}
}
