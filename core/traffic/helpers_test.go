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
