package traffic

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// Records as a Logpush job with sources.md's field_names sends them, in
// the three timestamp formats.
var cloudflareBatch = strings.Join([]string{
	`{"ClientIP":"203.0.113.7","ClientRequestHost":"example.com","ClientRequestMethod":"GET","ClientRequestPath":"/pricing","ClientRequestURI":"/pricing?utm_source=chatgpt.com","ClientRequestUserAgent":"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot","ClientRequestReferer":"","EdgeResponseStatus":200,"EdgeStartTimestamp":"2026-10-10T13:55:36Z","RayID":"8c1e2d3f4a5b6c7d","ClientCountry":"us","VerifiedBotCategory":"AI Crawler"}`,
	`{"ClientIP":"2001:db8::1","ClientRequestHost":"example.com","ClientRequestMethod":"GET","ClientRequestPath":"/docs/a","ClientRequestURI":"/docs/a","ClientRequestUserAgent":"Mozilla/5.0 (Windows NT 10.0) Chrome/131.0.0.0","ClientRequestReferer":"https://chatgpt.com/","EdgeResponseStatus":304,"EdgeResponseBytes":0,"EdgeStartTimestamp":1506702504433000200,"RayID":null,"ClientCountry":null,"VerifiedBotCategory":null}`,
	`{"ClientIP":"198.51.100.3","ClientRequestHost":"example.com","ClientRequestMethod":"HEAD","ClientRequestPath":"/","ClientRequestURI":"/?a=\u00e9&b=\"x\"","ClientRequestUserAgent":null,"ClientRequestReferer":null,"EdgeResponseStatus":503,"EdgeResponseBytes":1234,"EdgeStartTimestamp":1790000000}`,
	// No path field: the URI's.
	`{"ClientIP":"198.51.100.4","ClientRequestURI":"/only-uri?x=1","EdgeResponseStatus":200,"EdgeStartTimestamp":"2026-10-10T15:55:36+02:00"}`,
	// Malformed: cut short, no path at all.
	`{"ClientIP":"198.51.100.5","ClientRequestPath":"/cut`,
	`{"ClientIP":"198.51.100.6","EdgeStartTimestamp":1790000000}`,
	// No timestamp: the aggregator's to refuse.
	`{"ClientIP":"198.51.100.7","ClientRequestPath":"/x","EdgeStartTimestamp":null}`,
}, "\n") + "\n"

func TestReadCloudflare(t *testing.T) {
	var c collector
	if err := ReadCloudflare(strings.NewReader(cloudflareBatch), &c); err != nil {
		t.Fatal(err)
	}
	want := []Line{
		{Time: utc("2026-10-10T13:55:36Z"), Method: "GET", Host: "example.com", Path: "/pricing", Query: "utm_source=chatgpt.com", Status: 200,
			UserAgent: gptbotUA, ClientIP: netip.MustParseAddr("203.0.113.7")},
		{Time: time.Unix(0, 1506702504433000200).UTC(), Method: "GET", Host: "example.com", Path: "/docs/a", Status: 304,
			UserAgent: "Mozilla/5.0 (Windows NT 10.0) Chrome/131.0.0.0", Referer: "https://chatgpt.com/", ClientIP: netip.MustParseAddr("2001:db8::1")},
		{Time: time.Unix(1790000000, 0).UTC(), Method: "HEAD", Host: "example.com", Path: "/", Query: `a=é&b="x"`, Status: 503, Bytes: 1234,
			ClientIP: netip.MustParseAddr("198.51.100.3")},
		{Time: utc("2026-10-10T13:55:36Z"), Path: "/only-uri", Query: "x=1", Status: 200, ClientIP: netip.MustParseAddr("198.51.100.4")},
		{Path: "/x", ClientIP: netip.MustParseAddr("198.51.100.7")},
	}
	if len(c.lines) != len(want) {
		t.Fatalf("%d lines, want %d: %+v", len(c.lines), len(want), c.lines)
	}
	for i := range want {
		if c.lines[i] != want[i] {
			t.Errorf("line %d:\n got %+v\nwant %+v", c.nums[i], c.lines[i], want[i])
		}
	}
	if len(c.bad) != 2 || c.bad[0].n != 5 || c.bad[0].reason != "not a JSON object" || c.bad[1].n != 6 || c.bad[1].reason != "no path" {
		t.Errorf("malformed %+v", c.bad)
	}
}

func TestCloudflareValidation(t *testing.T) {
	// As Cloudflare uploads it: test.txt.gz.
	body := gz(t, []byte(`{"content":"tests"}`), "test.txt", time.Now(), 6)
	agg := NewAggregator(NewCatalog(Snapshot()), Assistant, "acc", "dom")
	b, err := Read(store.TrafficCloudflare, bytes.NewReader(body), agg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Validation || b.Lines != 0 || b.Malformed != 0 || len(agg.CrawlerHits()) != 0 {
		t.Errorf("validation batch read as %+v", b)
	}
	for _, s := range []string{`{"content":"tests"}`, " {\"content\" : \"tests\"}\n"} {
		if !IsCloudflareValidation([]byte(s)) {
			t.Errorf("%q not the validation object", s)
		}
	}
	for _, s := range []string{`{"content":"test"}`, `{"content":"tests","ClientIP":"1.2.3.4"}`, `{"content":"tests"}` + "\n" + `{"content":"tests"}`, ``} {
		if IsCloudflareValidation([]byte(s)) {
			t.Errorf("%q taken for the validation object", s)
		}
	}
	// A real batch is no validation.
	b, err = Read(store.TrafficCloudflare, strings.NewReader(cloudflareBatch), agg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b.Validation || b.Lines != 7 || b.Malformed != 3 {
		t.Errorf("batch read as %+v", b)
	}
}
