// Package netguard is the SSRF guard of every outbound call aivis makes to
// an address a user gave: webhook deliveries, pages to fetch.
//
// Only public, globally reachable unicast addresses may be reached, unless a
// Policy opens more (AllowPrivate, or an allow-list of prefixes).
//
// The check is made at dial time, in net.Dialer.ControlContext, on the very
// IP address the socket is about to connect to, after DNS resolution. A check
// of the host name before the request is not enough: the name may resolve to
// a private address, or be re-pointed to one between the check and the
// connection (DNS rebinding), and a redirect or an environment proxy would
// send the request elsewhere. So the client built here also follows no
// redirects and uses no proxy. CheckURL is only the early, friendly check of
// a URL a user types; the dialer is the guard.
package netguard

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// ErrBlocked is wrapped by every refusal of this package (errors.Is).
var ErrBlocked = errors.New("netguard: address not allowed")

// refusal is the error of a refused address or network: its message says
// why ("netguard: 10.0.0.1 is a private address") and it wraps ErrBlocked.
type refusal struct{ msg string }

func (e *refusal) Error() string { return "netguard: " + e.msg }
func (e *refusal) Unwrap() error { return ErrBlocked }

func refuse(format string, args ...any) error { return &refusal{fmt.Sprintf(format, args...)} }

// Policy says which addresses outbound calls may reach: public, globally
// reachable unicast addresses only, unless opened. The zero Policy is the
// strict one.
type Policy struct {
	// AllowPrivate lets calls reach any address: on-premises receivers,
	// tests.
	AllowPrivate bool
	// Allow lists prefixes reachable although blocked, such as
	// 127.0.0.1/32 for a local test receiver. A prefix opens the addresses
	// it contains and their IPv4-mapped IPv6 forms, nothing else (not the
	// NAT64 or 6to4 addresses that embed them).
	Allow []netip.Prefix
}

type rng struct {
	prefix netip.Prefix
	why    string
}

func r(prefix, why string) rng { return rng{netip.MustParsePrefix(prefix), why} }

// blocked4 lists the IPv4 ranges refused: the IANA IPv4 special-purpose
// registry entries that are not globally reachable, plus multicast and the
// reserved 240/4. More specific entries come first, for the message.
var blocked4 = []rng{
	r("255.255.255.255/32", "the broadcast address"),
	r("169.254.169.254/32", "a cloud metadata address"),
	r("0.0.0.0/32", "the unspecified address"),
	r("0.0.0.0/8", "a \"this network\" address"),
	r("10.0.0.0/8", "a private address"),
	r("100.64.0.0/10", "a carrier-grade NAT (shared) address"),
	r("127.0.0.0/8", "a loopback address"),
	r("169.254.0.0/16", "a link-local address"),
	r("172.16.0.0/12", "a private address"),
	r("192.0.0.0/24", "an IETF protocol assignment address"),
	r("192.0.2.0/24", "a documentation address"),
	r("192.88.99.0/24", "a 6to4 relay anycast address"),
	r("192.168.0.0/16", "a private address"),
	r("198.18.0.0/15", "a benchmarking address"),
	r("198.51.100.0/24", "a documentation address"),
	r("203.0.113.0/24", "a documentation address"),
	r("224.0.0.0/4", "a multicast address"),
	r("240.0.0.0/4", "a reserved address"),
}

// blocked6 lists the IPv6 ranges refused outright: the IANA IPv6
// special-purpose registry entries that are not globally reachable (all of
// 2001::/23, Teredo included), site-local and multicast. The forms that
// embed an IPv4 address are judged by it (see embedded), and whatever is
// outside 2000::/3, the global unicast space, is refused as well.
var blocked6 = []rng{
	r("::/128", "the unspecified address"),
	r("::1/128", "a loopback address"),
	r("64:ff9b:1::/48", "a local-use NAT64 address"),
	r("100::/64", "a discard-only address"),
	r("100:0:0:1::/64", "a dummy address"),
	r("2001::/32", "a Teredo address"),
	r("2001:db8::/32", "a documentation address"),
	r("2001::/23", "an IETF protocol assignment address"),
	r("3fff::/20", "a documentation address"),
	r("5f00::/16", "a segment routing (SRv6) address"),
	r("fd00:ec2::254/128", "a cloud metadata address"),
	r("fc00::/7", "a unique-local (private) address"),
	r("fe80::/10", "a link-local address"),
	r("fec0::/10", "a site-local address"),
	r("ff00::/8", "a multicast address"),
}

var (
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
	compatible  = netip.MustParsePrefix("::/96")
	globalSpace = netip.MustParsePrefix("2000::/3")
)

// embedded returns the IPv4 address that an IPv6 address of a form reaching
// IPv4 hosts carries, and the name of the form: NAT64 (64:ff9b::/96), 6to4
// (2002::/16) and IPv4-compatible (::a.b.c.d). IPv4-mapped addresses are
// unmapped before this.
func embedded(a netip.Addr) (netip.Addr, string, bool) {
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), "a NAT64 address", true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), "a 6to4 address", true
	case compatible.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), "an IPv4-compatible address", true
	}
	return netip.Addr{}, "", false
}

// reason says why addr (zoneless) is blocked, "" if it is not.
func reason(a netip.Addr) string {
	if a.Is4() {
		for _, b := range blocked4 {
			if b.prefix.Contains(a) {
				return b.why
			}
		}
		return ""
	}
	for _, b := range blocked6 {
		if b.prefix.Contains(a) {
			return b.why
		}
	}
	if v4, form, ok := embedded(a); ok {
		if why := reason(v4); why != "" {
			return fmt.Sprintf("%s embedding %s, %s", form, v4, why)
		}
		return ""
	}
	if !globalSpace.Contains(a) {
		return "not a global unicast address"
	}
	return ""
}

// allowed reports whether the allow-list opens a (zoneless, unmapped).
func (p Policy) allowed(a netip.Addr) bool {
	for _, pr := range p.Allow {
		if !pr.IsValid() {
			continue
		}
		if pr.Addr().Is4In6() && pr.Bits() >= 96 {
			pr = netip.PrefixFrom(pr.Addr().Unmap(), pr.Bits()-96)
		}
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// Check reports whether addr may be dialled; the error, which wraps
// ErrBlocked, says why not (e.g. "netguard: 10.0.0.1 is a private
// address"). An IPv4-mapped IPv6 address is judged as the IPv4 address it
// maps; a zone is ignored.
func (p Policy) Check(addr netip.Addr) error {
	if !addr.IsValid() {
		return refuse("invalid address")
	}
	if p.AllowPrivate {
		return nil
	}
	a := addr.WithZone("").Unmap()
	if p.allowed(a) {
		return nil
	}
	why := reason(a)
	switch {
	case why == "":
		return nil
	case a != addr.WithZone(""):
		return refuse("%s (%s) is %s", addr, a, why)
	default:
		return refuse("%s is %s", addr, why)
	}
}

// Dialer returns a dialer that refuses, before connecting, every address
// the policy blocks and every network but TCP. The check runs in
// ControlContext on each resolved address the dialer tries, so a name
// resolving to several addresses reaches only the allowed ones, and fails
// with an error wrapping ErrBlocked if none is. Callers may tune the
// returned dialer (its Resolver, KeepAlive...) but must not replace
// ControlContext or Control.
func (p Policy) Dialer(timeout time.Duration) *net.Dialer {
	p.Allow = slices.Clone(p.Allow)
	return &net.Dialer{
		Timeout: timeout,
		ControlContext: func(_ context.Context, network, address string, _ syscall.RawConn) error {
			if network != "tcp4" && network != "tcp6" {
				return refuse("network %s is not allowed, only TCP", network)
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return refuse("cannot check address %q: %v", address, err)
			}
			return p.Check(ap.Addr())
		},
	}
}

// Transport returns the guarded transport of Client: the policy's dialer,
// no proxy (a proxy, such as one named by HTTP_PROXY or HTTPS_PROXY, would
// connect on our behalf, past the guard), TLS 1.2 or later, HTTP/2 when the
// server offers it, and bounded waits and idle connections.
func (p Policy) Transport() *http.Transport {
	return &http.Transport{
		Proxy:             nil,
		DialContext:       p.Dialer(10 * time.Second).DialContext,
		TLSClientConfig:   &tls.Config{MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
		// Many endpoints share a host (an automation platform's hooks,
		// say): as many idle connections to one host as attempts in flight.
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    256,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  30 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// Client returns an http.Client for outbound calls: the guarded Transport,
// redirects not followed (a 3xx is returned as the response, so a receiver
// cannot bounce the call to another address), and timeout for the whole of
// each request (0: none).
func (p Policy) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     p.Transport(),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckURL validates a URL a user gives, before any request is made: an
// absolute https URL (http too when allowHTTP), with a host, no user name
// or password, no fragment, a port from 1 to 65535 if any. An IP-literal
// host is checked against the policy at once, as is the name localhost. It
// does not resolve names: the dialer checks what they resolve to. Its
// errors are phrased for an API user ("must use https").
func (p Policy) CheckURL(raw string, allowHTTP bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return nil, errors.New("must be an absolute URL such as https://hooks.example.com/aivis")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowHTTP {
			return nil, errors.New("must use https")
		}
	default:
		if allowHTTP {
			return nil, errors.New("must use http or https")
		}
		return nil, errors.New("must use https")
	}
	if u.User != nil {
		return nil, errors.New("must not contain a user name or password")
	}
	if strings.Contains(raw, "#") {
		return nil, errors.New("must not have a #fragment")
	}
	host := u.Hostname()
	if host == "" {
		return nil, errors.New("must have a host")
	}
	if port := u.Port(); port != "" || strings.HasSuffix(u.Host, ":") {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, errors.New("must have a port from 1 to 65535")
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return nil, errors.New("must not name a network interface (zone) in its host")
		}
		if err := p.Check(a); err != nil {
			return nil, fmt.Errorf("must point to a public address: %s", strings.TrimPrefix(err.Error(), "netguard: "))
		}
		return u, nil
	}
	name, err := checkHostname(host)
	if err != nil {
		return nil, err
	}
	if h := strings.ToLower(name); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		if p.Check(netip.IPv6Loopback()) != nil && p.Check(netip.AddrFrom4([4]byte{127, 0, 0, 1})) != nil {
			return nil, fmt.Errorf("must point to a public address: %s is a loopback name", host)
		}
	}
	return u, nil
}

// checkHostname refuses a host that is not a plausible DNS name, and one
// that URL parsers and resolvers may read as an IPv4 address in a
// non-standard form (127.1, 0x7f000001, 2130706433, 1.2.3.4.5): by the URL
// standard a host whose last label is numeric is an IPv4 address. A
// non-ASCII (internationalised) name is judged by its ASCII form, as
// net/http converts it, so full-width digits and dots cannot hide one. It
// returns that ASCII form, without a final dot.
func checkHostname(host string) (string, error) {
	invalid := errors.New("must have a valid host name")
	name := host
	if !isASCII(name) {
		a, err := idna.Lookup.ToASCII(name)
		if err != nil {
			return "", invalid
		}
		name = a
	}
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 {
		return "", invalid
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", invalid
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; c != '-' && c != '_' && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
				return "", invalid
			}
		}
	}
	if last := labels[len(labels)-1]; isNumber(last) {
		if a, err := netip.ParseAddr(name); err == nil {
			return "", fmt.Errorf("must have a valid host name: %s reads as the IP address %s", host, a)
		}
		return "", fmt.Errorf("must have a valid host name: %s is not a valid IP address", host)
	}
	return name, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// isNumber reports whether a label is a number as the URL standard's IPv4
// parser reads one: decimal, or hexadecimal after 0x.
func isNumber(l string) bool {
	digits, hex := l, false
	if len(l) >= 2 && (l[:2] == "0x" || l[:2] == "0X") {
		digits, hex = l[2:], true
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		switch {
		case c >= '0' && c <= '9':
		case hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
		default:
			return false
		}
	}
	return hex || digits != ""
}
