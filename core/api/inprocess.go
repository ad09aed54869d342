package api

import (
	"context"
	"net/http"

	"github.com/aivis/aivis/core/auth"
)

// InProcess marks ctx as that of a request this process makes to its own
// handler for a principal whose bearer key already authenticated it: the
// MCP server's tools, whose clients send a key without its secret. On the
// key-and-secret interface (/api/v1/ai) such a request is authenticated by
// its Authorization: Bearer key as /v1's are; everything after (scopes,
// rate limits, budgets, errors) is the same. Only code can set it: nothing
// a request carries does, since the mark is a context value whose key is
// unexported.
func InProcess(ctx context.Context) context.Context {
	return context.WithValue(ctx, keyInProcess, true)
}

// Authenticated authenticates a request's bearer key as /v1 does (the
// failures counted against the client's address, a revoked or expired key
// against itself, an address out of failures refused) and serves next with
// the principal in the context (PrincipalOf). The request itself is not
// counted in the account's rate limits: what next asks of the API is. A
// 401 carries the WWW-Authenticate challenge(r, sent) makes, sent telling
// whether a credential was sent.
func (s *Server) Authenticated(challenge func(r *http.Request, sent bool) string, next http.Handler) http.Handler {
	return s.authenticateWith(false, func(r *http.Request, _, sent bool) string { return challenge(r, sent) })(next)
}

// PrincipalOf is the principal of a request Authenticated served.
func PrincipalOf(ctx context.Context) (auth.Principal, bool) {
	st := stateOf(ctx)
	return st.principal, st.authenticated
}
