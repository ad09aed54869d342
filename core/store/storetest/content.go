package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

func contentRequest(id, accountID, clientID string, created time.Time) store.ContentRequest {
	return store.ContentRequest{
		ID: id, AccountID: accountID, ClientID: clientID, KeyID: "key_1", Type: "optimize", Status: "queued",
		Domain: "example.com", Budget: 10_000_000, BudgetMonth: "2025-06", CreatedAt: created, UpdatedAt: created,
	}
}

func insertRequests(t *testing.T, s store.Store, crs ...store.ContentRequest) {
	t.Helper()
	update(t, s, "InsertContentRequest", func(tx store.Tx) error {
		for _, c := range crs {
			if err := tx.InsertContentRequest(c); err != nil {
				return err
			}
		}
		return nil
	})
}

// A content request keeps every field, in and out of a transaction; an
// empty list and map come back empty, not nil; another account's request
// is ErrNotFound; ids are unique (ErrConflict); an update of an unknown
// request is ErrNotFound.
func testContentRequestRoundTrip(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	full := store.ContentRequest{
		ID: "cr_full", AccountID: "acct_1", ClientID: "cli_1", KeyID: "key_1", Type: "analyze", Status: "queued",
		Domain: "xn--bcher-kva.de", URL: "https://xn--bcher-kva.de/a?b=c", Content: "Grüße, \"quoted\"\n\x00 nul",
		TargetQueries: []string{"best books", "bücher kaufen"}, Metadata: map[string]string{"campaign": "q3", "ü": "ö"},
		Budget: 1_234_567_890, Spent: 0, BudgetMonth: "2025-06", CreatedAt: t0.In(elsewhere), UpdatedAt: t0,
	}
	bare := contentRequest("cr_bare", "acct_1", "", t0.Add(time.Second))
	insertRequests(t, s, full, bare)

	want := full
	want.CreatedAt = t0
	if got, err := s.ContentRequest(ctx, "acct_1", "cr_full"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ContentRequest round trip:\n got  %+v, %v\n want %+v", got, err, want)
	}
	got, err := s.ContentRequest(ctx, "acct_1", "cr_bare")
	must(t, err, "ContentRequest")
	if got.TargetQueries == nil || len(got.TargetQueries) != 0 || got.Metadata == nil || len(got.Metadata) != 0 || got.Result != nil || got.Work != nil {
		t.Errorf("a request without queries, metadata, result or work: queries %#v, metadata %#v, result %q, work %q; want empty, empty, nil, nil",
			got.TargetQueries, got.Metadata, got.Result, got.Work)
	}
	if _, err := s.ContentRequest(ctx, "acct_2", "cr_full"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ContentRequest of another account's request: %v, want ErrNotFound", err)
	}
	if _, _, err := s.ContentRequestClaim(ctx, "acct_2", "cr_full"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ContentRequestClaim of another account's request: %v, want ErrNotFound", err)
	}
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.InsertContentRequest(full) }); !errors.Is(err, store.ErrConflict) {
		t.Errorf("InsertContentRequest of a taken id: %v, want ErrConflict", err)
	}

	// Every mutable field, read inside the transaction first.
	upd := want
	upd.Status, upd.Spent, upd.FailureReason, upd.Step = "processing", 1_000_000, "a reason", "rewrite"
	upd.Result, upd.Work = []byte(`{"score":72,"notes":["a","b"]}`), []byte(`{"analyze":{"done":true}}`)
	upd.Attempts, upd.HandBacks, upd.LeaseUntil = 3, 1, t0.Add(2*time.Minute)
	upd.UpdatedAt, upd.StartedAt, upd.EndedAt = t0.Add(time.Minute), t0.Add(10*time.Second), t0.Add(time.Minute)
	update(t, s, "UpdateContentRequest", func(tx store.Tx) error {
		in, err := tx.ContentRequest("acct_1", "cr_full")
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(in, want) {
			t.Errorf("ContentRequest in a transaction:\n got  %+v\n want %+v", in, want)
		}
		if _, err := tx.ContentRequest("acct_2", "cr_full"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ContentRequest in a transaction, of another account's request: %v, want ErrNotFound", err)
		}
		return tx.UpdateContentRequest(upd, 0)
	})
	if got, err := s.ContentRequest(ctx, "acct_1", "cr_full"); err != nil || !reflect.DeepEqual(got, upd) {
		t.Errorf("after UpdateContentRequest:\n got  %+v, %v\n want %+v", got, err, upd)
	}
	if status, attempts, err := s.ContentRequestClaim(ctx, "acct_1", "cr_full"); err != nil || status != "processing" || attempts != 3 {
		t.Errorf("ContentRequestClaim = %q, %d, %v; want processing, 3", status, attempts, err)
	}
	err = s.Update(ctx, func(tx store.Tx) error {
		return tx.UpdateContentRequest(contentRequest("cr_none", "acct_1", "", t0), 0)
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateContentRequest of an unknown request: %v, want ErrNotFound", err)
	}
}

// The store refuses a request no code path may write (spent outside
// [0, budget], a budget that is not positive, an unknown status or
// account), on insert and on update, and the refusal undoes the
// transaction's other writes.
func testContentRequestConstraints(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	for i, tc := range []struct {
		name string
		mod  func(*store.ContentRequest)
	}{
		{"spent above budget", func(c *store.ContentRequest) { c.Spent = c.Budget + 1 }},
		{"negative spent", func(c *store.ContentRequest) { c.Spent = -1 }},
		{"zero budget", func(c *store.ContentRequest) { c.Budget = 0 }},
		{"negative budget", func(c *store.ContentRequest) { c.Budget = -5 }},
		{"unknown status", func(c *store.ContentRequest) { c.Status = "paused" }},
		{"unknown account", func(c *store.ContentRequest) { c.AccountID = "acct_none" }},
	} {
		ok := contentRequest(fmt.Sprintf("cr_ok%d", i), "acct_1", "", t0)
		bad := contentRequest(fmt.Sprintf("cr_bad%d", i), "acct_1", "", t0)
		tc.mod(&bad)
		err := s.Update(ctx, func(tx store.Tx) error {
			if err := tx.InsertContentRequest(ok); err != nil {
				return err
			}
			return tx.InsertContentRequest(bad)
		})
		if err == nil {
			t.Errorf("%s: InsertContentRequest succeeded", tc.name)
			continue
		}
		if _, err := s.ContentRequest(ctx, "acct_1", ok.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the refused transaction left %s behind: %v", tc.name, ok.ID, err)
		}
		if bad.AccountID != "acct_1" {
			continue
		}
		insertRequests(t, s, ok)
		before, err := s.ContentRequest(ctx, "acct_1", ok.ID)
		must(t, err, "ContentRequest")
		bad.ID = ok.ID
		if err := s.Update(ctx, func(tx store.Tx) error { return tx.UpdateContentRequest(bad, 0) }); err == nil {
			t.Errorf("%s: UpdateContentRequest succeeded", tc.name)
		}
		if got, _ := s.ContentRequest(ctx, "acct_1", ok.ID); !reflect.DeepEqual(got, before) {
			t.Errorf("%s: a refused update changed the request: %+v", tc.name, got)
		}
	}
}

func budgetIn(t *testing.T, s store.Store, accountID, month string) store.BudgetMonth {
	t.Helper()
	var b store.BudgetMonth
	update(t, s, "BudgetMonth", func(tx store.Tx) (err error) { b, err = tx.BudgetMonth(accountID, month); return err })
	return b
}

// The ledger of an account's month adds what it is given, refuses to go
// below zero (changing nothing), and is the same in a transaction and out
// of one; months and accounts are apart; Budget counts the account's
// queued and processing requests with it.
func testBudgetLedger(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	newAccount(t, s, "acct_2", store.AccountStandard)
	add := func(account, month string, spent, reserved int64) error {
		return s.Update(ctx, func(tx store.Tx) error { return tx.AddToBudgetMonth(account, month, spent, reserved) })
	}
	if b := budgetIn(t, s, "acct_1", "2025-06"); b != (store.BudgetMonth{}) {
		t.Fatalf("BudgetMonth of an untouched month = %+v, want zero", b)
	}
	for i, st := range []struct {
		spent, reserved int64
		want            store.BudgetMonth
	}{
		{0, 500, store.BudgetMonth{Spent: 0, Reserved: 500}},
		{0, 300, store.BudgetMonth{Spent: 0, Reserved: 800}},
		{200, -200, store.BudgetMonth{Spent: 200, Reserved: 600}},
		{0, -600, store.BudgetMonth{Spent: 200, Reserved: 0}},
		{50, 0, store.BudgetMonth{Spent: 250, Reserved: 0}},
	} {
		must(t, add("acct_1", "2025-06", st.spent, st.reserved), "AddToBudgetMonth step %d", i)
		if b := budgetIn(t, s, "acct_1", "2025-06"); b != st.want {
			t.Fatalf("step %d: BudgetMonth = %+v, want %+v", i, b, st.want)
		}
		if b, _, err := s.Budget(ctx, "acct_1", "2025-06"); err != nil || b != st.want {
			t.Fatalf("step %d: Budget = %+v, %v; want %+v", i, b, err, st.want)
		}
	}
	if b := budgetIn(t, s, "acct_1", "2025-07"); b != (store.BudgetMonth{}) {
		t.Errorf("another month: %+v", b)
	}
	if b := budgetIn(t, s, "acct_2", "2025-06"); b != (store.BudgetMonth{}) {
		t.Errorf("another account: %+v", b)
	}
	if err := add("acct_1", "2025-06", 0, -1); err == nil {
		t.Error("AddToBudgetMonth took reserved below zero")
	}
	if err := add("acct_1", "2025-06", -251, 0); err == nil {
		t.Error("AddToBudgetMonth took spent below zero")
	}
	if b := budgetIn(t, s, "acct_1", "2025-06"); b != (store.BudgetMonth{Spent: 250}) {
		t.Errorf("after refused changes: %+v, want them to change nothing", b)
	}

	a := contentRequest("cr_a", "acct_1", "", t0)
	b := contentRequest("cr_b", "acct_1", "cli_1", t0)
	b.Status = "processing"
	c := contentRequest("cr_c", "acct_1", "", t0)
	c.Status = "completed"
	d := contentRequest("cr_d", "acct_2", "", t0)
	insertRequests(t, s, a, b, c, d)
	var inTx int
	update(t, s, "ActiveContentRequests", func(tx store.Tx) (err error) { inTx, err = tx.ActiveContentRequests("acct_1"); return err })
	if _, active, err := s.Budget(ctx, "acct_1", "2025-06"); err != nil || active != 2 || inTx != 2 {
		t.Errorf("active requests: Budget says %d (%v), ActiveContentRequests %d; want 2 (queued and processing, a client's included)", active, err, inTx)
	}
}

// A release (a negative amount) needs a month that has something to
// release: on an untouched month it is refused and writes nothing.
func testBudgetLedgerNegativeDeltaOnNewMonth(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	for i, d := range []struct{ spent, reserved int64 }{{0, -5}, {-5, 0}, {-1, 10}} {
		month := fmt.Sprintf("2025-%02d", i+7)
		err := s.Update(ctx, func(tx store.Tx) error { return tx.AddToBudgetMonth("acct_1", month, d.spent, d.reserved) })
		if err == nil {
			t.Errorf("AddToBudgetMonth(spent %d, reserved %d) on an untouched month succeeded (now %+v)", d.spent, d.reserved,
				budgetIn(t, s, "acct_1", month))
		}
	}
}

func (c *tally) expect(t *testing.T, what string, admitted int) {
	t.Helper()
	for _, err := range c.other {
		t.Errorf("%s: a caller failed: %v", what, err)
	}
	if c.admitted != admitted || c.refused != concurrency-admitted {
		t.Errorf("%s: %d of %d concurrent callers admitted, %d refused; want exactly %d admitted", what, c.admitted, concurrency, c.refused, admitted)
	}
}

// reserve is a content request's admission as the content service makes
// it: the month's ledger and the active requests checked, then the request
// queued and its budget reserved, in one Update.
func reserve(s store.Store, id string, budget, monthly int64, maxActive int) error {
	return s.Update(ctx, func(tx store.Tx) error {
		b, err := tx.BudgetMonth("acct_1", "2025-06")
		if err != nil {
			return err
		}
		active, err := tx.ActiveContentRequests("acct_1")
		if err != nil {
			return err
		}
		if b.Spent+b.Reserved+budget > monthly || active >= maxActive {
			return errRefused
		}
		c := contentRequest(id, "acct_1", "", t0)
		c.Budget = budget
		if err := tx.InsertContentRequest(c); err != nil {
			return err
		}
		return tx.AddToBudgetMonth("acct_1", "2025-06", 0, budget)
	})
}

// A month's budget admits, among 32 concurrent callers on two handles,
// exactly what it holds, and the ledger says exactly what was admitted.
func testBudgetCapUnderConcurrency(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	newAccount(t, s, "acct_1", store.AccountStandard)
	const each, spent = 1_000_000, 3_500_000
	update(t, s, "charge", func(tx store.Tx) error { return tx.AddToBudgetMonth("acct_1", "2025-06", spent, 0) })
	var c tally
	Together(concurrency, func(i int) { c.add(reserve(hs[i%2], fmt.Sprintf("cr_%02d", i), each, spent+7*each+each/2, 1000)) })
	c.expect(t, "a budget of 7.5 requests", 7)
	if b, active, err := s.Budget(ctx, "acct_1", "2025-06"); err != nil || b != (store.BudgetMonth{Spent: spent, Reserved: 7 * each}) || active != 7 {
		t.Errorf("the ledger after %d admitted: %+v, %d active, %v; want %d reserved, 7 active", c.admitted, b, active, err, 7*each)
	}
	page, _, err := s.ListContentRequests(ctx, store.ContentFilter{AccountID: "acct_1", Limit: 100})
	if err != nil || len(page) != c.admitted {
		t.Errorf("%d requests stored for %d admitted (%v)", len(page), c.admitted, err)
	}
}

// The active-request cap admits, among 32 concurrent callers on two
// handles, exactly the requests it has room for.
func testActiveCapUnderConcurrency(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	newAccount(t, s, "acct_1", store.AccountStandard)
	done := contentRequest("cr_done", "acct_1", "", t0)
	done.Status = "completed"
	running := contentRequest("cr_running", "acct_1", "", t0)
	running.Status = "processing"
	insertRequests(t, s, done, running)
	var c tally
	Together(concurrency, func(i int) { c.add(reserve(hs[i%2], fmt.Sprintf("cr_%02d", i), 1, 1<<40, 6)) })
	c.expect(t, "a cap of 6 active requests, 1 processing", 5)
	if b, active, err := s.Budget(ctx, "acct_1", "2025-06"); err != nil || active != 6 || b.Reserved != int64(c.admitted) {
		t.Errorf("after %d admitted: %d active, ledger %+v, %v; want 6 active, %d reserved", c.admitted, active, b, err, c.admitted)
	}
}

// Idempotency finds the record of (scope, key) made at notBefore or later,
// scope and key compared exactly; PutIdempotency replaces it;
// DeleteIdempotency forgets it and no other.
func testIdempotency(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	rec := store.Idempotency{Scope: "acct_1/", Key: "k-1", RequestHash: []byte{1, 2, 3, 0}, Status: 201, Body: []byte(`{"id":"cr_1"}`), CreatedAt: t0}
	get := func(scope, key string, notBefore time.Time) (store.Idempotency, error) {
		var r store.Idempotency
		err := s.Update(ctx, func(tx store.Tx) (err error) { r, err = tx.Idempotency(scope, key, notBefore); return err })
		return r, err
	}
	stored := rec
	stored.CreatedAt = t0.In(elsewhere)
	update(t, s, "PutIdempotency", func(tx store.Tx) error { return tx.PutIdempotency(stored) })
	for _, tc := range []struct {
		name      string
		scope     string
		key       string
		notBefore time.Time
		found     bool
	}{
		{"fresh", "acct_1/", "k-1", t0.Add(-24 * time.Hour), true},
		{"made exactly at notBefore", "acct_1/", "k-1", t0, true},
		{"made before notBefore", "acct_1/", "k-1", t0.Add(time.Nanosecond), false},
		{"another scope", "acct_1/cli_1", "k-1", t0.Add(-time.Hour), false},
		{"another key", "acct_1/", "k-2", t0.Add(-time.Hour), false},
		{"the key in another case", "acct_1/", "K-1", t0.Add(-time.Hour), false},
	} {
		got, err := get(tc.scope, tc.key, tc.notBefore)
		switch {
		case !tc.found && !errors.Is(err, store.ErrNotFound):
			t.Errorf("Idempotency, %s: %+v, %v; want ErrNotFound", tc.name, got, err)
		case tc.found && (err != nil || !reflect.DeepEqual(got, rec)):
			t.Errorf("Idempotency, %s:\n got  %+v, %v\n want %+v", tc.name, got, err, rec)
		}
	}
	rec2 := rec
	rec2.RequestHash, rec2.Status, rec2.Body, rec2.CreatedAt = []byte{9}, 200, []byte(`{}`), t0.Add(25*time.Hour)
	update(t, s, "PutIdempotency", func(tx store.Tx) error { return tx.PutIdempotency(rec2) })
	if got, err := get("acct_1/", "k-1", t0.Add(time.Hour)); err != nil || !reflect.DeepEqual(got, rec2) {
		t.Errorf("after a second PutIdempotency: %+v, %v; want it replaced by %+v", got, err, rec2)
	}
	other := rec
	other.Scope = "acct_1/cli_1"
	update(t, s, "PutIdempotency", func(tx store.Tx) error { return tx.PutIdempotency(other) })
	update(t, s, "DeleteIdempotency", func(tx store.Tx) error {
		return errors.Join(tx.DeleteIdempotency("acct_1/", "k-1"), tx.DeleteIdempotency("acct_1/", "none"))
	})
	if got, err := get("acct_1/", "k-1", t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after DeleteIdempotency: %+v, %v; want ErrNotFound", got, err)
	}
	if got, err := get("acct_1/cli_1", "k-1", t0); err != nil || !reflect.DeepEqual(got, other) {
		t.Errorf("DeleteIdempotency of another scope's key: %+v, %v; want %+v kept", got, err, other)
	}
}

// DeleteIdempotencyBefore forgets exactly the records made before t and
// says how many.
func testDeleteIdempotencyBefore(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	for i := range 5 {
		rec := store.Idempotency{Scope: "s", Key: fmt.Sprint(i), RequestHash: []byte{1}, Status: 200, Body: []byte("x"),
			CreatedAt: t0.Add(time.Duration(i-2) * time.Hour)}
		update(t, s, "PutIdempotency", func(tx store.Tx) error { return tx.PutIdempotency(rec) })
	}
	n, err := s.DeleteIdempotencyBefore(ctx, t0)
	if err != nil || n != 2 {
		t.Fatalf("DeleteIdempotencyBefore = %d, %v; want the 2 made before", n, err)
	}
	for i := range 5 {
		err := s.Update(ctx, func(tx store.Tx) error { _, err := tx.Idempotency("s", fmt.Sprint(i), time.Time{}); return err })
		if gone := errors.Is(err, store.ErrNotFound); gone != (i < 2) || !gone && err != nil {
			t.Errorf("record made %d h from the cut: %v", i-2, err)
		}
	}
}

func crID(c store.ContentRequest) string { return c.ID }

// listAll walks every page of a filter; list items leave out content and
// work.
func listAll(t *testing.T, s store.Store, f store.ContentFilter) []string {
	t.Helper()
	return walk(t, fmt.Sprintf("ListContentRequests %+v", f), f.Limit, func(cursor string) ([]string, string, error) {
		f.Cursor = cursor
		page, next, err := s.ListContentRequests(ctx, f)
		for _, c := range page {
			if c.Content != "" || c.Work != nil {
				t.Fatalf("ListContentRequests: list item %s carries its content or work", c.ID)
			}
		}
		return idsOf(page, crID), next, err
	})
}

// Pages of every filter hold each request once, newest first (ties by id,
// highest first), none missing, also when many share a creation time.
func testListContentRequests(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	statuses := []string{"queued", "processing", "completed", "failed", "cancelled"}
	clients := []string{"", "cli_1", "cli_2"}
	domains := []string{"example.com", "example.org", "shop.example.com"}
	var all []store.ContentRequest
	for i := range 307 {
		// Groups of 4 share a creation time to the nanosecond.
		c := contentRequest(fmt.Sprintf("cr_%04d_%c", (i*7919)%10000, 'a'+rune(i%26)), "acct_1", clients[i%3], t0.Add(time.Duration(i/4)*time.Millisecond))
		c.Status, c.Domain, c.Content, c.Work = statuses[i%5], domains[(i/3)%3], "body", []byte(`{}`)
		all = append(all, c)
	}
	shuffled := slices.Clone(all) // not in the order of the list
	sort.Slice(shuffled, func(i, j int) bool { return shuffled[i].ID > shuffled[j].ID })
	insertRequests(t, s, shuffled...)
	insertRequests(t, s, contentRequest("cr_other_account", "acct_2", "", t0))
	sort.Slice(all, func(i, j int) bool {
		if !all[i].CreatedAt.Equal(all[j].CreatedAt) {
			return all[i].CreatedAt.After(all[j].CreatedAt)
		}
		return all[i].ID > all[j].ID
	})
	for _, f := range []store.ContentFilter{
		{},
		{Status: "queued"},
		{Status: "cancelled"},
		{ClientID: "cli_1"},
		{Domain: "example.org"},
		{ClientID: "cli_2", Status: "failed"},
		{ClientID: "cli_1", Status: "completed", Domain: "shop.example.com"},
		{Domain: "nothing.example"},
	} {
		var want []string
		for _, c := range all {
			if (f.ClientID == "" || c.ClientID == f.ClientID) && (f.Status == "" || c.Status == f.Status) && (f.Domain == "" || c.Domain == f.Domain) {
				want = append(want, c.ID)
			}
		}
		for _, limit := range []int{1, 3, 7, 20, 100} {
			f.AccountID, f.Limit = "acct_1", limit
			if got := listAll(t, s, f); !slices.Equal(got, want) {
				t.Errorf("ListContentRequests %+v: the pages held %d items, want %d\n got  %v\n want %v", f, len(got), len(want), got, want)
			}
		}
	}
	if page, next, err := s.ListContentRequests(ctx, store.ContentFilter{AccountID: "acct_2", Limit: 1}); err != nil || len(page) != 1 || next != "" {
		t.Errorf("a page of exactly the remaining items: %d items, next %q, %v; want no next cursor", len(page), next, err)
	}
}

// Requests added while pages are walked (newer ones, and ones at the very
// time of the last page's end) make no request of the walk's start missing
// or repeated, and the order stays newest first.
func testListContentRequestsWhileAdding(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	var there []string
	used := map[string]bool{}
	for i := range 60 {
		c := contentRequest(fmt.Sprintf("cr_%03d", i*10), "acct_1", "", t0.Add(time.Duration(i/3)*time.Second))
		insertRequests(t, s, c)
		there = append(there, c.ID)
		used[c.ID] = true
	}
	var listed []store.ContentRequest
	f := store.ContentFilter{AccountID: "acct_1", Limit: 7}
	for pages, added := 0, 0; ; pages++ {
		page, next, err := s.ListContentRequests(ctx, f)
		must(t, err, "ListContentRequests")
		listed = append(listed, page...)
		if next == "" || pages > 100 {
			break
		}
		f.Cursor = next
		last := page[len(page)-1]
		added++
		for _, c := range []store.ContentRequest{
			contentRequest(fmt.Sprintf("cr_new_%03d", added), "acct_1", "", t0.Add(time.Hour)), // newer than all
			contentRequest(last.ID+"~", "acct_1", "", last.CreatedAt),                          // the same time, sorts before the cursor
			contentRequest(last.ID[:len(last.ID)-1]+"/", "acct_1", "", last.CreatedAt),         // the same time, sorts after it
		} {
			if !used[c.ID] {
				used[c.ID] = true
				insertRequests(t, s, c)
			}
		}
	}
	onceEach(t, "ListContentRequests while adding", there, listed, crID, func(a, b store.ContentRequest) bool {
		return a.CreatedAt.After(b.CreatedAt) || a.CreatedAt.Equal(b.CreatedAt) && a.ID > b.ID
	})
}

// A cursor the store cannot read is ErrMalformed.
func testListContentRequestsMalformedCursor(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	insertRequests(t, s, contentRequest("cr_1", "acct_1", "", t0))
	for _, c := range []string{"!!!not a cursor!!!", "\xff\xfe\x00", "%%%"} {
		if _, _, err := s.ListContentRequests(ctx, store.ContentFilter{AccountID: "acct_1", Limit: 10, Cursor: c}); !errors.Is(err, store.ErrMalformed) {
			t.Errorf("ListContentRequests with the cursor %q: %v, want ErrMalformed", c, err)
		}
	}
}

// A Limit of zero or less is a page of 20.
func testListContentRequestsDefaultLimit(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	for i := range 25 {
		insertRequests(t, s, contentRequest(fmt.Sprintf("cr_%02d", i), "acct_1", "", t0.Add(time.Duration(i)*time.Second)))
	}
	for _, limit := range []int{0, -1, -5} {
		page, next, err := s.ListContentRequests(ctx, store.ContentFilter{AccountID: "acct_1", Limit: limit})
		if err != nil || len(page) != 20 || next == "" || page[0].ID != "cr_24" {
			t.Errorf("ListContentRequests with Limit %d: %d items, next %q, %v; want a page of 20, newest first", limit, len(page), next, err)
		}
	}
}
