// Package dashboard is the web application users sign in to: server-
// rendered pages (html/template) with embedded CSS, script and SVG charts.
// It is an adapter over the same core services as the API: every rule
// (scopes, limits, validation, webhook verification) lives in them; what
// a user's role allows is decided by core/people.
package dashboard

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/people"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/text"
	"github.com/aivis/aivis/core/traffic"
	"github.com/aivis/aivis/core/visibility"
)

//go:embed templates/*.html templates/*.tmpl
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Cookie names. __Host- makes the browser refuse them unless they are
// Secure, for this host only, with Path=/.
const (
	SessionCookie = "__Host-aivis_session"
	csrfCookie    = "__Host-aivis_csrf"
	csrfField     = "csrf"
)

// Store is what the dashboard reads directly; it changes things through
// the services.
type Store interface {
	Account(ctx context.Context, id string) (store.Account, error)
	Client(ctx context.Context, accountID, id string) (store.Client, error)
	ListClients(ctx context.Context, accountID string) ([]store.Client, error)
	ListKeys(ctx context.Context, accountID string) ([]store.Key, error)
	ListUsers(ctx context.Context, accountID string) ([]store.User, error)
	ListInvitations(ctx context.Context, accountID string, now time.Time) ([]store.Invitation, error)
	Budget(ctx context.Context, accountID, month string) (store.BudgetMonth, int, error)
	UsageSince(ctx context.Context, accountID string, since time.Time) ([]store.KeyUsage, error)
	LatestReadings(ctx context.Context, accountID string, domainIDs []string, n int) (map[string][]store.Reading, error)
	ListReadings(ctx context.Context, f store.ReadingFilter, cursor string, limit int) ([]store.Reading, string, error)
	LatestScan(ctx context.Context, accountID, clientID, domain string) (store.Scan, error)
	LatestScans(ctx context.Context, accountID string, domainIDs []string) (map[string]store.Scan, error)
	ListScanAnswers(ctx context.Context, f store.AnswerFilter) ([]store.ScanAnswer, string, error)
	DefaultWebhookURL(ctx context.Context, accountID, clientID string) (string, error)
	DeleteAccount(ctx context.Context, accountID string, batch int) error
}

// Peeker reads an account's rate-limit windows without counting a request.
type Peeker interface {
	Peek(ctx context.Context, accountID string, limits [3]int, now time.Time) (limits.Decision, error)
}

// Deps are the services the dashboard adapts to pages.
type Deps struct {
	Store    Store
	People   *people.Service
	Auth     *auth.Service
	Accounts *accounts.Service
	Counter  Peeker
	Webhooks *delivery.Service
	Hub      *hub.Hub
	Domains  *visibility.Domains
	Scans    *visibility.Scans
	Content  *content.Service
	// Traffic is a domain's AI crawler visits and referrals, and its
	// ingest tokens (nil: the Traffic tab says the server keeps none).
	Traffic *traffic.Service
	// Changes is what users changed on a domain's site and the lift each
	// change measured (nil: the Changes tab says the server keeps none,
	// and the charts mark none).
	Changes *changes.Service
	// Guard limits failed sign-ins per client address (the API's guard
	// of failed authentications, shared).
	Guard limits.Guard
	// Guards makes the dashboard's own guard, of failed sign-ins per
	// email address (default: in memory).
	Guards limits.Guards
	// ClientAddr is the client's address behind trusted proxies (default:
	// the peer's).
	ClientAddr func(*http.Request) netip.Addr
	// PublicURL is the base of links the dashboard hands out (default:
	// https:// and the request's host).
	PublicURL string
	Log       *slog.Logger
	Now       func() time.Time
}

// Dashboard serves the pages.
type Dashboard struct {
	Deps
	connections *delivery.Service
	emails      limits.Guard // failed sign-ins per email address
	pages       map[string]*template.Template
	router      chi.Router
}

// New builds the dashboard.
func New(d Deps) (*Dashboard, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.ClientAddr == nil {
		d.ClientAddr = remoteAddr
	}
	if d.Guards == nil {
		d.Guards = limits.MemoryGuards
	}
	s := &Dashboard{Deps: d, emails: d.Guards("signin-email", emailFailures, emailFailureWindow)}
	if d.Webhooks != nil {
		s.connections = d.Webhooks.Connections()
	}
	if err := s.parse(); err != nil {
		return nil, err
	}
	s.router = s.routes()
	return s, nil
}

func (s *Dashboard) parse() error {
	s.pages = map[string]*template.Template{}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.tmpl", n)
		if err != nil {
			return fmt.Errorf("dashboard: template %s: %w", base, err)
		}
		s.pages[base] = t
	}
	return nil
}

// ServeHTTP serves the dashboard.
func (s *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

func (s *Dashboard) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(s.headers)
	// Static files need no session: they are served before its lookup.
	static, _ := fs.Sub(staticFS, "static")
	r.Handle("/static/*", http.StripPrefix("/static/", cacheStatic(http.FileServerFS(static))))
	r.With(s.session, s.csrf).Group(s.pageRoutes)
	withSession := func(h http.HandlerFunc) http.HandlerFunc { return s.session(s.csrf(h)).ServeHTTP }
	r.NotFound(withSession(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "There is no such page.")
	}))
	r.MethodNotAllowed(withSession(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusMethodNotAllowed, "This page does not take that method.")
	}))
	return r
}

// pageRoutes are the routes that read the session.
func (s *Dashboard) pageRoutes(r chi.Router) {
	r.Get("/signin", s.signInPage)
	r.Post("/signin", s.signIn)
	r.Get("/join", s.joinPage)
	r.Post("/join", s.join)
	r.Group(func(r chi.Router) {
		r.Use(s.signedIn)
		r.Post("/signout", s.signOut)
		r.Get("/", s.overview)
		r.Get("/account", s.accountPage)
		r.Post("/account/password", s.changePassword)
		r.Post("/account/delete", s.need(people.Own, s.deleteAccount))
		r.Get("/members", s.membersPage)
		r.Post("/members/invite", s.need(people.Manage, s.invite))
		r.Post("/members/{id}/role", s.need(people.Manage, s.setRole))
		r.Post("/members/{id}/remove", s.need(people.Manage, s.removeMember))
		r.Post("/members/invitations/{hash}/withdraw", s.need(people.Manage, s.withdrawInvitation))
		r.Get("/keys", s.keysPage)
		r.Post("/keys", s.need(people.Build, s.createKey))
		r.Post("/keys/{id}/revoke", s.need(people.Build, s.revokeKey))
		r.Post("/keys/{id}/roll", s.need(people.Build, s.rollKey))
		r.Get("/usage", s.usagePage)
		r.Get("/webhooks", s.webhooksPage)
		r.Post("/webhooks", s.need(people.Build, s.createWebhook))
		r.Post("/webhooks/default", s.need(people.Manage, s.setDefaultURL))
		r.Get("/webhooks/{id}", s.webhookPage)
		r.Post("/webhooks/{id}/enabled", s.need(people.Build, s.setWebhookEnabled))
		r.Post("/webhooks/{id}/rotate", s.need(people.Build, s.rotateWebhook))
		r.Post("/webhooks/{id}/test", s.need(people.Build, s.testWebhook))
		r.Post("/webhooks/{id}/delete", s.need(people.Build, s.deleteTarget(false)))
		r.Post("/webhooks/{id}/replay", s.need(people.Build, s.replay(false)))
		r.Post("/webhooks/{id}/deliveries/{did}/redeliver", s.need(people.Build, s.redeliver(false)))
		r.Get("/connectors", s.connectorsPage)
		r.Get("/connectors/{name}", s.connectorPage)
		r.Post("/connectors/{name}", s.need(people.Build, s.createConnection))
		r.Get("/connections/{id}", s.connectionPage)
		r.Post("/connections/{id}", s.need(people.Build, s.updateConnection))
		r.Post("/connections/{id}/test", s.need(people.Build, s.testConnection))
		r.Post("/connections/{id}/delete", s.need(people.Build, s.deleteTarget(true)))
		r.Post("/connections/{id}/enabled", s.need(people.Build, s.setConnectionEnabled))
		r.Post("/connections/{id}/replay", s.need(people.Build, s.replay(true)))
		r.Post("/connections/{id}/deliveries/{did}/redeliver", s.need(people.Build, s.redeliver(true)))
		r.Get("/clients", s.clientsPage)
		r.Post("/clients", s.need(people.Manage, s.createClient))
		r.Get("/clients/{id}", s.clientPage)
		r.Get("/domains", s.domainsPage)
		r.Post("/domains", s.need(people.Build, s.createDomain))
		r.Get("/domains/{domain}", s.domainPage)
		r.Post("/domains/{domain}/scan", s.need(people.Build, s.requestScan))
		r.Get("/domains/{domain}/traffic", s.trafficPage)
		r.Post("/domains/{domain}/traffic/tokens", s.need(people.Build, s.createIngestToken))
		r.Post("/domains/{domain}/traffic/tokens/{id}/revoke", s.need(people.Build, s.revokeIngestToken))
		r.Get("/domains/{domain}/changes", s.changesPage)
		r.Post("/domains/{domain}/changes", s.need(people.Build, s.createChange))
		r.Get("/domains/{domain}/changes/{id}", s.changePage)
		r.Post("/domains/{domain}/changes/{id}/delete", s.need(people.Build, s.deleteChange))
		r.Get("/content", s.contentPage)
	})
}

func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // files only, no listing
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// headers: no framing, no inline script or style, no referrer (links
// carry one-time tokens).
func (s *Dashboard) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "+
			"object-src 'none'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

type ctxKey int

const keyViewer ctxKey = iota

// viewer is the signed-in user of a request.
type viewer struct {
	Token   string
	Session store.Session
	User    store.User
	Account store.Account
}

func viewerOf(r *http.Request) *viewer {
	v, _ := r.Context().Value(keyViewer).(*viewer)
	return v
}

// session finds the request's session, if any.
func (s *Dashboard) session(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(SessionCookie)
		if err == nil && c.Value != "" {
			sess, u, err := s.People.Session(r.Context(), c.Value)
			var a store.Account
			if err == nil {
				if a, err = s.Store.Account(r.Context(), u.AccountID); err == nil {
					r = r.WithContext(context.WithValue(r.Context(), keyViewer, &viewer{Token: c.Value, Session: sess, User: u, Account: a}))
				}
			}
			if _, down := store.Unavailable(err); down {
				// Not signed out: the session cannot be read just now.
				s.failWith(w, r, err)
				return
			} else if err != nil && !errors.Is(err, store.ErrNotFound) {
				s.Log.Error("dashboard: session", "err", err)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// csrf refuses a state-changing request whose form does not carry the
// session's synchroniser token (or, before sign-in, the token of the
// csrf cookie), or that comes from another origin.
func (s *Dashboard) csrf(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && o != "null" {
			if u, err := url.Parse(o); err != nil || u.Host != r.Host {
				s.fail(w, r, http.StatusForbidden, "This form was sent from another site and was refused.")
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		got := r.PostFormValue(csrfField)
		want := ""
		if v := viewerOf(r); v != nil {
			want = v.Session.CSRF
		} else if c, err := r.Cookie(csrfCookie); err == nil {
			want = c.Value
		}
		if want == "" || got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			s.fail(w, r, http.StatusForbidden, "This form has expired or was not sent from the dashboard. Reload the page and try again.")
			return
		}
		if field, bad := controlField(r.PostForm); bad {
			s.fail(w, r, http.StatusBadRequest, "The field "+strconv.Quote(field)+" holds a control character or bytes that are not "+
				"UTF-8, which no field may hold; nothing was changed. Go back, correct it and send the form again.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// controlField names the first field of a form (in the order of their
// names) with a value that holds a character a tenant's text may not, as
// the API refuses them (text.Control).
func controlField(form url.Values) (string, bool) {
	for _, name := range slices.Sorted(maps.Keys(form)) {
		for _, v := range form[name] {
			if _, bad := text.Control(v); bad {
				return name, true
			}
		}
	}
	return "", false
}

// anonCSRF is the token of the forms shown before sign-in, kept in a
// cookie (double submit).
func (s *Dashboard) anonCSRF(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 43 {
		return c.Value
	}
	t := randid.String(43)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: t, Path: "/", Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return t
}

func (s *Dashboard) signedIn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if viewerOf(r) == nil {
			if r.Method != http.MethodGet {
				s.fail(w, r, http.StatusUnauthorized, "Your session has ended. Sign in again.")
				return
			}
			http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// need refuses a handler to a role that may not do a.
func (s *Dashboard) need(a people.Action, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !people.Can(viewerOf(r).User.Role, a) {
			s.fail(w, r, http.StatusForbidden, "Your role ("+viewerOf(r).User.Role+") does not allow this.")
			return
		}
		h(w, r)
	}
}

// principal is who the services see the user act as.
func principal(r *http.Request) auth.Principal { return people.Principal(viewerOf(r).Account) }

// page is what every template gets.
type page struct {
	Title   string
	Nav     string
	Viewer  *viewer
	CSRF    string
	Notice  string
	Problem *problem
	D       any
}

// problem is a failure shown above a form.
type problem struct {
	Message    string
	Fields     []fault.FieldError
	RetryAfter int // seconds; > 0 on a 429, sent as Retry-After
}

// Can reports whether the viewer's role allows an action by name.
func (p page) Can(action string) bool {
	if p.Viewer == nil {
		return false
	}
	a := map[string]people.Action{"read": people.Read, "build": people.Build, "manage": people.Manage, "own": people.Own}[action]
	return people.Can(p.Viewer.User.Role, a)
}

// Agency reports whether the viewer's account is an agency.
func (p page) Agency() bool { return p.Viewer != nil && p.Viewer.Account.Type == store.AccountAgency }

func (s *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t, ok := s.pages[name]
	if !ok {
		s.Log.Error("dashboard: no template", "name", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if v := viewerOf(r); v != nil {
		p.Viewer = v
		p.CSRF = v.Session.CSRF
	} else {
		p.CSRF = s.anonCSRF(w, r)
	}
	if p.Notice == "" {
		p.Notice = notices[r.URL.Query().Get("done")]
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if p.Problem != nil && p.Problem.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(p.Problem.RetryAfter))
	}
	w.WriteHeader(status)
	if err := t.Execute(w, p); err != nil {
		s.Log.Error("dashboard: render", "page", name, "err", err)
	}
}

// notices are the fixed messages a redirect may name (?done=...).
var notices = map[string]string{
	"password":  "Your password is changed. Your other sessions have ended.",
	"invited":   "The invitation is made.",
	"role":      "The role is changed; that member's sessions have ended.",
	"removed":   "The member is removed.",
	"withdrawn": "The invitation is withdrawn: its link no longer works.",
	"revoked":   "The key is revoked: the API refuses it from now on.",
	"default":   "The default endpoint is saved.",
	"enabled":   "Saved.",
	"rotated":   "The signing secret is rotated.",
	"test":      "A test event is on its way; its delivery appears below.",
	"redeliver": "The delivery is scheduled again.",
	"deleted":   "Deleted, with its deliveries.",
	"client":    "The client is created.",
	"domain":    "The domain is monitored.",
	"scan":      "A scan is queued.",
	"irevoked":  "The ingest token is revoked: its source's deliveries are refused from now on.",
	"change":    "The change is recorded: it is marked on the domain's charts, and its lift is measured from the scans around it.",
	"cdeleted":  "The change is deleted.",
	"account":   "The account is deleted, with everything it owned.",
}

func (s *Dashboard) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, r, status, "error", page{Title: http.StatusText(status), Problem: &problem{Message: msg}})
}

// problemOf turns a service's error into what a form shows; ok is false
// for an internal error, which is logged and shown without details.
func (s *Dashboard) problemOf(r *http.Request, err error) (*problem, int) {
	var fe *fault.Error
	if errors.As(err, &fe) && fe.Code != fault.Internal {
		return &problem{Message: fe.Message, Fields: fe.Details, RetryAfter: fe.RetryAfter}, fe.Code.Status()
	}
	if errors.Is(err, people.ErrForbidden) {
		return &problem{Message: "Your role does not allow this."}, http.StatusForbidden
	}
	if why, down := store.Unavailable(err); down {
		s.Log.Warn("dashboard: the store cannot be reached", "path", r.URL.Path, "reason", why)
		return &problem{Message: "aivis is briefly unavailable. Try again shortly.", RetryAfter: fault.UnavailableRetry},
			http.StatusServiceUnavailable
	}
	s.Log.Error("dashboard", "path", r.URL.Path, "err", err)
	return &problem{Message: "Something went wrong on our side. Try again."}, http.StatusInternalServerError
}

// failWith shows a service's error on its own page.
func (s *Dashboard) failWith(w http.ResponseWriter, r *http.Request, err error) {
	p, status := s.problemOf(r, err)
	s.render(w, r, status, "error", page{Title: http.StatusText(status), Problem: p})
}

func redirect(w http.ResponseWriter, r *http.Request, path, done string) {
	if done != "" && strings.Contains(path, "?") {
		path += "&done=" + done
	} else if done != "" {
		path += "?done=" + done
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
}
