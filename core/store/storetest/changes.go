package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

func newChange(id, accountID, domainID string, at time.Time) store.Change {
	return store.Change{ID: id, AccountID: accountID, DomainID: domainID, Title: "Change " + id, At: at, CreatedAt: t0}
}

func createChanges(t *testing.T, s store.Store, cs ...store.Change) {
	t.Helper()
	for _, c := range cs {
		must(t, s.CreateChange(ctx, c), "CreateChange(%s)", c.ID)
	}
}

// changesOf lists every change of a domain that f selects, in one page.
func changesOf(t *testing.T, s store.Store, f store.ChangeFilter) []store.Change {
	t.Helper()
	f.Limit = 1000
	cs, next, err := s.ListChanges(ctx, f)
	must(t, err, "ListChanges")
	if next != "" {
		t.Fatalf("ListChanges of at most 1000: a next page %q", next)
	}
	return cs
}

func changeID(c store.Change) string { return c.ID }

// A change keeps every field, its client the domain's, its times in UTC,
// read alone, by its content request and in the list; a change without
// pages, prompts or content request reads them empty, not nil, and "";
// a taken id is ErrConflict, a domain the account does not have
// ErrNotFound.
func testChangeRoundTrip(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "cli_1", "dom_c")
	full := store.Change{ID: "chg_full", AccountID: "acct_1", ClientID: "ignored", DomainID: d.ID, Title: "Rewrote the pricing page",
		Notes: "FAQ markup added,\n\"quoted\", ü 日本", At: t0.Add(-time.Hour).In(elsewhere),
		Pages: []string{"https://dom_c.example/pricing", "/faq"}, Prompts: []string{"best \"books\"?", "Bücher?"},
		ContentRequestID: "cr_1", CreatedAt: t0.In(elsewhere)}
	bare := newChange("chg_bare", "acct_1", d.ID, t0)
	createChanges(t, s, full, bare)

	want := full
	want.ClientID, want.At, want.CreatedAt = "cli_1", full.At.UTC(), t0
	if got, err := s.Change(ctx, "acct_1", d.ID, full.ID); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Change round trip:\n got  %+v, %v\n want %+v", got, err, want)
	}
	if got, err := s.ChangeOfContentRequest(ctx, "acct_1", "cr_1"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ChangeOfContentRequest:\n got  %+v, %v\n want %+v", got, err, want)
	}
	got, err := s.Change(ctx, "acct_1", d.ID, bare.ID)
	must(t, err, "Change")
	if got.Pages == nil || len(got.Pages) != 0 || got.Prompts == nil || len(got.Prompts) != 0 || got.ContentRequestID != "" ||
		got.Notes != "" || got.ClientID != "cli_1" {
		t.Errorf("a change without pages, prompts or request: %#v; want empty lists, no request, the domain's client", got)
	}
	wantBare := bare
	wantBare.ClientID, wantBare.Pages, wantBare.Prompts = "cli_1", []string{}, []string{}
	if l := changesOf(t, s, store.ChangeFilter{AccountID: "acct_1", DomainID: d.ID}); !reflect.DeepEqual(l, []store.Change{wantBare, want}) {
		t.Errorf("ListChanges:\n got  %+v\n want %+v", l, []store.Change{wantBare, want})
	}
	if _, err := s.ChangeOfContentRequest(ctx, "acct_1", "cr_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ChangeOfContentRequest of a request without one: %v, want ErrNotFound", err)
	}
	if _, err := s.Change(ctx, "acct_1", d.ID, "chg_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Change of an unknown id: %v, want ErrNotFound", err)
	}
	if err := s.CreateChange(ctx, newChange(full.ID, "acct_1", d.ID, t0)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateChange with a taken id: %v, want ErrConflict", err)
	}
	for name, c := range map[string]store.Change{
		"another account's domain": newChange("chg_x", "acct_2", d.ID, t0),
		"no domain":                newChange("chg_y", "acct_1", "dom_none", t0),
	} {
		if err := s.CreateChange(ctx, c); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("CreateChange on %s: %v, want ErrNotFound", name, err)
		}
		if _, err := s.Change(ctx, c.AccountID, c.DomainID, c.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Change refused on %s: %v, want ErrNotFound", name, err)
		}
	}
}

// A domain's changes list the latest At first, then by id, highest
// first, in pages of every size that neither skip nor repeat, nor hold
// another domain's or account's; a cursor the engine did not make is
// ErrMalformed; a limit of zero is 20.
func testListChanges(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	other := trafficDomain(t, s, "acct_1", "", "dom_b")
	theirs := trafficDomain(t, s, "acct_2", "", "dom_x")
	var all []store.Change
	for i := range 53 {
		// Groups of 3 went live at the same nanosecond.
		all = append(all, newChange(fmt.Sprintf("chg_%04d_%c", (i*7919)%10000, 'a'+rune(i%26)), "acct_1", d.ID,
			t0.Add(time.Duration(i/3)*time.Millisecond)))
	}
	shuffled := slices.Clone(all) // not in the order of the list
	sort.Slice(shuffled, func(i, j int) bool { return shuffled[i].ID > shuffled[j].ID })
	createChanges(t, s, shuffled...)
	createChanges(t, s, newChange("chg_other", "acct_1", other.ID, t0), newChange("chg_theirs", "acct_2", theirs.ID, t0))
	sort.Slice(all, func(i, j int) bool {
		if !all[i].At.Equal(all[j].At) {
			return all[i].At.After(all[j].At)
		}
		return all[i].ID > all[j].ID
	})
	want := idsOf(all, changeID)
	for _, limit := range []int{1, 3, 7, 20, 100} {
		got := walk(t, "ListChanges", limit, func(cursor string) ([]string, string, error) {
			page, next, err := s.ListChanges(ctx, store.ChangeFilter{AccountID: "acct_1", DomainID: d.ID, Cursor: cursor, Limit: limit})
			return idsOf(page, changeID), next, err
		})
		if !slices.Equal(got, want) {
			t.Errorf("ListChanges in pages of %d:\n got  %v\n want %v", limit, got, want)
		}
	}
	page, next, err := s.ListChanges(ctx, store.ChangeFilter{AccountID: "acct_1", DomainID: d.ID})
	if err != nil || len(page) != 20 || next == "" {
		t.Errorf("ListChanges with no limit: %d changes, next %q, %v; want 20 and a next page", len(page), next, err)
	}
	if page, next, err := s.ListChanges(ctx, store.ChangeFilter{AccountID: "acct_1", DomainID: other.ID, Limit: 1}); err != nil ||
		len(page) != 1 || next != "" {
		t.Errorf("a page of exactly the remaining changes: %d, next %q, %v; want no next cursor", len(page), next, err)
	}
	for _, c := range []string{"!!!not a cursor!!!", "\xff\xfe\x00", "%%%", "x"} {
		if _, _, err := s.ListChanges(ctx, store.ChangeFilter{AccountID: "acct_1", DomainID: d.ID, Cursor: c}); !errors.Is(err, store.ErrMalformed) {
			t.Errorf("ListChanges with the cursor %q: %v, want ErrMalformed", c, err)
		}
	}
}

// Pages walked while changes are added (later than all, and at the time
// of the page's last, on either side of it) list every change there when
// the walk began once, in order, and none twice.
func testListChangesWhileAdding(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	var there []string
	used := map[string]bool{}
	for i := range 40 {
		c := newChange(fmt.Sprintf("chg_%03d", i*10), "acct_1", d.ID, t0.Add(time.Duration(i/3)*time.Second))
		createChanges(t, s, c)
		there = append(there, c.ID)
		used[c.ID] = true
	}
	var listed []store.Change
	f := store.ChangeFilter{AccountID: "acct_1", DomainID: d.ID, Limit: 7}
	for pages, added := 0, 0; ; pages++ {
		page, next, err := s.ListChanges(ctx, f)
		must(t, err, "ListChanges")
		listed = append(listed, page...)
		if next == "" || pages > 100 {
			break
		}
		f.Cursor = next
		last := page[len(page)-1]
		added++
		for _, c := range []store.Change{
			newChange(fmt.Sprintf("chg_new_%03d", added), "acct_1", d.ID, t0.Add(time.Hour)),
			newChange(last.ID+"~", "acct_1", d.ID, last.At),
			newChange(last.ID[:len(last.ID)-1]+"/", "acct_1", d.ID, last.At),
		} {
			if !used[c.ID] {
				used[c.ID] = true
				createChanges(t, s, c)
			}
		}
	}
	onceEach(t, "ListChanges while adding", there, listed, changeID, func(a, b store.Change) bool {
		return a.At.After(b.At) || a.At.Equal(b.At) && a.ID > b.ID
	})
}

// ListChanges selects the changes that went live in [From, To): From
// included, To not, a zero bound open, bounds outside the times the
// store keeps compared as they are; its pages keep to the range.
func testChangesFilterByTime(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	for h := range 6 {
		createChanges(t, s, newChange(fmt.Sprintf("chg_%d", h), "acct_1", d.ID, at(h)))
	}
	for _, c := range []struct {
		name     string
		from, to time.Time
		want     []string
	}{
		{"open", time.Time{}, time.Time{}, []string{"chg_5", "chg_4", "chg_3", "chg_2", "chg_1", "chg_0"}},
		{"from included", at(2), time.Time{}, []string{"chg_5", "chg_4", "chg_3", "chg_2"}},
		{"from a nanosecond later", at(2).Add(1), time.Time{}, []string{"chg_5", "chg_4", "chg_3"}},
		{"to excluded", time.Time{}, at(2), []string{"chg_1", "chg_0"}},
		{"to a nanosecond later", time.Time{}, at(2).Add(1), []string{"chg_2", "chg_1", "chg_0"}},
		{"both, in another zone", at(1).In(elsewhere), at(4).In(elsewhere), []string{"chg_3", "chg_2", "chg_1"}},
		{"empty", at(3), at(3), nil},
		{"reversed", at(4), at(1), nil},
		{"bounds outside the range", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC),
			[]string{"chg_5", "chg_4", "chg_3", "chg_2", "chg_1", "chg_0"}},
	} {
		f := store.ChangeFilter{AccountID: "acct_1", DomainID: d.ID, From: c.from, To: c.to}
		if got := idsOf(changesOf(t, s, f), changeID); !slices.Equal(got, c.want) {
			t.Errorf("ListChanges %s: %v, want %v", c.name, got, c.want)
		}
		got := walk(t, "ListChanges "+c.name, 2, func(cursor string) ([]string, string, error) {
			f.Cursor, f.Limit = cursor, 2
			page, next, err := s.ListChanges(ctx, f)
			return idsOf(page, changeID), next, err
		})
		if !slices.Equal(got, c.want) {
			t.Errorf("ListChanges %s in pages of 2: %v, want %v", c.name, got, c.want)
		}
	}
}

// Another account, or another domain of the account, neither reads,
// lists nor deletes a change (ErrNotFound, none), which stays; a change
// deleted is gone, and deleted again ErrNotFound; a domain deleted takes
// its changes with it, not another domain's, and made again has none.
func testChangeOwnersAndDelete(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	other := trafficDomain(t, s, "acct_1", "", "dom_b")
	c := newChange("chg_1", "acct_1", d.ID, t0)
	c.ContentRequestID = "cr_1"
	kept := newChange("chg_2", "acct_1", other.ID, t0)
	createChanges(t, s, c, kept, newChange("chg_3", "acct_1", d.ID, t0.Add(time.Second)))

	for _, k := range []struct{ who, account, domain string }{{"another account", "acct_2", d.ID}, {"another domain", "acct_1", other.ID}} {
		if _, err := s.Change(ctx, k.account, k.domain, c.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Change by %s: %v, want ErrNotFound", k.who, err)
		}
		if err := s.DeleteChange(ctx, k.account, k.domain, c.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DeleteChange by %s: %v, want ErrNotFound", k.who, err)
		}
	}
	if l := changesOf(t, s, store.ChangeFilter{AccountID: "acct_2", DomainID: d.ID}); len(l) != 0 {
		t.Errorf("ListChanges of another account: %v, want none", idsOf(l, changeID))
	}
	if _, err := s.ChangeOfContentRequest(ctx, "acct_2", "cr_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ChangeOfContentRequest of another account: %v, want ErrNotFound", err)
	}
	if _, err := s.Change(ctx, "acct_1", d.ID, c.ID); err != nil {
		t.Errorf("the change after refused deletes: %v", err)
	}

	must(t, s.DeleteChange(ctx, "acct_1", d.ID, c.ID), "DeleteChange")
	if _, err := s.Change(ctx, "acct_1", d.ID, c.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Change after DeleteChange: %v, want ErrNotFound", err)
	}
	if _, err := s.ChangeOfContentRequest(ctx, "acct_1", "cr_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ChangeOfContentRequest after DeleteChange: %v, want ErrNotFound", err)
	}
	if err := s.DeleteChange(ctx, "acct_1", d.ID, c.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteChange again: %v, want ErrNotFound", err)
	}
	if l := changesOf(t, s, store.ChangeFilter{AccountID: "acct_1", DomainID: d.ID}); !slices.Equal(idsOf(l, changeID), []string{"chg_3"}) {
		t.Errorf("ListChanges after DeleteChange: %v, want [chg_3]", idsOf(l, changeID))
	}

	update(t, s, "DeleteDomain", func(tx store.Tx) error { return tx.DeleteDomain("acct_1", d.ID) })
	if _, err := s.Change(ctx, "acct_1", d.ID, "chg_3"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the change of a deleted domain: %v, want ErrNotFound", err)
	}
	if _, err := s.Change(ctx, "acct_1", other.ID, kept.ID); err != nil {
		t.Errorf("another domain's change after a domain's deletion: %v", err)
	}
	trafficDomain(t, s, "acct_1", "", "dom_a")
	if l := changesOf(t, s, store.ChangeFilter{AccountID: "acct_1", DomainID: d.ID}); len(l) != 0 {
		t.Errorf("changes of a deleted domain made again: %v, want none", idsOf(l, changeID))
	}
	// Its id is free again.
	createChanges(t, s, newChange("chg_3", "acct_1", d.ID, t0))
}

// An account has one change of a content request: a second is
// ErrConflict, on the same domain or another, and leaves the first as it
// was; another account's change of the same request id is its own (no
// conflict tells it of the first); a change deleted lets the request
// make another.
func testChangeOncePerContentRequest(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	other := trafficDomain(t, s, "acct_1", "", "dom_b")
	theirs := trafficDomain(t, s, "acct_2", "", "dom_x")
	first := newChange("chg_1", "acct_1", d.ID, t0)
	first.ContentRequestID = "cr_1"
	createChanges(t, s, first, newChange("chg_hand_1", "acct_1", d.ID, t0), newChange("chg_hand_2", "acct_1", d.ID, t0))
	for _, c := range []store.Change{newChange("chg_2", "acct_1", d.ID, t0.Add(time.Hour)), newChange("chg_3", "acct_1", other.ID, t0)} {
		c.ContentRequestID = "cr_1"
		if err := s.CreateChange(ctx, c); !errors.Is(err, store.ErrConflict) {
			t.Errorf("CreateChange of the request again (%s): %v, want ErrConflict", c.ID, err)
		}
		if _, err := s.Change(ctx, c.AccountID, c.DomainID, c.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the second change of the request: %v, want ErrNotFound", err)
		}
	}
	if got, err := s.ChangeOfContentRequest(ctx, "acct_1", "cr_1"); err != nil || got.ID != first.ID || !got.At.Equal(first.At) {
		t.Errorf("ChangeOfContentRequest after a second: %+v, %v; want the first", got, err)
	}
	mine := newChange("chg_x", "acct_2", theirs.ID, t0)
	mine.ContentRequestID = "cr_1"
	createChanges(t, s, mine)

	must(t, s.DeleteChange(ctx, "acct_1", d.ID, first.ID), "DeleteChange")
	again := newChange("chg_4", "acct_1", d.ID, t0)
	again.ContentRequestID = "cr_1"
	createChanges(t, s, again)
	if got, err := s.ChangeOfContentRequest(ctx, "acct_1", "cr_1"); err != nil || got.ID != again.ID {
		t.Errorf("ChangeOfContentRequest after the first was deleted and made again: %+v, %v; want chg_4", got, err)
	}
}

// Callers on two handles make changes of one content request at once:
// exactly one is kept, the others are ErrConflict.
func testChangeOncePerContentRequestUnderConcurrency(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	var mu sync.Mutex
	var made []string
	Together(concurrency, func(i int) {
		c := newChange(fmt.Sprintf("chg_%02d", i), "acct_1", d.ID, t0)
		c.ContentRequestID = "cr_1"
		err := hs[i%2].CreateChange(ctx, c)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			made = append(made, c.ID)
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("CreateChange %d: %v, want nil or ErrConflict", i, err)
		}
	})
	if len(made) != 1 {
		t.Fatalf("%d callers made a change of one request: %v; want exactly one", len(made), made)
	}
	if l := changesOf(t, hs[1], store.ChangeFilter{AccountID: "acct_1", DomainID: d.ID}); !slices.Equal(idsOf(l, changeID), made) {
		t.Errorf("the domain's changes: %v, want %v", idsOf(l, changeID), made)
	}
	if got, err := hs[1].ChangeOfContentRequest(ctx, "acct_1", "cr_1"); err != nil || got.ID != made[0] {
		t.Errorf("ChangeOfContentRequest on the other handle: %+v, %v; want %s", got, err, made[0])
	}
}

// A read whose id or domain holds text no engine keeps is refused alike.
func testChangeTextRefusedInReads(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	for _, v := range textValues {
		if !v.refused {
			continue
		}
		if _, _, err := s.ListChanges(ctx, store.ChangeFilter{AccountID: "acct_1", DomainID: v.v}); !store.IsInvalidText(err) {
			t.Errorf("ListChanges of a domain with %s: %v, not a refusal of its text", v.name, err)
		}
		if _, err := s.Change(ctx, "acct_1", "dom_a", v.v); !store.IsInvalidText(err) {
			t.Errorf("Change of an id with %s: %v, not a refusal of its text", v.name, err)
		}
		if _, err := s.ChangeOfContentRequest(ctx, "acct_1", v.v); !store.IsInvalidText(err) {
			t.Errorf("ChangeOfContentRequest of an id with %s: %v, not a refusal of its text", v.name, err)
		}
	}
}

// changeTextFields are the string fields of a change, for the Text
// cases: each change n is made on a domain of its own.
func changeTextFields() []textField {
	field := func(name string, set func(*store.Change, string), get func(store.Change) string) textField {
		return textField{name: name, big: true,
			set: func(t *testing.T, s store.Store, n int, v string) error {
				d := trafficDomain(t, s, "acct_1", "", id("cdom", n))
				c := newChange(id("chg", n), "acct_1", d.ID, t0)
				set(&c, v)
				return s.CreateChange(ctx, c)
			},
			get: func(s store.Store, n int) (string, error) {
				c, err := s.Change(ctx, "acct_1", id("cdom", n), id("chg", n))
				return get(c), err
			}}
	}
	return []textField{
		field("Change.Title", func(c *store.Change, v string) { c.Title = v }, func(c store.Change) string { return c.Title }),
		field("Change.Notes", func(c *store.Change, v string) { c.Notes = v }, func(c store.Change) string { return c.Notes }),
		field("Change.Pages", func(c *store.Change, v string) { c.Pages = []string{"/first", v} },
			func(c store.Change) string { return last(c.Pages) }),
		field("Change.Prompts", func(c *store.Change, v string) { c.Prompts = []string{"first?", v} },
			func(c store.Change) string { return last(c.Prompts) }),
	}
}
