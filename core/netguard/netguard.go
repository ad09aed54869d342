// Package netguard is the SSRF guard of every outbound call aivis makes to
// an address a user gave (webhook endpoints, pages to fetch).
//
// The check is made at dial time, on the address actually connected to,
// after DNS resolution: a check of the name before the request would let a
// name that resolves to a private address, or is re-pointed to one between
// the check and the request (DNS rebinding), through.
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
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrBlocked is wrapped by every refusal.
var ErrBlocked = errors.New("netguard: address not allowed")

// Policy says which addresses outbound calls may reach: public unicast
// addresses only, unless opened.
type Policy struct {
	// AllowPrivate lets calls reach any address (on-premises receivers).
	AllowPrivate bool
	// Allow lists prefixes reachable although blocked (a local receiver).
	Allow []netip.Prefix
}

// blocked lists the special-purpose ranges (IANA registries) that are not
// globally reachable, with the reason given to users.
var blocked = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address (cloud metadata lives here)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::/128"), "the unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address"},
	{netip.MustParsePrefix("2001::/23"), "an IETF protocol address"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("fc00::/7"), "a unique-local (private) address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// embedded returns the IPv4 address an IPv6 address carries in the forms
// that reach IPv4 hosts: IPv4-mapped, IPv4-compatible, NAT64 (64:ff9b::/96
// and 64:ff9b:1::/48) and 6to4 (2002::/16).
func embedded(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case a.Is4In6():
		return a.Unmap(), true
	case b[0] == 0 && b[1] == 0 && [10]byte(b[2:12]) == [10]byte{}: // ::a.b.c.d
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case netip.MustParsePrefix("64:ff9b::/96").Contains(a), netip.MustParsePrefix("64:ff9b:1::/48").Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case b[0] == 0x20 && b[1] == 0x02:
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// Check reports whether addr may be dialled.
func (p Policy) Check(addr netip.Addr) error {
	if !addr.IsValid() {
		return fmt.Errorf("%w: invalid address", ErrBlocked)
	}
	addr = addr.WithZone("")
	if p.AllowPrivate {
		return nil
	}
	for _, a := range p.Allow {
		if a.Contains(addr) || (addr.Is4In6() && a.Contains(addr.Unmap())) {
			return nil
		}
	}
	check := addr
	if v4, ok := embedded(addr); ok {
		if v4.IsUnspecified() && !addr.Is4In6() {
			// ::/96 with a zero tail is the unspecified address itself.
			return fmt.Errorf("%w: %s is the unspecified address", ErrBlocked, addr)
		}
		if err := p.Check(v4); err != nil {
			return fmt.Errorf("%w: %s carries %s", ErrBlocked, addr, v4)
		}
		check = v4
	}
	for _, b := range blocked {
		if b.prefix.Contains(check) {
			return fmt.Errorf("%w: %s is %s", ErrBlocked, addr, b.why)
		}
	}
	if check == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return fmt.Errorf("%w: %s is the broadcast address", ErrBlocked, addr)
	}
	return nil
}

// Dialer is a dialer that refuses addresses the policy blocks, checked on
// each address it connects to, after resolution.
func (p Policy) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{
		Timeout: timeout,
		ControlContext: func(_ context.Context, network, address string, _ syscall.RawConn) error {
			if network != "tcp4" && network != "tcp6" {
				return fmt.Errorf("%w: network %s", ErrBlocked, network)
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s: %v", ErrBlocked, address, err)
			}
			return p.Check(ap.Addr())
		},
	}
}

// Transport is the guarded transport of Client: no proxy (an environment
// proxy would dial on the caller's behalf, past the guard), TLS 1.2+.
func (p Policy) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            p.Dialer(10 * time.Second).DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           512,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  60 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// Client is an http.Client for outbound calls: guarded, no redirects
// followed (a 3xx is returned as it is), timeout per request.
func (p Policy) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     p.Transport(),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckURL validates a URL a user gives before any request is made: an
// absolute http(s) URL (http only with allowHTTP) with a host, no
// credentials, a valid port; an IP-literal host is checked against the
// policy at once. Its errors are fit to show the user.
func (p Policy) CheckURL(raw string, allowHTTP bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return nil, errors.New("must be an absolute URL such as https://hooks.example.com/aivis")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowHTTP {
			return nil, errors.New("must be https://")
		}
	default:
		return nil, errors.New("must be an https:// URL")
	}
	if u.User != nil {
		return nil, errors.New("must not carry credentials")
	}
	host := u.Hostname()
	if host == "" {
		return nil, errors.New("must have a host")
	}
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return nil, errors.New("has an invalid port")
		}
	}
	if strings.HasSuffix(u.Host, ":") {
		return nil, errors.New("has an invalid port")
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if err := p.Check(a); err != nil {
			return nil, fmt.Errorf("must be a public address: %s", strings.TrimPrefix(err.Error(), ErrBlocked.Error()+": "))
		}
	} else if h := strings.ToLower(strings.TrimSuffix(host, ".")); (h == "localhost" || strings.HasSuffix(h, ".localhost")) && !p.AllowPrivate {
		return nil, errors.New("must be a public address: localhost is a loopback name")
	}
	return u, nil
}
