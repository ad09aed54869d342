package changes_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/lift"
	"github.com/aivis/aivis/core/store"
)

// isField says err is a VALIDATION_ERROR naming field ("" any).
func isField(err error, field string) bool {
	fe, ok := fault.As(err)
	if !ok || fe.Code != fault.ValidationError {
		return false
	}
	return field == "" || slices.ContainsFunc(fe.Details, func(d fault.FieldError) bool { return d.Field == field })
}

func isCode(err error, code fault.Code) bool {
	fe, ok := fault.As(err)
	return ok && fe.Code == code
}

func fields(err error) []string {
	fe, ok := fault.As(err)
	if !ok {
		return nil
	}
	var out []string
	for _, d := range fe.Details {
		out = append(out, d.Field)
	}
	return out
}

// A change is kept as given, trimmed: its time in UTC (now when none),
// its pages as paths (URLs on the domain or its subdomains), its prompts
// as the domain has them; each rule broken names its field, all at once.
func TestCreateValidates(t *testing.T) {
	s, _ := engines[0].open(t)
	e := newEnv(t, s, 3)
	generated := "Which companies would you recommend for rocket skates, and why?"
	c, err := e.svc.Create(ctx, e.d, changes.NewChange{Title: "  Rewrote the pricing page ", Notes: "FAQ added.\n\tTwo lines.",
		At:      t0.Add(-time.Hour).In(time.FixedZone("X", 3600)),
		Pages:   []string{"https://www.acme.example/pricing?utm_source=x#top", "/pricing", "/faq", "https://blog.ACME.example", "/caf%C3%A9"},
		Prompts: []string{strings.ToUpper(promptText(1)), promptText(1), " " + generated + " "}})
	must(t, err)
	want := store.Change{ID: c.ID, AccountID: "acct_1", ClientID: "cli_1", DomainID: e.d.ID, Title: "Rewrote the pricing page",
		Notes: "FAQ added.\n\tTwo lines.", At: t0.Add(-time.Hour), Pages: []string{"/pricing", "/faq", "/", "/caf%C3%A9"},
		Prompts: []string{promptText(1), generated}, CreatedAt: t0}
	got, err := e.svc.Get(ctx, e.d, c.ID)
	must(t, err)
	if !strings.HasPrefix(c.ID, "chg_") || fmt.Sprint(got) != fmt.Sprint(want) || got.At.Location() != time.UTC {
		t.Errorf("Create then Get:\n got  %+v\n want %+v", got, want)
	}
	now, err := e.svc.Create(ctx, e.d, changes.NewChange{Title: "No time given"})
	must(t, err)
	if !now.At.Equal(t0) || len(now.Pages) != 0 || now.Pages == nil || now.Prompts == nil {
		t.Errorf("a change without a time, pages or prompts: at %s, pages %#v, prompts %#v; want now and empty lists", now.At, now.Pages, now.Prompts)
	}

	many := func(n int, f func(int) string) []string {
		l := make([]string, n)
		for i := range l {
			l[i] = f(i)
		}
		return l
	}
	for _, tc := range []struct {
		name string
		n    changes.NewChange
		want []string
	}{
		{"no title", changes.NewChange{Title: "  "}, []string{"title"}},
		{"title of 200", changes.NewChange{Title: strings.Repeat("é", 200)}, nil},
		{"title of 201", changes.NewChange{Title: strings.Repeat("é", 201)}, []string{"title"}},
		{"title of two lines", changes.NewChange{Title: "a\nb"}, []string{"title"}},
		{"title not UTF-8", changes.NewChange{Title: "a\xffb"}, []string{"title"}},
		{"notes of 4000", changes.NewChange{Title: "t", Notes: strings.Repeat("ü", 4000)}, nil},
		{"notes of 4001", changes.NewChange{Title: "t", Notes: strings.Repeat("ü", 4001)}, []string{"notes"}},
		{"notes with a NUL", changes.NewChange{Title: "t", Notes: "a\x00b"}, []string{"notes"}},
		{"a day ahead", changes.NewChange{Title: "t", At: t0.Add(24 * time.Hour)}, nil},
		{"more than a day ahead", changes.NewChange{Title: "t", At: t0.Add(24*time.Hour + time.Second)}, []string{"at"}},
		{"before 2000", changes.NewChange{Title: "t", At: time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC)}, []string{"at"}},
		{"50 pages", changes.NewChange{Title: "t", Pages: many(50, func(i int) string { return fmt.Sprintf("/p%d", i) })}, nil},
		{"51 pages", changes.NewChange{Title: "t", Pages: many(51, func(i int) string { return fmt.Sprintf("/p%d", i) })}, []string{"pages"}},
		{"a page of another host", changes.NewChange{Title: "t", Pages: []string{"/ok", "https://notacme.example/pricing"}}, []string{"pages[1]"}},
		{"a page of another scheme", changes.NewChange{Title: "t", Pages: []string{"ftp://acme.example/x"}}, []string{"pages[0]"}},
		{"a page that is no path", changes.NewChange{Title: "t", Pages: []string{"pricing"}}, []string{"pages[0]"}},
		{"an empty page", changes.NewChange{Title: "t", Pages: []string{" "}}, []string{"pages[0]"}},
		{"a page with credentials", changes.NewChange{Title: "t", Pages: []string{"https://u:p@acme.example/"}}, []string{"pages[0]"}},
		{"a page too long", changes.NewChange{Title: "t", Pages: []string{"/" + strings.Repeat("a", 2048)}}, []string{"pages[0]"}},
		{"a prompt of another domain", changes.NewChange{Title: "t", Prompts: []string{promptText(0), promptText(7)}}, []string{"prompts[1]"}},
		{"51 prompts", changes.NewChange{Title: "t", Prompts: many(51, func(int) string { return promptText(0) })}, []string{"prompts"}},
		{"everything", changes.NewChange{Title: "", Notes: strings.Repeat("n", 4001), At: t0.Add(48 * time.Hour), Pages: []string{"x"},
			Prompts: []string{"no such prompt"}}, []string{"title", "notes", "at", "pages[0]", "prompts[0]"}},
	} {
		_, err := e.svc.Create(ctx, e.d, tc.n)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want it kept", tc.name, err)
			}
			continue
		}
		if !isField(err, "") || !slices.Equal(fields(err), tc.want) {
			t.Errorf("%s: %v (fields %v), want a VALIDATION_ERROR of %v", tc.name, err, fields(err), tc.want)
		}
	}
	gone := e.d
	gone.ID = "dom_none"
	if _, err := e.svc.Create(ctx, gone, changes.NewChange{Title: "t"}); !isCode(err, fault.NotFound) {
		t.Errorf("Create on a domain that is gone: %v, want NOT_FOUND", err)
	}
}

// Changes list the latest first in pages, read and delete only the
// domain's own; an unknown cursor is a VALIDATION_ERROR of cursor.
func TestListGetDelete(t *testing.T) {
	s, _ := engines[0].open(t)
	e := newEnv(t, s, 3)
	var ids []string
	for i := range 5 {
		c, err := e.svc.Create(ctx, e.d, changes.NewChange{Title: fmt.Sprintf("Change %d", i), At: t0.Add(time.Duration(i) * time.Hour)})
		must(t, err)
		ids = append([]string{c.ID}, ids...)
	}
	var got []string
	f := store.ChangeFilter{Limit: 2}
	for {
		page, next, err := e.svc.List(ctx, e.d, f)
		must(t, err)
		for _, c := range page {
			got = append(got, c.ID)
		}
		if f.Cursor = next; next == "" {
			break
		}
	}
	if !slices.Equal(got, ids) {
		t.Errorf("List in pages of 2: %v, want %v", got, ids)
	}
	if page, _, err := e.svc.List(ctx, e.d, store.ChangeFilter{From: t0.Add(3 * time.Hour)}); err != nil || len(page) != 2 {
		t.Errorf("List from hour 3: %d changes, %v; want 2", len(page), err)
	}
	if _, _, err := e.svc.List(ctx, e.d, store.ChangeFilter{Cursor: "nope"}); !isField(err, "cursor") {
		t.Errorf("List with a cursor it did not make: %v, want a VALIDATION_ERROR of cursor", err)
	}
	other := e.d
	other.AccountID = "acct_2"
	if _, err := e.svc.Get(ctx, other, ids[0]); !isCode(err, fault.NotFound) {
		t.Errorf("Get through another account: %v, want NOT_FOUND", err)
	}
	if err := e.svc.Delete(ctx, other, ids[0]); !isCode(err, fault.NotFound) {
		t.Errorf("Delete through another account: %v, want NOT_FOUND", err)
	}
	must(t, e.svc.Delete(ctx, e.d, ids[0]))
	if _, err := e.svc.Get(ctx, e.d, ids[0]); !isCode(err, fault.NotFound) {
		t.Errorf("Get of a deleted change: %v, want NOT_FOUND", err)
	}
	if err := e.svc.Delete(ctx, e.d, ids[0]); !isCode(err, fault.NotFound) {
		t.Errorf("Delete twice: %v, want NOT_FOUND", err)
	}
}

// contentRequest is a completed content request of the client's on
// domain.
func contentRequest(id, domain, url string, queries ...string) store.ContentRequest {
	return store.ContentRequest{ID: id, AccountID: "acct_1", ClientID: "cli_1", KeyID: "key_1", Type: "optimize", Status: "completed",
		Domain: domain, URL: url, TargetQueries: append([]string{}, queries...), Metadata: map[string]string{}, Budget: 1000,
		BudgetMonth: "2026-06", CreatedAt: t0, UpdatedAt: t0}
}

// A published content request makes one change, however often and
// however many callers mark it at once, on two handles: on the monitored
// domain covering the page, targeting the page and the request's target
// queries that are the domain's prompts. A page on no monitored domain
// makes none (ErrUnmonitored); a request not completed is INVALID_STATE.
func TestFromPublished(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			s, reopen := eng.open(t)
			e := newEnv(t, s, 3)
			queued := contentRequest("cr_queued", domainName, "https://acme.example/a")
			queued.Status = "queued"
			must(t, s.Update(ctx, func(tx store.Tx) error {
				for _, cr := range []store.ContentRequest{
					contentRequest("cr_1", "blog.acme.example", "https://blog.acme.example/old", strings.ToLower(promptText(2)), "not a prompt of it"),
					contentRequest("cr_elsewhere", "other.example", "https://other.example/x"), queued,
				} {
					if err := tx.InsertContentRequest(cr); err != nil {
						return err
					}
				}
				return nil
			}))
			svcs := []*changes.Service{e.svc, {Store: reopen(t), Now: e.clock.Now}}
			var mu sync.Mutex
			made := map[string]int{}
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					c, err := svcs[i%2].FromPublished(ctx, "acct_1", "cr_1", "https://blog.acme.example/guides/skates?ref=x", t0.Add(-time.Hour))
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						t.Errorf("FromPublished %d: %v", i, err)
						return
					}
					made[c.ID]++
				})
			}
			wg.Wait()
			if len(made) != 1 {
				t.Fatalf("one request published by 8 callers made changes %v; want one", made)
			}
			l, _, err := e.svc.List(ctx, e.d, store.ChangeFilter{})
			must(t, err)
			if len(l) != 1 {
				t.Fatalf("the domain has %d changes, want 1", len(l))
			}
			c := l[0]
			if made[c.ID] != 8 || c.ContentRequestID != "cr_1" || c.DomainID != e.d.ID || !c.At.Equal(t0.Add(-time.Hour)) ||
				!slices.Equal(c.Pages, []string{"/guides/skates"}) || !slices.Equal(c.Prompts, []string{promptText(2)}) ||
				!strings.Contains(c.Title, "/guides/skates") || !strings.Contains(c.Notes, "cr_1") {
				t.Errorf("the published request's change: %+v", c)
			}
			again, err := e.svc.FromPublished(ctx, "acct_1", "cr_1", "https://blog.acme.example/new", time.Time{})
			if err != nil || again.ID != c.ID || !slices.Equal(again.Pages, c.Pages) {
				t.Errorf("published again: %+v, %v; want the first change as it is", again, err)
			}
			// Deleted, it lets the request make another.
			must(t, e.svc.Delete(ctx, e.d, c.ID))
			next, err := e.svc.FromPublished(ctx, "acct_1", "cr_1", "", time.Time{})
			if err != nil || next.ID == c.ID || !slices.Equal(next.Pages, []string{"/old"}) || !next.At.Equal(t0) {
				t.Errorf("published after its change was deleted: %+v, %v; want a new change of the request's URL, now", next, err)
			}
			if _, err := e.svc.FromPublished(ctx, "acct_1", "cr_elsewhere", "", time.Time{}); !errors.Is(err, changes.ErrUnmonitored) {
				t.Errorf("a page on no monitored domain: %v, want ErrUnmonitored", err)
			}
			if _, err := e.svc.FromPublished(ctx, "acct_1", "cr_queued", "", time.Time{}); !isCode(err, fault.InvalidState) {
				t.Errorf("a queued request published: %v, want INVALID_STATE", err)
			}
			if _, err := e.svc.FromPublished(ctx, "acct_2", "cr_elsewhere", "", time.Time{}); !isCode(err, fault.NotFound) {
				t.Errorf("another account's request: %v, want NOT_FOUND", err)
			}
			for _, tc := range []struct {
				url  string
				at   time.Time
				want string
			}{
				{"https://elsewhere.example/x", time.Time{}, "url"},
				{"/relative", time.Time{}, "url"},
				{"", t0.Add(25 * time.Hour), "published_at"},
			} {
				must(t, s.Update(ctx, func(tx store.Tx) error {
					return tx.InsertContentRequest(contentRequest("cr_"+tc.want+fmt.Sprint(len(tc.url)), domainName, "https://acme.example/a"))
				}))
				if _, err := e.svc.FromPublished(ctx, "acct_1", "cr_"+tc.want+fmt.Sprint(len(tc.url)), tc.url, tc.at); !isField(err, tc.want) {
					t.Errorf("published at %q, %s: %v, want a VALIDATION_ERROR of %s", tc.url, tc.at, err, tc.want)
				}
			}
		})
	}
}

// Due marks a change measured after the first scan that fills its window
// after it, once however many instances ask at once: the Measured hook
// runs in the transaction that marks it (a hook that fails leaves it
// unmeasured), and a later scan measures it no more.
func TestDueOncePerChange(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			s, reopen := eng.open(t)
			e := newEnv(t, s, scenario.prompts)
			w := scenario
			w.after = lift.DefaultScans - 1
			w.store(t, s, e.d, lift.DefaultScans)
			e.clock.Set(t0.Add(-2 * 24 * time.Hour))
			early, err := e.svc.Create(ctx, e.d, changes.NewChange{Title: "Earlier change", At: t0.Add(-2 * 24 * time.Hour)})
			must(t, err)
			e.clock.Set(t0)
			c, err := e.svc.Create(ctx, e.d, changes.NewChange{Title: "Rewrote the guides", At: t0, Prompts: []string{promptText(0)}})
			must(t, err)
			e.clock.Set(t0.Add(time.Duration(w.after) * 24 * time.Hour))
			// 13 scans after c, 15 after the earlier change.
			got, err := e.svc.Due(ctx, e.d)
			if err != nil || len(got) != 1 || got[0].Change.ID != early.ID || got[0].Change.LiftMeasuredAt.IsZero() ||
				got[0].Report.After.Scans != lift.DefaultScans {
				t.Fatalf("Due with 15 and 13 scans after: %+v, %v; want the earlier change measured", got, err)
			}

			// A scan whose probes all failed brings no answer: still 13.
			silent := store.Scan{ID: "scan_silent", AccountID: e.d.AccountID, ClientID: e.d.ClientID, DomainID: e.d.ID, Domain: e.d.Domain,
				Trigger: store.ScanManual, Status: store.ScanCompleted, Attempts: 1, Result: []byte(`{}`), CreatedAt: e.clock.Now(),
				StartedAt: e.clock.Now(), FinishedAt: e.clock.Now()}
			must(t, s.Update(ctx, func(tx store.Tx) error {
				if err := tx.InsertScan(silent); err != nil {
					return err
				}
				return tx.InsertScanAnswers([]store.ScanAnswer{{ScanID: silent.ID, Prompt: promptText(0), Engine: "gpt", Kind: "openai-chat",
					Error: "engine unreachable", Detail: []byte(`{}`), RecordedAt: silent.FinishedAt}})
			}))
			if got, err := e.svc.Due(ctx, e.d); err != nil || len(got) != 0 {
				t.Fatalf("Due after a scan without answers: %+v, %v; want none", got, err)
			}
			// The 14th scan after c.
			late := world{prompts: w.prompts, targeted: w.targeted, samples: w.samples, engines: w.engines, before: 0, after: 1,
				cite: 0.2, citeTargeted: 0.45, citeOthers: 0.25, seed: 7}
			lateScan(t, s, e.d, late, w.after)
			e.clock.Set(t0.Add(time.Duration(w.after+1) * 24 * time.Hour))
			fail := &changes.Service{Store: s, Now: e.clock.Now, Measured: func(store.Tx, changes.Measured) error {
				return errors.New("the outbox refused the event")
			}}
			if got, err := fail.Due(ctx, e.d); err == nil || len(got) != 0 {
				t.Errorf("Due with a hook that fails: %+v, %v; want the error and nothing measured", got, err)
			}
			var mu sync.Mutex
			var events []changes.Measured
			hook := func(tx store.Tx, m changes.Measured) error {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, m)
				return nil
			}
			svcs := []*changes.Service{{Store: s, Now: e.clock.Now, Measured: hook}, {Store: reopen(t), Now: e.clock.Now, Measured: hook}}
			var measured []string
			var wg sync.WaitGroup
			for i := range 6 {
				wg.Go(func() {
					got, err := svcs[i%2].Due(ctx, e.d)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						t.Errorf("Due %d: %v", i, err)
					}
					for _, m := range got {
						measured = append(measured, m.Change.ID)
					}
				})
			}
			wg.Wait()
			if !slices.Equal(measured, []string{c.ID}) || len(events) != 1 || events[0].Change.ID != c.ID {
				t.Fatalf("6 callers of Due after the 14th scan measured %v, hook %d times; want %s once", measured, len(events), c.ID)
			}
			m := events[0]
			if cite := estimate(t, m.Report.Overall, lift.MetricCitation); !m.Report.Targeted || cite.DiD == nil || m.Report.After.Scans != lift.DefaultScans {
				t.Errorf("the measured lift: targeted %v, DiD %v, %d scans after", m.Report.Targeted, cite.DiD, m.Report.After.Scans)
			}
			if stored, err := e.svc.Get(ctx, e.d, c.ID); err != nil || !stored.LiftMeasuredAt.Equal(e.clock.Now()) {
				t.Errorf("the change's LiftMeasuredAt: %s, %v; want now", stored.LiftMeasuredAt, err)
			}
			// A later scan: nothing more to measure.
			lateScan(t, s, e.d, late, w.after+1)
			e.clock.Set(t0.Add(time.Duration(w.after+2) * 24 * time.Hour))
			if got, err := svcs[0].Due(ctx, e.d); err != nil || len(got) != 0 || len(events) != 1 {
				t.Errorf("Due after a later scan: %+v, %v; want none", got, err)
			}
		})
	}
}

// lateScan writes one more scan of the world, day days after t0.
func lateScan(t *testing.T, s store.Store, d store.MonitoredDomain, w world, day int) {
	t.Helper()
	w.before, w.after, w.shift, w.seed, w.prefix = 0, 1, day, uint64(day), fmt.Sprintf("late%d_", day)
	w.store(t, s, d, 0)
}
