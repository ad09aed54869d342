package mcp

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxSessionsPerKey caps the 2025-11-25 sessions a key holds at once.
// Each is kept in memory until it ends (DELETE) or idles SessionTimeout,
// and opening one makes no API call, so counts in no rate limit.
const MaxSessionsPerKey = 50

// sessions counts each key's live sessions.
type sessions struct {
	mu   sync.Mutex
	live map[string]int
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
		key := extra.TokenInfo.UserID
		s.mu.Lock()
		s.live[key]++
		s.mu.Unlock()
		// Owned by the session: Wait returns once it is closed, by its
		// client or its idle timeout.
		go func() {
			ss.Wait()
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.live[key]--; s.live[key] <= 0 {
				delete(s.live, key)
			}
		}()
		return res, err
	}
}
