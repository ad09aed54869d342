package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// DeliveryBacklog counts the pending deliveries of enabled webhooks and of
// enabled connections apart, each with the earliest next attempt among
// them to the microsecond; a delivery that succeeded or failed, and one of
// a disabled or deleted target, is not counted.
func testDeliveryBacklog(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	if wh, cn, err := s.DeliveryBacklog(ctx); err != nil || wh != (store.Backlog{}) || cn != (store.Backlog{}) {
		t.Fatalf("DeliveryBacklog of an empty store: %+v, %+v, %v; want zeros", wh, cn, err)
	}
	off := newWebhook("wh_off", "acct_1", "", "example.com", t0)
	off.Enabled = false
	insertWebhooks(t, s, newWebhook("wh_1", "acct_1", "", "example.com", t0), off, newWebhook("wh_gone", "acct_1", "", "example.com", t0),
		newConnection("cn_1", "acct_1", "", t0), newConnection("cn_idle", "acct_1", "", t0))
	type dl struct {
		target string
		in     time.Duration
		status string
	}
	n := 0
	update(t, s, "InsertDelivery", func(tx store.Tx) error {
		for _, d := range []dl{{"wh_1", 2 * time.Minute, store.DeliveryPending}, {"wh_1", -time.Minute, store.DeliveryPending},
			{"wh_1", -time.Hour, store.DeliverySucceeded}, {"wh_1", -2 * time.Hour, store.DeliveryFailed},
			{"wh_off", -3 * time.Hour, store.DeliveryPending}, {"wh_gone", -4 * time.Hour, store.DeliveryPending},
			{"cn_1", 3 * time.Minute, store.DeliveryPending}, {"cn_1", time.Minute, store.DeliveryPending},
			{"cn_idle", -time.Hour, store.DeliverySucceeded}} {
			n++
			x := newDelivery(d.target, "acct_1", fmt.Sprintf("dlv_%d", n), fmt.Sprintf("evt_%d", n), t0.Add(d.in))
			x.Status = d.status
			if _, err := tx.InsertDelivery(x); err != nil {
				return err
			}
		}
		return tx.DeleteWebhook("acct_1", "wh_gone", "deleted by its owner", t0)
	})
	wh, cn, err := s.DeliveryBacklog(ctx)
	want := [2]store.Backlog{{Pending: 2, FirstDue: t0.Add(-time.Minute).Truncate(time.Microsecond)},
		{Pending: 2, FirstDue: t0.Add(time.Minute).Truncate(time.Microsecond)}}
	if err != nil || wh.Pending != want[0].Pending || !wh.FirstDue.Equal(want[0].FirstDue) ||
		cn.Pending != want[1].Pending || !cn.FirstDue.Equal(want[1].FirstDue) {
		t.Errorf("DeliveryBacklog = %+v, %+v, %v\nwant %+v, %+v (pending deliveries of enabled targets, the first due of each kind)",
			wh, cn, err, want[0], want[1])
	}
}
