package sqlite_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// Without a client, an agency account's reads of a domain merge its own
// readings with each client's: the newest first, ties broken by id, pages
// that neither skip nor repeat, and the newest as of a time.
func TestAccountWideReadingsMergeOwners(t *testing.T) {
	db, path := newDB(t)
	account(t, db, "acct_1", store.AccountAgency)
	account(t, db, "acct_2", store.AccountAgency)
	for _, id := range []string{"cli_a", "cli_b", "cli_c", "cli_d"} {
		must(t, db.CreateClient(ctx, store.Client{ID: id, AccountID: "acct_1", Name: id, CreatedAt: t0}))
	}
	must(t, db.CreateClient(ctx, store.Client{ID: "cli_x", AccountID: "acct_2", Name: "x", CreatedAt: t0}))
	owners := []string{"", "cli_a", "cli_b", "cli_d"} // cli_c has no reading of the domain
	rng := rand.New(rand.NewPCG(1, 2))
	var all []store.Reading
	for i := range 300 {
		r := store.Reading{AccountID: "acct_1", ClientID: owners[rng.IntN(len(owners))], Domain: "example.com",
			VisibilityScore: i % 101, Sentiment: "neutral", Source: "test",
			MeasuredAt: t0.Add(time.Duration(rng.IntN(60)) * time.Minute)} // many share a time
		switch i % 10 {
		case 7: // noise: another domain, another account's client, a client of the domain elsewhere
			r.Domain = "other.example"
		case 8:
			r.AccountID, r.ClientID = "acct_2", "cli_x"
		case 9:
			r.ClientID, r.Domain = "cli_c", "elsewhere.example"
		}
		r, err := db.AddReading(ctx, r)
		must(t, err)
		if r.AccountID == "acct_1" && r.Domain == "example.com" {
			all = append(all, r)
		}
	}
	slices.SortFunc(all, func(a, b store.Reading) int {
		if c := b.MeasuredAt.Compare(a.MeasuredAt); c != 0 {
			return c
		}
		return int(b.ID - a.ID)
	})
	ids := func(rs []store.Reading) []int64 {
		out := make([]int64, len(rs))
		for i, r := range rs {
			out[i] = r.ID
		}
		return out
	}
	for _, owner := range append([]string{""}, owners[1:]...) {
		want := all
		if owner != "" {
			want = slices.DeleteFunc(slices.Clone(all), func(r store.Reading) bool { return r.ClientID != owner })
		}
		f := store.ReadingFilter{AccountID: "acct_1", ClientID: owner, Domain: "example.com"}
		for _, limit := range []int{1, 3, 7, 100, 1000} {
			var got []store.Reading
			cursor := ""
			for pages := 0; ; pages++ {
				page, next, err := db.ListReadings(ctx, f, cursor, limit)
				must(t, err)
				if len(page) > limit || pages > len(want) {
					t.Fatalf("owner %q, limit %d: a page of %d", owner, limit, len(page))
				}
				got = append(got, page...)
				if next == "" {
					break
				}
				cursor = next
			}
			if !slices.Equal(ids(got), ids(want)) {
				t.Fatalf("owner %q, limit %d: pages hold\n%v\nwant\n%v", owner, limit, ids(got), ids(want))
			}
		}
		for _, m := range []int{-1, 0, 17, 30, 59, 61} {
			f.AtOrBefore = time.Time{}
			if m >= 0 {
				f.AtOrBefore = t0.Add(time.Duration(m) * time.Minute)
			}
			i := slices.IndexFunc(want, func(r store.Reading) bool { return f.AtOrBefore.IsZero() || !r.MeasuredAt.After(f.AtOrBefore) })
			got, err := db.LatestReading(ctx, f)
			if i < 0 {
				if err == nil {
					t.Errorf("owner %q as of %d min: %d, want none", owner, m, got.ID)
				}
				continue
			}
			must(t, err)
			if got.ID != want[i].ID || got.ClientID != owner && owner != "" {
				t.Errorf("owner %q as of %d min: reading %d, want %d", owner, m, got.ID, want[i].ID)
			}
		}
	}

	// Every step of the account-wide reads is an index search: none sorts
	// or walks a domain's whole history.
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
