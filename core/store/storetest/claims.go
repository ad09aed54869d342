package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// claimed collects what concurrent claimers took.
type claimed struct {
	mu  sync.Mutex
	ids map[string]int
	err []error
}

func (c *claimed) add(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil {
		c.ids = make(map[string]int)
	}
	c.ids[id]++
}

func (c *claimed) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = append(c.err, err)
}

// expect checks that each of ids was claimed once and nothing else was.
func (c *claimed) expect(t *testing.T, what string, ids []string) {
	t.Helper()
	for _, err := range c.err {
		t.Errorf("%s: a claim failed: %v", what, err)
	}
	for _, id := range ids {
		if c.ids[id] != 1 {
			t.Errorf("%s: %s claimed %d times, want once", what, id, c.ids[id])
		}
	}
	if len(c.ids) != len(ids) {
		t.Errorf("%s: %d items claimed, want %d", what, len(c.ids), len(ids))
	}
}

// claimState is what a claim says of the item it took.
type claimState struct {
	id, status string
	attempts   int
	lease      time.Time
}

// claimTwice runs two rounds of 32 concurrent claimers on two handles,
// each claiming until claim finds nothing (ErrNotFound): the first round
// at a time when the items are queued, the second once the first round's
// leases ended. Each round must take each of ids once, in the state
// status, its Attempts the round's number, leased until leaseEnd.
func claimTwice(t *testing.T, what string, hs []store.Store, ids []string, status string,
	claim func(tx store.Tx, now, leaseEnd time.Time) (claimState, error)) {
	t.Helper()
	for round, now := range []time.Time{t0.Add(time.Hour), t0.Add(2 * time.Hour)} {
		leaseEnd := now.Add(time.Minute)
		var got claimed
		Together(concurrency, func(i int) {
			for range len(ids) + 1 { // bounded: a claim that hands items out again never ends
				var c claimState
				err := hs[i%2].Update(ctx, func(tx store.Tx) (err error) { c, err = claim(tx, now, leaseEnd); return err })
				if errors.Is(err, store.ErrNotFound) {
					return
				}
				if err != nil {
					got.fail(err)
					return
				}
				if c.status != status || c.attempts != round+1 || !c.lease.Equal(leaseEnd) {
					got.fail(fmt.Errorf("claim %d of %s: status %s, attempts %d, lease until %v; want %s, %d, %v",
						round+1, c.id, c.status, c.attempts, c.lease, status, round+1, leaseEnd))
				}
				got.add(c.id)
			}
		})
		got.expect(t, fmt.Sprintf("round %d of concurrent %s", round+1, what), ids)
	}
}

// A content request is never claimed by two callers at once: 32
// concurrent claimers on two handles take each queued request once, each
// claim adding one to its Attempts; once their leases end, each is
// claimed once more, its Attempts one higher again.
func testContentClaimsUnderConcurrency(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	var ids []string
	for a := range 4 {
		acct := fmt.Sprintf("acct_%d", a)
		newAccount(t, s, acct, store.AccountStandard)
		for i := range 10 {
			c := contentRequest(fmt.Sprintf("cr_%d_%02d", a, i), acct, "", t0.Add(time.Duration(i)*time.Millisecond))
			insertRequests(t, s, c)
			ids = append(ids, c.ID)
		}
	}
	claimTwice(t, "ClaimContentRequest", handles(t, s, reopen, 2), ids, "processing", func(tx store.Tx, now, leaseEnd time.Time) (claimState, error) {
		c, err := tx.ClaimContentRequest(fmt.Sprintf("proc_%d", rand.Uint64()), now, leaseEnd)
		return claimState{c.ID, c.Status, c.Attempts, c.LeaseUntil}, err
	})
	if status, attempts, err := s.ContentRequestClaim(ctx, "acct_0", ids[0]); err != nil || status != "processing" || attempts != 2 {
		t.Errorf("ContentRequestClaim(%s) after two claims: %s, %d, %v", ids[0], status, attempts, err)
	}
}

// A scan is never claimed by two callers at once: 32 concurrent claimers
// on two handles take each queued scan once, each claim adding one to its
// Attempts; once their leases end, each is claimed once more.
func testScanClaimsUnderConcurrency(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	var ids []string
	update(t, s, "InsertScan", func(tx store.Tx) error {
		for i := range 40 {
			sc := newScan(fmt.Sprintf("scan_%02d", i), "acct_1", "", fmt.Sprintf("dom_%02d", i), t0.Add(time.Duration(i)*time.Millisecond))
			ids = append(ids, sc.ID)
			if err := tx.InsertScan(sc); err != nil {
				return err
			}
		}
		return nil
	})
	claimTwice(t, "ClaimScan", handles(t, s, reopen, 2), ids, store.ScanRunning, func(tx store.Tx, now, leaseEnd time.Time) (claimState, error) {
		sc, err := tx.ClaimScan(fmt.Sprintf("proc_%d", rand.Uint64()), now, leaseEnd)
		return claimState{sc.ID, sc.Status, sc.Attempts, sc.LeaseUntil}, err
	})
	if sc, err := s.Scan(ctx, "acct_1", ids[0]); err != nil || sc.Status != store.ScanRunning || sc.Attempts != 2 {
		t.Errorf("Scan(%s) after two claims: %+v, %v", ids[0], sc, err)
	}
}

// A pending delivery is never handed to two concurrent claims: 32
// claimers on two handles (two processes), through ClaimDeliveries and
// ClaimWebhookDeliveries at once, take each due delivery once (those not
// yet due, or of a disabled webhook, not at all).
func testDeliveryClaimsUnderConcurrency(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	var hooks []string
	for i := range 4 {
		w := newWebhook(fmt.Sprintf("wh_%d", i), "acct_1", "", "example.com", t0)
		insertWebhooks(t, s, w)
		hooks = append(hooks, w.ID)
	}
	off := newWebhook("wh_off", "acct_1", "", "example.com", t0)
	off.Enabled = false
	insertWebhooks(t, s, off)
	now := t0.Add(time.Hour)
	var due []string
	update(t, s, "InsertDelivery", func(tx store.Tx) error {
		for i := range 200 {
			d := newDelivery(hooks[i%4], "acct_1", fmt.Sprintf("dlv_%03d", i), fmt.Sprintf("evt_%03d", i), t0.Add(time.Duration(i)*time.Millisecond))
			if i%25 == 0 {
				d.NextAttemptAt = now.Add(time.Minute) // not due yet
			} else {
				due = append(due, d.ID)
			}
			if _, err := tx.InsertDelivery(d); err != nil {
				return err
			}
		}
		_, err := tx.InsertDelivery(newDelivery("wh_off", "acct_1", "dlv_off", "evt_off", t0))
		return err
	})
	leaseEnd := now.Add(time.Hour)
	hs := handles(t, s, reopen, 2)
	var got claimed
	claim := func(i int) int {
		var ds []store.Delivery
		var err error
		s := hs[(i/4)%2] // the claimers of each kind on both handles
		if i%2 == 0 {
			ds, _, err = s.ClaimDeliveries(ctx, fmt.Sprintf("lease_%d", i), now, leaseEnd, 10, 100, nil)
		} else {
			ds, _, err = s.ClaimWebhookDeliveries(ctx, fmt.Sprintf("lease_%d", i), hooks[(i/2)%4], now, leaseEnd, 7)
		}
		if err != nil {
			got.fail(err)
			return 0
		}
		for _, d := range ds {
			got.add(d.ID)
		}
		return len(ds)
	}
	// Bounded: a claim that hands deliveries out again never ends.
	Together(concurrency, func(i int) {
		for n := 0; n <= len(due) && claim(i) > 0; n++ {
		}
	})
	// What a claimer left when it stopped, a sweep takes: nothing twice.
	for n := 0; n <= len(due) && claim(0) > 0; n++ {
	}
	got.expect(t, "concurrent ClaimDeliveries and ClaimWebhookDeliveries", due)
}

// pendingDeliveries inserts n due deliveries of a new webhook, oldest
// first.
func pendingDeliveries(t *testing.T, s store.Store, n int) (store.Webhook, []string) {
	t.Helper()
	newAccount(t, s, "acct_1", store.AccountStandard)
	w := newWebhook("wh_1", "acct_1", "", "example.com", t0)
	insertWebhooks(t, s, w)
	var ids []string
	update(t, s, "InsertDelivery", func(tx store.Tx) error {
		for i := range n {
			d := newDelivery(w.ID, "acct_1", fmt.Sprintf("dlv_%04d", i), fmt.Sprintf("evt_%04d", i), t0.Add(time.Duration(i)*time.Millisecond))
			d.Trace = traceOf(d.ID)
			if _, err := tx.InsertDelivery(d); err != nil {
				return err
			}
			ids = append(ids, d.ID)
		}
		return nil
	})
	return w, ids
}

// traceOf is the W3C traceparent pendingDeliveries gives a delivery.
func traceOf(id string) string {
	var n int
	fmt.Sscanf(id, "dlv_%d", &n)
	return fmt.Sprintf("00-%032x-%016x-01", n+1, n+1)
}

// sameTraces checks that claimed deliveries came with the trace they were
// made with.
func sameTraces(t *testing.T, what string, ds []store.Delivery) {
	t.Helper()
	for _, d := range ds {
		if d.Trace != traceOf(d.ID) {
			t.Fatalf("%s: %s came with trace %q, want %q", what, d.ID, d.Trace, traceOf(d.ID))
		}
	}
}

func deliveryIDs(ds []store.Delivery) []string {
	return idsOf(ds, func(d store.Delivery) string { return d.ID })
}

// A claim passes over the deliveries another lease holds and takes the
// next ones, oldest first, each under its lease until its end; once the
// leases end, the deliveries may be claimed again.
func testClaimsPassOverLeases(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	w, ids := pendingDeliveries(t, s, 300)
	now, end := t0.Add(time.Hour), t0.Add(2*time.Hour)
	ds, more, err := s.ClaimWebhookDeliveries(ctx, "lease_a", w.ID, now, end, 150)
	if err != nil || !slices.Equal(deliveryIDs(ds), ids[:150]) || !more {
		t.Fatalf("ClaimWebhookDeliveries(150): %d deliveries, more %v, %v; want the oldest 150 and more", len(ds), more, err)
	}
	for _, d := range ds {
		if d.Lease != "lease_a" || !d.LeaseUntil.Equal(end) {
			t.Fatalf("ClaimWebhookDeliveries: %s under lease %q until %v, want lease_a until %v", d.ID, d.Lease, d.LeaseUntil, end)
		}
	}
	sameTraces(t, "ClaimWebhookDeliveries", ds)
	if ds, more, err = s.ClaimWebhookDeliveries(ctx, "lease_b", w.ID, now, end, 30); err != nil || !slices.Equal(deliveryIDs(ds), ids[150:180]) || !more {
		t.Fatalf("ClaimWebhookDeliveries(30) = %v, more %v, %v; want %s to %s, passing over the leased", deliveryIDs(ds), more, err, ids[150], ids[179])
	}
	all, hooks, err := s.ClaimDeliveries(ctx, "lease_c", now, end, 500, 500, nil)
	if err != nil || !slices.Equal(deliveryIDs(all), ids[180:]) || hooks[w.ID].URL != w.URL {
		t.Fatalf("ClaimDeliveries = %d deliveries (%v), webhook %+v; want the last 120 with their webhook", len(all), err, hooks[w.ID])
	}
	sameTraces(t, "ClaimDeliveries", all)
	if ds, _, err := s.ClaimWebhookDeliveries(ctx, "lease_d", w.ID, now, end, 10); err != nil || len(ds) != 0 {
		t.Fatalf("every delivery is leased, yet a claim took %v (%v)", deliveryIDs(ds), err)
	}
	if ds, _, err := s.ClaimWebhookDeliveries(ctx, "lease_e", w.ID, end, end.Add(time.Hour), 10); err != nil || !slices.Equal(deliveryIDs(ds), ids[:10]) {
		t.Fatalf("once the leases ended: %v (%v); want the oldest 10 again", deliveryIDs(ds), err)
	}
}

// An outcome is recorded only under the lease that holds the delivery: a
// holder whose lease ended and went to another claim gets ErrLost and
// records nothing (no attempt, no state), and the new holder's outcome
// stands; once recorded, the lease is over.
func testOutcomeFencedByLease(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	w, ids := pendingDeliveries(t, s, 1)
	other := reopen(t)
	now := t0.Add(time.Hour)
	if ds, _, err := s.ClaimWebhookDeliveries(ctx, "lease_old", w.ID, now, now.Add(time.Minute), 1); err != nil || len(ds) != 1 {
		t.Fatalf("claim: %v %v", deliveryIDs(ds), err)
	}
	later := now.Add(2 * time.Minute) // the first lease has ended
	if ds, _, err := other.ClaimWebhookDeliveries(ctx, "lease_new", w.ID, later, later.Add(time.Minute), 1); err != nil || len(ds) != 1 {
		t.Fatalf("claim on the other handle once the lease ended: %v %v", deliveryIDs(ds), err)
	}
	outcome := func(h store.Store, lease string, status int) error {
		return h.Update(ctx, func(tx store.Tx) error {
			return tx.RecordOutcome(ids[0], lease, store.DeliveryOutcome{Status: store.DeliverySucceeded, Step: 1,
				Attempt: store.Attempt{DeliveryID: ids[0], N: 1, At: later, StatusCode: status}})
		})
	}
	if err := outcome(s, "lease_old", 500); !errors.Is(err, store.ErrLost) {
		t.Fatalf("RecordOutcome under the ended lease: %v, want ErrLost", err)
	}
	must(t, outcome(other, "lease_new", 200), "RecordOutcome under the lease that holds it")
	d, attempts, err := s.Delivery(ctx, w.ID, ids[0])
	must(t, err, "Delivery")
	if d.Status != store.DeliverySucceeded || d.LastStatus != 200 || d.Lease != "" || !d.LeaseUntil.IsZero() || len(attempts) != 1 || attempts[0].StatusCode != 200 {
		t.Fatalf("after both outcomes: %+v, attempts %+v; want the new holder's alone, the lease over", d, attempts)
	}
	if err := outcome(other, "lease_new", 200); !errors.Is(err, store.ErrLost) {
		t.Fatalf("RecordOutcome under a lease already ended by its outcome: %v, want ErrLost", err)
	}
}

// A delivery inserted with a lease (the fan-out hands it straight to its
// endpoint) is the inserter's: no claim takes it until the lease ends. A
// renewal moves the end of the leases its caller still holds, and only
// those.
func testInsertedLeaseAndRenewal(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	w := newWebhook("wh_1", "acct_1", "", "example.com", t0)
	insertWebhooks(t, s, w)
	now := t0.Add(time.Hour)
	d := newDelivery(w.ID, "acct_1", "dlv_hot", "evt_hot", now)
	d.Lease, d.LeaseUntil = "lease_fanout", now.Add(time.Minute)
	update(t, s, "InsertDelivery", func(tx store.Tx) error { _, err := tx.InsertDelivery(d); return err })
	other := reopen(t)
	if ds, _, err := other.ClaimDeliveries(ctx, "lease_claim", now, now.Add(time.Minute), 10, 10, nil); err != nil || len(ds) != 0 {
		t.Fatalf("a claim took the inserter's leased delivery: %v %v", deliveryIDs(ds), err)
	}
	renewed, err := s.RenewLeases(ctx, []store.Delivery{d, {ID: "dlv_hot", Lease: "lease_other"}}, now.Add(3*time.Minute))
	if err != nil || !slices.Equal(renewed, []string{"dlv_hot"}) {
		t.Fatalf("RenewLeases = %v, %v; want dlv_hot once, under its own lease", renewed, err)
	}
	later := now.Add(2 * time.Minute) // past the first end, before the renewed one
	if ds, _, err := other.ClaimDeliveries(ctx, "lease_claim", later, later.Add(time.Minute), 10, 10, nil); err != nil || len(ds) != 0 {
		t.Fatalf("a claim took a renewed delivery: %v %v", deliveryIDs(ds), err)
	}
	if renewed, err := other.RenewLeases(ctx, []store.Delivery{{ID: "dlv_hot", Lease: "lease_other"}}, later.Add(time.Hour)); err != nil || len(renewed) != 0 {
		t.Fatalf("RenewLeases under a lease that does not hold it renewed %v (%v)", renewed, err)
	}
}

// Deleting a webhook ends its deliveries' leases with them: an attempt in
// flight records nothing.
func testDeleteEndsLeases(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	w, ids := pendingDeliveries(t, s, 1)
	now := t0.Add(time.Hour)
	if ds, _, err := s.ClaimWebhookDeliveries(ctx, "lease_a", w.ID, now, now.Add(time.Minute), 1); err != nil || len(ds) != 1 {
		t.Fatalf("claim: %v %v", deliveryIDs(ds), err)
	}
	update(t, s, "DeleteWebhook", func(tx store.Tx) error { return tx.DeleteWebhook(w.AccountID, w.ID, "deleted", now) })
	err := s.Update(ctx, func(tx store.Tx) error {
		return tx.RecordOutcome(ids[0], "lease_a", store.DeliveryOutcome{Status: store.DeliverySucceeded, Step: 1,
			Attempt: store.Attempt{DeliveryID: ids[0], N: 1, At: now, StatusCode: 200}})
	})
	if !errors.Is(err, store.ErrLost) {
		t.Fatalf("RecordOutcome after the webhook was deleted: %v, want ErrLost", err)
	}
	if d, _, err := s.Delivery(ctx, w.ID, ids[0]); err != nil || d.Status != store.DeliveryFailed || d.Lease != "" {
		t.Fatalf("after the delete: %+v %v; want failed, no lease", d, err)
	}
}

// A scan's claim is fenced by its number: once its lease ended and another
// holder claimed it, the first holder's UpdateScan is ErrLost and writes
// nothing. A domain has one active scan at most (ErrConflict), and room
// for the next once it ends.
func testScanClaimFenced(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	sc := newScan("scan_1", "acct_1", "", "dom_1", t0)
	update(t, s, "InsertScan", func(tx store.Tx) error { return tx.InsertScan(sc) })
	second := newScan("scan_2", "acct_1", "", "dom_1", t0.Add(time.Second))
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.InsertScan(second) }); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("InsertScan of a second active scan of the domain: %v, want ErrConflict", err)
	}
	other := reopen(t)
	claim := func(h store.Store, holder string, now time.Time) (store.Scan, error) {
		var got store.Scan
		err := h.Update(ctx, func(tx store.Tx) (err error) { got, err = tx.ClaimScan(holder, now, now.Add(time.Minute)); return err })
		return got, err
	}
	first, err := claim(s, "proc_a", t0)
	if err != nil || first.Attempts != 1 || first.Holder != "proc_a" || first.Status != store.ScanRunning {
		t.Fatalf("ClaimScan: %+v %v", first, err)
	}
	if _, err := claim(other, "proc_b", t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ClaimScan while the lease holds: %v, want ErrNotFound", err)
	}
	taken, err := claim(other, "proc_b", t0.Add(2*time.Minute))
	if err != nil || taken.Attempts != 2 || taken.Holder != "proc_b" {
		t.Fatalf("ClaimScan once the lease ended: %+v %v", taken, err)
	}
	first.Status, first.FinishedAt, first.Error = store.ScanFailed, t0.Add(3*time.Minute), "late"
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.UpdateScan(first) }); !errors.Is(err, store.ErrLost) {
		t.Fatalf("UpdateScan by the late holder: %v, want ErrLost", err)
	}
	taken.Status, taken.FinishedAt, taken.Result = store.ScanCompleted, t0.Add(3*time.Minute), []byte(`{"visibility_score":50}`)
	update(t, other, "UpdateScan", func(tx store.Tx) error { return tx.UpdateScan(taken) })
	got, err := s.Scan(ctx, "acct_1", "scan_1")
	if err != nil || got.Status != store.ScanCompleted || got.Attempts != 2 || got.Holder != "proc_b" || got.Error != "" {
		t.Fatalf("the scan after both: %+v %v; want the new holder's end", got, err)
	}
	update(t, s, "InsertScan", func(tx store.Tx) error { return tx.InsertScan(second) })
}

// A worker's write to a content request is fenced by its claim's number:
// once its lease ended and another claim took the request, the first
// worker's step is ErrLost and writes nothing.
func testContentClaimFenced(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	insertRequests(t, s, contentRequest("cr_1", "acct_1", "", t0))
	other := reopen(t)
	claim := func(h store.Store, holder string, now time.Time) store.ContentRequest {
		t.Helper()
		var got store.ContentRequest
		update(t, h, "ClaimContentRequest", func(tx store.Tx) (err error) {
			got, err = tx.ClaimContentRequest(holder, now, now.Add(time.Minute))
			return err
		})
		return got
	}
	first := claim(s, "proc_a", t0)
	taken := claim(other, "proc_b", t0.Add(2*time.Minute))
	if first.Attempts != 1 || first.Holder != "proc_a" || taken.Attempts != 2 || taken.Holder != "proc_b" {
		t.Fatalf("claims: %d by %q, then %d by %q; want 1 by proc_a, 2 by proc_b", first.Attempts, first.Holder, taken.Attempts, taken.Holder)
	}
	first.Step, first.Spent = "rewrite", 5
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.UpdateContentRequest(first, first.Attempts) }); !errors.Is(err, store.ErrLost) {
		t.Fatalf("UpdateContentRequest by the late claim: %v, want ErrLost", err)
	}
	taken.Step = "analyze"
	update(t, other, "UpdateContentRequest", func(tx store.Tx) error { return tx.UpdateContentRequest(taken, taken.Attempts) })
	got, err := s.ContentRequest(ctx, "acct_1", "cr_1")
	if err != nil || got.Step != "analyze" || got.Spent != 0 || got.Holder != "proc_b" {
		t.Fatalf("after both: step %q, spent %d, holder %q (%v); want the new claim's", got.Step, got.Spent, got.Holder, err)
	}
}
