package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// Update commits all of fn or none of it: a function that fails, having
// written, or whose write the store refuses, leaves nothing behind, also
// among concurrent callers, each of which keeps or loses only its own.
func testUpdateIsAllOrNothing(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	err := s.Update(ctx, func(tx store.Tx) error {
		if err := tx.InsertContentRequest(contentRequest("cr_1", "acct_1", "", t0)); err != nil {
			return err
		}
		if err := tx.AddToBudgetMonth("acct_1", "2025-06", 0, 5); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update returned %v, want the function's own error", err)
	}
	err = s.Update(ctx, func(tx store.Tx) error {
		if err := tx.InsertContentRequest(contentRequest("cr_2", "acct_1", "", t0)); err != nil {
			return err
		}
		return tx.InsertContentRequest(contentRequest("cr_2", "acct_1", "", t0)) // refused: the id is taken
	})
	if err == nil {
		t.Fatal("Update of a function whose second write the store refused succeeded")
	}
	for _, id := range []string{"cr_1", "cr_2"} {
		if _, err := s.ContentRequest(ctx, "acct_1", id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a failed Update left %s behind: %v", id, err)
		}
	}
	if b, active, err := s.Budget(ctx, "acct_1", "2025-06"); err != nil || b != (store.BudgetMonth{}) || active != 0 {
		t.Errorf("a failed Update left the ledger at %+v, %d active (%v)", b, active, err)
	}

	// Concurrent callers: every third fails after writing.
	Together(concurrency, func(i int) {
		err := s.Update(ctx, func(tx store.Tx) error {
			for j := range 2 {
				if err := tx.InsertContentRequest(contentRequest(fmt.Sprintf("cr_%02d_%d", i, j), "acct_1", "", t0)); err != nil {
					return err
				}
			}
			if i%3 == 0 {
				return errBoom
			}
			return tx.AddToBudgetMonth("acct_1", "2025-06", 0, 1)
		})
		if (i%3 == 0) != errors.Is(err, errBoom) || i%3 != 0 && err != nil {
			t.Errorf("caller %d: Update returned %v", i, err)
		}
	})
	kept := 0
	for i := range concurrency {
		for j := range 2 {
			_, err := s.ContentRequest(ctx, "acct_1", fmt.Sprintf("cr_%02d_%d", i, j))
			if i%3 == 0 && !errors.Is(err, store.ErrNotFound) || i%3 != 0 && err != nil {
				t.Errorf("caller %d (failed: %v), its write %d: %v", i, i%3 == 0, j, err)
			}
		}
		if i%3 != 0 {
			kept++
		}
	}
	if b, active, err := s.Budget(ctx, "acct_1", "2025-06"); err != nil || b.Reserved != int64(kept) || active != 2*kept {
		t.Errorf("after %d concurrent callers of which %d succeeded: ledger %+v, %d active (%v); want %d reserved, %d active",
			concurrency, kept, b, active, err, kept, 2*kept)
	}
}

// A read sees every transaction committed before it was called, by any
// handle on the store (the CLI, another instance): a key revoked or a
// tier changed through one is seen by the other's very next read, and a
// budget charged through one by the other's next Budget.
func testReadsSeeEveryCommit(t *testing.T, newStore Constructor) {
	server, reopen := newStore(t)
	cli := reopen(t)
	newAccount(t, cli, "acct_1", store.AccountStandard)
	k := newKey("key_1", "acct_1", "", t0)
	must(t, cli.CreateKey(ctx, k), "CreateKey")
	for range 3 { // read more than once: a read may be remembered
		if p, err := server.PrincipalByKeyHash(ctx, k.KeyHash); err != nil || !p.Key.RevokedAt.IsZero() || p.Account.Tier != "starter" {
			t.Fatalf("PrincipalByKeyHash of a key another handle created: %+v, %v", p, err)
		}
		if b, active, err := server.Budget(ctx, "acct_1", "2025-06"); err != nil || b != (store.BudgetMonth{}) || active != 0 {
			t.Fatalf("Budget of an untouched month: %+v %d, %v", b, active, err)
		}
	}

	revokedAt := t0.Add(time.Minute)
	if _, err := cli.RevokeKey(ctx, "key_1", revokedAt); err != nil {
		t.Fatal(err)
	}
	if p, err := server.PrincipalByKeyHash(ctx, k.KeyHash); err != nil || !p.Key.RevokedAt.Equal(revokedAt) {
		t.Fatalf("PrincipalByKeyHash after another handle revoked the key: RevokedAt %v, %v", p.Key.RevokedAt, err)
	}
	tiers := []string{"professional", "enterprise", "starter"}
	for i := range 100 {
		want := tiers[i%3]
		must(t, cli.SetTier(ctx, "acct_1", want), "SetTier")
		for range 2 {
			if p, err := server.PrincipalByKeyHash(ctx, k.KeyHash); err != nil || p.Account.Tier != want {
				t.Fatalf("change %d: PrincipalByKeyHash reads tier %q after another handle set %q (%v)", i, p.Account.Tier, want, err)
			}
		}
		if i%10 == 0 {
			market := []string{"de-DE", "en-US"}[i/10%2]
			must(t, cli.SetMarket(ctx, "acct_1", market), "SetMarket")
			if p, err := server.PrincipalByKeyHash(ctx, k.KeyHash); err != nil || p.Account.Market != market {
				t.Fatalf("change %d: PrincipalByKeyHash reads market %q after another handle set %q (%v)", i, p.Account.Market, market, err)
			}
		}
		// A write that changes nothing a read returns, between the changes.
		must(t, cli.SaveCounts(ctx, []store.Window{{AccountID: "acct_1", Window: "minute", Start: t0, Count: int64(i + 1)}}, nil), "SaveCounts")
	}

	update(t, cli, "charge", func(tx store.Tx) error { return tx.AddToBudgetMonth("acct_1", "2025-06", 1, 2) })
	update(t, cli, "queue", func(tx store.Tx) error { return tx.InsertContentRequest(contentRequest("cr_1", "acct_1", "", t0)) })
	if b, active, err := server.Budget(ctx, "acct_1", "2025-06"); err != nil || b != (store.BudgetMonth{Spent: 1, Reserved: 2}) || active != 1 {
		t.Fatalf("Budget after another handle's charge and request: %+v, %d active, %v", b, active, err)
	}

	// And the other way round.
	k2 := newKey("key_2", "acct_1", "", t0)
	must(t, server.CreateKey(ctx, k2), "CreateKey")
	if _, err := cli.PrincipalByKeyHash(ctx, k2.KeyHash); err != nil {
		t.Fatalf("PrincipalByKeyHash of a key the other handle created: %v", err)
	}
	if _, err := server.RevokeKey(ctx, "key_2", revokedAt); err != nil {
		t.Fatal(err)
	}
	if p, err := cli.PrincipalByKeyHash(ctx, k2.KeyHash); err != nil || p.Key.RevokedAt.IsZero() {
		t.Fatalf("PrincipalByKeyHash after the other handle revoked the key: %+v, %v", p.Key, err)
	}

	// What the fan-out matches follows the other handle's edits too.
	w := newWebhook("wh_1", "acct_1", "", "example.com", t0)
	update(t, server, "InsertWebhook", func(tx store.Tx) error { return tx.InsertWebhook(w) })
	if ws, err := server.MatchWebhooks(ctx, "acct_1", "", "example.com"); err != nil || len(ws) != 1 {
		t.Fatalf("MatchWebhooks: %d, %v", len(ws), err)
	}
	update(t, cli, "UpdateWebhook", func(tx store.Tx) error {
		w.URL = "https://example.com/v2"
		return tx.UpdateWebhook(w)
	})
	if ws, err := server.MatchWebhooks(ctx, "acct_1", "", "example.com"); err != nil || len(ws) != 1 || ws[0].URL != w.URL {
		t.Fatalf("MatchWebhooks after the other handle's edit: %+v, %v", ws, err)
	}
	update(t, cli, "DeleteWebhook", func(tx store.Tx) error { return tx.DeleteWebhook("acct_1", "wh_1", "deleted", t0) })
	if ws, err := server.MatchWebhooks(ctx, "acct_1", "", "example.com"); err != nil || len(ws) != 0 {
		t.Fatalf("MatchWebhooks after the other handle's delete: %+v, %v", ws, err)
	}
}

// Writers on two handles and readers on both, at once: every write lands.
func testConcurrentHandles(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	newAccount(t, s, "acct_1", store.AccountStandard)
	Together(4, func(i int) {
		db := hs[i%2]
		for j := range 25 {
			err := db.Update(ctx, func(tx store.Tx) error {
				if err := tx.InsertContentRequest(contentRequest(fmt.Sprintf("cr_%d_%d", i, j), "acct_1", "", t0)); err != nil {
					return err
				}
				return tx.AddToBudgetMonth("acct_1", "2025-06", 0, 1)
			})
			if err == nil {
				_, _, err = db.Budget(ctx, "acct_1", "2025-06")
			}
			if err != nil {
				t.Errorf("writer %d, write %d: %v", i, j, err)
				return
			}
		}
	})
	for i, db := range hs {
		if b, active, err := db.Budget(ctx, "acct_1", "2025-06"); err != nil || b.Reserved != 100 || active != 100 {
			t.Errorf("handle %d: Budget = %+v, %d active, %v; want 100 reserved, 100 active", i, b, active, err)
		}
	}
}

// Ping answers nil while the engine answers, and an error when it cannot
// within its context (here one already ended): what /readyz asks.
func testPing(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	if err := reopen(t).Ping(ctx); err != nil {
		t.Errorf("Ping of a second handle: %v", err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Ping(ended); err == nil {
		t.Error("Ping within an ended context answered nil")
	}
}
