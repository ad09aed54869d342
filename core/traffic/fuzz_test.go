package traffic

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aivis/aivis/core/store"
)

// checkSink checks what a reader gives: every request has a path, every
// record a number after the last, every excerpt is short and valid.
type checkSink struct {
	t    *testing.T
	last int
	agg  *Aggregator
}

func (c *checkSink) Line(n int, raw []byte, l *Line) {
	if l.Path == "" || strings.Contains(l.Path, "?") || n <= c.last {
		c.t.Errorf("record %d (after %d): %+v", n, c.last, l)
	}
	c.last = n
	c.agg.Line(n, raw, l)
}

func (c *checkSink) Malformed(n int, raw []byte, reason string) {
	if reason == "" || n <= c.last {
		c.t.Errorf("malformed record %d (after %d): %q", n, c.last, reason)
	}
	c.last = n
	if e := Excerpt(raw); len(e) > 200 || !utf8.ValidString(e) {
		c.t.Errorf("excerpt %q", e)
	}
	c.agg.Malformed(n, raw, reason)
}

func FuzzReaders(f *testing.F) {
	for _, s := range []string{
		cloudflareBatch,
		"[" + strings.Join(vercelEntries, ",") + "]",
		strings.Join(vercelEntries, "\n"),
		`203.0.113.7 - - [10/Oct/2026:13:55:36 +0000] "GET /pricing?utm_source=chatgpt.com HTTP/1.1" 200 5123 "https://chatgpt.com/" "` + gptbotUA + `"`,
		`{"time":"[","url":"/","request":"GET  "}`,
		`[{"a":[1,{"b":"\u00e9\ud83d\ude00"}]},"x",{]`,
		`{"content":"tests"}`,
	} {
		f.Add(s)
	}
	cat := NewCatalog(Snapshot())
	f.Fuzz(func(t *testing.T, s string) {
		for _, read := range readers {
			c := &checkSink{t: t, agg: NewAggregator(cat, Assistant, "a", "d")}
			if err := read(strings.NewReader(s), c); err != nil {
				t.Fatal(err)
			}
			for _, h := range c.agg.CrawlerHits() {
				if len(h.Page) > store.MaxTrafficPage || !h.Day.Equal(h.Day.Truncate(24*60*60*1e9)) {
					t.Errorf("hits %+v", h)
				}
			}
		}
		IsCloudflareValidation([]byte(s))
		if _, err := Read(store.TrafficFile, bytes.NewReader([]byte(s)), NewAggregator(cat, Assistant, "a", "d"), 0); err != nil && len(s) > 1 && s[0] != 0x1f {
			t.Fatal(err)
		}
	})
}
