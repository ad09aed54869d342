// Package text makes text from outside (a destination's answer, an
// engine's answer or error, a tenant's field) fit to keep and to show:
// Clean for what aivis stores of what others said, Control for what a
// tenant may send. Every engine keeps the same strings: valid UTF-8 without
// NUL (PostgreSQL's text refuses both; SQLite would keep them).
package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean returns s fit to store: NUL bytes removed, each run of bytes that
// is not UTF-8 replaced by U+FFFD, and cut to at most max bytes on a
// character boundary (max <= 0: not cut). Text that needs none of it comes
// back as it is, without a copy.
func Clean(s string, max int) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, string(utf8.RuneError))
	}
	return Cut(s, max)
}

// Cut cuts valid UTF-8 s to at most max bytes on a character boundary
// (max <= 0: not cut).
func Cut(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// Control returns the first character of s that a tenant's text may not
// hold, and whether there is one: a control character other than tab, line
// feed and carriage return (NUL among them), or a byte that is not UTF-8
// (utf8.RuneError).
func Control(s string) (rune, bool) {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return r, true
			}
			continue
		}
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return r, true
		}
	}
	return 0, false
}

// Valid reports whether s is valid UTF-8 without NUL: what every engine
// keeps as text.
func Valid(s string) bool { return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) }
