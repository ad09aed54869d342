package metrics

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// HTTP counts the API's and the dashboard's requests by route pattern
// (chi's, never the path), method and status class.
type HTTP struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	routes   *cache[routeKey, route]
}

// routeKey is a request's route as chi matched it (its patterns, one per
// router it went through, without joining them: no allocation), its method
// and its status class.
type routeKey struct {
	patterns [4]string
	method   string
	class    uint8
}

type route struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// maxRoutes bounds the children of the HTTP metrics: routes times methods
// times classes, far more than the router has.
const maxRoutes = 4000

func newHTTP(m *Metrics) *HTTP {
	h := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aivis_http_requests_total",
			Help: "Requests served, by route pattern, method and status class."}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "aivis_http_request_duration_seconds",
			Help: "How long requests took to serve, by route pattern and method.", Buckets: seconds}, []string{"route", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "aivis_http_requests_in_flight",
			Help: "Requests being served."}),
	}
	overflow := routeKey{patterns: [4]string{Other}, method: Other}
	h.routes = newCache(maxRoutes, overflow, func(k routeKey) route {
		pattern := Other
		if k != overflow {
			pattern = joinPatterns(k.patterns[:])
		}
		return route{requests: h.requests.WithLabelValues(pattern, k.method, classes[k.class]),
			duration: h.duration.WithLabelValues(pattern, k.method)}
	})
	m.register(h.requests, h.duration, h.inFlight)
	return h
}

// Start counts a request in flight; Done ends it.
func (h *HTTP) Start() {
	if h != nil {
		h.inFlight.Inc()
	}
}

// Done counts a request that Start counted: rctx is its chi routing
// context once served (its route patterns), status what it answered (0:
// nothing written, which net/http answers 200) and d how long it took.
func (h *HTTP) Done(rctx *chi.Context, method string, status int, d time.Duration) {
	if h == nil {
		return
	}
	h.inFlight.Dec()
	k := routeKey{method: Method(method), class: class(status)}
	if rctx != nil {
		ps := rctx.RoutePatterns
		if len(ps) > len(k.patterns) {
			// Deeper than any route of aivis: joined, which allocates.
			ps = append(ps[:len(k.patterns)-1:len(k.patterns)-1], strings.Join(ps[len(k.patterns)-1:], ""))
		}
		copy(k.patterns[:], ps)
	}
	r := h.routes.get(k)
	r.requests.Inc()
	r.duration.Observe(d.Seconds())
}

// joinPatterns is the route pattern of the patterns of each router a
// request went through, as chi's RoutePattern joins them: "/v1/*" and
// "/webhooks/{id}" are "/v1/webhooks/{id}". None: "none" (a request no
// router matched).
func joinPatterns(ps []string) string {
	rctx := chi.NewRouteContext()
	for _, p := range ps {
		if p != "" {
			rctx.RoutePatterns = append(rctx.RoutePatterns, p)
		}
	}
	if p := rctx.RoutePattern(); p != "" {
		return p
	}
	return "none"
}

var classes = [...]string{Other, "1xx", "2xx", "3xx", "4xx", "5xx"}

func class(status int) uint8 {
	if status == 0 {
		return 2
	}
	if c := status / 100; c >= 1 && c <= 5 {
		return uint8(c)
	}
	return 0
}

// methods are HTTP's own, the values of the method label.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// Method is a request's method as a label: one of HTTP's own, else Other
// (a client may send any word).
func Method(m string) string {
	if i := slices.Index(methods, m); i >= 0 {
		return methods[i]
	}
	return Other
}
