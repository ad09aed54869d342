package storetest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// FuzzCursors gives every paged list of s (content requests, domains,
// webhooks, a webhook's deliveries, events, readings, a scan's answers,
// a domain's changes, usage) an
// arbitrary cursor, seeded with the cursors each list gives and with what
// no list gives. A cursor the engine cannot read is ErrMalformed, and no
// other error, whatever its bytes (a NUL or bytes that are not UTF-8 in
// what it decodes to among them); from one it reads, the pages that follow
// list rows of the list, none twice, and end. s is a fresh store of the
// engine, the rows added here. An engine's tests call it from a fuzz
// target of their own:
//
//	func FuzzCursors(f *testing.F) { storetest.FuzzCursors(f, newStore(f)) }
func FuzzCursors(f *testing.F, s store.Store) {
	lists := cursorLists(f, s)
	raw := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []string{"", "!!!not a cursor!!!", "%%%", "\xff\xfe\x00", "AA", raw("\x00"), raw("\xff"), raw("x"),
		raw("1750000000000000000:\x00"), raw("1750000000000000000:cr_\xff"), raw("1750000000000000000:"), raw(":cr_1"),
		raw("2025-06-01T00:00:00Z \x00"), raw("2025-06-01T00:00:00Z cr_\xc3"), raw("2025-06-01T00:00:00+02:00 cr_1"),
		raw("10000-01-01T00:00:00Z cr_1"), raw("seq:1"), raw("seq:-1"), raw("seq:1\x00")} {
		f.Add(c)
	}
	for _, l := range lists {
		_, next, err := l.page("", 1)
		if err != nil || next == "" {
			f.Fatalf("%s: the first page of one: next %q, %v", l.name, next, err)
		}
		f.Add(next)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		for _, l := range lists {
			seen, cursor := map[string]bool{}, cursor
			for pages := 0; ; pages++ {
				if pages > len(l.ids) {
					t.Fatalf("%s from the cursor %q: more than %d pages", l.name, cursor, pages)
				}
				ids, next, err := l.page(cursor, 2)
				if err != nil {
					if pages > 0 || !errors.Is(err, store.ErrMalformed) {
						t.Fatalf("%s with the cursor %q: %v, want ErrMalformed", l.name, cursor, err)
					}
					break
				}
				for _, id := range ids {
					if seen[id] || !slices.Contains(l.ids, id) {
						t.Fatalf("%s from the cursor %q: %q again or not of the list %v", l.name, cursor, id, l.ids)
					}
					seen[id] = true
				}
				if next == "" {
					break
				}
				cursor = next
			}
		}
	})
}

// cursorList is a paged list: a page of at most limit rows after cursor,
// the ids of its rows and the next page's cursor; ids are every row's.
type cursorList struct {
	name string
	page func(cursor string, limit int) (ids []string, next string, err error)
	ids  []string
}

// cursorLists adds three rows to each paged list of s and returns the lists.
func cursorLists(tb testing.TB, s store.Store) []cursorList {
	tb.Helper()
	check := func(err error, what string) {
		tb.Helper()
		if err != nil {
			tb.Fatalf("%s: %v", what, err)
		}
	}
	check(s.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "Account acct_1", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0}), "CreateAccount")
	w := newWebhook("wh_0", "acct_1", "", "d0.example", t0)
	var readings []string
	check(s.Update(ctx, func(tx store.Tx) error {
		for i := range 3 {
			at := t0.Add(time.Duration(i) * time.Second)
			sc := newScan(fmt.Sprintf("scan_%d", i), "acct_1", "", fmt.Sprintf("dom_%d", i), at)
			if err := errors.Join(tx.InsertContentRequest(contentRequest(fmt.Sprintf("cr_%d", i), "acct_1", "", at)),
				tx.InsertDomain(newDomain(fmt.Sprintf("dom_%d", i), "acct_1", "", fmt.Sprintf("d%d.example", i), at)),
				tx.InsertWebhook(newWebhook(fmt.Sprintf("wh_%d", i), "acct_1", "", fmt.Sprintf("d%d.example", i), at)),
				tx.InsertScan(sc)); err != nil {
				return err
			}
			d := newDelivery(w.ID, w.AccountID, store.NewDeliveryID(at), fmt.Sprintf("evt_%d", i), at)
			if _, err := tx.InsertDelivery(d); err != nil {
				return err
			}
			if err := tx.LogEvents(store.LoggedEvent{ID: fmt.Sprintf("evl_%d", i), AccountID: "acct_1", Event: "ai_visibility_change",
				Domain: "example.com", Payload: []byte(`{}`), CreatedAt: at}); err != nil {
				return err
			}
			r, err := tx.InsertReading(newReading("acct_1", "", "example.com", 50+i, at))
			if err != nil {
				return err
			}
			readings = append(readings, fmt.Sprint(r.ID))
		}
		return tx.InsertScanAnswers(scanAnswers("scan_0", 3, t0))
	}), "the rows")
	var usage []store.KeyUsage
	for i := range 3 {
		usage = append(usage, store.KeyUsage{KeyID: fmt.Sprintf("key_%d", i), AccountID: "acct_1", Hour: t0.Truncate(time.Hour), Count: 1, LastUsed: t0})
	}
	check(s.SaveCounts(ctx, nil, usage), "the usage")
	check(s.Update(ctx, func(tx store.Tx) error {
		for i := range 3 {
			sc := newScan(fmt.Sprintf("done_%d", i), "acct_1", "", "dom_done", t0)
			sc.Status, sc.FinishedAt, sc.Result = store.ScanCompleted, t0.Add(time.Duration(i)*time.Second), []byte(`{}`)
			if err := tx.InsertScan(sc); err != nil {
				return err
			}
		}
		return nil
	}), "the completed scans")
	for i := range 3 {
		check(s.CreateChange(ctx, newChange(fmt.Sprintf("chg_%d", i), "acct_1", "dom_0", t0.Add(time.Duration(i)*time.Second))), "a change")
	}
	ids := func(prefix string) []string {
		return []string{prefix + "_0", prefix + "_1", prefix + "_2"}
	}
	return []cursorList{
		{"ListContentRequests", func(c string, n int) ([]string, string, error) {
			rs, next, err := s.ListContentRequests(ctx, store.ContentFilter{AccountID: "acct_1", Cursor: c, Limit: n})
			return idsOf(rs, crID), next, err
		}, ids("cr")},
		{"ListDomains", func(c string, n int) ([]string, string, error) {
			ds, next, err := s.ListDomains(ctx, store.DomainFilter{AccountID: "acct_1", AllClients: true, Cursor: c, Limit: n})
			return idsOf(ds, func(d store.MonitoredDomain) string { return d.ID }), next, err
		}, ids("dom")},
		{"ListWebhooks", func(c string, n int) ([]string, string, error) {
			ws, next, err := s.ListWebhooks(ctx, store.WebhookFilter{AccountID: "acct_1", AllClients: true, Cursor: c, Limit: n})
			return idsOf(ws, webhookID), next, err
		}, ids("wh")},
		{"ListDeliveries", func(c string, n int) ([]string, string, error) {
			ds, next, err := s.ListDeliveries(ctx, store.DeliveryFilter{WebhookID: w.ID, Cursor: c, Limit: n})
			return idsOf(ds, func(d store.Delivery) string { return d.EventID }), next, err
		}, ids("evt")},
		{"RecentEvents", func(c string, n int) ([]string, string, error) {
			es, next, err := s.RecentEvents(ctx, store.EventFilter{AccountID: "acct_1", AllClients: true, Cursor: c, Limit: n})
			return loggedIDs(es), next, err
		}, ids("evl")},
		{"ListReadings", func(c string, n int) ([]string, string, error) {
			rs, next, err := s.ListReadings(ctx, store.ReadingFilter{AccountID: "acct_1", Domain: "example.com"}, c, n)
			return idsOf(rs, func(r store.Reading) string { return fmt.Sprint(r.ID) }), next, err
		}, readings},
		{"ListScanAnswers", func(c string, n int) ([]string, string, error) {
			as, next, err := s.ListScanAnswers(ctx, store.AnswerFilter{AccountID: "acct_1", ScanID: "scan_0", Cursor: c, Limit: n})
			return idsOf(as, func(a store.ScanAnswer) string { return fmt.Sprint(a.Seq) }), next, err
		}, []string{"0", "1", "2"}},
		{"ListScans", func(c string, n int) ([]string, string, error) {
			scs, next, err := s.ListScans(ctx, store.ScanFilter{AccountID: "acct_1", Domain: "dom_done.example", Cursor: c, Limit: n})
			return idsOf(scs, func(sc store.Scan) string { return sc.ID }), next, err
		}, ids("done")},
		{"ListChanges", func(c string, n int) ([]string, string, error) {
			cs, next, err := s.ListChanges(ctx, store.ChangeFilter{AccountID: "acct_1", DomainID: "dom_0", Cursor: c, Limit: n})
			return idsOf(cs, changeID), next, err
		}, ids("chg")},
		{"ListUsage", func(c string, n int) ([]string, string, error) {
			us, next, err := s.ListUsage(ctx, store.UsageFilter{AccountID: "acct_1", Cursor: c, Limit: n})
			return idsOf(us, func(u store.KeyUsage) string { return u.KeyID }), next, err
		}, ids("key")},
	}
}

// CheckCursor is one input of the fuzz target of a cursor's codec: dec
// reads back what enc made of v (when v is a value enc is given: ok), and
// reads cursor either to a value enc writes as that very cursor or refuses
// it with ErrMalformed. same says whether two values are the same.
func CheckCursor[T any](t *testing.T, enc func(T) string, dec func(string) (T, error), same func(a, b T) bool, ok func(T) bool, v T, cursor string) {
	t.Helper()
	if ok(v) {
		if got, err := dec(enc(v)); err != nil || !same(got, v) {
			t.Fatalf("%v, written %q, reads back as %v, %v", v, enc(v), got, err)
		}
	}
	got, err := dec(cursor)
	switch {
	case err != nil && !errors.Is(err, store.ErrMalformed):
		t.Fatalf("the cursor %q: %v, want ErrMalformed", cursor, err)
	case err == nil && (!ok(got) || enc(got) != cursor):
		t.Fatalf("the cursor %q reads as %v, which is written %q", cursor, got, enc(got))
	}
}
