package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

func newReading(accountID, clientID, domain string, score int, at time.Time) store.Reading {
	return store.Reading{AccountID: accountID, ClientID: clientID, Domain: domain, VisibilityScore: score,
		Sentiment: "neutral", Source: "api", MeasuredAt: at}
}

func addReading(t *testing.T, s store.Store, r store.Reading) store.Reading {
	t.Helper()
	out, err := s.AddReading(ctx, r)
	must(t, err, "AddReading")
	if out.ID == 0 {
		t.Fatal("AddReading returned no id")
	}
	return out
}

func readingID(r store.Reading) int64 { return r.ID }

// A reading keeps every field (the time in UTC; a formula version of 0 as
// none); LatestReading is the
// newest measured of a domain (the account's own and every client's
// without a ClientID, one client's with it; at the same time, the one
// added last), ErrNotFound when there is none; a score outside 0..100, a
// sentiment score outside -1..1, a negative formula version or an unknown
// account is refused.
func testReadings(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	r := func(mod func(*store.Reading)) store.Reading {
		x := newReading("acct_1", "", "example.com", 50, t0)
		mod(&x)
		return x
	}
	addReading(t, s, r(func(x *store.Reading) {}))
	newest := addReading(t, s, r(func(x *store.Reading) {
		x.MeasuredAt, x.VisibilityScore, x.Sentiment, x.SentimentScore, x.Source = t0.Add(time.Hour).In(elsewhere), 72, "positive", 0.625, "scan"
		x.FormulaVersion = 2
	}))
	addReading(t, s, r(func(x *store.Reading) { x.MeasuredAt = t0.Add(30 * time.Minute) })) // older, added later
	cli1 := addReading(t, s, r(func(x *store.Reading) { x.ClientID, x.VisibilityScore, x.SentimentScore = "cli_1", 10, -1 }))
	addReading(t, s, r(func(x *store.Reading) { x.Domain, x.VisibilityScore = "tie.example", 1 }))
	tie2 := addReading(t, s, r(func(x *store.Reading) { x.Domain, x.VisibilityScore, x.SentimentScore = "tie.example", 100, 1 }))
	addReading(t, s, r(func(x *store.Reading) {
		x.AccountID, x.MeasuredAt, x.VisibilityScore = "acct_2", t0.Add(2*time.Hour), 99
	}))
	if tie2.ID <= cli1.ID || cli1.ID <= newest.ID {
		t.Errorf("reading ids %d, %d, %d: they grow with each reading added", newest.ID, cli1.ID, tie2.ID)
	}
	for _, tc := range []struct {
		name string
		f    store.ReadingFilter
		want store.Reading
	}{
		{"the newest of every owner", store.ReadingFilter{AccountID: "acct_1", Domain: "example.com"}, newest},
		{"one client's", store.ReadingFilter{AccountID: "acct_1", ClientID: "cli_1", Domain: "example.com"}, cli1},
		{"at the same time, the one added last", store.ReadingFilter{AccountID: "acct_1", Domain: "tie.example"}, tie2},
	} {
		tc.want.MeasuredAt = tc.want.MeasuredAt.UTC()
		if got, err := s.LatestReading(ctx, tc.f); err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("LatestReading, %s:\n got  %+v, %v\n want %+v", tc.name, got, err, tc.want)
		}
	}
	for _, f := range []store.ReadingFilter{
		{AccountID: "acct_1", Domain: "other.example"},
		{AccountID: "acct_1", ClientID: "cli_2", Domain: "example.com"},
		{AccountID: "acct_3", Domain: "example.com"},
		{AccountID: "acct_1", Domain: "example.com", AtOrBefore: t0.Add(-time.Nanosecond)},
	} {
		if _, err := s.LatestReading(ctx, f); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("LatestReading(%+v): %v, want ErrNotFound", f, err)
		}
	}
	for _, bad := range []store.Reading{
		r(func(x *store.Reading) { x.VisibilityScore = 101 }),
		r(func(x *store.Reading) { x.VisibilityScore = -1 }),
		r(func(x *store.Reading) { x.SentimentScore = 1.5 }),
		r(func(x *store.Reading) { x.SentimentScore = -1.01 }),
		r(func(x *store.Reading) { x.AccountID = "acct_none" }),
		r(func(x *store.Reading) { x.FormulaVersion = -1 }),
	} {
		if _, err := s.AddReading(ctx, bad); err == nil {
			t.Errorf("AddReading(%+v) succeeded", bad)
		}
	}
	if got, err := s.LatestReading(ctx, store.ReadingFilter{AccountID: "acct_1", Domain: "example.com"}); err != nil || got.ID != newest.ID {
		t.Errorf("after refused readings: %+v, %v", got, err)
	}
}

// Without a client, an agency's reads of a domain merge its own readings
// with each client's: newest measured first, ties by id (highest first),
// pages that neither skip nor repeat, and the newest as of a time; with a
// client, that client's only; never another account's.
func testAccountWideReadings(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountAgency)
	newAccount(t, s, "acct_2", store.AccountAgency)
	for _, id := range []string{"cli_a", "cli_b", "cli_c", "cli_d"} {
		newClient(t, s, "acct_1", id)
	}
	newClient(t, s, "acct_2", "cli_x")
	owners := []string{"", "cli_a", "cli_b", "cli_d"} // cli_c has no reading of the domain
	rng := rand.New(rand.NewPCG(1, 2))
	var all []store.Reading
	for i := range 300 {
		r := newReading("acct_1", owners[rng.IntN(len(owners))], "example.com", i%101,
			t0.Add(time.Duration(rng.IntN(60))*time.Minute)) // many share a time
		switch i % 10 {
		case 7: // noise: another domain, another account's client, a client's reading elsewhere
			r.Domain = "other.example"
		case 8:
			r.AccountID, r.ClientID = "acct_2", "cli_x"
		case 9:
			r.ClientID, r.Domain = "cli_c", "elsewhere.example"
		}
		r = addReading(t, s, r)
		if r.AccountID == "acct_1" && r.Domain == "example.com" {
			r.MeasuredAt = r.MeasuredAt.UTC()
			all = append(all, r)
		}
	}
	slices.SortFunc(all, func(a, b store.Reading) int {
		if c := b.MeasuredAt.Compare(a.MeasuredAt); c != 0 {
			return c
		}
		return int(b.ID - a.ID)
	})
	for _, owner := range owners {
		want := all
		if owner != "" {
			want = slices.DeleteFunc(slices.Clone(all), func(r store.Reading) bool { return r.ClientID != owner })
		}
		f := store.ReadingFilter{AccountID: "acct_1", ClientID: owner, Domain: "example.com"}
		for _, limit := range []int{1, 3, 7, 100, 1000} {
			var got []store.Reading
			cursor := ""
			for pages := 0; ; pages++ {
				page, next, err := s.ListReadings(ctx, f, cursor, limit)
				must(t, err, "ListReadings")
				if len(page) > limit || pages > len(want) {
					t.Fatalf("ListReadings, owner %q, limit %d: a page of %d", owner, limit, len(page))
				}
				got = append(got, page...)
				if next == "" {
					break
				}
				cursor = next
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ListReadings, owner %q, limit %d: pages hold\n%v\nwant\n%v", owner, limit, idsOf(got, readingID), idsOf(want, readingID))
			}
		}
		for _, m := range []int{-1, 0, 17, 30, 59, 61} {
			f.AtOrBefore = time.Time{}
			if m >= 0 {
				f.AtOrBefore = t0.Add(time.Duration(m) * time.Minute)
			}
			i := slices.IndexFunc(want, func(r store.Reading) bool { return f.AtOrBefore.IsZero() || !r.MeasuredAt.After(f.AtOrBefore) })
			got, err := s.LatestReading(ctx, f)
			switch {
			case i < 0 && !errors.Is(err, store.ErrNotFound):
				t.Errorf("LatestReading, owner %q as of %d min: %d, %v; want ErrNotFound", owner, m, got.ID, err)
			case i >= 0 && (err != nil || got.ID != want[i].ID):
				t.Errorf("LatestReading, owner %q as of %d min: reading %d, %v; want %d", owner, m, got.ID, err, want[i].ID)
			}
		}
	}
	if page, _, err := s.ListReadings(ctx, store.ReadingFilter{AccountID: "acct_2", ClientID: "cli_a", Domain: "example.com"}, "", 10); err != nil || len(page) != 0 {
		t.Errorf("ListReadings of another account's client: %d readings, %v", len(page), err)
	}
	if _, _, err := s.ListReadings(ctx, store.ReadingFilter{AccountID: "acct_1", Domain: "example.com"}, "!!!not a cursor!!!", 10); !errors.Is(err, store.ErrMalformed) {
		t.Errorf("ListReadings with a cursor it cannot read: %v, want ErrMalformed", err)
	}
}

// Readings added while pages are walked (newer ones, ones at the time of
// the last page's end, and older ones) make no reading of the walk's start
// missing or repeated.
func testListReadingsWhileAdding(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountAgency)
	newClient(t, s, "acct_1", "cli_1")
	var there []int64
	for i := range 40 {
		r := addReading(t, s, newReading("acct_1", []string{"", "cli_1"}[i%2], "example.com", i, t0.Add(time.Duration(i/4)*time.Minute)))
		there = append(there, r.ID)
	}
	var listed []store.Reading
	cursor := ""
	f := store.ReadingFilter{AccountID: "acct_1", Domain: "example.com"}
	for pages := 0; pages < 100; pages++ {
		page, next, err := s.ListReadings(ctx, f, cursor, 6)
		must(t, err, "ListReadings")
		listed = append(listed, page...)
		if next == "" {
			break
		}
		cursor = next
		last := page[len(page)-1]
		addReading(t, s, newReading("acct_1", "", "example.com", 1, t0.Add(time.Hour)))
		addReading(t, s, newReading("acct_1", "cli_1", "example.com", 2, last.MeasuredAt))
		addReading(t, s, newReading("acct_1", "", "example.com", 3, t0.Add(-time.Hour)))
	}
	onceEach(t, "ListReadings while adding", there, listed, readingID, func(a, b store.Reading) bool {
		return a.MeasuredAt.After(b.MeasuredAt) || a.MeasuredAt.Equal(b.MeasuredAt) && a.ID > b.ID
	})
}

// LatestReadings gives, in one call, the newest n readings of each of an
// account's monitored domains, newest first, each of the domain's own
// owner: the account's and a client's readings of one name stay apart, a
// domain without readings is absent, and another account's ids find
// nothing.
func testLatestReadings(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountAgency)
	newClient(t, s, "acct_1", "cli_1")
	update(t, s, "InsertDomain", func(tx store.Tx) error {
		for _, d := range []store.MonitoredDomain{
			newDomain("dom_own", "acct_1", "", "a.example", t0),
			newDomain("dom_cli", "acct_1", "cli_1", "a.example", t0),
			newDomain("dom_none", "acct_1", "", "b.example", t0),
		} {
			if err := tx.InsertDomain(d); err != nil {
				return err
			}
		}
		return nil
	})
	var want []store.Reading
	for i, rd := range []struct {
		client         string
		score, formula int
	}{{"", 10, 0}, {"", 20, 2}, {"cli_1", 70, 0}, {"cli_1", 60, 0}, {"", 30, 2}} {
		r := newReading("acct_1", rd.client, "a.example", rd.score, t0.Add(time.Duration(i)*time.Minute))
		r.FormulaVersion = rd.formula
		want = append(want, addReading(t, s, r))
	}
	ids := []string{"dom_own", "dom_cli", "dom_none", "dom_unknown"}
	for _, tc := range []struct {
		n    int
		want map[string][]store.Reading
	}{
		{0, map[string][]store.Reading{"dom_own": {want[4]}, "dom_cli": {want[3]}}},
		{1, map[string][]store.Reading{"dom_own": {want[4]}, "dom_cli": {want[3]}}},
		{2, map[string][]store.Reading{"dom_own": {want[4], want[1]}, "dom_cli": {want[3], want[2]}}},
		{10, map[string][]store.Reading{"dom_own": {want[4], want[1], want[0]}, "dom_cli": {want[3], want[2]}}},
	} {
		got, err := s.LatestReadings(ctx, "acct_1", ids, tc.n)
		must(t, err, "LatestReadings")
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("LatestReadings(%d) = %+v\nwant %+v", tc.n, got, tc.want)
		}
	}
	if other, err := s.LatestReadings(ctx, "acct_other", []string{"dom_own"}, 1); err != nil || len(other) != 0 {
		t.Errorf("LatestReadings of another account's ids: %+v, %v", other, err)
	}
	if none, err := s.LatestReadings(ctx, "acct_1", nil, 1); err != nil || len(none) != 0 {
		t.Errorf("LatestReadings of no ids: %+v, %v", none, err)
	}
}

// In a transaction, LatestReading is the newest of exactly one owner, and
// sees the transaction's own readings; a failed Update's readings are
// never the newest afterwards; a reading measured earlier does not become
// the newest; another handle's commit is seen by the next transaction.
func testLatestReadingInTransaction(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	newAccount(t, s, "acct_1", store.AccountAgency)
	newClient(t, s, "acct_1", "cli_1")
	own := store.ReadingFilter{AccountID: "acct_1", Domain: "a.example"}
	latest := func(s store.Store, f store.ReadingFilter) (store.Reading, error) {
		var r store.Reading
		err := s.Update(ctx, func(tx store.Tx) (err error) { r, err = tx.LatestReading(f); return err })
		return r, err
	}
	if _, err := latest(s, own); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LatestReading in a transaction, before any reading: %v, want ErrNotFound", err)
	}
	first := newReading("acct_1", "", "a.example", 10, t0)
	first.FormulaVersion = 2
	addReading(t, s, first)
	addReading(t, s, newReading("acct_1", "cli_1", "a.example", 90, t0.Add(time.Hour)))
	if r, err := latest(s, own); err != nil || r.VisibilityScore != 10 || r.FormulaVersion != 2 {
		t.Fatalf("LatestReading in a transaction, of the account's own (a client's newer one apart): %+v, %v; want 10", r, err)
	}
	if r, err := latest(s, store.ReadingFilter{AccountID: "acct_1", ClientID: "cli_1", Domain: "a.example"}); err != nil || r.VisibilityScore != 90 {
		t.Fatalf("LatestReading in a transaction, of a client: %+v, %v; want 90", r, err)
	}

	err := s.Update(ctx, func(tx store.Tx) error {
		if _, err := tx.InsertReading(newReading("acct_1", "", "a.example", 20, t0.Add(time.Minute))); err != nil {
			return err
		}
		if r, err := tx.LatestReading(own); err != nil || r.VisibilityScore != 20 {
			t.Errorf("LatestReading after InsertReading in the same transaction: %+v, %v; want 20", r, err)
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatal(err)
	}
	if r, err := latest(s, own); err != nil || r.VisibilityScore != 10 {
		t.Fatalf("after a failed Update that added a newer reading: %+v, %v; want 10", r, err)
	}
	addReading(t, s, newReading("acct_1", "", "a.example", 5, t0.Add(-time.Hour)))
	if r, err := latest(s, own); err != nil || r.VisibilityScore != 10 {
		t.Fatalf("after a reading measured earlier: %+v, %v; want 10", r, err)
	}
	other := reopen(t)
	addReading(t, other, newReading("acct_1", "", "a.example", 50, t0.Add(4*time.Minute)))
	if r, err := latest(s, own); err != nil || r.VisibilityScore != 50 {
		t.Fatalf("after another handle's reading: %+v, %v; want 50", r, err)
	}
	addReading(t, s, newReading("acct_1", "", "a.example", 60, t0.Add(5*time.Minute)))
	if r, err := latest(other, own); err != nil || r.VisibilityScore != 60 {
		t.Fatalf("the other handle, after this one's reading: %+v, %v; want 60", r, err)
	}
	if r, err := s.LatestReading(ctx, own); err != nil || r.VisibilityScore != 90 {
		t.Fatalf("LatestReading outside a transaction, of every owner: %+v, %v; want the client's 90", r, err)
	}
}

func newDomain(id, accountID, clientID, domain string, created time.Time) store.MonitoredDomain {
	return store.MonitoredDomain{ID: id, AccountID: accountID, ClientID: clientID, Domain: domain, CreatedAt: created, UpdatedAt: created}
}

// A monitored domain keeps every field (empty lists come back empty); an
// owner monitors a name once (ErrConflict), the account and each client
// apart; another account's domain is ErrNotFound to read, update and
// delete; UpdateDomain changes the lists, the scan times and updated_at,
// not the owner, the name or the creation; CountDomains counts the
// clients' too.
func testDomains(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	full := store.MonitoredDomain{ID: "dom_1", AccountID: "acct_1", ClientID: "cli_1", Domain: "xn--bcher-kva.example",
		Brands: []string{"Bücher", "Buecher"}, Aliases: []string{"BK"}, Competitors: []string{"other.example"},
		Topics: []string{"books", "reading"}, Prompts: []store.Prompt{{Text: "best \"books\"?", Intent: "discovery"}, {Text: "Bücher?", Intent: "custom"}},
		Markets:    []string{"de-DE", "de-AT", "zh-Hant-TW"},
		NextScanAt: t0.Add(time.Hour).In(elsewhere),
		LastScanAt: t0.Add(-time.Hour), CreatedAt: t0.In(elsewhere), UpdatedAt: t0}
	update(t, s, "InsertDomain", func(tx store.Tx) error {
		for _, d := range []store.MonitoredDomain{full, newDomain("dom_2", "acct_1", "", full.Domain, t0),
			newDomain("dom_3", "acct_1", "", "b.example", t0), newDomain("dom_x", "acct_2", "", full.Domain, t0)} {
			if err := tx.InsertDomain(d); err != nil {
				return err
			}
		}
		return nil
	})
	want := full
	want.NextScanAt, want.CreatedAt = want.NextScanAt.UTC(), t0
	if got, err := s.MonitoredDomain(ctx, "acct_1", "dom_1"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("MonitoredDomain round trip:\n got  %+v, %v\n want %+v", got, err, want)
	}
	if got, err := s.MonitoredDomain(ctx, "acct_1", "dom_3"); err != nil || len(got.Brands)+len(got.Aliases)+len(got.Competitors)+len(got.Topics)+len(got.Prompts)+len(got.Markets) != 0 ||
		!got.NextScanAt.IsZero() || !got.LastScanAt.IsZero() {
		t.Errorf("a domain without lists or scans: %#v, %v; want no lists and zero times", got, err)
	}
	for _, d := range []store.MonitoredDomain{newDomain("dom_4", "acct_1", "cli_1", full.Domain, t0), newDomain("dom_5", "acct_1", "", "b.example", t0)} {
		if err := s.Update(ctx, func(tx store.Tx) error { return tx.InsertDomain(d) }); !errors.Is(err, store.ErrConflict) {
			t.Errorf("InsertDomain of a name its owner monitors already: %v, want ErrConflict", err)
		}
	}
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.InsertDomain(newDomain("dom_1", "acct_1", "", "c.example", t0)) }); !errors.Is(err, store.ErrConflict) {
		t.Errorf("InsertDomain of a taken id: %v, want ErrConflict", err)
	}
	if _, err := s.MonitoredDomain(ctx, "acct_2", "dom_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("MonitoredDomain of another account's: %v, want ErrNotFound", err)
	}

	edit := want
	edit.ClientID, edit.Domain, edit.CreatedAt = "", "changed.example", t0.Add(time.Hour) // not changed by an update
	edit.Brands, edit.Aliases, edit.Competitors, edit.Topics = []string{"B"}, []string{}, []string{"c.example"}, []string{"t"}
	edit.Prompts, edit.Markets = []store.Prompt{{Text: "Bücher?", Intent: "branded"}}, []string{"en-US"}
	edit.NextScanAt, edit.LastScanAt, edit.UpdatedAt = t0.Add(2*time.Hour), t0.Add(time.Minute), t0.Add(time.Minute)
	update(t, s, "UpdateDomain", func(tx store.Tx) error {
		in, err := tx.MonitoredDomain("acct_1", "dom_1")
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(in, want) {
			t.Errorf("MonitoredDomain in a transaction: %+v", in)
		}
		if _, err := tx.MonitoredDomain("acct_2", "dom_1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("MonitoredDomain in a transaction, another account's: %v", err)
		}
		return tx.UpdateDomain(edit)
	})
	edit.ClientID, edit.Domain, edit.CreatedAt = want.ClientID, want.Domain, want.CreatedAt
	if got, err := s.MonitoredDomain(ctx, "acct_1", "dom_1"); err != nil || !reflect.DeepEqual(got, edit) {
		t.Errorf("after UpdateDomain:\n got  %+v, %v\n want %+v", got, err, edit)
	}
	theirs := edit
	theirs.AccountID = "acct_2"
	for name, fn := range map[string]func(tx store.Tx) error{
		"UpdateDomain of another account's": func(tx store.Tx) error { return tx.UpdateDomain(theirs) },
		"DeleteDomain of another account's": func(tx store.Tx) error { return tx.DeleteDomain("acct_2", "dom_1") },
		"DeleteDomain of an unknown id":     func(tx store.Tx) error { return tx.DeleteDomain("acct_1", "dom_none") },
	} {
		if err := s.Update(ctx, fn); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
	}
	count := func(account string) int {
		var n int
		update(t, s, "CountDomains", func(tx store.Tx) (err error) { n, err = tx.CountDomains(account); return err })
		return n
	}
	if n := count("acct_1"); n != 3 {
		t.Errorf("CountDomains = %d, want 3 (the account's and its client's)", n)
	}
	update(t, s, "DeleteDomain", func(tx store.Tx) error { return tx.DeleteDomain("acct_1", "dom_1") })
	if _, err := s.MonitoredDomain(ctx, "acct_1", "dom_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("MonitoredDomain after DeleteDomain: %v", err)
	}
	if n := count("acct_1"); n != 2 {
		t.Errorf("CountDomains after a delete = %d, want 2", n)
	}
	// The name is free again for its owner.
	update(t, s, "InsertDomain", func(tx store.Tx) error {
		return tx.InsertDomain(newDomain("dom_6", "acct_1", "cli_1", full.Domain, t0))
	})
}

// ListDomains pages an owner's domains (the account's own, one client's,
// or with AllClients all of them) newest first, ties by id, without skips
// or repeats.
func testListDomains(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	owners := []string{"", "cli_1"}
	var all []store.MonitoredDomain
	update(t, s, "InsertDomain", func(tx store.Tx) error {
		for i := range 45 {
			d := newDomain(fmt.Sprintf("dom_%02d", (i*17)%45), "acct_1", owners[i%2], fmt.Sprintf("d%d.example", i), t0.Add(time.Duration(i/3)*time.Second))
			all = append(all, d)
			if err := tx.InsertDomain(d); err != nil {
				return err
			}
		}
		return tx.InsertDomain(newDomain("dom_x", "acct_2", "", "d0.example", t0.Add(time.Hour)))
	})
	slices.SortFunc(all, func(a, b store.MonitoredDomain) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	for _, f := range []store.DomainFilter{{AllClients: true}, {ClientID: ""}, {ClientID: "cli_1"}} {
		var want []string
		for _, d := range all {
			if f.AllClients || d.ClientID == f.ClientID {
				want = append(want, d.ID)
			}
		}
		for _, limit := range []int{1, 4, 100} {
			f.AccountID, f.Limit = "acct_1", limit
			got := walk(t, "ListDomains", limit, func(cursor string) ([]string, string, error) {
				f.Cursor = cursor
				page, next, err := s.ListDomains(ctx, f)
				return idsOf(page, func(d store.MonitoredDomain) string { return d.ID }), next, err
			})
			if !slices.Equal(got, want) {
				t.Errorf("ListDomains %+v:\n got  %v\n want %v", f, got, want)
			}
		}
	}
}

// The cap of an account's domains, CountDomains then InsertDomain in one
// Update, admits exactly the cap among 32 concurrent callers on two
// handles, the account's and its clients' counted together.
func testDomainCapUnderConcurrency(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	newAccount(t, s, "acct_1", store.AccountAgency)
	newClient(t, s, "acct_1", "cli_1")
	update(t, s, "InsertDomain", func(tx store.Tx) error {
		return tx.InsertDomain(newDomain("dom_first", "acct_1", "cli_1", "first.example", t0))
	})
	var c tally
	Together(concurrency, func(i int) {
		c.add(hs[i%2].Update(ctx, func(tx store.Tx) error {
			n, err := tx.CountDomains("acct_1")
			if err != nil {
				return err
			}
			if n >= 10 {
				return errRefused
			}
			return tx.InsertDomain(newDomain(fmt.Sprintf("dom_%02d", i), "acct_1", []string{"", "cli_1"}[i%2], fmt.Sprintf("d%d.example", i), t0))
		}))
	})
	c.expect(t, "a cap of 10 domains, 1 monitored", 9)
	page, _, err := s.ListDomains(ctx, store.DomainFilter{AccountID: "acct_1", AllClients: true, Limit: 100})
	if err != nil || len(page) != 10 {
		t.Errorf("%d domains stored, %v; want 10", len(page), err)
	}
}

// InsertReadings adds readings in their order, each with an id above the
// one before, and gives each its owner's newest reading before the batch
// (ID 0 for none): never another owner's, nor one of the batch, whatever
// their order. A batch the store refuses adds none of its readings.
func testInsertReadings(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountAgency)
	newClient(t, s, "acct_1", "cli_1")
	old := addReading(t, s, newReading("acct_1", "", "a.example", 10, t0))
	addReading(t, s, newReading("acct_1", "", "a.example", 5, t0.Add(-time.Hour)))
	theClient := addReading(t, s, newReading("acct_1", "cli_1", "a.example", 90, t0.Add(time.Hour)))
	batch := []store.Reading{
		newReading("acct_1", "", "a.example", 20, t0.Add(time.Minute)),
		newReading("acct_1", "", "b.example", 30, t0.Add(time.Minute)),
		newReading("acct_1", "", "a.example", 15, t0.Add(-time.Minute)), // measured before the batch's first
		newReading("acct_1", "cli_1", "a.example", 91, t0.Add(2*time.Hour)),
	}
	batch[1].FormulaVersion = 3
	var added, before []store.Reading
	must(t, s.Update(ctx, func(tx store.Tx) (err error) {
		added, before, err = tx.InsertReadings(batch)
		return err
	}), "InsertReadings")
	if len(added) != len(batch) || len(before) != len(batch) {
		t.Fatalf("InsertReadings of %d: %d added, %d before", len(batch), len(added), len(before))
	}
	for i, r := range added {
		if r.ID <= theClient.ID || (i > 0 && r.ID <= added[i-1].ID) {
			t.Errorf("reading %d's id %d: want each above the one before (the store's newest is %d)", i, r.ID, theClient.ID)
		}
		if r.VisibilityScore != batch[i].VisibilityScore || r.Domain != batch[i].Domain || r.ClientID != batch[i].ClientID ||
			r.FormulaVersion != batch[i].FormulaVersion || !r.MeasuredAt.Equal(batch[i].MeasuredAt) {
			t.Errorf("reading %d came back as %+v, given %+v", i, r, batch[i])
		}
	}
	for i, want := range []int64{old.ID, 0, old.ID, theClient.ID} {
		if before[i].ID != want {
			t.Errorf("reading %d's newest before the batch: %+v, want id %d", i, before[i], want)
		}
	}
	if before[0].VisibilityScore != 10 || !before[0].MeasuredAt.Equal(t0) || before[3].VisibilityScore != 90 {
		t.Errorf("the newest before the batch: %+v and %+v, want the scores 10 and 90 as stored", before[0], before[3])
	}
	for _, c := range []struct {
		f    store.ReadingFilter
		want int
	}{{store.ReadingFilter{AccountID: "acct_1", Domain: "a.example"}, 91}, {store.ReadingFilter{AccountID: "acct_1", Domain: "b.example"}, 30}} {
		if r, err := s.LatestReading(ctx, c.f); err != nil || r.VisibilityScore != c.want {
			t.Errorf("LatestReading(%+v) after the batch: %+v, %v; want %d", c.f, r, err, c.want)
		}
	}
	var own store.Reading
	must(t, s.Update(ctx, func(tx store.Tx) (err error) {
		own, err = tx.LatestReading(store.ReadingFilter{AccountID: "acct_1", Domain: "a.example"})
		return err
	}), "LatestReading")
	if own.ID != added[0].ID {
		t.Errorf("the account's own newest after the batch: %+v, want the batch's first (the third was measured earlier)", own)
	}

	refused := []store.Reading{newReading("acct_1", "", "c.example", 40, t0), newReading("acct_1", "", "c.example", 101, t0)}
	err := s.Update(ctx, func(tx store.Tx) error { _, _, err := tx.InsertReadings(refused); return err })
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("InsertReadings with a score of 101: %v, want ErrConflict", err)
	}
	if r, err := s.LatestReading(ctx, store.ReadingFilter{AccountID: "acct_1", Domain: "c.example"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after a refused batch: %+v, %v; want none of it", r, err)
	}
}
