package netguard_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/aivis/aivis/core/netguard"
)

func TestCheckRefuses(t *testing.T) {
	var p netguard.Policy
	for _, tc := range []struct{ addr, why string }{
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this network"},
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fc00::1", "unique-local"},
		{"fdff:ffff::1", "unique-local"},
		{"169.254.0.1", "link-local"},
		{"fe80::1", "link-local"},
		{"febf::1", "link-local"},
		{"169.254.169.254", "cloud metadata"},
		{"fd00:ec2::254", "cloud metadata"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"ff0e::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"100.100.100.200", "carrier-grade NAT"},
		{"192.0.0.8", "IETF protocol"},
		{"192.0.0.170", "IETF protocol"},
		{"192.0.2.1", "documentation"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"2001:db8::1", "documentation"},
		{"3fff::1", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"192.88.99.1", "6to4 relay"},
		{"240.0.0.1", "reserved"},
		{"254.255.255.255", "reserved"},
		{"100::1", "discard-only"},
		{"100:0:0:1::1", "dummy"},
		{"2001::1", "Teredo"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"},
		{"2001:2::1", "IETF protocol"},
		{"2001:10::1", "IETF protocol"},
		{"5f00::1", "segment routing"},
		{"fec0::1", "site-local"},
		{"64:ff9b:1::a00:1", "local-use NAT64"},
		// IPv4-mapped, judged by the IPv4 address.
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:169.254.169.254", "cloud metadata"},
		{"::ffff:0.0.0.0", "unspecified"},
		// IPv4-compatible.
		{"::127.0.0.1", "loopback"},
		{"::10.0.0.1", "private"},
		{"::0.0.0.2", "this network"},
		// NAT64 embedding a blocked IPv4 address.
		{"64:ff9b::7f00:1", "NAT64 address embedding 127.0.0.1, a loopback"},
		{"64:ff9b::a00:1", "NAT64 address embedding 10.0.0.1, a private"},
		{"64:ff9b::a9fe:a9fe", "NAT64 address embedding 169.254.169.254"},
		// 6to4 embedding a blocked IPv4 address.
		{"2002:7f00:1::1", "6to4 address embedding 127.0.0.1"},
		{"2002:a00:1::", "6to4 address embedding 10.0.0.1"},
		{"2002:c0a8:101:1::1", "6to4 address embedding 192.168.1.1"},
		// Outside the global unicast space.
		{"4000::1", "not a global unicast"},
		{"::ffff:0:a00:1", "not a global unicast"},
		{"1::1", "not a global unicast"},
		// A zone does not change the verdict.
		{"fe80::1%eth0", "link-local"},
	} {
		err := p.Check(netip.MustParseAddr(tc.addr))
		if !errors.Is(err, netguard.ErrBlocked) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("Check(%s) = %v, want a refusal saying %q", tc.addr, err, tc.why)
		}
	}
}

func TestCheckAllows(t *testing.T) {
	var p netguard.Policy
	for _, a := range []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "2001:4860:4860::8888",
		"11.0.0.1", "172.15.255.255", "172.32.0.1", "100.63.255.255", "100.128.0.1", "169.253.255.255", "192.167.255.255",
		"192.169.0.1", "198.17.255.255", "198.20.0.1", "223.255.255.255", "192.0.1.1", "192.0.3.1",
		"::ffff:8.8.8.8", "::8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2001:200::1",
	} {
		if err := p.Check(netip.MustParseAddr(a)); err != nil {
			t.Errorf("Check(%s) = %v, want allowed", a, err)
		}
	}
}

func TestCheckMessages(t *testing.T) {
	var p netguard.Policy
	for addr, want := range map[string]string{
		"10.0.0.1":         "netguard: 10.0.0.1 is a private address",
		"::ffff:127.0.0.1": "netguard: ::ffff:127.0.0.1 (127.0.0.1) is a loopback address",
		"64:ff9b::a00:1":   "netguard: 64:ff9b::a00:1 is a NAT64 address embedding 10.0.0.1, a private address",
	} {
		if err := p.Check(netip.MustParseAddr(addr)); err == nil || err.Error() != want {
			t.Errorf("Check(%s) = %v, want %q", addr, err, want)
		}
	}
	if err := p.Check(netip.Addr{}); !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("Check(invalid) = %v, want a refusal", err)
	}
	if err := (netguard.Policy{AllowPrivate: true}).Check(netip.Addr{}); !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("AllowPrivate: Check(invalid) = %v, want a refusal", err)
	}
}

func TestPolicyOpens(t *testing.T) {
	allow := netguard.Policy{Allow: []netip.Prefix{
		netip.MustParsePrefix("127.0.0.1/32"),
		netip.MustParsePrefix("10.1.0.0/16"),
		netip.MustParsePrefix("fd12:3456::/32"),
		netip.MustParsePrefix("::ffff:192.168.7.0/120"),
	}}
	all := netguard.Policy{AllowPrivate: true}
	for _, tc := range []struct {
		p     netguard.Policy
		addr  string
		allow bool
	}{
		{allow, "127.0.0.1", true},
		{allow, "::ffff:127.0.0.1", true},
		{allow, "127.0.0.2", false},
		{allow, "::1", false},
		{allow, "64:ff9b::7f00:1", false}, // NAT64 of an allowed address: another host
		{allow, "2002:7f00:1::1", false},
		{allow, "10.1.2.3", true},
		{allow, "10.1.255.255", true},
		{allow, "10.2.0.1", false},
		{allow, "fd12:3456::1", true},
		{allow, "fd12:3457::1", false},
		{allow, "192.168.7.9", true}, // an IPv4-mapped prefix opens the IPv4 addresses too
		{allow, "192.168.8.1", false},
		{allow, "169.254.169.254", false},
		{allow, "8.8.8.8", true},
		{all, "127.0.0.1", true},
		{all, "10.0.0.1", true},
		{all, "::1", true},
		{all, "169.254.169.254", true},
		{all, "fe80::1%eth0", true},
		{all, "8.8.8.8", true},
	} {
		err := tc.p.Check(netip.MustParseAddr(tc.addr))
		if (err == nil) != tc.allow || err != nil && !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("%+v: Check(%s) = %v, want allowed %v", tc.p, tc.addr, err, tc.allow)
		}
	}
}

// receiver is a local HTTP server that counts the requests it gets.
type receiver struct {
	*httptest.Server
	hits atomic.Int32
}

func newReceiver(t *testing.T, h http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		if h != nil {
			h(w, req)
			return
		}
		io.WriteString(w, "receiver")
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) port() string {
	_, port, _ := net.SplitHostPort(r.Listener.Addr().String())
	return port
}

var allowLoopback = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}

func TestClientRefusesLoopback(t *testing.T) {
	rc := newReceiver(t, nil)
	_, err := netguard.Policy{}.Client(5 * time.Second).Get(rc.URL)
	if !errors.Is(err, netguard.ErrBlocked) || !strings.Contains(err.Error(), "127.0.0.1 is a loopback address") {
		t.Fatalf("GET %s: %v, want a refusal", rc.URL, err)
	}
	// localhost resolves (hosts file) to 127.0.0.1 and perhaps ::1: both
	// refused at dial time.
	_, err = netguard.Policy{}.Client(5 * time.Second).Get("http://localhost:" + rc.port())
	if !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("GET localhost: %v, want a refusal", err)
	}
	if n := rc.hits.Load(); n != 0 {
		t.Fatalf("the receiver got %d requests", n)
	}
	resp, err := allowLoopback.Client(5 * time.Second).Get(rc.URL)
	if err != nil {
		t.Fatalf("allowed loopback: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || rc.hits.Load() != 1 {
		t.Fatalf("allowed loopback: status %d, %d requests", resp.StatusCode, rc.hits.Load())
	}
	resp, err = netguard.Policy{AllowPrivate: true}.Client(5 * time.Second).Get(rc.URL)
	if err != nil {
		t.Fatalf("AllowPrivate: %v", err)
	}
	resp.Body.Close()
}

func TestDialer(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	ctx := context.Background()
	strict := netguard.Policy{}.Dialer(time.Second)
	for _, addr := range []string{ln.Addr().String(), net.JoinHostPort("::ffff:127.0.0.1", strconv.Itoa(port)), "10.0.0.1:80", "[::1]:80", "169.254.169.254:80"} {
		if c, err := strict.DialContext(ctx, "tcp", addr); !errors.Is(err, netguard.ErrBlocked) {
			if c != nil {
				c.Close()
			}
			t.Errorf("dial %s: %v, want a refusal", addr, err)
		}
	}
	for _, addr := range []string{ln.Addr().String(), net.JoinHostPort("::ffff:127.0.0.1", strconv.Itoa(port))} {
		c, err := allowLoopback.Dialer(time.Second).DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Errorf("allowed dial %s: %v", addr, err)
			continue
		}
		c.Close()
	}
	// Only TCP: not UDP (even to a public address), not Unix sockets.
	if c, err := strict.DialContext(ctx, "udp", "8.8.8.8:53"); !errors.Is(err, netguard.ErrBlocked) {
		if c != nil {
			c.Close()
		}
		t.Errorf("dial udp: %v, want a refusal", err)
	}
	sock := filepath.Join(t.TempDir(), "s")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	for _, p := range []netguard.Policy{{}, {AllowPrivate: true}} {
		if c, err := p.Dialer(time.Second).DialContext(ctx, "unix", sock); !errors.Is(err, netguard.ErrBlocked) {
			if c != nil {
				c.Close()
			}
			t.Errorf("%+v: dial unix: %v, want a refusal", p, err)
		}
	}
}

// fakeDNS is a DNS server on 127.0.0.1 answering A and AAAA queries from
// answer, called with the name (lower case, with the final dot) and how
// many A queries for it came before.
type fakeDNS struct {
	pc     net.PacketConn
	answer func(name string, n int) []netip.Addr
	mu     sync.Mutex
	seen   map[string]int
}

func newFakeDNS(t *testing.T, answer func(name string, n int) []netip.Addr) *fakeDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDNS{pc: pc, answer: answer, seen: map[string]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := d.respond(buf[:n]); resp != nil {
				pc.WriteTo(resp, from)
			}
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return d
}

func (d *fakeDNS) respond(q []byte) []byte {
	if len(q) < 12 {
		return nil
	}
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if l&0xc0 != 0 || i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1:])
	question := q[12 : i+5]
	name := strings.ToLower(strings.Join(labels, ".")) + "."
	d.mu.Lock()
	n := d.seen[name]
	if qtype == 1 {
		d.seen[name]++
	}
	d.mu.Unlock()
	var answers []netip.Addr
	for _, a := range d.answer(name, n) {
		if qtype == 1 && a.Is4() || qtype == 28 && a.Is6() {
			answers = append(answers, a)
		}
	}
	resp := append([]byte{q[0], q[1], 0x81, 0x80, 0, 1}, binary.BigEndian.AppendUint16(nil, uint16(len(answers)))...)
	resp = append(resp, 0, 0, 0, 0)
	resp = append(resp, question...)
	for _, a := range answers {
		rdata := a.AsSlice()
		resp = append(resp, 0xc0, 12)
		resp = binary.BigEndian.AppendUint16(resp, qtype)
		resp = append(resp, 0, 1, 0, 0, 0, 1)
		resp = binary.BigEndian.AppendUint16(resp, uint16(len(rdata)))
		resp = append(resp, rdata...)
	}
	return resp
}

func (d *fakeDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var nd net.Dialer
		return nd.DialContext(ctx, "udp4", d.pc.LocalAddr().String())
	}}
}

// dialed records every address the guarded dialer was asked to connect to,
// and its verdict.
type dialed struct {
	mu   sync.Mutex
	errs map[string]error
}

// client is p.Client with its dialer resolving names through res and
// recording in seen (if not nil) each address it tries.
func client(p netguard.Policy, res *net.Resolver, seen *dialed) *http.Client {
	c := p.Client(5 * time.Second)
	d := p.Dialer(2 * time.Second)
	d.Resolver = res
	if seen != nil {
		seen.errs = map[string]error{}
		guard := d.ControlContext
		d.ControlContext = func(ctx context.Context, network, address string, rc syscall.RawConn) error {
			err := guard(ctx, network, address, rc)
			seen.mu.Lock()
			seen.errs[address] = err
			seen.mu.Unlock()
			return err
		}
	}
	c.Transport.(*http.Transport).DialContext = d.DialContext
	return c
}

// TestDNSRebinding: the name resolves to a public address when checked
// early, to loopback when the request is made; the dial-time check sees the
// address actually connected to and refuses it.
func TestDNSRebinding(t *testing.T) {
	rc := newReceiver(t, nil)
	dns := newFakeDNS(t, func(name string, n int) []netip.Addr {
		if name == "rebind.example." && n == 0 {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	})
	res := dns.resolver()
	addrs, err := res.LookupNetIP(context.Background(), "ip4", "rebind.example")
	if err != nil || len(addrs) != 1 || (netguard.Policy{}).Check(addrs[0]) != nil {
		t.Fatalf("the early lookup: %v, %v; want a public address", addrs, err)
	}
	_, err = client(netguard.Policy{}, res, nil).Get("http://rebind.example:" + rc.port() + "/")
	if !errors.Is(err, netguard.ErrBlocked) || !strings.Contains(err.Error(), "127.0.0.1 is a loopback address") {
		t.Fatalf("GET after rebinding: %v, want a refusal", err)
	}
	if n := rc.hits.Load(); n != 0 {
		t.Fatalf("the receiver got %d requests", n)
	}
}

// TestSeveralAddresses: a name resolving to several addresses has each
// checked; when all are blocked the error wraps ErrBlocked, and when one is
// allowed only that one is reached.
func TestSeveralAddresses(t *testing.T) {
	rc := newReceiver(t, nil)
	blocked := []string{"10.0.0.1", "127.0.0.1", "169.254.169.254", "::1", "fd00:ec2::254"}
	dns := newFakeDNS(t, func(name string, _ int) []netip.Addr {
		var list []string
		switch name {
		case "all-blocked.example.":
			list = blocked
		case "mixed.example.":
			list = []string{"127.0.0.2", "10.0.0.1", "127.0.0.1", "::1"}
		}
		var out []netip.Addr
		for _, a := range list {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	})
	var seen dialed
	_, err := client(netguard.Policy{}, dns.resolver(), &seen).Get("http://all-blocked.example:" + rc.port() + "/")
	if !errors.Is(err, netguard.ErrBlocked) || !strings.Contains(err.Error(), "netguard: ") {
		t.Fatalf("GET all-blocked: %v, want a refusal", err)
	}
	if rc.hits.Load() != 0 {
		t.Fatal("the receiver was reached")
	}
	for _, a := range blocked {
		addr := net.JoinHostPort(a, rc.port())
		if err, ok := seen.errs[addr]; !ok || !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("%s: tried %v, verdict %v; want tried and refused", addr, ok, err)
		}
	}

	seen = dialed{}
	resp, err := client(allowLoopback, dns.resolver(), &seen).Get("http://mixed.example:" + rc.port() + "/")
	if err != nil {
		t.Fatalf("GET mixed: %v", err)
	}
	resp.Body.Close()
	if rc.hits.Load() != 1 {
		t.Fatal("the receiver was not reached")
	}
	for addr, err := range seen.errs {
		if allowed := addr == net.JoinHostPort("127.0.0.1", rc.port()); allowed != (err == nil) {
			t.Errorf("%s: verdict %v", addr, err)
		}
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	target := newReceiver(t, nil)
	from := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
	})
	resp, err := allowLoopback.Client(5 * time.Second).Get(from.URL + "/hook")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != target.URL+"/elsewhere" {
		t.Fatalf("status %d, Location %q; want the 302 itself", resp.StatusCode, resp.Header.Get("Location"))
	}
	if target.hits.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
}

// TestEnvironmentProxyIgnored: with HTTP_PROXY set, the request goes
// straight to the target. (The target is a name, not 127.0.0.1: proxies
// are never used for loopback addresses anyway.)
func TestEnvironmentProxyIgnored(t *testing.T) {
	target := newReceiver(t, nil)
	proxy := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "proxy") })
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"} {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	dns := newFakeDNS(t, func(string, int) []netip.Addr { return []netip.Addr{netip.MustParseAddr("127.0.0.1")} })
	raw := "http://target.example:" + target.port() + "/"

	// The control: a transport honouring the environment goes through the proxy.
	env := client(allowLoopback, dns.resolver(), nil)
	env.Transport.(*http.Transport).Proxy = func(r *http.Request) (*url.URL, error) {
		return httpproxy.FromEnvironment().ProxyFunc()(r.URL)
	}
	if body := get(t, env, raw); body != "proxy" {
		t.Fatalf("control: the environment's proxy was not used (%q)", body)
	}

	hits := proxy.hits.Load()
	if body := get(t, client(allowLoopback, dns.resolver(), nil), raw); body != "receiver" {
		t.Fatalf("got %q, want the target's answer", body)
	}
	if proxy.hits.Load() != hits || target.hits.Load() != 1 {
		t.Fatalf("proxy hits %d (was %d), target hits %d", proxy.hits.Load(), hits, target.hits.Load())
	}
	if tr := (netguard.Policy{}).Transport(); tr.Proxy != nil {
		t.Fatal("Transport has a Proxy")
	}
}

func get(t *testing.T, c *http.Client, raw string) string {
	t.Helper()
	resp, err := c.Get(raw)
	if err != nil {
		t.Fatalf("GET %s: %v", raw, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestClientSettings(t *testing.T) {
	c := netguard.Policy{}.Client(7 * time.Second)
	if c.Timeout != 7*time.Second {
		t.Errorf("Timeout %v", c.Timeout)
	}
	if c.CheckRedirect == nil || !errors.Is(c.CheckRedirect(nil, nil), http.ErrUseLastResponse) {
		t.Error("CheckRedirect does not stop at the first response")
	}
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("Transport %T", c.Transport)
	}
	switch {
	case tr.Proxy != nil:
		t.Error("Proxy set")
	case tr.DialContext == nil || tr.Dial != nil || tr.DialTLSContext != nil || tr.DialTLS != nil:
		t.Error("dialing not through the guarded dialer alone")
	case tr.TLSClientConfig == nil || tr.TLSClientConfig.MinVersion < 0x0303:
		t.Error("TLS below 1.2 allowed")
	case !tr.ForceAttemptHTTP2:
		t.Error("HTTP/2 not attempted")
	case tr.MaxIdleConnsPerHost <= 0 || tr.MaxIdleConns <= 0 || tr.IdleConnTimeout <= 0:
		t.Error("idle connections unbounded")
	case tr.TLSHandshakeTimeout <= 0 || tr.ResponseHeaderTimeout <= 0:
		t.Error("no handshake or response header timeout")
	}
	if d := (netguard.Policy{}).Dialer(3 * time.Second); d.Timeout != 3*time.Second || d.ControlContext == nil {
		t.Errorf("Dialer: timeout %v, ControlContext set %v", d.Timeout, d.ControlContext != nil)
	}
}

func TestCheckURL(t *testing.T) {
	strict := netguard.Policy{}
	all := netguard.Policy{AllowPrivate: true}
	for _, tc := range []struct {
		p         netguard.Policy
		raw       string
		allowHTTP bool
		want      string // "" for accepted, else part of the error
	}{
		{strict, "https://hooks.example.com/aivis", false, ""},
		{strict, "https://hooks.example.com:8443/a/b?c=d", false, ""},
		{strict, "HTTPS://Hooks.Example.COM/", false, ""},
		{strict, "https://example.com./", false, ""},
		{strict, "https://my_host.example.com/", false, ""},
		{strict, "https://bücher.de/", false, ""},
		{strict, "https://8.8.8.8/hook", false, ""},
		{strict, "https://[2606:4700:4700::1111]:443/", false, ""},
		{strict, "https://example.com:1/", false, ""},
		{strict, "https://example.com:65535/", false, ""},
		{strict, "http://hooks.example.com/", true, ""},
		{strict, "http://hooks.example.com/", false, "must use https"},
		{strict, "ftp://example.com/x", false, "must use https"},
		{strict, "ftp://example.com/x", true, "must use http or https"},
		{strict, "file:///etc/passwd", false, "must use https"},
		{strict, "javascript:alert(1)", false, "absolute URL"},
		{strict, "https:x.com", false, "absolute URL"},
		{strict, "//x.com/", false, "absolute URL"},
		{strict, "example.com/hook", false, "absolute URL"},
		{strict, "not a url", false, "absolute URL"},
		{strict, "", false, "absolute URL"},
		{strict, " https://x.com/", false, "absolute URL"},
		{strict, "https:///path", false, "must have a host"},
		{strict, "https:/x.com/", false, "must have a host"},
		{strict, "https://user:pw@example.com/", false, "user name or password"},
		{strict, "https://user@example.com/", false, "user name or password"},
		{strict, "https://@example.com/", false, "user name or password"},
		{strict, "https://example.com/#x", false, "#fragment"},
		{strict, "https://example.com#@10.0.0.1", false, "#fragment"},
		{strict, "https://#x", false, "#fragment"},
		{strict, "https://example.com/#", false, "#fragment"},
		{strict, "https://example.com:0/", false, "port"},
		{strict, "https://example.com:65536/", false, "port"},
		{strict, "https://example.com:99999/", false, "port"},
		{strict, "https://example.com:/", false, "port"},
		{strict, "https://[::1]:/", false, "port"},
		{strict, "https://example.com:x/", false, "absolute URL"},
		{strict, "https://10.0.0.1/hook", false, "must point to a public address: 10.0.0.1 is a private address"},
		{strict, "https://169.254.169.254/latest", false, "cloud metadata"},
		{strict, "https://127.0.0.1:8080/", false, "loopback"},
		{strict, "https://[::1]:8443/", false, "loopback"},
		{strict, "https://[::ffff:127.0.0.1]/", false, "loopback"},
		{strict, "https://[64:ff9b::a00:1]/", false, "NAT64"},
		{strict, "https://[fd00:ec2::254]/", false, "cloud metadata"},
		{strict, "https://[fe80::1%25eth0]/", false, "zone"},
		{all, "https://[fe80::1%25eth0]/", false, "zone"},
		{strict, "https://localhost/", false, "localhost is a loopback name"},
		{strict, "https://LOCALHOST./", false, "loopback name"},
		{strict, "https://api.localhost:3000/", false, "loopback name"},
		{strict, "https://127.1/", false, "valid host name"},
		{strict, "https://0x7f000001/", false, "valid host name"},
		{strict, "https://2130706433/", false, "valid host name"},
		{strict, "https://0177.0.0.1/", false, "valid host name"},
		{strict, "https://1.2.3.4.5/", false, "valid host name"},
		{strict, "https://１２７．０．０．１/", false, "reads as the IP address 127.0.0.1"},
		{strict, "https://exa$mple.com/", false, "valid host name"},
		{strict, "https://a..b/", false, "valid host name"},
		{strict, "https://" + strings.Repeat("a", 64) + ".com/", false, "valid host name"},
		{all, "https://10.0.0.1/hook", false, ""},
		{all, "http://localhost:8080/", true, ""},
		{all, "http://localhost:8080/", false, "must use https"},
		{allowLoopback, "http://127.0.0.1:8080/hook", true, ""},
		{allowLoopback, "https://localhost/", false, ""},
		{allowLoopback, "https://127.0.0.2/", false, "loopback"},
		{allowLoopback, "https://10.0.0.1/", false, "private"},
	} {
		u, err := tc.p.CheckURL(tc.raw, tc.allowHTTP)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: CheckURL(%q, %v) = %v, want accepted", tc.p, tc.raw, tc.allowHTTP, err)
		case tc.want == "" && (u == nil || u.Host == ""):
			t.Errorf("CheckURL(%q) returned URL %v", tc.raw, u)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: CheckURL(%q, %v) = %v, want an error saying %q", tc.p, tc.raw, tc.allowHTTP, err, tc.want)
		case err != nil && (u != nil || strings.Contains(err.Error(), "netguard")):
			t.Errorf("CheckURL(%q) = %v, %v; want no URL and a message for users", tc.raw, u, err)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, a := range []string{"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:8.8.8.8", "::1", "::", "2606:4700:4700::1111",
		"64:ff9b::a00:1", "64:ff9b::808:808", "2002:a00:1::", "2001::1", "fe80::1", "::127.0.0.1", "ff02::1"} {
		b := netip.MustParseAddr(a).As16()
		f.Add(b[:])
	}
	policies := []netguard.Policy{{}, allowLoopback, {Allow: []netip.Prefix{
		netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("::ffff:192.168.0.0/112"),
		netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("64:ff9b::/96"),
	}}}
	f.Fuzz(func(t *testing.T, b []byte) {
		var raw [16]byte
		copy(raw[:], b)
		a := netip.AddrFrom16(raw)
		v4 := netip.AddrFrom4([4]byte(raw[12:]))
		mapped := netip.AddrFrom16(v4.As16())
		for i, p := range policies {
			err := p.Check(a)
			if err != nil && (!errors.Is(err, netguard.ErrBlocked) || !strings.HasPrefix(err.Error(), "netguard: ")) {
				t.Fatalf("policy %d: Check(%s) = %v", i, a, err)
			}
			if zerr := p.Check(a.WithZone("eth0")); (zerr == nil) != (err == nil) {
				t.Fatalf("policy %d: Check(%s) = %v but with a zone %v", i, a, err, zerr)
			}
			if i == 0 && err == nil {
				u := a.Unmap()
				if !u.IsGlobalUnicast() || u.IsPrivate() || u.IsLoopback() || u.IsLinkLocalUnicast() || u.IsMulticast() || u.IsUnspecified() {
					t.Fatalf("Check(%s) allowed a non-public address", a)
				}
			}
			e4, e6 := p.Check(v4), p.Check(mapped)
			if (e4 == nil) != (e6 == nil) {
				t.Fatalf("policy %d: Check(%s) = %v but Check(%s) = %v", i, v4, e4, mapped, e6)
			}
		}
	})
}
