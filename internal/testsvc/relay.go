package testsvc

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Relay passes the connections to a loopback address on to a server, until
// it is cut: then it accepts none and drops those it relays, as a server
// that went away does, until it is mended on the same address. A test
// points a client at Addr to take the server away from it and give it back.
type Relay struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
	wg           sync.WaitGroup
}

// NewRelay relays to target (host:port) until t ends.
func NewRelay(t testing.TB, target string) *Relay {
	t.Helper()
	r := &Relay{addr: "127.0.0.1:0", target: target}
	r.Mend(t)
	t.Cleanup(r.Cut)
	return r
}

// Addr is where the relay listens, the same after Mend.
func (r *Relay) Addr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addr
}

// Mend listens again on the relay's address.
func (r *Relay) Mend(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", r.Addr())
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
