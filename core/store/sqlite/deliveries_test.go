package sqlite_test

import (
	"strings"
	"testing"
)

// A webhook's deliveries are listed and replayed by the time of their
// events (the suite's Deliveries/ListByEventTimeAndRedeliver checks what
// they do) along the index of (webhook_id, event_id), without sorting.
func TestDeliveriesByEventTimeSearchTheirIndex(t *testing.T) {
	_, path := newDB(t)
	r := raw(t, path)
	for _, q := range []string{
		`SELECT id FROM webhook_deliveries WHERE webhook_id = ? AND status = ? AND event_id < ? ORDER BY event_id DESC LIMIT ?`,
		`UPDATE webhook_deliveries SET status = 'pending' WHERE webhook_id = ? AND status = 'failed' AND event_id >= ? AND event_id < ?`,
	} {
		plan := queryPlan(t, r, q, make([]any, strings.Count(q, "?"))...)
		if p := strings.Join(plan, "\n"); !strings.Contains(p, "(webhook_id=? AND event_id") || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s\nwalks:\n%s", q, p)
		}
	}
}
