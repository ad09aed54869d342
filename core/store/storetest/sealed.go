package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// sealedValues walks every page of SealedValues at limit.
func sealedValues(t *testing.T, s store.Store, limit int) []store.SealedValue {
	t.Helper()
	var all []store.SealedValue
	cursor := ""
	for pages := 1; ; pages++ {
		vs, next, err := s.SealedValues(ctx, cursor, limit)
		must(t, err, "SealedValues(%q, %d)", cursor, limit)
		all = append(all, vs...)
		if next == "" {
			return all
		}
		if next <= cursor || pages > 1000 {
			t.Fatalf("SealedValues: the cursor %q follows %q", next, cursor)
		}
		cursor = next
	}
}

func sealedKeys(vs []store.SealedValue) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.WebhookID + "." + v.Field
	}
	return out
}

// SealedValues lists every set secret of every webhook and connection,
// as stored (sealed: no secret in clear), by webhook id, across pages that
// neither skip nor repeat; a deleted one's, which it no longer keeps, not.
func testSealedValuesListed(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	w1 := newWebhook("wh_1", "acct_1", "", "example.com", t0)
	w1.PrevSecret, w1.PrevSecretEnd = secret2, t0.Add(24*time.Hour)
	insertWebhooks(t, s, w1, newWebhook("wh_2", "acct_1", "cli_1", "example.org", t0), newConnection("wh_3", "acct_2", "", t0),
		newWebhook("wh_4", "acct_2", "", "example.net", t0))
	update(t, s, "DeleteWebhook", func(tx store.Tx) error { return tx.DeleteWebhook("acct_2", "wh_4", "deleted", t0) })
	// An ingest token's signing secret (a Vercel drain's) is one too; a
	// token without one holds none.
	d := trafficDomain(t, s, "acct_1", "", "dom_sealed")
	signed := newIngestToken("itok_1", "acct_1", d.ID)
	signed.Source, signed.SigningSecret = store.TrafficVercel, "sealed:drain-secret"
	must(t, s.CreateIngestToken(ctx, signed), "CreateIngestToken")
	must(t, s.CreateIngestToken(ctx, newIngestToken("itok_2", "acct_1", d.ID)), "CreateIngestToken")
	want := []string{"itok_1.signing_secret", "wh_1.prev_secret", "wh_1.secret", "wh_2.secret", "wh_3.settings"}
	for _, limit := range []int{1, 2, 3, 100} {
		vs := sealedValues(t, s, limit)
		if got := sealedKeys(vs); !slices.Equal(got, want) {
			t.Fatalf("SealedValues at limit %d: %v, want %v", limit, got, want)
		}
		for _, v := range vs {
			if strings.Contains(v.Value, "whsec_") || strings.Contains(v.Value, "xoxb") || v.Value == "" || v.Value == "drain-secret" {
				t.Fatalf("SealedValues gives %s as %q, not as stored sealed", v.Field, v.Value)
			}
		}
	}
	if vs, next, err := s.SealedValues(ctx, "wh_3", 10); err != nil || next != "" || len(vs) != 0 {
		t.Fatalf("SealedValues after the last: %v %q %v", vs, next, err)
	}
}

// ReplaceSealed replaces a value only while it is still what was read: a
// change of the secret made meanwhile wins; the replaced value opens as
// the secret; nothing else of the webhook changes; a field that holds no
// sealed value is refused and the whole batch with it.
func testReplaceSealed(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	owners(t, s)
	w1 := newWebhook("wh_1", "acct_1", "", "example.com", t0)
	w2 := newWebhook("wh_2", "acct_1", "", "example.org", t0)
	w2.Secret = secret2
	c := newConnection("wh_3", "acct_1", "", t0)
	insertWebhooks(t, s, w1, w2, c, newConnection("wh_4", "acct_1", "", t0))
	tok := newIngestToken("itok_1", "acct_1", trafficDomain(t, s, "acct_1", "", "dom_sealed").ID)
	tok.Source, tok.SigningSecret = store.TrafficVercel, "sealed:drain-secret"
	must(t, s.CreateIngestToken(ctx, tok), "CreateIngestToken")
	stored := map[string]store.SealedValue{}
	for _, v := range sealedValues(t, s, 10) {
		stored[v.WebhookID+"."+v.Field] = v
	}
	// wh_1's secret takes wh_2's sealed value (secret2); wh_3's settings
	// wh_4's, the same text sealed apart.
	rs := []store.Resealed{{SealedValue: stored["wh_1.secret"], With: stored["wh_2.secret"].Value},
		{SealedValue: stored["wh_3.settings"], With: stored["wh_4.settings"].Value},
		{SealedValue: stored["itok_1.signing_secret"], With: "sealed:resealed"}}
	bad := append(slices.Clone(rs), store.Resealed{SealedValue: store.SealedValue{WebhookID: "wh_1", Field: "url", Value: w1.URL}, With: "https://evil.example/"})
	if n, err := s.ReplaceSealed(ctx, bad); err == nil {
		t.Fatalf("ReplaceSealed of a field that holds no secret: %d replaced, no error", n)
	}
	got, err := s.Webhook(ctx, "acct_1", "wh_1")
	sameWebhook(t, "wh_1 after a refused batch", got, err, w1)

	// A change of wh_2's secret, on another handle, after the read.
	other := reopen(t)
	changed := w2
	changed.Secret = "whsec_changedmeanwhile"
	update(t, other, "UpdateWebhook", func(tx store.Tx) error { return tx.UpdateWebhook(changed) })
	rs = append(rs, store.Resealed{SealedValue: stored["wh_2.secret"], With: stored["wh_1.secret"].Value})
	n, err := s.ReplaceSealed(ctx, rs)
	if err != nil || n != 3 {
		t.Fatalf("ReplaceSealed = %d, %v; want 3 replaced (wh_2's changed meanwhile)", n, err)
	}
	if toks, err := s.ListIngestTokens(ctx, "acct_1", "dom_sealed"); err != nil || len(toks) != 1 || toks[0].SigningSecret != "sealed:resealed" {
		t.Fatalf("the ingest token after ReplaceSealed: %+v %v", toks, err)
	}
	want1 := w1
	want1.Secret = secret2
	got, err = s.Webhook(ctx, "acct_1", "wh_1")
	sameWebhook(t, "wh_1 after ReplaceSealed", got, err, want1)
	got, err = s.Webhook(ctx, "acct_1", "wh_2")
	sameWebhook(t, "wh_2, changed meanwhile", got, err, changed)
	got, err = s.Webhook(ctx, "acct_1", "wh_3")
	sameWebhook(t, "wh_3 after ReplaceSealed", got, err, c)
	if n, err := s.ReplaceSealed(ctx, rs); err != nil || n != 0 {
		t.Fatalf("ReplaceSealed of values no longer stored = %d, %v; want 0", n, err)
	}
	// What the other handle matches reads the replaced value too.
	ws, err := other.MatchWebhooks(ctx, "acct_1", "", "example.com")
	must(t, err, "MatchWebhooks")
	i := slices.IndexFunc(ws, func(w store.Webhook) bool { return w.ID == "wh_1" })
	if i < 0 || ws[i].Secret != secret2 {
		t.Fatalf("the other handle's match of wh_1 (at %d) has not the replaced secret", i)
	}
}
