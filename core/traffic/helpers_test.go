package traffic

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"time"
)

// collector is a Sink that keeps copies of what a reader gives.
type collector struct {
	lines []Line
	nums  []int
	bad   []badRecord
}

type badRecord struct {
	n      int
	raw    string
	reason string
}

func (c *collector) Line(n int, raw []byte, l *Line) {
	cp := *l
	cp.Method = strings.Clone(l.Method)
	cp.Host = strings.Clone(l.Host)
	cp.Path = strings.Clone(l.Path)
	cp.Query = strings.Clone(l.Query)
	cp.Referer = strings.Clone(l.Referer)
	cp.UserAgent = strings.Clone(l.UserAgent)
	c.lines = append(c.lines, cp)
	c.nums = append(c.nums, n)
}

func (c *collector) Malformed(n int, raw []byte, reason string) {
	c.bad = append(c.bad, badRecord{n: n, raw: string(raw), reason: reason})
}

// gz is b gzip-compressed with header name.
func gz(t testing.TB, b []byte, name string, mod time.Time, level int) []byte {
	t.Helper()
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, level)
	if err != nil {
		t.Fatal(err)
	}
	zw.Name, zw.ModTime = name, mod
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// standInAssistant tells the assistant of a referer's host or of
// utm_source, as sources.md 4b lists them.
func standInAssistant(referer, query string) (string, bool) {
	for _, kv := range strings.Split(query, "&") {
		if v, ok := strings.CutPrefix(kv, "utm_source="); ok && (v == "chatgpt.com" || v == "chatgpt") {
			return "chatgpt", true
		}
	}
	host := referer
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	host = strings.ToLower(host)
	for _, s := range []struct{ host, name string }{
		{"chatgpt.com", "chatgpt"}, {"chat.openai.com", "chatgpt"}, {"perplexity.ai", "perplexity"},
		{"gemini.google.com", "gemini"}, {"copilot.microsoft.com", "copilot"}, {"claude.ai", "claude"},
	} {
		if host == s.host || strings.HasSuffix(host, "."+s.host) {
			return s.name, true
		}
	}
	return "", false
}
