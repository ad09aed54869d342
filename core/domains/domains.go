// Package domains validates and normalizes the website domains aivis tracks.
package domains

import (
	"errors"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

var profile = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.Transitional(false), idna.StrictDomainName(true),
	idna.ValidateLabels(true), idna.VerifyDNSLength(true))

// Normalize returns the canonical form of a domain name: lower case,
// internationalized names in punycode, no trailing dot. It refuses what is
// not a public host name: schemes, ports, paths, IP addresses, single labels.
func Normalize(s string) (string, error) {
	if s == "" {
		return "", errors.New("is required")
	}
	if !utf8.ValidString(s) {
		return "", errors.New("is not valid UTF-8")
	}
	if len(s) > 253*4 {
		return "", errors.New("must be at most 253 characters")
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/:?#@ \t\r\n") {
		return "", errors.New("must be a bare domain name such as example.com, without scheme, port or path")
	}
	// One trailing dot, in any of the spellings UTS 46 maps to ".".
	for _, dot := range []string{".", "\u3002", "\uff0e", "\uff61"} {
		if t, ok := strings.CutSuffix(s, dot); ok {
			s = t
			break
		}
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return "", errors.New("must be a domain name, not an IP address")
	}
	ascii, err := profile.ToASCII(s)
	if err != nil {
		return "", errors.New("is not a valid domain name")
	}
	// The Bidi rule is checked on the name as written, before mapping; a
	// mapped name can break it (U+2137 maps to a right-to-left letter), so
	// the result must pass on its own too.
	if again, err := profile.ToASCII(ascii); err != nil || again != ascii {
		return "", errors.New("is not a valid domain name")
	}
	if len(ascii) > 253 {
		return "", errors.New("must be at most 253 characters")
	}
	labels := strings.Split(ascii, ".")
	if len(labels) < 2 {
		return "", errors.New("must have at least two labels, such as example.com")
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "", errors.New("is not a valid domain name")
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return "", errors.New("is not a valid domain name")
			}
		}
	}
	tld := labels[len(labels)-1]
	if strings.Trim(tld, "0123456789") == "" {
		return "", errors.New("is not a valid domain name: the top-level label is numeric")
	}
	return ascii, nil
}

// Covers reports whether host is domain or one of its subdomains.
func Covers(domain, host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return host == domain || strings.HasSuffix(host, "."+domain)
}
