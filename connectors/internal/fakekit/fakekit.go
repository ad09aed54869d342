// Package fakekit is the base of the local fake destinations the
// connector tests run against: an HTTP server that records every request
// and can be told to answer the next ones with scripted failures before
// it goes back to behaving like the real service.
package fakekit

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Request is one request the fake received.
type Request struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
}

// Answer is a scripted answer.
type Answer struct {
	Status int
	Header map[string]string
	Body   string
}

// Server is a fake destination. The handler behaves like the service; it
// is called with the request's body read.
type Server struct {
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []Request
	script  []Answer
	handler func(w http.ResponseWriter, r *http.Request, body []byte)
}

// New starts a fake on loopback.
func New(handler func(w http.ResponseWriter, r *http.Request, body []byte)) *Server {
	s := &Server{handler: handler}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	var a *Answer
	if len(s.script) > 0 {
		a = &s.script[0]
		s.script = s.script[1:]
	}
	s.mu.Unlock()
	if a != nil {
		for k, v := range a.Header {
			w.Header().Set(k, v)
		}
		if a.Header["Content-Type"] == "" && len(a.Body) > 0 && (a.Body[0] == '{' || a.Body[0] == '[') {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(a.Status)
		io.WriteString(w, a.Body)
		return
	}
	s.handler(w, r, body)
}

// URL is the fake's base URL.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the fake; requests to it then fail to connect.
func (s *Server) Close() { s.srv.Close() }

// Script makes the next requests get these answers, in order.
func (s *Server) Script(answers ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, answers...)
}

// Requests are the requests received so far, scripted ones included.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}
