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

// LatestReadings, LatestScans and LatestScan search, per domain, the
// index of its owner's readings or completed scans: none walks a table or
// the scans of other domains.
func TestLatestOfEachDomainSearchesIndexes(t *testing.T) {
	_, path := newDB(t)
	r := raw(t, path)
	for _, q := range sqlite.LatestQueries {
		query := q(3)
		plan := queryPlan(t, r, query, make([]any, strings.Count(query, "?"))...)
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN ") || strings.Contains(step, "scans_queue") || strings.Contains(step, "scans_owner") {
				t.Errorf("the query walks a table:\n%s", strings.Join(plan, "\n"))
				break
			}
		}
		t.Logf("\n%s", strings.Join(plan, "\n"))
	}
}
