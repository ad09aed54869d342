// Package mcp serves aivis to AI assistants over the Model Context
// Protocol (Streamable HTTP at /mcp, on the API's listener). Each tool is
// one or two API operations, made by calling the API's own handler in
// process with the MCP request's bearer key: authentication, scopes, an
// agency client's isolation, rate limits (a tool call counts as the API
// calls it makes), budgets and error codes are the API's.
//
// Both revisions of the protocol are served on the one endpoint. A
// request that names protocol 2026-07-28 or later in its
// MCP-Protocol-Version header is served statelessly, as that revision
// wants (no initialize, no Mcp-Session-Id); any other request is a
// 2025-11-25 (or older) client's, served with the initialize handshake
// and a session (Mcp-Session-Id), which the Go SDK v1.8.0 allows only on a
// handler of its own: its stateful handler refuses 2026-07-28 requests and
// its stateless one mints no sessions.
package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/aivis/aivis/core/api"
	"github.com/aivis/aivis/core/auth"
)

// Paths of the endpoint and of its protected-resource metadata (RFC 9728).
const (
	EndpointPath = "/mcp"
	MetadataPath = "/.well-known/oauth-protected-resource"
)

// modern is the first revision without sessions (SEP-2575).
const modern = "2026-07-28"

// SessionTimeout is how long a 2025-11-25 client's session lives
// without a request.
const SessionTimeout = 30 * time.Minute

// peerHeader carries the client's address, as the API's guard sees it,
// from the endpoint to the tools (the SDK gives a tool its request's
// headers, not its connection). It is set on every request, replacing
// whatever the client sent.
const peerHeader = "X-Aivis-Mcp-Peer"

// Options configure the server.
type Options struct {
	Log     *slog.Logger
	Version string // the server's version, told to clients
	// SessionKey signs the ids of 2025-11-25 sessions, so that every
	// instance with the same key serves a session another made (the
	// master key's, secrets.Box.Derive; nil: one of this process's own,
	// its sessions its alone).
	SessionKey []byte
}

// Handler serves the MCP endpoint and its protected-resource metadata
// (api.MCPPaths) for the API it calls.
type Handler struct {
	api       *api.Server
	server    *mcp.Server
	stateful  http.Handler
	stateless http.Handler
	endpoint  http.Handler
	sessions  sessions
	signer    signer
}

// New builds the handler. Its tools call a's handler.
func New(a *api.Server, o Options) *Handler {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := o.Version
	if version == "" {
		version = "(devel)"
	}
	h := &Handler{api: a, sessions: sessions{live: map[string]int{}, local: map[string]bool{}}, signer: newSigner(o.SessionKey)}
	h.server = mcp.NewServer(&mcp.Implementation{Name: "aivis", Title: "aivis", Version: version}, &mcp.ServerOptions{
		Instructions: instructions, Logger: log,
		// The tools never change, and the server logs nothing to clients.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	h.server.AddReceivingMiddleware(h.sessions.track)
	h.addTools()
	get := func(*http.Request) *mcp.Server { return h.server }
	// Every request is authenticated by the API with its bearer key, so
	// the SDK's DNS-rebinding guard (403 for a loopback connection naming
	// another host, which a reverse proxy on the same machine makes) adds
	// nothing; browsers' cross-origin requests are refused below.
	h.stateful = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{JSONResponse: true, Logger: log,
		SessionTimeout: SessionTimeout, DisableLocalhostProtection: true})
	h.stateless = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: log,
		DisableLocalhostProtection: true})
	bearer := sdkauth.RequireBearerToken(verify, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	h.endpoint = http.NewCrossOriginProtection().Handler(a.Authenticated(challenge, bearer(http.HandlerFunc(h.dispatch))))
	return h
}

const instructions = "aivis measures how visible a website's brand is in AI answer engines. " +
	"list_domains names the monitored domains; get_visibility gives a domain's score now and get_scan_figures, " +
	"get_cited_sources and search_answers what a scan found (rates with 95% Wilson intervals). " +
	"Each tool is an aivis API call made with your API key, within its scopes and rate limits."

// ServeHTTP serves api.MCPPaths.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == EndpointPath {
		h.endpoint.ServeHTTP(w, r)
		return
	}
	metadata(w, r)
}

// dispatch hands an authenticated request to the handler of its
// revision. GET, the stream of server-initiated messages, is not offered
// (this server sends none): 405, which clients of 2025-11-25 take.
func (h *Handler) dispatch(w http.ResponseWriter, r *http.Request) {
	r.Header.Set(peerHeader, h.api.ClientAddr(r).String())
	switch {
	case r.Method == http.MethodGet:
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "Method Not Allowed: this server sends no messages of its own", http.StatusMethodNotAllowed)
	case r.Header.Get("Mcp-Protocol-Version") >= modern:
		h.stateless.ServeHTTP(w, r)
	case r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && h.sessions.full(keyID(r)):
		http.Error(w, fmt.Sprintf("Too Many Requests: this key holds %d sessions; end one (DELETE) or let one idle out", MaxSessionsPerKey),
			http.StatusTooManyRequests)
	default:
		h.session(w, r)
	}
}

// session serves a 2025-11-25 request. A session's id, as clients see it,
// is the SDK's signed for the key (signer): a request naming a session
// this key was not given is 404, as a session that does not exist. One
// this instance holds is served by the stateful handler; one it does not
// (another instance made it, or this one before a restart) is served as
// that session statelessly: the tools keep no state between calls, so any
// instance answers as the one that made it would, and a DELETE has
// nothing here to end.
func (h *Handler) session(w http.ResponseWriter, r *http.Request) {
	key := keyID(r)
	if sent := r.Header.Get("Mcp-Session-Id"); sent != "" {
		id, ok := h.signer.open(key, sent)
		if !ok {
			http.Error(w, "Not Found: no such session", http.StatusNotFound)
			return
		}
		if !h.sessions.held(id) {
			if r.Method == http.MethodDelete {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			r.Header.Del("Mcp-Session-Id")
			w.Header().Set("Mcp-Session-Id", sent)
			h.stateless.ServeHTTP(w, r)
			return
		}
		r.Header.Set("Mcp-Session-Id", id)
	}
	h.stateful.ServeHTTP(&signing{ResponseWriter: w, sign: func(id string) string { return h.signer.sign(key, id) }}, r)
}

// verify hands the principal the API authenticated to the SDK: the key's
// id is the user a session is bound to (another key cannot use it).
func verify(_ context.Context, _ string, r *http.Request) (*sdkauth.TokenInfo, error) {
	p, ok := api.PrincipalOf(r.Context())
	if !ok {
		return nil, sdkauth.ErrInvalidToken
	}
	return &sdkauth.TokenInfo{Scopes: p.Key.Scopes, UserID: p.Key.ID, Expiration: p.Key.ExpiresAt}, nil
}

func keyID(r *http.Request) string {
	p, _ := api.PrincipalOf(r.Context())
	return p.Key.ID
}

// base is the URL of the server the request reached (aivis serves HTTPS
// only; a proxy in front passes the Host it was asked for).
func base(r *http.Request) string { return "https://" + r.Host }

// challenge is a 401's WWW-Authenticate at /mcp: RFC 6750's Bearer with
// where the protected-resource metadata is (the MCP authorization spec).
func challenge(r *http.Request, sent bool) string {
	c := `Bearer realm="aivis", resource_metadata="` + base(r) + MetadataPath + `"`
	if sent {
		c += `, error="invalid_token"`
	}
	return c
}

// metadata serves the protected-resource metadata (RFC 9728) of the
// endpoint. Keys are made in aivis, not by an authorization server, so
// none is named: the document says what the resource is, the scopes its
// keys may hold, and that the key goes in the Authorization header.
func metadata(w http.ResponseWriter, r *http.Request) {
	prm := &oauthex.ProtectedResourceMetadata{
		Resource:               base(r) + EndpointPath,
		ScopesSupported:        auth.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "aivis",
	}
	sdkauth.ProtectedResourceMetadataHandler(prm).ServeHTTP(w, r)
}
