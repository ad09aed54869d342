package domains_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aivis/aivis/core/domains"
)

var (
	l63 = strings.Repeat("a", 63)
	// 63+1+63+1+63+1+61 = 253 characters.
	name253 = l63 + "." + l63 + "." + l63 + "." + strings.Repeat("b", 61)
)

func TestNormalizeAccepts(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"example.com", "example.com"},
		{"EXAMPLE.com.", "example.com"},
		{"Example.COM", "example.com"},
		{"sub.example.co.uk", "sub.example.co.uk"},
		{"a.b.c.d.example.com", "a.b.c.d.example.com"},
		{"xn--bcher-kva.de", "xn--bcher-kva.de"},
		{"XN--BCHER-KVA.DE", "xn--bcher-kva.de"},
		{"bücher.de", "xn--bcher-kva.de"},
		{"BÜCHER.de", "xn--bcher-kva.de"},
		{"пример.рф", "xn--e1afmkfd.xn--p1ai"},
		{"faß.de", "xn--fa-hia.de"},    // nontransitional: ß is kept
		{"example。com", "example.com"}, // ideographic full stop is a dot
		{"123.com", "123.com"},
		{"a-b.example", "a-b.example"},
		{"a.b", "a.b"},
		{"x.xn--p1ai", "x.xn--p1ai"},
		{l63 + ".com", l63 + ".com"},
		{name253, name253},
		{name253 + ".", name253},
	} {
		got, err := domains.Normalize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestNormalizeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, in string
	}{
		{"empty", ""},
		{"single label", "localhost"},
		{"single label with dot", "localhost."},
		{"only a TLD", "com"},
		{"scheme", "http://x.com"},
		{"https scheme", "https://example.com"},
		{"scheme-relative", "//example.com"},
		{"port", "x.com:443"},
		{"path", "x.com/path"},
		{"trailing slash", "example.com/"},
		{"query", "example.com?a=b"},
		{"fragment", "example.com#top"},
		{"userinfo", "user@example.com"},
		{"IPv4", "192.168.1.1"},
		{"IPv4 with dot", "192.168.1.1."},
		{"IPv4 loopback", "127.0.0.1"},
		{"IPv4 short form", "127.1"},
		{"IPv4 leading zeros", "010.000.000.001"},
		{"IPv6", "::1"},
		{"IPv6 full", "2001:db8::1"},
		{"IPv6 bracketed", "[2001:db8::1]"},
		{"IPv4-mapped IPv6", "::ffff:1.2.3.4"},
		{"label of 64", strings.Repeat("a", 64) + ".com"},
		{"TLD of 64", "example." + strings.Repeat("a", 64)},
		{"254 characters", name253 + "b"},
		{"very long", strings.Repeat("a.", 2000) + "com"},
		{"leading hyphen", "-example.com"},
		{"trailing hyphen", "example-.com"},
		{"TLD leading hyphen", "example.-com"},
		{"hyphens in 3rd and 4th place", "ab--cd.com"},
		{"underscore", "my_site.com"},
		{"underscore label", "_dmarc.example.com"},
		{"space", "exa mple.com"},
		{"leading space", " example.com"},
		{"trailing space", "example.com "},
		{"tab", "example.com\t"},
		{"newline", "example.com\n"},
		{"CRLF injection", "example.com\r\nX-Evil: 1"},
		{"NUL", "exa\x00mple.com"},
		{"DEL", "exa\x7fmple.com"},
		{"bell", "exa\ample.com"},
		{"numeric TLD", "example.123"},
		{"numeric name", "1.2.3.4.5"},
		{"Arabic-Indic digit TLD", "example.١٢٣"},
		{"empty label", "example..com"},
		{"two trailing dots", "example.com.."},
		{"leading dot", ".example.com"},
		{"only dots", "..."},
		{"bad punycode", "xn--a.com"},
		{"percent", "exa%6dple.com"},
		{"backslash", "example.com\\evil.com"},
		{"asterisk", "*.example.com"},
		{"right-to-left override", "a\u202eb.com"},
		{"bidi mix", "abا.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := domains.Normalize(tc.in)
			if err == nil {
				t.Fatalf("Normalize(%q) = %q, want an error", tc.in, got)
			}
			if got != "" {
				t.Fatalf("Normalize(%q) returned %q with its error", tc.in, got)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
		})
	}
}

func TestNormalizeMessages(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "is required"},
		{"localhost", "two labels"},
		{"https://example.com", "without scheme, port or path"},
		{"example.com:8080", "without scheme, port or path"},
		{"10.0.0.1", "not an IP address"},
		{"example.123", "numeric"},
	} {
		_, err := domains.Normalize(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Normalize(%q) error %v, want one mentioning %q", tc.in, err, tc.want)
		}
	}
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		domain, host string
		want         bool
	}{
		{"example.com", "example.com", true},
		{"example.com", "EXAMPLE.COM", true},
		{"example.com", "example.com.", true},
		{"example.com", "www.example.com", true},
		{"example.com", "a.b.example.com", true},
		{"example.com", "WWW.Example.Com.", true},
		{"example.com", "notexample.com", false},
		{"example.com", "example.com.evil.net", false},
		{"example.com", "example.co", false},
		{"example.com", "com", false},
		{"example.com", "", false},
		{"example.com", ".example.com", true}, // a leading dot is not a real host; Covers only compares suffixes
		{"sub.example.com", "example.com", false},
		{"sub.example.com", "x.sub.example.com", true},
		{"xn--bcher-kva.de", "xn--bcher-kva.de", true},
	} {
		if got := domains.Covers(tc.domain, tc.host); got != tc.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", tc.domain, tc.host, got, tc.want)
		}
	}
}

// FuzzNormalize: whatever comes in, an accepted name is canonical: lower
// case LDH labels of 1 to 63, at most 253 in all, two labels at least, not
// numeric at the top, and normalizing it again changes nothing.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"example.com", "EXAMPLE.com.", "bücher.de", "xn--bcher-kva.de", "a.b", "1.2.3.4",
		"::1", "x.com:443", name253, "пример.рф", "example。com", "ex\u200bample.com", "a\u202eb.com", "ß.de", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := domains.Normalize(s)
		if err != nil {
			if out != "" {
				t.Fatalf("Normalize(%q) = %q with error %v", s, out, err)
			}
			return
		}
		if len(out) > 253 || !utf8.ValidString(out) {
			t.Fatalf("Normalize(%q) = %q: too long or not UTF-8", s, out)
		}
		labels := strings.Split(out, ".")
		if len(labels) < 2 {
			t.Fatalf("Normalize(%q) = %q: fewer than two labels", s, out)
		}
		for _, l := range labels {
			if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
				t.Fatalf("Normalize(%q) = %q: bad label %q", s, out, l)
			}
			for _, c := range []byte(l) {
				if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
					t.Fatalf("Normalize(%q) = %q: byte %q", s, out, c)
				}
			}
		}
		if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
			t.Fatalf("Normalize(%q) = %q: numeric TLD", s, out)
		}
		again, err := domains.Normalize(out)
		if err != nil || again != out {
			t.Fatalf("Normalize is not idempotent: %q -> %q -> %q, %v", s, out, again, err)
		}
		if !domains.Covers(out, out) || !domains.Covers(out, "www."+out) {
			t.Fatalf("Covers(%q) does not cover itself", out)
		}
	})
}

// TestNormalizeRefusesInvalidUTF8: idna would map each bad byte to U+FFFD
// and punycode it into a name no DNS name can be; query parameters reach
// Normalize without a UTF-8 check, so it refuses such input itself.
func TestNormalizeRefusesInvalidUTF8(t *testing.T) {
	for _, in := range []string{"ex\xffample.com", "\xb3.a", "example.c\xc3"} {
		if got, err := domains.Normalize(in); err == nil {
			again, err2 := domains.Normalize(got)
			t.Errorf("Normalize(%q) = %q, want an error (normalizing that again: %q, %v)", in, got, again, err2)
		}
	}
	// The same name as JSON would deliver it (U+FFFD) is refused.
	if got, err := domains.Normalize("ex\ufffdample.com"); err == nil {
		t.Errorf("Normalize(U+FFFD) = %q", got)
	}
}

// TestNormalizeTrailingIdeographicStop: UTS 46 maps the ideographic full
// stop (U+3002) and its fullwidth and halfwidth forms (U+FF0E, U+FF61) to
// ".", and Normalize accepts them between labels ("example。com") and
// accepts a trailing "." ("example.com."), but it strips the trailing dot
// before the mapping, so the same trailing dot written as U+3002 becomes
// an empty last label and the name is refused.
func TestNormalizeTrailingIdeographicStop(t *testing.T) {
	for _, in := range []string{"example.com\u3002", "example.com\uff0e", "example.com\uff61", "bücher\u3002de\u3002"} {
		got, err := domains.Normalize(in)
		if want, _ := domains.Normalize(strings.NewReplacer("\u3002", ".", "\uff0e", ".", "\uff61", ".").Replace(in)); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q like its ASCII spelling", in, got, err, want)
		}
	}
}

// TestNormalizeEquivalentSpellings: spellings UTS 46 maps to one name all
// normalize to it.
func TestNormalizeEquivalentSpellings(t *testing.T) {
	for _, tc := range []struct {
		want string
		ins  []string
	}{
		{"example.com", []string{"example.com", "EXAMPLE.COM", "Example.Com.", "ｅｘａｍｐｌｅ．ｃｏｍ", "example\uff0ecom", "example\uff61com", "ex\u00adample.com"}},
		{"xn--bcher-kva.de", []string{"bücher.de", "BÜCHER.DE", "bu\u0308cher.de", "xn--bcher-kva.de", "XN--BCHER-KVA.de."}},
		{"xn--r8jz45g.xn--zckzah", []string{"例え.テスト", "xn--r8jz45g.xn--zckzah"}},
	} {
		for _, in := range tc.ins {
			if got, err := domains.Normalize(in); err != nil || got != tc.want {
				t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, tc.want)
			}
		}
	}
	// Mapped characters that UTS 46 turns into syntax are still refused.
	for _, in := range []string{"example.com\uff1a443", "example.com\uff0fpath", "exa\u3000mple.com", "example\uff20com.evil"} {
		if got, err := domains.Normalize(in); err == nil {
			t.Errorf("Normalize(%q) = %q, want an error", in, got)
		}
	}
}

// TestNormalizeAcceptsItsOwnOutput: Normalize checks the IDNA Bidi rule
// (RFC 5893) on the name as written, before UTS 46 mapping. The Hebrew
// letterlike symbols U+2135..U+2138 (ℵℶℷℸ) are left-to-right, but map to
// the Hebrew letters א..ד, which are right-to-left: "ℷa.com" passes and
// becomes "xn--a-3hc.com", a label that mixes right-to-left and
// left-to-right, which Normalize itself refuses, as it refuses "גa.com".
// A content request stored with that domain cannot then be listed by it.
// (Found by FuzzNormalize: "ℷA.A" -> "xn--a-3hc.a" -> refused.)
func TestNormalizeAcceptsItsOwnOutput(t *testing.T) {
	for _, in := range []string{"ℷA.A", "ℷa.com", "aℵ.com", "ℶb.example", "x.ℸa", "גa.com"} {
		out, err := domains.Normalize(in)
		if err != nil {
			continue // refusing is right too
		}
		if again, err := domains.Normalize(out); err != nil || again != out {
			t.Errorf("Normalize(%q) = %q, but Normalize(%q) = %q, %v", in, out, out, again, err)
		}
	}
	// The symbols alone are fine: the label is all right-to-left after mapping.
	for in, want := range map[string]string{"ℷ.com": "xn--6db.com", "ℵ1.com": "xn--1-zhc.com"} {
		if got, err := domains.Normalize(in); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
