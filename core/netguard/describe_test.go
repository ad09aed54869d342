package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/netguard"
)

// TestDescribeNamesNoAddress: what Describe says of real failures (a
// refused address, a closed port, an unknown certificate authority, a
// timeout) and of a lookup's error says what went wrong and names no
// address: not the one refused, not the server's, not its resolver's.
func TestDescribeNamesNoAddress(t *testing.T) {
	closed, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/hook?token=s3cr3t"
	closed.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer tlsSrv.Close()
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }))
	defer slow.Close()
	defer close(hang)

	get := func(c *http.Client, u string) error {
		resp, err := c.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s succeeded", u)
		}
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
		not  []string
	}{
		{"refused address", get(netguard.Policy{}.Client(2*time.Second), "https://10.20.30.40/hook?token=s3cr3t"),
			"not allowed", []string{"10.20.30.40", "private"}},
		{"refused after a lookup", get(netguard.Policy{}.Client(2*time.Second), "http://localhost:9/hook"),
			"not allowed", []string{"127.0.0.1", "::1", "loopback"}},
		{"closed port", get(allowLoopback.Client(2*time.Second), closedURL), "refused", []string{"127.0.0.1"}},
		{"unknown authority", get(allowLoopback.Client(2*time.Second), tlsSrv.URL), "unknown authority", []string{"127.0.0.1"}},
		{"timeout", get(allowLoopback.Client(200*time.Millisecond), slow.URL), "no response in time", []string{"127.0.0.1"}},
		{"lookup", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "acme.invalid",
			Server: "10.255.255.53:53", IsNotFound: true}}, "the host name acme.invalid does not resolve", []string{"10.255.255.53"}},
		{"read", &net.OpError{Op: "read", Net: "tcp", Source: &net.TCPAddr{IP: net.IPv4(10, 1, 1, 1), Port: 5000},
			Addr: &net.TCPAddr{IP: net.IPv4(93, 184, 216, 34), Port: 443}, Err: errors.New("some failure")},
			"connection failed", []string{"10.1.1.1", "93.184.216.34"}},
		{"cancelled", context.Canceled, "cancelled", nil},
		{"unknown error", errors.New("odd: 10.9.9.9:80->[fd00::1]:443 (fe80::1%eth0) 192.168.1.1."), "odd: ",
			[]string{"10.9.9.9", "fd00::1", "fe80::1", "192.168.1.1"}},
	} {
		got := netguard.Describe(tc.err)
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: Describe(%v) = %q, want it to say %q", tc.name, tc.err, got, tc.want)
		}
		for _, n := range append(tc.not, "s3cr3t", "/hook") {
			if strings.Contains(got, n) {
				t.Errorf("%s: Describe(%v) = %q names %q", tc.name, tc.err, got, n)
			}
		}
	}
	if got := netguard.Describe(nil); got != "" {
		t.Errorf("Describe(nil) = %q", got)
	}
}
