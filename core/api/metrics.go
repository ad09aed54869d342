package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/metrics"
)

// observe counts a request in the HTTP metrics once served, by the route
// pattern chi matched (known only once it is routed, so observe runs
// inside the router), its method and its status. It costs an allocation
// only when base did not give it its status writer.
func (s *Server) observe(next http.Handler) http.Handler {
	if s.httpMetrics == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw, ok := w.(*statusWriter)
		if !ok {
			sw = &statusWriter{ResponseWriter: w}
		}
		s.httpMetrics.Start()
		defer func() { s.httpMetrics.Done(chi.RouteContext(r.Context()), r.Method, sw.status, time.Since(start)) }()
		next.ServeHTTP(sw, r)
	})
}

// limitRefusal is the outcome a service's refusal is in the limits'
// metrics (the tier's active requests or month's budget), "" for an error
// of another kind.
func limitRefusal(err error) string {
	if fe, ok := fault.As(err); ok {
		switch fe.Code {
		case fault.ActiveRequestLimit:
			return metrics.RefusedActive
		case fault.MonthlyBudgetExceeded:
			return metrics.RefusedBudget
		}
	}
	return ""
}
