package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxSessionsPerKey caps the 2025-11-25 sessions a key holds at once.
// Each is kept in memory until it ends (DELETE) or idles SessionTimeout,
// and opening one makes no API call, so counts in no rate limit.
const MaxSessionsPerKey = 50

// sessions counts each key's live sessions, and knows the ids of those
// this instance holds.
type sessions struct {
	mu    sync.Mutex
	live  map[string]int
	local map[string]bool
}

// held reports whether this instance holds the session id.
func (s *sessions) held(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.local[id]
}

func (s *sessions) full(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[key] >= MaxSessionsPerKey
}

// track is a receiving middleware: a session initialized with an id (a
// stateful one) counts for its key until it closes.
func (s *sessions) track(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		ss, ok := req.GetSession().(*mcp.ServerSession)
		extra := req.GetExtra()
		if method != "initialize" || err != nil || !ok || ss.ID() == "" || extra == nil || extra.TokenInfo == nil {
			return res, err
		}
		key, id := extra.TokenInfo.UserID, ss.ID()
		s.mu.Lock()
		s.live[key]++
		s.local[id] = true
		s.mu.Unlock()
		// Owned by the session: Wait returns once it is closed, by its
		// client or its idle timeout.
		go func() {
			ss.Wait()
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.local, id)
			if s.live[key]--; s.live[key] <= 0 {
				delete(s.live, key)
			}
		}()
		return res, err
	}
}

// signer signs session ids for keys: id.mac, the mac an HMAC-SHA256 of
// the key's id and the session's, under the session key every instance
// derives from the master key.
type signer struct{ key []byte }

func newSigner(key []byte) signer {
	if len(key) == 0 {
		key = make([]byte, 32)
		rand.Read(key)
	}
	return signer{key: key}
}

func (s signer) mac(keyID, id string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(keyID + "\x00" + id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// sign is the session id id as the key's client is given it.
func (s signer) sign(keyID, id string) string { return id + "." + s.mac(keyID, id) }

// open is the session id a client of the key sent, when it was given it.
func (s signer) open(keyID, sent string) (string, bool) {
	id, mac, ok := strings.Cut(sent, ".")
	return id, ok && id != "" && hmac.Equal([]byte(mac), []byte(s.mac(keyID, id)))
}

// signing passes a response on with its session id signed.
type signing struct {
	http.ResponseWriter
	sign   func(id string) string
	signed bool
}

func (s *signing) fix() {
	if s.signed {
		return
	}
	s.signed = true
	if id := s.Header().Get("Mcp-Session-Id"); id != "" {
		s.Header().Set("Mcp-Session-Id", s.sign(id))
	}
}

func (s *signing) WriteHeader(code int) {
	s.fix()
	s.ResponseWriter.WriteHeader(code)
}

func (s *signing) Write(b []byte) (int, error) {
	s.fix()
	return s.ResponseWriter.Write(b)
}

func (s *signing) Flush() {
	s.fix()
	http.NewResponseController(s.ResponseWriter).Flush()
}

func (s *signing) Unwrap() http.ResponseWriter { return s.ResponseWriter }
