package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// idempotencyOf reads the record of (scope, key), made at t0 or later.
func idempotencyOf(t *testing.T, s store.Store, scope, key string) (store.Idempotency, error) {
	t.Helper()
	var r store.Idempotency
	err := s.Update(ctx, func(tx store.Tx) (err error) { r, err = tx.Idempotency(scope, key, t0); return err })
	return r, err
}

// An Update of store.Acted under a held key (store.Acting) marks the key
// acted in the transaction of its function: the mark commits with what
// the function wrote and rolls back with it; a record that keeps an
// answer, or that another request holds (made later), is left as it is;
// an Update without a key, or whose key no record holds any more, writes
// what its function wrote (the latter: the mark too). MarkActed in an
// engine's own transaction (a traffic batch's Then) marks as the wrapper
// does.
func testActedCommitsWithItsUpdate(t *testing.T, newStore Constructor) {
	raw, _ := newStore(t)
	s := store.Acted(raw)
	held := func(key string) store.Idempotency {
		rec := store.Idempotency{Scope: "acct_1/", Key: key, RequestHash: []byte{7, 0, 7}, Body: []byte{}, CreatedAt: t0.Add(time.Second)}
		update(t, raw, "PutIdempotency", func(tx store.Tx) error { return tx.PutIdempotency(rec) })
		return rec
	}
	action := func(key string) func(store.Tx) error {
		return func(tx store.Tx) error {
			return tx.PutIdempotency(store.Idempotency{Scope: "action/", Key: key, RequestHash: []byte{1}, Status: 201, Body: []byte(`{}`), CreatedAt: t0})
		}
	}
	acted := func(rec store.Idempotency) store.Idempotency {
		rec.Status, rec.Body = store.IdempotencyActed, []byte{}
		return rec
	}

	rec := held("committed")
	must(t, s.Update(store.Acting(ctx, rec), action("committed")), "Update under a held key")
	if got, err := idempotencyOf(t, raw, rec.Scope, rec.Key); err != nil || !reflect.DeepEqual(got, acted(rec)) {
		t.Errorf("the key after its action committed:\n got  %+v, %v\n want %+v", got, err, acted(rec))
	}
	if _, err := idempotencyOf(t, raw, "action/", "committed"); err != nil {
		t.Errorf("the action that marked its key: %v; want it committed", err)
	}

	rec = held("rolled back")
	if err := s.Update(store.Acting(ctx, rec), func(tx store.Tx) error {
		if err := action("rolled back")(tx); err != nil {
			return err
		}
		return errBoom
	}); !errors.Is(err, errBoom) {
		t.Fatalf("Update whose function failed: %v; want its error", err)
	}
	if got, err := idempotencyOf(t, raw, rec.Scope, rec.Key); err != nil || !reflect.DeepEqual(got, rec) {
		t.Errorf("the key after its action rolled back:\n got  %+v, %v\n want it held, %+v", got, err, rec)
	}
	if _, err := idempotencyOf(t, raw, "action/", "rolled back"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the action that rolled back: %v; want ErrNotFound", err)
	}

	kept := held("kept")
	kept.Status, kept.Body = 201, []byte(`{"id":"x"}`)
	update(t, raw, "PutIdempotency", func(tx store.Tx) error { return tx.PutIdempotency(kept) })
	rec = kept
	rec.Status, rec.Body = 0, []byte{}
	must(t, s.Update(store.Acting(ctx, rec), action("kept")), "Update under a key whose answer is kept")
	if got, err := idempotencyOf(t, raw, kept.Scope, kept.Key); err != nil || !reflect.DeepEqual(got, kept) {
		t.Errorf("a kept answer after a late action:\n got  %+v, %v\n want it kept, %+v", got, err, kept)
	}

	other := held("retaken")
	rec = other
	rec.CreatedAt = t0 // the holder before, whose key was freed and taken
	must(t, s.Update(store.Acting(ctx, rec), action("retaken")), "Update under a key another request holds")
	if got, err := idempotencyOf(t, raw, other.Scope, other.Key); err != nil || !reflect.DeepEqual(got, other) {
		t.Errorf("another holder's key after a late action:\n got  %+v, %v\n want it held, %+v", got, err, other)
	}

	must(t, s.Update(ctx, action("no key")), "Update without a key")
	if _, err := idempotencyOf(t, raw, "action/", "no key"); err != nil {
		t.Errorf("the action without a key: %v; want it committed", err)
	}

	// MarkActed alone, in an engine's own Update: as the wrapper's.
	rec = held("engine")
	must(t, raw.Update(store.Acting(ctx, rec), func(tx store.Tx) error { return store.MarkActed(store.Acting(ctx, rec), tx) }),
		"MarkActed in an Update")
	if got, err := idempotencyOf(t, raw, rec.Scope, rec.Key); err != nil || !reflect.DeepEqual(got, acted(rec)) {
		t.Errorf("the key MarkActed marked:\n got  %+v, %v\n want %+v", got, err, acted(rec))
	}
	must(t, raw.Update(context.WithoutCancel(ctx), func(tx store.Tx) error { return store.MarkActed(ctx, tx) }), "MarkActed without a key")

	// In the engine's own transaction of a write outside Update: a traffic
	// batch's Then marks the key with the batch kept, and a duplicate,
	// which keeps nothing, marks nothing.
	owners(t, raw)
	d := trafficDomain(t, raw, "acct_1", "", "dom_acted")
	for i, key := range []string{"batch", "duplicate"} {
		rec = held(key)
		kept := store.Acting(ctx, rec)
		b := newBatch(id("tb_acted", i), "acct_1", d.ID, "", "acted", t0)
		b.Then = func(tx store.Tx) error { return store.MarkActed(kept, tx) }
		dup, err := raw.AddTrafficBatch(kept, b, nil, nil)
		must(t, err, "AddTrafficBatch under a held key")
		want := acted(rec)
		if dup {
			want = rec
		}
		if got, err := idempotencyOf(t, raw, rec.Scope, rec.Key); dup != (i == 1) || err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("the key of a batch (duplicate %v):\n got  %+v, %v\n want %+v", dup, got, err, want)
		}
	}
}

// InsertChange and InsertIngestToken are CreateChange and
// CreateIngestToken in a transaction: kept with it, gone when it rolls
// back, ErrConflict for a taken id, ErrNotFound on another account's
// domain.
func testInsertedInATransaction(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "cli_1", "dom_t")
	c := newChange("chg_tx", "acct_1", d.ID, t0)
	tok := newIngestToken("itk_tx", "acct_1", d.ID)
	update(t, s, "InsertChange, InsertIngestToken", func(tx store.Tx) error {
		return errors.Join(tx.InsertChange(c), tx.InsertIngestToken(tok))
	})
	want := c
	want.ClientID, want.Pages, want.Prompts = "cli_1", []string{}, []string{}
	if got, err := s.Change(ctx, "acct_1", d.ID, c.ID); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("InsertChange round trip:\n got  %+v, %v\n want %+v", got, err, want)
	}
	if got, err := s.IngestTokenByHash(ctx, tok.Hash); err != nil || got.ID != tok.ID || got.ClientID != "cli_1" {
		t.Errorf("InsertIngestToken round trip: %+v, %v; want %s of cli_1", got, err, tok.ID)
	}
	for name, fn := range map[string]func(store.Tx) error{
		"InsertChange with a taken id":      func(tx store.Tx) error { return tx.InsertChange(c) },
		"InsertIngestToken with a taken id": func(tx store.Tx) error { return tx.InsertIngestToken(newIngestToken(tok.ID, "acct_1", d.ID)) },
	} {
		if err := s.Update(ctx, fn); !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: %v, want ErrConflict", name, err)
		}
	}
	for name, fn := range map[string]func(store.Tx) error{
		"InsertChange on another account's domain":      func(tx store.Tx) error { return tx.InsertChange(newChange("chg_x", "acct_2", d.ID, t0)) },
		"InsertIngestToken on another account's domain": func(tx store.Tx) error { return tx.InsertIngestToken(newIngestToken("itk_x", "acct_2", d.ID)) },
	} {
		if err := s.Update(ctx, fn); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
	}
	back := newChange("chg_back", "acct_1", d.ID, t0)
	backTok := newIngestToken("itk_back", "acct_1", d.ID)
	if err := s.Update(ctx, func(tx store.Tx) error {
		return errors.Join(tx.InsertChange(back), tx.InsertIngestToken(backTok), errBoom)
	}); !errors.Is(err, errBoom) {
		t.Fatalf("Update that fails after its inserts: %v; want its error", err)
	}
	if _, err := s.Change(ctx, "acct_1", d.ID, back.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a change inserted by an Update that rolled back: %v; want ErrNotFound", err)
	}
	if _, err := s.IngestTokenByHash(ctx, backTok.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a token inserted by an Update that rolled back: %v; want ErrNotFound", err)
	}
}
