package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/netguard"
)

func TestCheck(t *testing.T) {
	var p netguard.Policy
	for _, a := range []string{
		"127.0.0.1", "127.255.255.254", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
		"100.64.0.1", "100.127.255.255", "0.0.0.0", "0.1.2.3", "224.0.0.1", "239.255.255.250", "255.255.255.255", "240.0.0.1",
		"192.0.0.8", "192.0.2.1", "198.18.0.1", "198.51.100.7", "203.0.113.9",
		"::", "::1", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1", "2001:db8::1", "100::1", "2001::1", "fec0::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1", "64:ff9b::a00:1", "64:ff9b::7f00:1",
		"2002:7f00:1::1", "2002:a00:1::", "64:ff9b:1::a00:1",
	} {
		if err := p.Check(netip.MustParseAddr(a)); !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("Check(%s) = %v, want refused", a, err)
		}
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e",
		"::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "172.32.0.1", "100.128.0.1", "11.0.0.1"} {
		if err := p.Check(netip.MustParseAddr(a)); err != nil {
			t.Errorf("Check(%s) = %v, want allowed", a, err)
		}
	}
}

func TestCheckOpened(t *testing.T) {
	p := netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.1.0.0/16")}}
	for a, want := range map[string]bool{"127.0.0.1": true, "::ffff:127.0.0.1": true, "127.0.0.2": false, "10.1.2.3": true,
		"10.2.0.1": false, "::1": false, "8.8.8.8": true} {
		if err := p.Check(netip.MustParseAddr(a)); (err == nil) != want {
			t.Errorf("allow-list: Check(%s) = %v, want allowed %v", a, err, want)
		}
	}
	all := netguard.Policy{AllowPrivate: true}
	for _, a := range []string{"127.0.0.1", "10.0.0.1", "::1", "169.254.169.254"} {
		if err := all.Check(netip.MustParseAddr(a)); err != nil {
			t.Errorf("AllowPrivate: Check(%s) = %v", a, err)
		}
	}
}

func local(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestClientRefusesLoopback(t *testing.T) {
	srv := local(t)
	_, err := netguard.Policy{}.Client(5 * time.Second).Get(srv.URL)
	if !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("GET %s: %v, want a refusal", srv.URL, err)
	}
	// A name that resolves to loopback is refused at dial time too (the
	// check is on the address connected to, after resolution).
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	_, err = netguard.Policy{}.Client(5 * time.Second).Get("http://localhost:" + port)
	if !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("GET localhost: %v, want a refusal", err)
	}
	resp, err := netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}.Client(5 * time.Second).Get(srv.URL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("allowed loopback: %v", err)
	}
	resp.Body.Close()
}

func TestDialerChecksEveryAddress(t *testing.T) {
	d := netguard.Policy{}.Dialer(time.Second)
	_, err := d.DialContext(context.Background(), "tcp", "127.0.0.1:9")
	if !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("dial 127.0.0.1: %v", err)
	}
	_, err = d.DialContext(context.Background(), "udp", "8.8.8.8:53")
	if !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("dial udp: %v", err)
	}
}

func TestRedirectsNotFollowed(t *testing.T) {
	srv := local(t)
	c := netguard.Policy{AllowPrivate: true}.Client(5 * time.Second)
	resp, err := c.Get(srv.URL + "/redirect")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("status %d, want the 302 itself", resp.StatusCode)
	}
}

func TestEnvironmentProxyIgnored(t *testing.T) {
	srv := local(t)
	t.Setenv("HTTP_PROXY", "http://192.0.2.1:3128")
	t.Setenv("http_proxy", "http://192.0.2.1:3128")
	c := netguard.Policy{AllowPrivate: true}.Client(3 * time.Second)
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatalf("the client went through the environment's proxy: %v", err)
	}
	resp.Body.Close()
}

func TestCheckURL(t *testing.T) {
	var p netguard.Policy
	for raw, want := range map[string]string{
		"https://hooks.example.com/aivis": "",
		"https://8.8.8.8/hook":            "",
		"http://hooks.example.com/":       "https://",
		"ftp://example.com/x":             "https://",
		"https:///path":                   "host",
		"https://user:pw@example.com/":    "credentials",
		"https://10.0.0.1/hook":           "public address",
		"https://[::1]:8443/":             "public address",
		"https://[::ffff:127.0.0.1]/":     "public address",
		"https://localhost/":              "public address",
		"https://example.com:0/":          "port",
		"https://example.com:99999/":      "port",
		"example.com/hook":                "absolute",
		"":                                "absolute",
	} {
		_, err := p.CheckURL(raw, false)
		switch {
		case want == "" && err != nil:
			t.Errorf("CheckURL(%q) = %v", raw, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("CheckURL(%q) = %v, want an error mentioning %q", raw, err, want)
		}
	}
	if _, err := p.CheckURL("http://hooks.example.com/", true); err != nil {
		t.Errorf("http allowed: %v", err)
	}
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1})
	f.Add([]byte{10, 0, 0, 1})
	f.Add([]byte{8, 8, 8, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		var p netguard.Policy
		if len(b) == 16 {
			p.Check(netip.AddrFrom16([16]byte(b)))
			return
		}
		if len(b) != 4 {
			return
		}
		v4 := netip.AddrFrom4([4]byte(b))
		mapped := netip.AddrFrom16(v4.As16())
		if (p.Check(v4) == nil) != (p.Check(mapped) == nil) {
			t.Fatalf("%s and %s judged differently", v4, mapped)
		}
	})
}
