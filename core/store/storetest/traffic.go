package storetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/aivis/aivis/core/store"
)

// day0 is the suite's present day: t0's UTC midnight.
var day0 = t0.Truncate(24 * time.Hour)

// dayN is the n-th day after day0 (before it for n < 0).
func dayN(n int) time.Time { return day0.AddDate(0, 0, n) }

// trafficDomain makes the monitored domain id of accountID.
func trafficDomain(t *testing.T, s store.Store, accountID, clientID, id string) store.MonitoredDomain {
	t.Helper()
	d := newDomain(id, accountID, clientID, id+".example", t0)
	update(t, s, "InsertDomain", func(tx store.Tx) error { return tx.InsertDomain(d) })
	return d
}

func newIngestToken(id, accountID, domainID string) store.IngestToken {
	h := sha256.Sum256([]byte("secret-" + id))
	return store.IngestToken{ID: id, AccountID: accountID, DomainID: domainID, Name: "Token " + id, Source: store.TrafficCloudflare,
		Hash: h[:], Prefix: "ait_" + id[:min(4, len(id))], CreatedAt: t0}
}

// newBatch is batch id of a domain, its hash made of what.
func newBatch(id, accountID, domainID, tokenID, what string, at time.Time) store.TrafficBatch {
	h := sha256.Sum256([]byte(what))
	return store.TrafficBatch{ID: id, AccountID: accountID, DomainID: domainID, TokenID: tokenID, Source: store.TrafficCloudflare,
		Hash: h[:], Lines: 100, Malformed: 1, Samples: []store.MalformedLine{{Line: 7, Reason: "no status", Excerpt: "GET / HTTP/1.1"}},
		ReceivedAt: at}
}

func hit(day time.Time, page, agent, verification string, n int64) store.CrawlerHits {
	return store.CrawlerHits{Day: day, Page: page, Agent: agent, Verification: verification, Hits: n,
		Status: [5]int64{n - 1, 1, 0, 0, 0}, Bytes: 1000 * n}
}

func visit(day time.Time, page, assistant string, n int64) store.ReferralVisits {
	return store.ReferralVisits{Day: day, Page: page, Assistant: assistant, Visits: n}
}

// hitsOf reads a domain's hits of every day.
func hitsOf(t *testing.T, s store.Store, accountID, domainID string) []store.CrawlerHits {
	t.Helper()
	hs, err := s.ListCrawlerHits(ctx, store.TrafficFilter{AccountID: accountID, DomainID: domainID})
	must(t, err, "ListCrawlerHits")
	return hs
}

func visitsOf(t *testing.T, s store.Store, accountID, domainID string) []store.ReferralVisits {
	t.Helper()
	rs, err := s.ListReferralVisits(ctx, store.TrafficFilter{AccountID: accountID, DomainID: domainID})
	must(t, err, "ListReferralVisits")
	return rs
}

// owned is hs as the store gives them back: of the domain, in key order.
func ownedHits(accountID, domainID string, hs ...store.CrawlerHits) []store.CrawlerHits {
	out := slices.Clone(hs)
	for i := range out {
		out[i].AccountID, out[i].DomainID, out[i].Day = accountID, domainID, out[i].Day.UTC()
	}
	return out
}

func ownedVisits(accountID, domainID string, rs ...store.ReferralVisits) []store.ReferralVisits {
	out := slices.Clone(rs)
	for i := range out {
		out[i].AccountID, out[i].DomainID, out[i].Day = accountID, domainID, out[i].Day.UTC()
	}
	return out
}

// A token keeps every field, its client the domain's, and is found by its
// hash; a taken id or hash is ErrConflict, another account's domain
// ErrNotFound; tokens list newest first. A batch keeps every field, its
// aggregates read back exactly (days in UTC, in key order), and moves its
// token's last use, never back.
func testTrafficRoundTrip(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "cli_1", "dom_c")
	tok := newIngestToken("itk_1", "acct_1", d.ID)
	tok.Source, tok.SigningSecret, tok.FastlyServiceID = store.TrafficVercel, "sealed:v1:abc", "svc_1"
	tok.ClientID = "ignored"
	must(t, s.CreateIngestToken(ctx, tok), "CreateIngestToken")
	tok.ClientID = "cli_1"
	got, err := s.IngestTokenByHash(ctx, tok.Hash)
	must(t, err, "IngestTokenByHash")
	if !reflect.DeepEqual(got, tok) {
		t.Errorf("IngestTokenByHash:\n got %+v\nwant %+v", got, tok)
	}
	if _, err := s.IngestTokenByHash(ctx, []byte("none")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("IngestTokenByHash of no token: %v, want ErrNotFound", err)
	}
	taken := newIngestToken("itk_2", "acct_1", d.ID)
	taken.Hash = tok.Hash
	if err := s.CreateIngestToken(ctx, taken); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateIngestToken with a taken hash: %v, want ErrConflict", err)
	}
	if err := s.CreateIngestToken(ctx, newIngestToken("itk_1", "acct_1", d.ID)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateIngestToken with a taken id: %v, want ErrConflict", err)
	}
	if err := s.CreateIngestToken(ctx, newIngestToken("itk_3", "acct_2", d.ID)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CreateIngestToken on another account's domain: %v, want ErrNotFound", err)
	}
	second := newIngestToken("itk_4", "acct_1", d.ID)
	second.CreatedAt = t0.Add(time.Second)
	must(t, s.CreateIngestToken(ctx, second), "CreateIngestToken")
	ts, err := s.ListIngestTokens(ctx, "acct_1", d.ID)
	must(t, err, "ListIngestTokens")
	if ids := idsOf(ts, func(t store.IngestToken) string { return t.ID }); !slices.Equal(ids, []string{"itk_4", "itk_1"}) {
		t.Errorf("ListIngestTokens: %v, want newest first [itk_4 itk_1]", ids)
	}

	b := newBatch("tb_1", "acct_1", d.ID, tok.ID, "first", t0.Add(time.Minute))
	hits := []store.CrawlerHits{hit(dayN(-1).In(elsewhere), "/b", "GPTBot", "verified", 3), hit(dayN(-1), "/a", "GPTBot", "spoofed", 2),
		hit(dayN(-2), "/a", "ClaudeBot", "unverified", 1)}
	hits[0].Status = [5]int64{1, 0, 1, 0, 1}
	refs := []store.ReferralVisits{visit(dayN(-1), "/a", "perplexity", 4), visit(dayN(-1), "/a", "chatgpt", 5)}
	dup, err := s.AddTrafficBatch(ctx, b, hits, refs)
	if err != nil || dup {
		t.Fatalf("AddTrafficBatch: %v, %v; want added", dup, err)
	}
	if got, want := hitsOf(t, s, "acct_1", d.ID), ownedHits("acct_1", d.ID, hits[2], hits[1], hits[0]); !reflect.DeepEqual(got, want) {
		t.Errorf("ListCrawlerHits:\n got %+v\nwant %+v", got, want)
	}
	if got, want := visitsOf(t, s, "acct_1", d.ID), ownedVisits("acct_1", d.ID, refs[1], refs[0]); !reflect.DeepEqual(got, want) {
		t.Errorf("ListReferralVisits:\n got %+v\nwant %+v", got, want)
	}
	bs, err := s.ListTrafficBatches(ctx, "acct_1", d.ID, 0)
	must(t, err, "ListTrafficBatches")
	if len(bs) != 1 || !reflect.DeepEqual(bs[0], b) {
		t.Errorf("ListTrafficBatches: %+v, want [%+v]", bs, b)
	}
	used := func(want time.Time) {
		t.Helper()
		got, err := s.IngestTokenByHash(ctx, tok.Hash)
		must(t, err, "IngestTokenByHash")
		if got.LastUsedAt == nil || !got.LastUsedAt.Equal(want) {
			t.Errorf("the token's LastUsedAt: %v, want %v", got.LastUsedAt, want)
		}
	}
	used(b.ReceivedAt)
	// An earlier batch (delivered late) does not move it back; a batch
	// of a file (no token) and one with nothing in it are kept too.
	early := newBatch("tb_2", "acct_1", d.ID, tok.ID, "early", t0)
	early.Samples = nil
	file := newBatch("tb_3", "acct_1", d.ID, "", "file", t0.Add(2*time.Minute))
	for _, x := range []store.TrafficBatch{early, file} {
		if dup, err := s.AddTrafficBatch(ctx, x, nil, nil); err != nil || dup {
			t.Fatalf("AddTrafficBatch(%s): %v, %v; want added", x.ID, dup, err)
		}
	}
	used(b.ReceivedAt)
	// A batch refused (an aggregate's text, after many kept ones) keeps
	// nothing: the same batch, corrected, is no duplicate.
	refused := newBatch("tb_4", "acct_1", d.ID, tok.ID, "refused", t0.Add(time.Hour))
	many := manyHits(600)
	if _, err := s.AddTrafficBatch(ctx, refused, append(many, hit(day0, "/\x00", "GPTBot", "verified", 1)), nil); !store.IsInvalidText(err) {
		t.Errorf("AddTrafficBatch with a NUL in a page: %v, want a refusal of its text", err)
	}
	if dup, err := s.AddTrafficBatch(ctx, refused, many, nil); err != nil || dup {
		t.Errorf("AddTrafficBatch of a refused batch corrected: %v, %v; want added", dup, err)
	}
	if got := hitsOf(t, s, "acct_1", d.ID); len(got) != 3+len(many) {
		t.Errorf("hits after a refused batch and its correction: %d, want %d", len(got), 3+len(many))
	}
	used(refused.ReceivedAt)
	bs, err = s.ListTrafficBatches(ctx, "acct_1", d.ID, 2)
	must(t, err, "ListTrafficBatches")
	if ids := idsOf(bs, func(b store.TrafficBatch) string { return b.ID }); !slices.Equal(ids, []string{"tb_4", "tb_3"}) {
		t.Errorf("ListTrafficBatches limit 2: %v, want [tb_4 tb_3]", ids)
	}
	bs, err = s.ListTrafficBatches(ctx, "acct_1", d.ID, 0)
	must(t, err, "ListTrafficBatches")
	if len(bs) != 4 || bs[3].ID != "tb_2" || len(bs[3].Samples) != 0 || bs[1].TokenID != "" {
		t.Errorf("ListTrafficBatches: %+v; want tb_2 last with no samples, tb_3 second with no token", bs)
	}
}

// manyHits are n hits of distinct pages of day0.
func manyHits(n int) []store.CrawlerHits {
	var hs []store.CrawlerHits
	for i := range n {
		hs = append(hs, hit(day0, fmt.Sprintf("/m/%04d", i), "GPTBot", "verified", 1))
	}
	return hs
}

// A batch whose hash the domain has adds nothing and says so; another
// domain may have the same hash.
func testTrafficBatchOnce(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	other := trafficDomain(t, s, "acct_1", "", "dom_b")
	hits := []store.CrawlerHits{hit(day0, "/", "GPTBot", "verified", 2)}
	refs := []store.ReferralVisits{visit(day0, "/", "chatgpt", 1)}
	if dup, err := s.AddTrafficBatch(ctx, newBatch("tb_1", "acct_1", d.ID, "", "same", t0), hits, refs); err != nil || dup {
		t.Fatalf("AddTrafficBatch: %v, %v; want added", dup, err)
	}
	if dup, err := s.AddTrafficBatch(ctx, newBatch("tb_2", "acct_1", d.ID, "", "same", t0), hits, refs); err != nil || !dup {
		t.Errorf("AddTrafficBatch of the same hash again: %v, %v; want a duplicate", dup, err)
	}
	if dup, err := s.AddTrafficBatch(ctx, newBatch("tb_3", "acct_1", other.ID, "", "same", t0), hits, refs); err != nil || dup {
		t.Errorf("AddTrafficBatch of the same hash to another domain: %v, %v; want added", dup, err)
	}
	if got := hitsOf(t, s, "acct_1", d.ID); len(got) != 1 || got[0].Hits != 2 {
		t.Errorf("hits after a duplicate: %+v, want 2 once", got)
	}
	if got := visitsOf(t, s, "acct_1", d.ID); len(got) != 1 || got[0].Visits != 1 {
		t.Errorf("visits after a duplicate: %+v, want 1 once", got)
	}
	bs, err := s.ListTrafficBatches(ctx, "acct_1", d.ID, 0)
	must(t, err, "ListTrafficBatches")
	if len(bs) != 1 || bs[0].ID != "tb_1" {
		t.Errorf("batches after a duplicate: %+v, want tb_1 alone", bs)
	}
}

// Callers on two handles add the same batch at once: exactly one adds it,
// and its aggregates count once.
func testTrafficBatchOnceUnderConcurrency(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	hits := []store.CrawlerHits{hit(day0, "/", "GPTBot", "verified", 2), hit(day0, "/x", "ClaudeBot", "verified", 3)}
	refs := []store.ReferralVisits{visit(day0, "/", "chatgpt", 1)}
	var mu sync.Mutex
	var added []int
	Together(concurrency, func(i int) {
		dup, err := hs[i%2].AddTrafficBatch(ctx, newBatch(fmt.Sprintf("tb_%d", i), "acct_1", d.ID, "", "same", t0), hits, refs)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			t.Errorf("AddTrafficBatch %d: %v", i, err)
		case !dup:
			added = append(added, i)
		}
	})
	if len(added) != 1 {
		t.Errorf("%d callers added the same batch: %v; want exactly one", len(added), added)
	}
	if got := hitsOf(t, s, "acct_1", d.ID); len(got) != 2 || got[0].Hits != 2 || got[1].Hits != 3 {
		t.Errorf("hits: %+v, want 2 and 3, once", got)
	}
	if got := visitsOf(t, s, "acct_1", d.ID); len(got) != 1 || got[0].Visits != 1 {
		t.Errorf("visits: %+v, want 1, once", got)
	}
}

// Each count adds to its key's, across batches and within one; batches
// that share keys, added at once on two handles, all count.
func testTrafficAggregatesAddUp(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	a := hit(day0, "/", "GPTBot", "verified", 2)
	a.Status = [5]int64{1, 2, 3, 4, 5}
	b := hit(day0, "/", "GPTBot", "verified", 5)
	b.Status = [5]int64{10, 20, 30, 40, 50}
	if _, err := s.AddTrafficBatch(ctx, newBatch("tb_1", "acct_1", d.ID, "", "1", t0), []store.CrawlerHits{a, b},
		[]store.ReferralVisits{visit(day0, "/", "chatgpt", 1), visit(day0.In(elsewhere), "/", "chatgpt", 2)}); err != nil {
		t.Fatalf("AddTrafficBatch: %v", err)
	}
	if _, err := s.AddTrafficBatch(ctx, newBatch("tb_2", "acct_1", d.ID, "", "2", t0), []store.CrawlerHits{a},
		[]store.ReferralVisits{visit(day0, "/", "chatgpt", 4)}); err != nil {
		t.Fatalf("AddTrafficBatch: %v", err)
	}
	want := store.CrawlerHits{AccountID: "acct_1", DomainID: d.ID, Day: day0, Page: "/", Agent: "GPTBot", Verification: "verified",
		Hits: 9, Status: [5]int64{12, 24, 36, 48, 60}, Bytes: 9000}
	if got := hitsOf(t, s, "acct_1", d.ID); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("hits: %+v, want [%+v]", got, want)
	}
	if got := visitsOf(t, s, "acct_1", d.ID); len(got) != 1 || got[0].Visits != 7 {
		t.Errorf("visits: %+v, want 7", got)
	}

	// Keys shared in other orders: two batches never wait for each other
	// in a circle.
	var keys []store.CrawlerHits
	for i := range 50 {
		keys = append(keys, hit(dayN(-i%3), fmt.Sprintf("/p%d", i), "GPTBot", "verified", 1))
	}
	Together(concurrency, func(i int) {
		mine := slices.Clone(keys)
		if i%2 == 1 {
			slices.Reverse(mine)
		}
		_, err := hs[i%2].AddTrafficBatch(ctx, newBatch(fmt.Sprintf("tb_c%d", i), "acct_1", d.ID, "", fmt.Sprint("c", i), t0), mine, nil)
		if err != nil {
			t.Errorf("AddTrafficBatch %d: %v", i, err)
		}
	})
	for _, h := range hitsOf(t, s, "acct_1", d.ID) {
		if h.Page != "/" && h.Hits != concurrency {
			t.Errorf("hits of %s after %d batches at once: %d", h.Page, concurrency, h.Hits)
		}
	}
}

// Another account's domain takes no token, batch or revocation
// (ErrNotFound) and shows none; a domain deleted takes its tokens,
// batches and aggregates with it.
func testTrafficOwners(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	tok := newIngestToken("itk_1", "acct_1", d.ID)
	must(t, s.CreateIngestToken(ctx, tok), "CreateIngestToken")
	hits := []store.CrawlerHits{hit(day0, "/", "GPTBot", "verified", 2)}
	refs := []store.ReferralVisits{visit(day0, "/", "chatgpt", 1)}
	if _, err := s.AddTrafficBatch(ctx, newBatch("tb_1", "acct_1", d.ID, tok.ID, "1", t0), hits, refs); err != nil {
		t.Fatalf("AddTrafficBatch: %v", err)
	}
	if _, err := s.AddTrafficBatch(ctx, newBatch("tb_2", "acct_2", d.ID, "", "2", t0), hits, refs); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AddTrafficBatch to another account's domain: %v, want ErrNotFound", err)
	}
	if _, err := s.AddTrafficBatch(ctx, newBatch("tb_3", "acct_1", "dom_none", "", "3", t0), hits, refs); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AddTrafficBatch to no domain: %v, want ErrNotFound", err)
	}
	if err := s.RevokeIngestToken(ctx, "acct_2", d.ID, tok.ID, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeIngestToken of another account's token: %v, want ErrNotFound", err)
	}
	if err := s.RevokeIngestToken(ctx, "acct_1", "dom_other", tok.ID, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeIngestToken under another domain: %v, want ErrNotFound", err)
	}
	if ts, err := s.ListIngestTokens(ctx, "acct_2", d.ID); err != nil || len(ts) != 0 {
		t.Errorf("ListIngestTokens of another account: %+v, %v; want none", ts, err)
	}
	if bs, err := s.ListTrafficBatches(ctx, "acct_2", d.ID, 0); err != nil || len(bs) != 0 {
		t.Errorf("ListTrafficBatches of another account: %+v, %v; want none", bs, err)
	}
	if got := hitsOf(t, s, "acct_2", d.ID); len(got) != 0 {
		t.Errorf("ListCrawlerHits of another account: %+v, want none", got)
	}
	if got := visitsOf(t, s, "acct_2", d.ID); len(got) != 0 {
		t.Errorf("ListReferralVisits of another account: %+v, want none", got)
	}

	update(t, s, "DeleteDomain", func(tx store.Tx) error { return tx.DeleteDomain("acct_1", d.ID) })
	if _, err := s.IngestTokenByHash(ctx, tok.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the token of a deleted domain: %v, want ErrNotFound", err)
	}
	// The same domain made again starts with nothing.
	trafficDomain(t, s, "acct_1", "", "dom_a")
	if got := hitsOf(t, s, "acct_1", d.ID); len(got) != 0 {
		t.Errorf("hits of a deleted domain made again: %+v, want none", got)
	}
	if got := visitsOf(t, s, "acct_1", d.ID); len(got) != 0 {
		t.Errorf("visits of a deleted domain made again: %+v, want none", got)
	}
	if bs, err := s.ListTrafficBatches(ctx, "acct_1", d.ID, 0); err != nil || len(bs) != 0 {
		t.Errorf("batches of a deleted domain made again: %+v, %v; want none", bs, err)
	}
	if dup, err := s.AddTrafficBatch(ctx, newBatch("tb_4", "acct_1", d.ID, "", "1", t0), hits, refs); err != nil || dup {
		t.Errorf("a deleted domain's batch again on the domain made again: %v, %v; want added", dup, err)
	}
}

// A revoked token is still found (its caller refuses it); revocation is
// never postponed.
func testTrafficRevoke(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	tok := newIngestToken("itk_1", "acct_1", d.ID)
	must(t, s.CreateIngestToken(ctx, tok), "CreateIngestToken")
	revoked := func(want time.Time) {
		t.Helper()
		got, err := s.IngestTokenByHash(ctx, tok.Hash)
		must(t, err, "IngestTokenByHash of a revoked token")
		if got.RevokedAt == nil || !got.RevokedAt.Equal(want) || got.RevokedAt.Location() != time.UTC {
			t.Errorf("RevokedAt %v, want %v in UTC", got.RevokedAt, want)
		}
	}
	at := t0.Add(time.Hour)
	must(t, s.RevokeIngestToken(ctx, "acct_1", d.ID, tok.ID, at.In(elsewhere)), "RevokeIngestToken")
	revoked(at)
	must(t, s.RevokeIngestToken(ctx, "acct_1", d.ID, tok.ID, at.Add(time.Hour)), "RevokeIngestToken later")
	revoked(at)
	must(t, s.RevokeIngestToken(ctx, "acct_1", d.ID, tok.ID, t0), "RevokeIngestToken earlier")
	revoked(t0)
	if err := s.RevokeIngestToken(ctx, "acct_1", d.ID, "itk_none", t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeIngestToken of no token: %v, want ErrNotFound", err)
	}
}

// A filter selects the days whose midnight is in [From, To); a day that
// is not a UTC midnight is refused with its whole batch.
func testTrafficDays(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	var hits []store.CrawlerHits
	var refs []store.ReferralVisits
	for i := -4; i <= 0; i++ {
		hits = append(hits, hit(dayN(i), "/", "GPTBot", "verified", int64(5+i)))
		refs = append(refs, visit(dayN(i), "/", "chatgpt", int64(5+i)))
	}
	if _, err := s.AddTrafficBatch(ctx, newBatch("tb_1", "acct_1", d.ID, "", "1", t0), hits, refs); err != nil {
		t.Fatalf("AddTrafficBatch: %v", err)
	}
	for _, c := range []struct {
		name     string
		from, to time.Time
		want     []int // days after day0
	}{
		{"everything", time.Time{}, time.Time{}, []int{-4, -3, -2, -1, 0}},
		{"[-3, -1)", dayN(-3), dayN(-1), []int{-3, -2}},
		{"from within a day", dayN(-3).Add(time.Nanosecond), dayN(-1).Add(time.Nanosecond), []int{-2, -1}},
		{"from, no end", dayN(-1), time.Time{}, []int{-1, 0}},
		{"from far before to far after", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), []int{-4, -3, -2, -1, 0}},
		{"in another zone", dayN(-2).In(elsewhere), dayN(0).In(elsewhere), []int{-2, -1}},
		{"empty", dayN(-1), dayN(-1), nil},
	} {
		f := store.TrafficFilter{AccountID: "acct_1", DomainID: d.ID, From: c.from, To: c.to}
		hs, err := s.ListCrawlerHits(ctx, f)
		must(t, err, "ListCrawlerHits %s", c.name)
		rs, err := s.ListReferralVisits(ctx, f)
		must(t, err, "ListReferralVisits %s", c.name)
		var want []time.Time
		for _, n := range c.want {
			want = append(want, dayN(n))
		}
		if got := idsOf(hs, func(h store.CrawlerHits) time.Time { return h.Day }); !slices.Equal(got, want) {
			t.Errorf("ListCrawlerHits %s: days %v, want %v", c.name, got, want)
		}
		if got := idsOf(rs, func(r store.ReferralVisits) time.Time { return r.Day }); !slices.Equal(got, want) {
			t.Errorf("ListReferralVisits %s: days %v, want %v", c.name, got, want)
		}
	}
	for _, bad := range []time.Time{day0.Add(time.Hour), day0.Add(time.Nanosecond), {}, time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)} {
		h := hit(bad, "/bad", "GPTBot", "verified", 1)
		if _, err := s.AddTrafficBatch(ctx, newBatch("tb_bad", "acct_1", d.ID, "", "bad", t0), []store.CrawlerHits{hits[0], h}, nil); err == nil {
			t.Errorf("AddTrafficBatch of a hit on %v: kept, want it refused", bad)
		}
		r := visit(bad, "/bad", "chatgpt", 1)
		if _, err := s.AddTrafficBatch(ctx, newBatch("tb_bad", "acct_1", d.ID, "", "bad", t0), nil, []store.ReferralVisits{refs[0], r}); err == nil {
			t.Errorf("AddTrafficBatch of a visit on %v: kept, want it refused", bad)
		}
	}
	if bs, err := s.ListTrafficBatches(ctx, "acct_1", d.ID, 0); err != nil || len(bs) != 1 {
		t.Errorf("batches after refusals: %+v, %v; want the first alone", bs, err)
	}
	if got := hitsOf(t, s, "acct_1", d.ID); len(got) != 5 || got[0].Hits != 1 {
		t.Errorf("hits after refusals: %+v, want the first batch's", got)
	}
}

// DeleteTrafficBefore deletes the aggregates of the days that ended by its
// time and the batches received before it, of every domain, and counts
// them.
func testDeleteTrafficBefore(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	var doms []string
	for _, owner := range []string{"acct_1", "acct_2"} {
		d := trafficDomain(t, s, owner, "", "dom_"+owner)
		doms = append(doms, d.ID)
		for i := -3; i <= 0; i++ {
			b := newBatch(fmt.Sprintf("tb_%s_%d", owner, -i), owner, d.ID, "", fmt.Sprint(i), dayN(i).Add(time.Hour))
			hits := []store.CrawlerHits{hit(dayN(i), "/", "GPTBot", "verified", 1), hit(dayN(i), "/x", "GPTBot", "verified", 1)}
			if _, err := s.AddTrafficBatch(ctx, b, hits, []store.ReferralVisits{visit(dayN(i), "/", "chatgpt", 1)}); err != nil {
				t.Fatalf("AddTrafficBatch: %v", err)
			}
		}
	}
	// Days -3 and -2 go, with the batches received on them; the batch
	// received on day -1 at 01:00 stays.
	n, err := s.DeleteTrafficBefore(ctx, dayN(-1).Add(time.Hour))
	must(t, err, "DeleteTrafficBefore")
	// Per domain: 2 days × (2 hits + 1 visit) + 2 batches (those of days
	// -3 and -2; day -1's, at 01:00, is not before 01:00). Day -1 is not
	// wholly before the cut: it stays.
	if want := int64(2 * (2*3 + 2)); n != want {
		t.Errorf("DeleteTrafficBefore deleted %d rows, want %d", n, want)
	}
	for i, owner := range []string{"acct_1", "acct_2"} {
		hs, rs := hitsOf(t, s, owner, doms[i]), visitsOf(t, s, owner, doms[i])
		if len(hs) != 4 || hs[0].Day != dayN(-1) || len(rs) != 2 || rs[0].Day != dayN(-1) {
			t.Errorf("%s after DeleteTrafficBefore: hits %+v, visits %+v; want days -1 and 0", owner, hs, rs)
		}
		bs, err := s.ListTrafficBatches(ctx, owner, doms[i], 0)
		must(t, err, "ListTrafficBatches")
		if len(bs) != 2 {
			t.Errorf("%s's batches after DeleteTrafficBefore: %d, want 2", owner, len(bs))
		}
	}
	if n, err := s.DeleteTrafficBefore(ctx, dayN(-1)); err != nil || n != 0 {
		t.Errorf("DeleteTrafficBefore again: %d, %v; want 0", n, err)
	}
	if n, err := s.DeleteTrafficBefore(ctx, time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil || n != 2*(2*2+2+2) {
		t.Errorf("DeleteTrafficBefore 2400: %d, %v; want every row (%d)", n, err, 2*(2*2+2+2))
	}
}

// The range lists are none until saved; a save replaces them all at once,
// readers on another handle seeing one save's lists or another's, never
// some of each.
func testCrawlerRanges(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	lists, at, err := s.CrawlerRanges(ctx)
	if err != nil || lists != nil || !at.IsZero() {
		t.Fatalf("CrawlerRanges of a new store: %v, %v, %v; want none", lists, at, err)
	}
	a := map[string][]byte{"gptbot": []byte(`{"prefixes":[{"ipv4Prefix":"192.0.2.0/24"}]}`), "perplexitybot": []byte("198.51.100.0/24\n"),
		"empty": {}}
	b := map[string][]byte{"claudebot": []byte("203.0.113.0/24")}
	must(t, s.SaveCrawlerRanges(ctx, a, t0.In(elsewhere)), "SaveCrawlerRanges")
	lists, at, err = hs[1].CrawlerRanges(ctx)
	must(t, err, "CrawlerRanges")
	if !maps.EqualFunc(lists, a, func(x, y []byte) bool { return string(x) == string(y) }) || !at.Equal(t0) || at.Location() != time.UTC {
		t.Errorf("CrawlerRanges: %q at %v, want %q at %v", lists, at, a, t0)
	}
	sets := []map[string][]byte{a, b}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for i := range 40 {
			if err := s.SaveCrawlerRanges(ctx, sets[i%2], t0.Add(time.Duration(i)*time.Second)); err != nil {
				t.Errorf("SaveCrawlerRanges %d: %v", i, err)
				return
			}
		}
	})
	for reads := 0; ; reads++ {
		select {
		case <-done:
			wg.Wait()
			lists, _, err := hs[1].CrawlerRanges(ctx)
			must(t, err, "CrawlerRanges")
			if !maps.EqualFunc(lists, b, func(x, y []byte) bool { return string(x) == string(y) }) {
				t.Errorf("CrawlerRanges after the last save: %q, want %q", lists, b)
			}
			return
		default:
		}
		lists, _, err := hs[1].CrawlerRanges(ctx)
		must(t, err, "CrawlerRanges")
		if !slices.ContainsFunc(sets, func(set map[string][]byte) bool {
			return maps.EqualFunc(lists, set, func(x, y []byte) bool { return string(x) == string(y) })
		}) {
			t.Fatalf("CrawlerRanges read %d while saving: %q, neither save's lists", reads, lists)
		}
	}
}

// A read of a domain named with text no engine keeps is refused.
func testTrafficTextRefusedInReads(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	for _, v := range textValues {
		if !v.refused {
			continue
		}
		f := store.TrafficFilter{AccountID: "acct_1", DomainID: v.v}
		if _, err := s.ListCrawlerHits(ctx, f); !store.IsInvalidText(err) {
			t.Errorf("ListCrawlerHits of a domain with %s: %v, not a refusal of its text", v.name, err)
		}
		if _, err := s.ListIngestTokens(ctx, "acct_1", v.v); !store.IsInvalidText(err) {
			t.Errorf("ListIngestTokens of a domain with %s: %v, not a refusal of its text", v.name, err)
		}
	}
}

// trafficTextFields are the string fields of the traffic records, for
// the Text cases: each record n is made on a domain of its own.
func trafficTextFields() []textField {
	var fs []textField
	token := func(name string, big bool, field func(*store.IngestToken) *string) textField {
		return textField{name: name, big: big,
			set: func(t *testing.T, s store.Store, n int, v string) error {
				d := trafficDomain(t, s, "acct_1", "", id("tdom", n))
				k := newIngestToken(id("itk", n), "acct_1", d.ID)
				*field(&k) = v
				return s.CreateIngestToken(ctx, k)
			},
			get: func(s store.Store, n int) (string, error) {
				ts, err := s.ListIngestTokens(ctx, "acct_1", id("tdom", n))
				if err != nil || len(ts) == 0 {
					return "", cmpErr(err, store.ErrNotFound)
				}
				return *field(&ts[0]), nil
			}}
	}
	fs = append(fs, token("IngestToken.Name", true, func(k *store.IngestToken) *string { return &k.Name }),
		token("IngestToken.Prefix", false, func(k *store.IngestToken) *string { return &k.Prefix }),
		token("IngestToken.SigningSecret", false, func(k *store.IngestToken) *string { return &k.SigningSecret }),
		token("IngestToken.FastlyServiceID", false, func(k *store.IngestToken) *string { return &k.FastlyServiceID }))
	batch := func(name string, big bool, set func(v string, b *store.TrafficBatch, h *store.CrawlerHits, r *store.ReferralVisits),
		get func(s store.Store, n int) (string, error)) textField {
		return textField{name: name, big: big,
			set: func(t *testing.T, s store.Store, n int, v string) error {
				d := trafficDomain(t, s, "acct_1", "", id("tdom", n))
				b := newBatch(id("tb", n), "acct_1", d.ID, "", id("tb", n), t0)
				h, r := hit(day0, "/", "GPTBot", "verified", 1), visit(day0, "/", "chatgpt", 1)
				set(v, &b, &h, &r)
				_, err := s.AddTrafficBatch(ctx, b, []store.CrawlerHits{h}, []store.ReferralVisits{r})
				return err
			}, get: get}
	}
	hitField := func(field func(store.CrawlerHits) string) func(s store.Store, n int) (string, error) {
		return func(s store.Store, n int) (string, error) {
			hs, err := s.ListCrawlerHits(ctx, store.TrafficFilter{AccountID: "acct_1", DomainID: id("tdom", n)})
			if err != nil || len(hs) == 0 {
				return "", cmpErr(err, store.ErrNotFound)
			}
			return field(hs[0]), nil
		}
	}
	visitField := func(field func(store.ReferralVisits) string) func(s store.Store, n int) (string, error) {
		return func(s store.Store, n int) (string, error) {
			rs, err := s.ListReferralVisits(ctx, store.TrafficFilter{AccountID: "acct_1", DomainID: id("tdom", n)})
			if err != nil || len(rs) == 0 {
				return "", cmpErr(err, store.ErrNotFound)
			}
			return field(rs[0]), nil
		}
	}
	sample := func(field func(store.MalformedLine) string) func(s store.Store, n int) (string, error) {
		return func(s store.Store, n int) (string, error) {
			bs, err := s.ListTrafficBatches(ctx, "acct_1", id("tdom", n), 0)
			if err != nil || len(bs) == 0 {
				return "", cmpErr(err, store.ErrNotFound)
			}
			return field(bs[0].Samples[0]), nil
		}
	}
	fs = append(fs,
		batch("CrawlerHits.Page", false, func(v string, _ *store.TrafficBatch, h *store.CrawlerHits, _ *store.ReferralVisits) { h.Page = v },
			hitField(func(h store.CrawlerHits) string { return h.Page })),
		batch("CrawlerHits.Agent", false, func(v string, _ *store.TrafficBatch, h *store.CrawlerHits, _ *store.ReferralVisits) { h.Agent = v },
			hitField(func(h store.CrawlerHits) string { return h.Agent })),
		batch("ReferralVisits.Page", false, func(v string, _ *store.TrafficBatch, _ *store.CrawlerHits, r *store.ReferralVisits) { r.Page = v },
			visitField(func(r store.ReferralVisits) string { return r.Page })),
		batch("ReferralVisits.Assistant", false, func(v string, _ *store.TrafficBatch, _ *store.CrawlerHits, r *store.ReferralVisits) {
			r.Assistant = v
		}, visitField(func(r store.ReferralVisits) string { return r.Assistant })),
		batch("MalformedLine.Reason", true, func(v string, b *store.TrafficBatch, _ *store.CrawlerHits, _ *store.ReferralVisits) {
			b.Samples = []store.MalformedLine{{Line: 1, Reason: v}}
		}, sample(func(m store.MalformedLine) string { return m.Reason })),
		batch("MalformedLine.Excerpt", true, func(v string, b *store.TrafficBatch, _ *store.CrawlerHits, _ *store.ReferralVisits) {
			b.Samples = []store.MalformedLine{{Line: 1, Excerpt: v}}
		}, sample(func(m store.MalformedLine) string { return m.Excerpt })))
	fs = append(fs, textField{name: "the name of a crawler range list", update: true, before: "",
		set: func(_ *testing.T, s store.Store, n int, v string) error {
			return s.SaveCrawlerRanges(ctx, map[string][]byte{"first": []byte("x"), v: []byte("y")}, t0)
		},
		get: func(s store.Store, n int) (string, error) {
			lists, _, err := s.CrawlerRanges(ctx)
			for name := range lists {
				if name != "first" {
					return name, err
				}
			}
			return "", err
		}})
	return fs
}

// A batch's Then runs in the transaction that keeps it: what it writes
// (an event published and logged) commits with the batch, its error
// keeps neither the batch nor its aggregates (the same batch is then no
// duplicate), and a duplicate does not run it.
func testTrafficBatchThen(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	d := trafficDomain(t, s, "acct_1", "", "dom_a")
	hits := []store.CrawlerHits{hit(day0, "/pricing", "GPTBot", "verified", 2)}
	then := func(id string, ran *int, fail error) func(store.Tx) error {
		return func(tx store.Tx) error {
			*ran++
			m := message.NewMessage(id, []byte(`{"id":"`+id+`"}`))
			m.Metadata.Set("account_id", "acct_1")
			if err := tx.Publish("events", m); err != nil {
				return err
			}
			if err := tx.LogEvents(store.LoggedEvent{ID: id, AccountID: "acct_1", Event: "crawler_errors", Domain: d.Domain,
				Payload: []byte(`{}`), CreatedAt: t0}); err != nil {
				return err
			}
			return fail
		}
	}
	logged := func() []string {
		es, _, err := s.RecentEvents(ctx, store.EventFilter{AccountID: "acct_1", Limit: 10})
		must(t, err, "RecentEvents")
		var ids []string
		for _, e := range es {
			ids = append(ids, e.ID)
		}
		return ids
	}

	var failed int
	b := newBatch("tb_1", "acct_1", d.ID, "", "one", t0)
	b.Then = then("evt_failed", &failed, errBoom)
	if _, err := s.AddTrafficBatch(ctx, b, hits, nil); !errors.Is(err, errBoom) || failed != 1 {
		t.Fatalf("AddTrafficBatch whose Then fails: %v after %d runs, want its error after one", err, failed)
	}
	if got := hitsOf(t, s, "acct_1", d.ID); len(got) != 0 {
		t.Errorf("hits after a failed Then: %+v, want none", got)
	}
	if ids := logged(); len(ids) != 0 {
		t.Errorf("events after a failed Then: %v, want none", ids)
	}

	var kept int
	b.ID, b.Then = "tb_2", then("evt_kept", &kept, nil)
	if dup, err := s.AddTrafficBatch(ctx, b, hits, nil); err != nil || dup || kept != 1 {
		t.Fatalf("AddTrafficBatch after a failed Then: %v, %v, Then ran %d times; want added once", dup, err, kept)
	}
	var again int
	b.ID, b.Then = "tb_3", then("evt_again", &again, nil)
	if dup, err := s.AddTrafficBatch(ctx, b, hits, nil); err != nil || !dup || again != 0 {
		t.Errorf("AddTrafficBatch of a duplicate: %v, %v, Then ran %d times; want a duplicate and no run", dup, err, again)
	}
	if ids := logged(); !slices.Equal(ids, []string{"evt_kept"}) {
		t.Errorf("events: %v, want evt_kept alone", ids)
	}
	if got := hitsOf(t, s, "acct_1", d.ID); len(got) != 1 || got[0].Hits != 2 {
		t.Errorf("hits: %+v, want 2 once", got)
	}
	bs, err := s.ListTrafficBatches(ctx, "acct_1", d.ID, 0)
	must(t, err, "ListTrafficBatches")
	if len(bs) != 1 || bs[0].ID != "tb_2" || bs[0].Then != nil {
		t.Errorf("batches: %+v, want tb_2 alone", bs)
	}
}
