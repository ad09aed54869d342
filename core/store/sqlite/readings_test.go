package sqlite_test

import (
	"strings"
	"testing"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// Every step of the account-wide reads of a domain's readings (the
// suite's Readings/AccountWideReadsMergeOwners checks what they return) is
// an index search: none sorts or walks a domain's whole history.
func TestAccountWideReadingsSearchIndexes(t *testing.T) {
	_, path := newDB(t)
	r := raw(t, path)
	for _, cond := range []string{"", "measured_at <= ?", "(measured_at, id) < (?, ?)"} {
		args := make([]any, strings.Count(cond, "?"))
		q, qargs := sqlite.ReadingsQuery(store.ReadingFilter{AccountID: "acct_1", Domain: "example.com"}, cond, args, 20)
		plan := queryPlan(t, r, q, qargs...)
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN visibility_readings") || strings.HasPrefix(step, "SCAN r") ||
				strings.Contains(step, "visibility_readings") && !strings.Contains(step, "INDEX visibility_readings_owner") &&
					!strings.Contains(step, "INTEGER PRIMARY KEY") {
				t.Errorf("the account-wide read (%s) walks the table:\n%s", cond, strings.Join(plan, "\n"))
				break
			}
		}
		t.Logf("%s:\n%s", cond, strings.Join(plan, "\n"))
	}
}
