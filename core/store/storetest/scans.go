package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

func newScan(id, accountID, clientID, domainID string, created time.Time) store.Scan {
	return store.Scan{ID: id, AccountID: accountID, ClientID: clientID, DomainID: domainID, Domain: domainID + ".example",
		Trigger: store.ScanScheduled, Status: store.ScanQueued, CreatedAt: created}
}

// A scan keeps every field; another account's is ErrNotFound; ids are
// unique (ErrConflict); UpdateScan, the write of the claim that made its
// Attempts, writes its state, holder, lease, result, error and times;
// ActiveScan is a domain's queued or running scan; LatestScan is the last
// completed scan of exactly one owner's domain, and LatestScans that of
// each monitored domain at once.
func testScans(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	full := store.Scan{ID: "scan_1", AccountID: "acct_1", ClientID: "cli_1", DomainID: "dom_1", Domain: "xn--bcher-kva.example",
		Trigger: store.ScanManual, Status: store.ScanRunning, Attempts: 2, HandBacks: 1, Holder: "proc_a", LeaseUntil: t0.Add(time.Minute).In(elsewhere),
		Result: json.RawMessage(`{"score":61,"probes":[1,2]}`), Error: "probe timed out", CreatedAt: t0.In(elsewhere),
		StartedAt: t0.Add(time.Second), FinishedAt: t0.Add(2 * time.Second)}
	update(t, s, "InsertScan", func(tx store.Tx) error { return tx.InsertScan(full) })
	want := full
	want.LeaseUntil, want.CreatedAt = want.LeaseUntil.UTC(), t0
	if got, err := s.Scan(ctx, "acct_1", "scan_1"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Scan round trip:\n got  %+v, %v\n want %+v", got, err, want)
	}
	if _, err := s.Scan(ctx, "acct_2", "scan_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Scan of another account's: %v, want ErrNotFound", err)
	}
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.InsertScan(newScan("scan_1", "acct_1", "", "dom_9", t0)) }); !errors.Is(err, store.ErrConflict) {
		t.Errorf("InsertScan of a taken id: %v, want ErrConflict", err)
	}
	update(t, s, "ActiveScan", func(tx store.Tx) error {
		if got, err := tx.ActiveScan("dom_1"); err != nil || got.ID != "scan_1" {
			t.Errorf("ActiveScan of a domain with a running scan: %+v, %v", got, err)
		}
		if _, err := tx.ActiveScan("dom_2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ActiveScan of a domain without scans: %v, want ErrNotFound", err)
		}
		return nil
	})
	if _, err := s.LatestScan(ctx, "acct_1", "cli_1", full.Domain); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LatestScan while none completed: %v, want ErrNotFound", err)
	}

	done := want
	done.Status, done.LeaseUntil, done.Error, done.HandBacks = store.ScanCompleted, time.Time{}, "", 2
	done.Result, done.StartedAt, done.FinishedAt = json.RawMessage(`{"score":62}`), t0.Add(time.Minute), t0.Add(2*time.Minute)
	update(t, s, "UpdateScan", func(tx store.Tx) error { return tx.UpdateScan(done) })
	if got, err := s.Scan(ctx, "acct_1", "scan_1"); err != nil || !reflect.DeepEqual(got, done) {
		t.Errorf("after UpdateScan:\n got  %+v, %v\n want %+v", got, err, done)
	}
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.UpdateScan(newScan("scan_none", "acct_1", "", "dom_1", t0)) }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateScan of an unknown scan: %v, want ErrNotFound", err)
	}
	update(t, s, "ActiveScan", func(tx store.Tx) error {
		if _, err := tx.ActiveScan("dom_1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ActiveScan of a domain whose scan completed: %v, want ErrNotFound", err)
		}
		return nil
	})

	// LatestScan: the last finished completed one of exactly that owner.
	later := newScan("scan_2", "acct_1", "cli_1", "dom_1", t0.Add(-time.Hour)) // created earlier, finished later
	later.Domain, later.Status, later.FinishedAt = full.Domain, store.ScanCompleted, t0.Add(3*time.Minute)
	later.Result = []byte(`{"visibility_score":61}`)
	failed := newScan("scan_3", "acct_1", "cli_1", "dom_1", t0.Add(time.Hour))
	failed.Domain, failed.Status, failed.FinishedAt = full.Domain, store.ScanFailed, t0.Add(time.Hour)
	own := newScan("scan_4", "acct_1", "", "dom_own", t0)
	own.Domain, own.Status, own.FinishedAt = full.Domain, store.ScanCompleted, t0.Add(4*time.Minute)
	update(t, s, "InsertScan", func(tx store.Tx) error {
		for _, sc := range []store.Scan{later, failed, own} {
			if err := tx.InsertScan(sc); err != nil {
				return err
			}
		}
		return nil
	})
	for _, tc := range []struct{ account, client, want string }{{"acct_1", "cli_1", "scan_2"}, {"acct_1", "", "scan_4"}} {
		if got, err := s.LatestScan(ctx, tc.account, tc.client, full.Domain); err != nil || got.ID != tc.want {
			t.Errorf("LatestScan(%s, %q) = %s, %v; want %s", tc.account, tc.client, got.ID, err, tc.want)
		}
		update(t, s, "LatestScan", func(tx store.Tx) error {
			got, err := tx.LatestScan(tc.account, tc.client, full.Domain)
			if err != nil || got.ID != tc.want || (got.ID == later.ID && string(got.Result) != string(later.Result)) {
				t.Errorf("tx.LatestScan(%s, %q) = %+v, %v; want %s", tc.account, tc.client, got, err, tc.want)
			}
			return nil
		})
	}
	if _, err := s.LatestScan(ctx, "acct_2", "", full.Domain); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LatestScan of another account: %v, want ErrNotFound", err)
	}
	update(t, s, "LatestScan", func(tx store.Tx) error {
		if _, err := tx.LatestScan("acct_2", "", full.Domain); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("tx.LatestScan of another account: %v, want ErrNotFound", err)
		}
		return nil
	})

	// LatestScans: the same, of each monitored domain at once.
	update(t, s, "InsertDomain", func(tx store.Tx) error {
		for _, d := range []store.MonitoredDomain{newDomain("dom_1", "acct_1", "cli_1", full.Domain, t0),
			newDomain("dom_own", "acct_1", "", full.Domain, t0), newDomain("dom_none", "acct_1", "", "none.example", t0)} {
			if err := tx.InsertDomain(d); err != nil {
				return err
			}
		}
		return nil
	})
	want4, err := s.Scan(ctx, "acct_1", "scan_4")
	must(t, err, "Scan")
	got, err := s.LatestScans(ctx, "acct_1", []string{"dom_1", "dom_own", "dom_none", "dom_unknown"})
	if err != nil || len(got) != 2 || got["dom_1"].ID != "scan_2" || !reflect.DeepEqual(got["dom_own"], want4) {
		t.Errorf("LatestScans = %+v, %v; want dom_1: scan_2, dom_own: %+v", got, err, want4)
	}
	if other, err := s.LatestScans(ctx, "acct_2", []string{"dom_1", "dom_own"}); err != nil || len(other) != 0 {
		t.Errorf("LatestScans of another account's ids: %+v, %v", other, err)
	}
	if none, err := s.LatestScans(ctx, "acct_1", nil); err != nil || len(none) != 0 {
		t.Errorf("LatestScans of no ids: %+v, %v", none, err)
	}
}

// DueDomains lists up to limit monitored domains whose next scan is due at
// now (a domain without one is never due), soonest first, each with its
// account's tier.
func testDueDomains(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountAgency)
	must(t, s.CreateAccount(ctx, store.Account{ID: "acct_2", Name: "Two", Tier: "enterprise", Type: store.AccountStandard, CreatedAt: t0}), "CreateAccount")
	newClient(t, s, "acct_1", "cli_1")
	var ds []store.MonitoredDomain
	for i, in := range []time.Duration{-time.Minute, 0, time.Nanosecond, -time.Hour, -2 * time.Minute} {
		d := newDomain("dom_"+string(rune('a'+i)), []string{"acct_1", "acct_2"}[i%2], "", string(rune('a'+i))+".example", t0)
		d.NextScanAt = t0.Add(in)
		ds = append(ds, d)
	}
	never := newDomain("dom_never", "acct_1", "cli_1", "never.example", t0)
	update(t, s, "InsertDomain", func(tx store.Tx) error {
		for _, d := range append(ds, never) {
			if err := tx.InsertDomain(d); err != nil {
				return err
			}
		}
		return nil
	})
	due := func(limit int) []store.DueDomain {
		var out []store.DueDomain
		update(t, s, "DueDomains", func(tx store.Tx) (err error) { out, err = tx.DueDomains(t0, limit); return err })
		return out
	}
	got := due(10)
	var ids []string
	for _, d := range got {
		ids = append(ids, d.ID)
		if tier := map[string]string{"acct_1": "starter", "acct_2": "enterprise"}[d.AccountID]; d.Tier != tier {
			t.Errorf("DueDomains: %s with tier %q, want its account's, %q", d.ID, d.Tier, tier)
		}
	}
	if !slices.Equal(ids, []string{"dom_d", "dom_e", "dom_a", "dom_b"}) {
		t.Errorf("DueDomains = %v, want those due at now, soonest first", ids)
	}
	if got := due(2); len(got) != 2 || got[0].ID != "dom_d" || got[0].Domain != ds[3].Domain || !got[0].NextScanAt.Equal(ds[3].NextScanAt) {
		t.Errorf("DueDomains(limit 2) = %+v; want the 2 soonest, with their fields", got)
	}
}

// ListScans pages the completed scans of exactly one owner's domain, the
// last finished first (ties by id, highest first), neither skipping nor
// repeating however small the pages; a scan queued, running or failed,
// another owner's, another domain's or another account's is not listed; a
// cursor the engine did not make is ErrMalformed.
func testListScans(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	update(t, s, "InsertScan", func(tx store.Tx) error {
		for i := range 7 {
			sc := newScan(fmt.Sprintf("scan_%d", i), "acct_1", "", "dom", t0)
			sc.Status, sc.StartedAt, sc.FinishedAt, sc.Result = store.ScanCompleted, t0, t0.Add(time.Duration(i/2)*time.Hour), json.RawMessage(`{}`)
			if err := tx.InsertScan(sc); err != nil {
				return err
			}
		}
		for _, sc := range []store.Scan{newScan("scan_q", "acct_1", "", "dom", t0), newScan("scan_c", "acct_1", "cli_1", "dom", t0),
			newScan("scan_o", "acct_1", "", "other", t0), newScan("scan_x", "acct_2", "", "dom", t0), newScan("scan_f", "acct_1", "", "dom", t0)} {
			switch sc.ID {
			case "scan_q":
			case "scan_f":
				sc.Status, sc.FinishedAt, sc.Error = store.ScanFailed, t0.Add(9*time.Hour), "failed"
			default:
				sc.Status, sc.FinishedAt, sc.Result = store.ScanCompleted, t0.Add(9*time.Hour), json.RawMessage(`{}`)
			}
			if err := tx.InsertScan(sc); err != nil {
				return err
			}
		}
		return nil
	})
	// Finished at hours 3, 2, 2, 1, 1, 0, 0: by time, then id, highest first.
	want := []string{"scan_6", "scan_5", "scan_4", "scan_3", "scan_2", "scan_1", "scan_0"}
	for _, limit := range []int{1, 2, 3, 100} {
		var got []string
		walk(t, "ListScans", limit, func(cursor string) ([]string, string, error) {
			page, next, err := s.ListScans(ctx, store.ScanFilter{AccountID: "acct_1", Domain: "dom.example", Cursor: cursor, Limit: limit})
			got = append(got, idsOf(page, func(sc store.Scan) string { return sc.ID })...)
			return idsOf(page, func(sc store.Scan) string { return sc.ID }), next, err
		})
		if !slices.Equal(got, want) {
			t.Errorf("ListScans in pages of %d: %v, want %v", limit, got, want)
		}
	}
	if page, _, err := s.ListScans(ctx, store.ScanFilter{AccountID: "acct_1", ClientID: "cli_1", Domain: "dom.example"}); err != nil ||
		len(page) != 1 || page[0].ID != "scan_c" {
		t.Errorf("ListScans of the client: %+v, %v", page, err)
	}
	if _, _, err := s.ListScans(ctx, store.ScanFilter{AccountID: "acct_1", Domain: "dom.example", Cursor: "x"}); !errors.Is(err, store.ErrMalformed) {
		t.Errorf("ListScans with a cursor it did not make: %v, want ErrMalformed", err)
	}
}
