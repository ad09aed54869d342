package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 0, "plain"},
		{"bad\x00request", 0, "badrequest"},
		{"\x00\x00", 0, ""},
		{"\xff\xfebody", 0, "\uFFFDbody"},
		{"a\xffb\x00c", 0, "a\uFFFDbc"},
		{"héllo", 2, "h"},     // é is two bytes: not cut in its middle
		{"héllo", 3, "hé"},    // exactly after it
		{"日本語", 4, "日"},       // three bytes a character
		{"abc", 3, "abc"},     // at the bound
		{"abc\x00", 3, "abc"}, // NUL gone before the cut
		{"\xff", 2, ""},       // U+FFFD is three bytes
	} {
		got := Clean(c.in, c.max)
		if got != c.want {
			t.Errorf("Clean(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
		if !Valid(got) || (c.max > 0 && len(got) > c.max) {
			t.Errorf("Clean(%q, %d) = %q: not fit to store", c.in, c.max, got)
		}
	}
}

func TestCleanKeepsCleanTextWithoutACopy(t *testing.T) {
	s := strings.Repeat("ok ", 100)
	if got := Clean(s, 0); got != s {
		t.Fatalf("Clean changed clean text to %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { Clean(s, 1000) }); n != 0 {
		t.Errorf("Clean of clean text allocates %v times", n)
	}
}

func TestControl(t *testing.T) {
	for _, c := range []struct {
		in   string
		want rune
		bad  bool
	}{
		{"hello", 0, false},
		{"tab\there\r\nnew line", 0, false},
		{"hello\x00", 0, true},
		{"bell\a", '\a', true},
		{"del\x7f", 0x7f, true},
		{"c1\u0085", 0x85, true},
		{"bad \xff byte", utf8.RuneError, true},
		{"a real \uFFFD is text", 0, false},
		{"日本語", 0, false},
	} {
		r, bad := Control(c.in)
		if bad != c.bad || r != c.want {
			t.Errorf("Control(%q) = %q, %v; want %q, %v", c.in, r, bad, c.want, c.bad)
		}
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "plain", "bad\x00request", "\xff\xfe", "héllo", "日本語\x00\xc3"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		got := Clean(s, max)
		if !Valid(got) {
			t.Fatalf("Clean(%q, %d) = %q: not valid text", s, max, got)
		}
		if max > 0 && len(got) > max {
			t.Fatalf("Clean(%q, %d) = %q: longer than %d", s, max, got, max)
		}
		if Valid(s) && (max <= 0 || len(s) <= max) && got != s {
			t.Fatalf("Clean(%q, %d) changed clean text to %q", s, max, got)
		}
		if !strings.HasPrefix(Clean(s, 0), got) {
			t.Fatalf("Clean(%q, %d) = %q is not a start of the whole cleaned text", s, max, got)
		}
	})
}
