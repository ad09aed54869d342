package delivery

import (
	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/csvexport"
	"github.com/aivis/aivis/core/store"
)

// View is a delivery as the API shows it (with its attempts when
// attempts is not nil); connection says whose it is, a connection's or a
// webhook's.
func View(d store.Delivery, attempts []store.Attempt, connection bool) client.Delivery {
	v := client.Delivery{ID: d.ID, EventID: d.EventID, Event: d.Event, Status: d.Status, Attempts: d.Attempts,
		LastError: optional(d.LastError), CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
	if connection {
		v.ConnectionID = d.WebhookID
	} else {
		v.WebhookID = d.WebhookID
	}
	if d.Status == store.DeliveryPending && !d.NextAttemptAt.IsZero() {
		next := d.NextAttemptAt.UTC()
		v.NextAttemptAt = &next
	}
	if d.LastStatus != 0 {
		v.LastStatus = &d.LastStatus
	}
	if attempts != nil {
		v.AttemptLog = make([]client.Attempt, 0, len(attempts))
		for _, a := range attempts {
			ca := client.Attempt{N: a.N, At: a.At, LatencyMS: float64(a.Latency.Microseconds()) / 1000, ResponseBody: a.ResponseBody,
				Error: optional(a.Error), Result: a.Result}
			if a.StatusCode != 0 {
				code := a.StatusCode
				ca.StatusCode = &code
			}
			v.AttemptLog = append(v.AttemptLog, ca)
		}
	}
	return v
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// CSVColumns are the columns of a deliveries export, the API's and the
// dashboard's.
var CSVColumns = []string{"id", "event_id", "event", "status", "attempts", "next_attempt_at", "last_status_code", "last_error",
	"created_at", "updated_at"}

// CSVRow is a delivery's row under CSVColumns.
func CSVRow(d client.Delivery) []string {
	return []string{d.ID, d.EventID, d.Event, d.Status, csvexport.Int(d.Attempts), csvexport.TimePtr(d.NextAttemptAt),
		csvexport.IntPtr(d.LastStatus), csvexport.String(d.LastError), csvexport.Time(d.CreatedAt), csvexport.Time(d.UpdatedAt)}
}
