package sqlite_test

import (
	"strings"
	"testing"

	"github.com/aivis/aivis/core/store/sqlite"
)

// Retention's statements (the suite's Deliveries/PruneInBoundedBatches...,
// Webhooks/DeletedKeptUntilItsDeliveriesAgeOut and Events/PruneIn...
// check what they remove) each search an index for their bounded batch:
// deliveries and logged events along their primary keys, whose ids begin
// with their time, and deleted webhooks along the index of deleted_at;
// none walks the deliveries.
func TestPruneQueriesSearchIndexes(t *testing.T) {
	_, path := newDB(t)
	r := raw(t, path)
	for i, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"", 0}, "sqlite_autoindex_webhook_deliveries_1 (id<?)"},
		{[]any{0, 0}, "webhooks_deleted (deleted_at<?)"},
		{[]any{"", 0, 0}, "sqlite_autoindex_event_log_1 (id<?)"},
	} {
		plan := strings.Join(queryPlan(t, r, sqlite.PruneQueries[i], tc.args...), "\n")
		if !strings.Contains(plan, tc.want) || strings.Contains(plan, "SCAN webhook_deliveries") {
			t.Errorf("prune %d walks:\n%s\nwant a search of %s", i, plan, tc.want)
		}
	}
}
