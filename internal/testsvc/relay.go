package testsvc

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Relay passes the connections to a loopback address on to a server, until
// it is cut: then it accepts none and drops those it relays, as a server
// that went away does, until it is mended on the same address. A test
// points a client at URL to take the server away from it and give it back.
type Relay struct {
	addr, target string
	url          url.URL
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
	wg           sync.WaitGroup
}

// NewRelay relays to the server of serverURL (its host:port) until t
// ends.
func NewRelay(t testing.TB, serverURL string) *Relay {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{addr: "127.0.0.1:0", target: u.Host, url: *u}
	r.Mend(t)
	r.url.Host = r.addr
	t.Cleanup(r.Cut)
	return r
}

// URL is the server's URL with the relay's address, the same after Mend.
func (r *Relay) URL() string { return r.url.String() }

// Mend listens again on the relay's address.
func (r *Relay) Mend(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	addr := r.addr
	r.mu.Unlock()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.ln, r.addr = ln, ln.Addr().String()
	r.mu.Unlock()
	r.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", r.target)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, c, s)
			r.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	})
}

// Cut closes the listener and every relayed connection (again: a no-op).
func (r *Relay) Cut() {
	r.mu.Lock()
	r.ln.Close()
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.mu.Unlock()
	r.wg.Wait()
}
