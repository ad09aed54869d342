package api

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/tracing"
)

type ctxKey int

const (
	keyState ctxKey = iota
	keyInProcess
)

// state is what the middleware learns of a request, in one context value
// that base sets: authenticate and rateLimit fill in theirs, where each
// would copy the request to add a value of its own.
type state struct {
	id string
	// authenticated tells that principal and addr (the client address's
	// subject, for rateLimit's Admit) are set.
	authenticated bool
	principal     auth.Principal
	addr          limits.Subject
	decision      limits.Decision
	// w is the response writer base hands on, kept here so that the
	// state and it are one allocation.
	w statusWriter
}

func stateOf(ctx context.Context) *state {
	st, _ := ctx.Value(keyState).(*state)
	if st == nil {
		return &state{}
	}
	return st
}

// withState is r with a state of its own to fill in: base's, or a new one
// for a request served without base or whose state is already filled.
func withState(r *http.Request) (*http.Request, *state) {
	st, _ := r.Context().Value(keyState).(*state)
	if st != nil && !st.authenticated {
		return r, st
	}
	n := &state{}
	if st != nil {
		n.id = st.id
	}
	return r.WithContext(context.WithValue(r.Context(), keyState, n)), n
}

func requestID(r *http.Request) string { return stateOf(r.Context()).id }

func principal(r *http.Request) auth.Principal { return stateOf(r.Context()).principal }

func decision(r *http.Request) limits.Decision { return stateOf(r.Context()).decision }

// statusWriter remembers the status for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
	w.ResponseWriter.WriteHeader(s)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// incomingID is a caller's X-Request-Id, taken as the request's id when
// it is short and of characters that are safe in a log line and a header.
var incomingID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// base gives every request an id (the caller's X-Request-Id, if it is one
// incomingID takes), a span when tracing is on (tracing.Request), logs it
// (with its trace's id), and turns a panic into a 500.
func (s *Server) base(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			growStack(0) // a new goroutine: see growStack
		}
		start := time.Now()
		r, traced := tracing.Request(r)
		id := r.Header.Get("X-Request-Id")
		if !incomingID.MatchString(id) {
			id = "req_" + randid.String(20)
		}
		h := w.Header()
		h["X-Request-Id"] = []string{id}
		h["X-Content-Type-Options"] = nosniff
		h["Cache-Control"] = noStore
		st := &state{id: id, w: statusWriter{ResponseWriter: w}}
		sw := &st.w
		// Reads may be served from caches validated after this request began.
		r = r.WithContext(cache.AsOf(context.WithValue(r.Context(), keyState, st), start))
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					traced(sw.status)
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "panic serving request", "request_id", id, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if sw.status == 0 {
					writeError(sw, r, s.log, fault.New(fault.Internal, "an internal error occurred; quote request id %s when you contact support", id))
				}
			}
			if s.log.Enabled(r.Context(), slog.LevelInfo) {
				attrs := []any{"request_id", id, "method", r.Method, "path", r.URL.Path, "status", sw.status,
					"duration_ms", float64(time.Since(start).Microseconds()) / 1000, "remote", s.clientAddr(r).String()}
				if p := principal(r); p.Key.ID != "" {
					attrs = append(attrs, "account", p.AccountID(), "key", p.Key.ID)
				}
				s.log.InfoContext(r.Context(), "request", attrs...)
			}
			traced(sw.status)
		}()
		next.ServeHTTP(sw, r)
	})
}

// ClientAddr is the address of the client, as the API's guard sees it.
func (s *Server) ClientAddr(r *http.Request) netip.Addr { return s.clientAddr(r) }

// clientAddr is the address of the client: the peer, or, when the peer is
// a trusted proxy, the nearest untrusted address in X-Forwarded-For.
func (s *Server) clientAddr(r *http.Request) netip.Addr {
	peer := remoteAddr(r)
	if !s.trusted(peer) {
		return peer
	}
	hops := strings.Split(r.Header.Get("X-Forwarded-For"), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		if !s.trusted(a) {
			return a.Unmap()
		}
		peer = a.Unmap()
	}
	return peer
}

func remoteAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// RequireHTTPS wraps the handler of the plain-HTTP listener: it answers
// 403 HTTPS_REQUIRED unless a trusted proxy says the client used HTTPS.
func (s *Server) RequireHTTPS() http.Handler {
	probes := s.health.Paths()
	behindProxy := s.edges(false, s.router) // the proxy's HTTPS says HSTS if it would
	return s.base(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.trusted(remoteAddr(r)) && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
			behindProxy.ServeHTTP(w, r)
			return
		}
		if h, ok := probes[r.URL.Path]; ok && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			h(w, r) // a probe carries nothing to protect
			return
		}
		writeError(w, r, s.log, fault.New(fault.HTTPSRequired, "aivis accepts only HTTPS; send this request to %s", s.httpsURL(r)))
	}))
}

// authenticate checks credentials on one interface. Failures are limited
// per client address; a key of an account refused as revoked or expired
// is no guess, and counts against that key instead, so that a stale client
// behind a shared address cannot lock its neighbours out. An address known
// to be out of failures is refused before its credentials are looked at
// (the guard's Screen). Otherwise the attempt is decided by one atomic step
// once they are checked (the lookup is cheap, and valid credentials may
// arrive many at once), so that guesses sent at once are never answered
// past the limit: a failure's Take of the guard, or, for valid
// credentials, rateLimit's Admit, which refuses them while the address is
// out of failures and else counts the request.
func (s *Server) authenticate(withSecret bool) func(http.Handler) http.Handler {
	return s.authenticateWith(withSecret, func(r *http.Request, withSecret, sent bool) string { return challenge(withSecret, sent) })
}

// authenticateWith is authenticate with the 401's WWW-Authenticate made by
// wwwAuth. On the key-and-secret interface, a request this process makes
// for a principal its bearer key authenticated (InProcess) is
// authenticated by that key alone.
func (s *Server) authenticateWith(withSecret bool, wwwAuth func(r *http.Request, withSecret, sent bool) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			withSecret := withSecret && r.Context().Value(keyInProcess) == nil
			now := s.now()
			addr := limits.AddrSubject(s.clientAddr(r))
			if t, gerr := s.guard.Screen(r.Context(), addr, now); !s.admitted(w, r, t, gerr) {
				return
			}
			var key, secret string
			if withSecret {
				// The canonical forms, which Get looks up without a copy.
				key, secret = r.Header.Get("X-Api-Key"), r.Header.Get("X-Api-Secret")
			} else if h := r.Header.Get("Authorization"); h != "" {
				scheme, token, _ := strings.Cut(h, " ")
				if !strings.EqualFold(scheme, "Bearer") {
					token = "-" // present but unusable: invalid, not missing
				}
				key = strings.TrimSpace(token)
			}
			p, err := s.auth.Authenticate(r.Context(), key, secret, withSecret)
			if err == nil {
				r, st := withState(r)
				st.authenticated, st.principal, st.addr = true, p, addr
				next.ServeHTTP(w, r)
				return
			}
			fe, _ := fault.As(err)
			switch {
			case fe != nil && (fe.Code == fault.KeyRevoked || fe.Code == fault.KeyExpired):
				// No guess, but an address out of failures is refused
				// all the same (its exact window: Screen may not know).
				if t, gerr := s.guard.Peek(r.Context(), addr, now); s.admitted(w, r, t, gerr) {
					s.fail(w, r, limits.KeySubject(key), now, keyPolicy, err, wwwAuth(r, withSecret, true))
				}
			case fe != nil && fe.Code.Status() == http.StatusUnauthorized:
				s.fail(w, r, addr, now, addrPolicy, err, wwwAuth(r, withSecret, key != ""))
			default:
				if t, gerr := s.guard.Peek(r.Context(), addr, now); s.admitted(w, r, t, gerr) {
					writeError(w, r, s.log, err)
				}
			}
		})
	}
}

// admitted answers a look at the client address's window (a guard's
// Tally and error: Screen, Peek or Admit's) and reports that the address
// has failures left; if not, or if the guard cannot tell (its engine is
// unreachable: 503), the request is answered.
func (s *Server) admitted(w http.ResponseWriter, r *http.Request, t limits.Tally, err error) bool {
	if err != nil {
		s.limits.CounterError()
		writeError(w, r, s.log, err)
		return false
	}
	if !t.Allowed {
		s.refuse(w, r, t, addrPolicy, nil, "")
	}
	return t.Allowed
}

// fail counts a failed authentication against subject and answers it:
// err, or the guard's 429 when subject is out of failures, or its 503 when
// the guard cannot count.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, subject limits.Subject, now time.Time, policy string, err error, wwwAuth string) {
	t, gerr := s.guard.Take(r.Context(), subject, now)
	if gerr != nil {
		s.limits.CounterError()
		writeError(w, r, s.log, gerr)
		return
	}
	s.refuse(w, r, t, policy, err, wwwAuth)
}

// The names of the guard's limits in the RateLimit headers.
const (
	addrPolicy = "auth-failures"
	keyPolicy  = "key-failures"
)

// refuse answers a failed authentication: err, a 401 with its challenge,
// when the guard took its failure (t.Allowed), else the guard's 429. The
// rate-limit headers report the window it was counted against.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, t limits.Tally, policy string, err error, wwwAuth string) {
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(t.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(t.Remaining()))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(t.Reset, 10))
	h.Set("RateLimit-Policy", fmt.Sprintf(`"%s";q=%d;w=%d`, policy, t.Limit, t.Reset-t.Start))
	h.Set("RateLimit", fmt.Sprintf(`"%s";r=%d;t=%d`, policy, t.Remaining(), max(t.Reset-t.Now.Unix(), 0)))
	if !t.Allowed {
		err = t.Err()
		s.limits.Decision(metrics.RefusedAddress, principal(r).Account.Tier)
	} else {
		h.Set("WWW-Authenticate", wwwAuth)
	}
	writeError(w, r, s.log, err)
}

// challenge is the WWW-Authenticate value of a 401 (RFC 9110 section
// 11.6.1): RFC 6750's Bearer on /v1, with invalid_token when a token was
// sent; on /api/v1/ai the key-and-secret scheme, named after its headers.
func challenge(withSecret, sent bool) string {
	if withSecret {
		return `APIKey realm="aivis", headers="X-API-Key X-API-Secret"`
	}
	if sent {
		return `Bearer realm="aivis", error="invalid_token"`
	}
	return `Bearer realm="aivis"`
}

var policyNames = [3]string{"minute", "hour", "day"}

// policies caches each tier's RateLimit-Policy header value.
var policies sync.Map // [3]int -> string

func policy(l [3]int) string {
	if p, ok := policies.Load(l); ok {
		return p.(string)
	}
	p := fmt.Sprintf(`"minute";q=%d;w=60, "hour";q=%d;w=3600, "day";q=%d;w=86400`, l[0], l[1], l[2])
	policies.Store(l, p)
	return p
}

// rateLimit admits an authenticated request (limits.Admit): refused while
// its address is out of failed authentications, else counted in the
// account's three windows, atomically, with the rate-limit headers set; a
// refused request counts in none.
func (s *Server) rateLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := stateOf(r.Context())
		p := st.principal
		t, ok := limits.TierByName(p.Account.Tier)
		if !ok {
			writeError(w, r, s.log, fmt.Errorf("account %s has unknown tier %q", p.AccountID(), p.Account.Tier))
			return
		}
		u := limits.Use{AccountID: p.AccountID(), KeyID: p.Key.ID, ClientID: p.ClientID(), At: s.now()}
		guard, d, err := limits.Admit(r.Context(), s.counter, s.guard, st.addr, u, t.Limits())
		if !s.admitted(w, r, guard, err) {
			return
		}
		h := w.Header()
		tw := d.Tightest()
		rem, reset := d.Remaining(tw), d.Reset[tw]
		b := make([]byte, 0, 40)
		b = append(b, '"')
		b = append(b, policyNames[tw]...)
		b = append(b, `";r=`...)
		b = strconv.AppendInt(b, int64(rem), 10)
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, max(reset-d.Now.Unix(), 0), 10)
		// The five values share one allocation, as net/http's header
		// parser's do.
		v := []string{strconv.Itoa(d.Limit[tw]), strconv.Itoa(rem), strconv.FormatInt(reset, 10), policy(d.Limit), string(b)}
		h["X-Ratelimit-Limit"] = v[0:1:1]
		h["X-Ratelimit-Remaining"] = v[1:2:2]
		h["X-Ratelimit-Reset"] = v[2:3:3]
		h["Ratelimit-Policy"] = v[3:4:4]
		h["Ratelimit"] = v[4:5:5]
		if err := d.Err(); err != nil {
			s.limits.Decision(metrics.RefusedWindow, t.Name)
			writeError(w, r, s.log, err)
			return
		}
		s.limits.Decision(metrics.Admitted, t.Name)
		st.decision = d
		next.ServeHTTP(w, r)
	})
}

// scope wraps a handler that needs the key to hold a scope. It is the
// handler of every operation, so it also refuses, before the operation
// reads them, query and path parameters that hold a character a tenant's
// text may not (paramsFault).
func (s *Server) scope(name string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := principal(r).Require(name)
		if err == nil {
			err = paramsFault(r)
		}
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		h(w, r)
	}
}

// growBy is the frame growStack puts on the stack: with what is below it,
// enough that the runtime gives the goroutine an 8 KB stack, which
// budget-status's middleware, authentication and handler fit in.
const growBy = 6 << 10

// growStack grows the goroutine's stack in one step, while few frames are
// on it. HTTP/2 serves each request on a goroutine of its own, which
// starts on Go's smallest stack (2 KB); the request's middleware and
// handler outgrow it, and each time the runtime copies the stack it walks
// every frame on it (twice a request for budget-status: 11% of its CPU on
// HTTP/2). HTTP/1.1 serves a connection's requests on one goroutine, whose
// stack has grown by then. i only keeps the frame from being optimized
// away.
//
//go:noinline
func growStack(i int) byte {
	var buf [growBy]byte
	return buf[i&(growBy-1)]
}
