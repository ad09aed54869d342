// Package api serves aivis's v1 API: the key-and-secret interface under
// /api/v1/ai and the bearer interface under /v1. Handlers are thin: rules
// live in the services they call.
package api

import (
	"context"
	_ "embed"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/health"
	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/tracing"
	"github.com/aivis/aivis/core/traffic"
	"github.com/aivis/aivis/core/visibility"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI is the API's OpenAPI 3.1 document.
func OpenAPI() []byte { return openAPI }

// Config is what the API needs to know of the deployment.
type Config struct {
	TrustedProxies []netip.Prefix
	// CORSAllowedOrigins are the origins whose pages may call the API.
	CORSAllowedOrigins []string
	// HSTS: the HTTPS listener serves a configured certificate, and its
	// answers carry Strict-Transport-Security (never over the
	// self-signed one, which a browser would then refuse to pass).
	HSTS bool
	// PublicURL and HTTPSPort say where HTTPS is served, for the plain
	// HTTP listener's answer.
	PublicURL, HTTPSPort string
}

// Store is what the API reads directly: an account's budget, the
// readings and scans behind GET /v1/visibility, and an account's export.
type Store interface {
	Budget(ctx context.Context, accountID, month string) (store.BudgetMonth, int, error)
	LatestReading(ctx context.Context, f store.ReadingFilter) (store.Reading, error)
	ListReadings(ctx context.Context, f store.ReadingFilter, cursor string, limit int) ([]store.Reading, string, error)
	LatestScan(ctx context.Context, accountID, clientID, domain string) (store.Scan, error)
	ExportAccount(ctx context.Context, accountID string, emit func(store.Record) error) error
	ListUsage(ctx context.Context, f store.UsageFilter) ([]store.KeyUsage, string, error)
	ListScans(ctx context.Context, f store.ScanFilter) ([]store.Scan, string, error)
	ListKeys(ctx context.Context, accountID string) ([]store.Key, error)
	// Update runs fn in a write transaction (the POSTs' idempotency keys).
	Update(ctx context.Context, fn func(store.Tx) error) error
}

// Deps are the services the API adapts to HTTP.
type Deps struct {
	Store   Store
	Auth    *auth.Service
	Content *content.Service
	Counter limits.Counter
	// Guard counts failed authentications per client address, and the
	// refusals of each revoked or expired key (shared with the
	// dashboard's sign-in).
	Guard limits.Guard
	Log   *slog.Logger
	Now   func() time.Time
	// Readings records visibility readings; Webhooks manages webhooks and
	// connections.
	Readings *visibility.Recorder
	Webhooks *delivery.Service
	Domains  *visibility.Domains
	// Scans queues and reports visibility scans.
	Scans *visibility.Scans
	Hub   *hub.Hub
	// Dashboard, when set, serves every path the API does not (the web
	// application users sign in to).
	Dashboard http.Handler
	// Health answers /livez, /readyz and /healthz (nil: a process that
	// needs nothing to be ready).
	Health *health.Health
	// Metrics counts the requests and the limits' decisions (nil: none).
	Metrics *metrics.Metrics
	// MCP, when set, makes the handler of the MCP endpoint and its
	// protected-resource metadata (MCPPaths), given the server whose
	// handler its tools call.
	MCP func(*Server) http.Handler
	// Traffic takes the logs CDNs deliver (IngestPath); nil: none.
	Traffic *traffic.Service
	// Changes keeps domains' changes and measures their lift; nil: none.
	Changes *changes.Service
}

// MCPPaths are the paths Deps.MCP's handler serves: the MCP endpoint and
// its OAuth protected-resource metadata (RFC 9728), at the root and
// suffixed with the endpoint's path.
var MCPPaths = []string{"/mcp", "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"}

// Server is the v1 API.
type Server struct {
	health   *health.Health
	cfg      Config
	store    Store
	auth     *auth.Service
	content  *content.Service
	readings *visibility.Recorder
	domains  *visibility.Domains
	scans    *visibility.Scans
	webhooks *delivery.Service
	// connections is webhooks.Connections(): the same service seeing
	// connections.
	connections *delivery.Service
	hub         *hub.Hub
	counter     limits.Counter
	guard       limits.Guard
	log         *slog.Logger
	now         func() time.Time
	router      chi.Router
	handler     http.Handler
	dashboard   http.Handler
	mcp         http.Handler
	traffic     *traffic.Service
	changes     *changes.Service
	httpMetrics *metrics.HTTP
	limits      *metrics.Limits
}

// New builds the API.
func New(cfg Config, d Deps) *Server {
	s := &Server{cfg: cfg, store: d.Store, auth: d.Auth, content: d.Content, readings: d.Readings, domains: d.Domains, scans: d.Scans, webhooks: d.Webhooks, hub: d.Hub, counter: d.Counter,
		guard: d.Guard, log: d.Log, now: d.Now, dashboard: d.Dashboard, health: d.Health, traffic: d.Traffic,
		changes: d.Changes}
	if s.health == nil {
		s.health = health.New(d.Log, 0)
	}
	if s.webhooks != nil {
		s.connections = s.webhooks.Connections()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if d.Metrics != nil {
		s.httpMetrics, s.limits = d.Metrics.HTTP, d.Metrics.Limits
	}
	if d.MCP != nil {
		s.mcp = d.MCP(s)
	}
	s.router = s.Router()
	s.handler = s.base(s.edges(s.cfg.HSTS, s.router))
	return s
}

// Handler serves the API over HTTPS.
func (s *Server) Handler() http.Handler { return s.handler }

// Router is the route table, without the outer middleware.
func (s *Server) Router() chi.Router {
	r := chi.NewRouter()
	r.Use(tracing.Route, s.observe, middleware.GetHead)
	r.NotFound(s.notFound)
	r.MethodNotAllowed(s.methodNotAllowed)
	for path, h := range s.health.Paths() {
		r.Get(path, h)
	}
	r.Get("/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		writeRaw(w, http.StatusOK, openAPI)
	})
	r.Route("/api/v1/ai", func(r chi.Router) {
		r.Use(s.authenticate(true), s.rateLimit)
		r.NotFound(s.notFound)
		r.MethodNotAllowed(s.methodNotAllowed)
		r.Get("/budget-status", s.scope("budget:read", s.budgetStatus))
		r.Get("/content-requests", s.scope("content:read", s.listContentRequests))
		r.Post("/content-requests", s.scope("content:write", s.createContentRequest))
		r.Get("/content-requests/{id}", s.scope("content:read", s.getContentRequest))
		r.Post("/content-requests/{id}/cancel", s.scope("content:write", s.cancelContentRequest))
		s.publishedRoutes(r)
	})
	r.Route("/v1", func(r chi.Router) {
		r.Use(s.authenticate(false), s.rateLimit, s.idempotent)
		r.NotFound(s.notFound)
		r.MethodNotAllowed(s.methodNotAllowed)
		r.Get("/account/export", s.exportAccount)
		r.Get("/visibility", s.scope("visibility:read", s.getVisibility))
		r.Post("/visibility", s.scope("visibility:write", s.recordReading))
		r.Get("/visibility/history", s.scope("visibility:read", s.visibilityHistory))
		r.Post("/visibility/scans", s.scope("visibility:write", s.requestScan))
		r.Get("/visibility/scans/{id}", s.scope("visibility:read", s.getScan))
		r.Get("/visibility/scans/{id}/answers", s.scope("visibility:read", s.listScanAnswers))
		r.Get("/domains", s.scope("visibility:read", s.listDomains))
		r.Post("/domains", s.scope("visibility:write", s.createDomain))
		r.Get("/domains/{id}", s.scope("visibility:read", s.getDomain))
		r.Patch("/domains/{id}", s.scope("visibility:write", s.updateDomain))
		r.Delete("/domains/{id}", s.scope("visibility:write", s.deleteDomain))
		r.Get("/domains/{id}/prompts", s.scope("visibility:read", s.getPrompts))
		r.Put("/domains/{id}/prompts", s.scope("visibility:write", s.putPrompts))
		r.Get("/webhooks", s.scope("webhooks:read", s.listWebhooks))
		r.Post("/webhooks", s.scope("webhooks:write", s.createWebhook))
		r.Get("/webhooks/{id}", s.scope("webhooks:read", s.getWebhook))
		r.Patch("/webhooks/{id}", s.scope("webhooks:write", s.updateWebhook))
		r.Delete("/webhooks/{id}", s.scope("webhooks:write", s.deleteTarget(s.webhooks)))
		r.Post("/webhooks/{id}/rotate-secret", s.scope("webhooks:write", s.rotateWebhookSecret))
		r.Post("/webhooks/{id}/test", s.scope("webhooks:write", s.testWebhook))
		r.Post("/webhooks/{id}/replay", s.scope("webhooks:write", s.replay(s.webhooks)))
		r.Get("/webhooks/{id}/deliveries", s.scope("webhooks:read", s.listDeliveries(s.webhooks)))
		r.Get("/webhooks/{id}/deliveries/{delivery_id}", s.scope("webhooks:read", s.getDelivery(s.webhooks)))
		r.Post("/webhooks/{id}/deliveries/{delivery_id}/redeliver", s.scope("webhooks:write", s.redeliver(s.webhooks)))
		r.Get("/connectors", s.scope("connectors:read", s.listConnectors))
		r.Get("/connections", s.scope("connectors:read", s.listConnections))
		r.Post("/connections", s.scope("connectors:write", s.createConnection))
		r.Get("/connections/{id}", s.scope("connectors:read", s.getConnection))
		r.Patch("/connections/{id}", s.scope("connectors:write", s.updateConnection))
		r.Delete("/connections/{id}", s.scope("connectors:write", s.deleteTarget(s.connections)))
		r.Post("/connections/{id}/test", s.scope("connectors:write", s.testConnection))
		r.Post("/connections/{id}/replay", s.scope("connectors:write", s.replay(s.connections)))
		r.Get("/connections/{id}/deliveries", s.scope("connectors:read", s.listDeliveries(s.connections)))
		r.Get("/connections/{id}/deliveries/{delivery_id}", s.scope("connectors:read", s.getDelivery(s.connections)))
		r.Post("/connections/{id}/deliveries/{delivery_id}/redeliver", s.scope("connectors:write", s.redeliver(s.connections)))
		r.Get("/usage", s.scope("budget:read", s.listUsage))
		r.Get("/event-types", s.listEventTypes)
		r.Get("/events", s.scope("connectors:read", s.recentEvents))
		r.Post("/zapier/hooks", s.scope("connectors:write", s.zapierSubscribe))
		r.Delete("/zapier/hooks/{id}", s.scope("connectors:write", s.zapierUnsubscribe))
		s.trafficRoutes(r)
		s.changeRoutes(r)
	})
	if s.mcp != nil {
		for _, p := range MCPPaths {
			r.Handle(p, s.mcp)
		}
	}
	s.ingestRoutes(r)
	if s.dashboard != nil {
		r.Mount("/", s.dashboard)
	}
	return r
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, s.log, fault.New(fault.NotFound, "no operation %s %s", r.Method, r.URL.Path))
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := m
		if m == http.MethodHead {
			probe = http.MethodGet // served by GET's handler (middleware.GetHead)
		}
		if s.router.Match(chi.NewRouteContext(), probe, r.URL.Path) {
			allow = append(allow, m)
		}
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeError(w, r, s.log, fault.New(fault.MethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
}
