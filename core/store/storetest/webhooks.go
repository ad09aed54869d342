package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
)

// Signing secrets as the delivery service makes them.
const (
	secret1 = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	secret2 = "whsec_C2FtcGxlc2VjcmV0MTIzNDU2Nzg5MDEyMzQ1Njc4"
)

func newWebhook(id, accountID, clientID, domain string, created time.Time) store.Webhook {
	return store.Webhook{ID: id, AccountID: accountID, ClientID: clientID, Domain: domain, URL: "https://" + domain + "/hook",
		Events: []string{"ai_visibility_change"}, Enabled: true, Secret: secret1, CreatedAt: created, UpdatedAt: created}
}

func newConnection(id, accountID, clientID string, created time.Time) store.Webhook {
	return store.Webhook{ID: id, AccountID: accountID, ClientID: clientID, Events: []string{"ai_visibility_change", "content_completed"},
		Enabled: true, CreatedAt: created, UpdatedAt: created, Connection: store.Connection{Connector: "slack", Name: "Alerts " + id,
			Settings: json.RawMessage(`{"channel":"#seo","token":"xoxb-secret"}`), PublicSettings: json.RawMessage(`{"channel":"#seo"}`),
			SecretFields: []string{"token"}}}
}

func insertWebhooks(t *testing.T, s store.Store, ws ...store.Webhook) {
	t.Helper()
	update(t, s, "InsertWebhook", func(tx store.Tx) error {
		for _, w := range ws {
			if err := tx.InsertWebhook(w); err != nil {
				return err
			}
		}
		return nil
	})
}

// normalized is w with its times in UTC and its empty lists nil: a store
// may give either for an empty list.
func normalized(w store.Webhook) store.Webhook {
	for _, l := range []*[]string{&w.Events, &w.Domains, &w.SecretFields} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	for _, tm := range []*time.Time{&w.DisabledAt, &w.PrevSecretEnd, &w.FailingSince, &w.LastSuccessAt, &w.CreatedAt, &w.UpdatedAt, &w.DeletedAt} {
		if !tm.IsZero() {
			*tm = tm.UTC()
		}
	}
	return w
}

func sameWebhook(t *testing.T, what string, got store.Webhook, err error, want store.Webhook) {
	t.Helper()
	if err != nil || !reflect.DeepEqual(normalized(got), normalized(want)) {
		t.Errorf("%s:\n got  %+v, %v\n want %+v", what, got, err, want)
	}
}

// A webhook keeps every field, its secrets given back in clear, in and out
// of a transaction; ids are unique (ErrConflict); another account's is
// ErrNotFound; UpdateWebhook changes its settings, state and health, not
// its owner, domain, connector, creation or deletion.
func testWebhooks(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	w := store.Webhook{ID: "wh_1", AccountID: "acct_1", ClientID: "cli_1", Domain: "xn--bcher-kva.example", URL: "https://hooks.example/a?b=c&d=é",
		Events: []string{"ai_visibility_change", "content_completed"}, MinScoreChange: 5, MinCitationChange: 15, MinCrawlerErrors: 250, Enabled: false, DisabledReason: "HTTP 410 Gone",
		DisabledAt: t0.Add(time.Minute), Secret: secret1, PrevSecret: secret2, PrevSecretEnd: t0.Add(24 * time.Hour).In(elsewhere),
		FailingSince: t0.Add(-time.Hour), Failures: 7, LastSuccessAt: t0.Add(-2 * time.Hour), CreatedAt: t0.In(elsewhere), UpdatedAt: t0.Add(time.Second)}
	insertWebhooks(t, s, w)
	got, err := s.Webhook(ctx, "acct_1", "wh_1")
	sameWebhook(t, "Webhook round trip", got, err, w)
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.InsertWebhook(newWebhook("wh_1", "acct_1", "", "a.example", t0)) }); !errors.Is(err, store.ErrConflict) {
		t.Errorf("InsertWebhook of a taken id: %v, want ErrConflict", err)
	}
	if _, err := s.Webhook(ctx, "acct_2", "wh_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Webhook of another account's: %v, want ErrNotFound", err)
	}

	edit := w
	edit.ClientID, edit.Domain, edit.CreatedAt, edit.Connector = "", "other.example", t0.Add(time.Hour), "" // kept
	edit.URL, edit.Events, edit.MinScoreChange, edit.Enabled, edit.DisabledReason, edit.DisabledAt = "https://hooks.example/v2", []string{"content_failed"}, 0, true, "", time.Time{}
	edit.MinCitationChange, edit.MinCrawlerErrors = 0, 1000000
	edit.Secret, edit.PrevSecret, edit.PrevSecretEnd = secret2, secret1, t0.Add(48*time.Hour)
	edit.FailingSince, edit.Failures, edit.LastSuccessAt, edit.UpdatedAt = time.Time{}, 0, t0.Add(time.Hour), t0.Add(time.Hour)
	update(t, s, "UpdateWebhook", func(tx store.Tx) error {
		in, err := tx.Webhook("acct_1", "wh_1")
		sameWebhook(t, "Webhook in a transaction", in, err, w)
		if _, err := tx.Webhook("acct_2", "wh_1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Webhook in a transaction, another account's: %v, want ErrNotFound", err)
		}
		return tx.UpdateWebhook(edit)
	})
	edit.ClientID, edit.Domain, edit.CreatedAt = w.ClientID, w.Domain, w.CreatedAt
	got, err = s.Webhook(ctx, "acct_1", "wh_1")
	sameWebhook(t, "after UpdateWebhook", got, err, edit)
	theirs := edit
	theirs.AccountID = "acct_2"
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.UpdateWebhook(theirs) }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateWebhook of another account's: %v, want ErrNotFound", err)
	}
}

// A connection keeps its connector, name, domains, settings with their
// secrets (in clear), public settings, secret fields and whether the
// destination made it.
func testConnections(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	c := newConnection("con_1", "acct_1", "", t0)
	c.Domains, c.Subscription, c.MinScoreChange, c.MinCitationChange, c.MinCrawlerErrors = []string{"a.example", "b.example"}, true, 3, 25, 7
	bare := newConnection("con_2", "acct_1", "", t0)
	bare.Settings, bare.PublicSettings, bare.SecretFields = json.RawMessage(`{}`), json.RawMessage(`{}`), nil
	insertWebhooks(t, s, c, bare)
	got, err := s.Webhook(ctx, "acct_1", "con_1")
	sameWebhook(t, "connection round trip", got, err, c)
	if !got.IsConnection() {
		t.Error("a connection read back is not a connection")
	}
	got, err = s.Webhook(ctx, "acct_1", "con_2")
	sameWebhook(t, "connection without domains or secrets", got, err, bare)
	c.Settings, c.Domains, c.Name, c.Subscription = json.RawMessage(`{"channel":"#general","token":"xoxb-other"}`), nil, "Renamed", false
	update(t, s, "UpdateWebhook", func(tx store.Tx) error { return tx.UpdateWebhook(c) })
	got, err = s.Webhook(ctx, "acct_1", "con_1")
	sameWebhook(t, "connection after UpdateWebhook", got, err, c)
}

// UpdateWebhookHealth writes only what attempts change (failing since,
// failures, last success): updated_at stays when the settings last
// changed, which an edit checks against.
func testWebhookHealth(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	w := newWebhook("wh_1", "acct_1", "", "example.com", t0)
	insertWebhooks(t, s, w)
	health := w
	health.URL, health.Secret, health.Enabled, health.UpdatedAt = "https://ignored.example/", secret2, false, t0.Add(time.Hour)
	health.FailingSince, health.Failures, health.LastSuccessAt = t0.Add(time.Minute), 3, t0.Add(-time.Minute)
	update(t, s, "UpdateWebhookHealth", func(tx store.Tx) error { return tx.UpdateWebhookHealth(health) })
	want := w
	want.FailingSince, want.Failures, want.LastSuccessAt = health.FailingSince, health.Failures, health.LastSuccessAt
	got, err := s.Webhook(ctx, "acct_1", "wh_1")
	sameWebhook(t, "after UpdateWebhookHealth", got, err, want)
	health.AccountID = "acct_2"
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.UpdateWebhookHealth(health) }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateWebhookHealth of another account's: %v, want ErrNotFound", err)
	}
}

func webhookID(w store.Webhook) string { return w.ID }

// webhookIDs is the ids of ws, sorted.
func webhookIDs(ws []store.Webhook) []string {
	ids := idsOf(ws, webhookID)
	slices.Sort(ids)
	return ids
}

// MatchWebhooks gives the webhooks of exactly one owner for a domain and
// every connection of that owner, enabled or not, deleted ones not, with
// their secrets; CountWebhooks counts an account's webhooks, or its
// connections, its clients' included, deleted ones not.
func testMatchWebhooks(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	disabled := newWebhook("wh_off", "acct_1", "", "a.example", t0)
	disabled.Enabled = false
	conOff := newConnection("con_off", "acct_1", "", t0)
	conOff.Enabled, conOff.Domains = false, []string{"z.example"}
	insertWebhooks(t, s, newWebhook("wh_a", "acct_1", "", "a.example", t0), disabled, newWebhook("wh_b", "acct_1", "", "b.example", t0),
		newWebhook("wh_cli", "acct_1", "cli_1", "a.example", t0), newWebhook("wh_del", "acct_1", "", "a.example", t0),
		newWebhook("wh_x", "acct_2", "", "a.example", t0), newConnection("con_1", "acct_1", "", t0), conOff,
		newConnection("con_cli", "acct_1", "cli_1", t0), newConnection("con_del", "acct_1", "", t0))
	update(t, s, "DeleteWebhook", func(tx store.Tx) error {
		if err := tx.DeleteWebhook("acct_1", "wh_del", "deleted", t0); err != nil {
			return err
		}
		return tx.DeleteWebhook("acct_1", "con_del", "deleted", t0)
	})
	for _, tc := range []struct {
		client, domain string
		want           []string
	}{
		{"", "a.example", []string{"con_1", "con_off", "wh_a", "wh_off"}},
		{"cli_1", "a.example", []string{"con_cli", "wh_cli"}},
		{"", "c.example", []string{"con_1", "con_off"}},
		{"cli_2", "a.example", []string{}},
	} {
		ws, err := s.MatchWebhooks(ctx, "acct_1", tc.client, tc.domain)
		if got := webhookIDs(ws); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("MatchWebhooks(acct_1, %q, %s) = %v, %v; want %v", tc.client, tc.domain, got, err, tc.want)
		}
		for _, w := range ws {
			if !w.IsConnection() && w.Secret != secret1 || w.IsConnection() && !strings.Contains(string(w.Settings), "xoxb-secret") {
				t.Errorf("MatchWebhooks gives %s without its secrets in clear: %q %s", w.ID, w.Secret, w.Settings)
			}
		}
	}
	count := func(connections bool) (int, int) {
		n, err := s.CountWebhooks(ctx, "acct_1", connections)
		must(t, err, "CountWebhooks")
		var m int
		update(t, s, "CountWebhooks", func(tx store.Tx) (err error) { m, err = tx.CountWebhooks("acct_1", connections); return err })
		return n, m
	}
	if n, m := count(false); n != 4 || m != 4 {
		t.Errorf("CountWebhooks = %d, in a transaction %d; want 4 (the account's and its client's, deleted ones not)", n, m)
	}
	if n, m := count(true); n != 3 || m != 3 {
		t.Errorf("CountWebhooks of connections = %d, in a transaction %d; want 3", n, m)
	}
}

// ListWebhooks pages an owner's webhooks, or connections, or deleted ones,
// newest first, without skips or repeats.
func testListWebhooks(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	type row struct {
		id, client   string
		conn, gone   bool
		createdOrder int
	}
	var rows []row
	var ws []store.Webhook
	for i := range 30 {
		r := row{id: fmt.Sprintf("wh_%02d", (i*7)%30), client: []string{"", "cli_1"}[i%2], conn: i%3 == 0, gone: i%5 == 0, createdOrder: i}
		w := newWebhook(r.id, "acct_1", r.client, fmt.Sprintf("d%d.example", i), t0.Add(time.Duration(i/2)*time.Second))
		if r.conn {
			w = newConnection(r.id, "acct_1", r.client, w.CreatedAt)
		}
		rows, ws = append(rows, r), append(ws, w)
	}
	insertWebhooks(t, s, append(ws, newWebhook("wh_x", "acct_2", "", "a.example", t0))...)
	update(t, s, "DeleteWebhook", func(tx store.Tx) error {
		for _, r := range rows {
			if r.gone {
				if err := tx.DeleteWebhook("acct_1", r.id, "deleted", t0); err != nil {
					return err
				}
			}
		}
		return nil
	})
	slices.SortFunc(rows, func(a, b row) int {
		if a.createdOrder/2 != b.createdOrder/2 {
			return b.createdOrder/2 - a.createdOrder/2
		}
		return strings.Compare(b.id, a.id)
	})
	for _, f := range []store.WebhookFilter{{}, {AllClients: true}, {ClientID: "cli_1"}, {Connections: true, AllClients: true},
		{Deleted: true, AllClients: true}, {Connections: true, Deleted: true, ClientID: "cli_1"}} {
		var want []string
		for _, r := range rows {
			if (f.AllClients || r.client == f.ClientID) && r.conn == f.Connections && r.gone == f.Deleted {
				want = append(want, r.id)
			}
		}
		for _, limit := range []int{1, 4, 100} {
			f.AccountID, f.Limit = "acct_1", limit
			got := walk(t, "ListWebhooks", limit, func(cursor string) ([]string, string, error) {
				f.Cursor = cursor
				page, next, err := s.ListWebhooks(ctx, f)
				return idsOf(page, webhookID), next, err
			})
			if !slices.Equal(got, want) {
				t.Errorf("ListWebhooks %+v:\n got  %v\n want %v", f, got, want)
			}
		}
	}
}

// An owner's default endpoint is "" until set, set and cleared per owner
// (the account and each client apart); an unknown owner, or another
// account's client, is ErrNotFound.
func testDefaultWebhookURL(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountAgency)
	newAccount(t, s, "acct_2", store.AccountAgency)
	newClient(t, s, "acct_1", "cli_1")
	newClient(t, s, "acct_2", "cli_2")
	get := func(account, client string) string {
		t.Helper()
		u, err := s.DefaultWebhookURL(ctx, account, client)
		must(t, err, "DefaultWebhookURL(%s, %s)", account, client)
		return u
	}
	if u := get("acct_1", ""); u != "" {
		t.Errorf("DefaultWebhookURL before any is set: %q", u)
	}
	must(t, s.SetDefaultWebhookURL(ctx, "acct_1", "", "https://a.example/hook"), "SetDefaultWebhookURL")
	must(t, s.SetDefaultWebhookURL(ctx, "acct_1", "cli_1", "https://c.example/hook"), "SetDefaultWebhookURL")
	if a, c := get("acct_1", ""), get("acct_1", "cli_1"); a != "https://a.example/hook" || c != "https://c.example/hook" {
		t.Errorf("DefaultWebhookURL: the account's %q, its client's %q", a, c)
	}
	must(t, s.SetDefaultWebhookURL(ctx, "acct_1", "", ""), "SetDefaultWebhookURL")
	if a, c := get("acct_1", ""), get("acct_1", "cli_1"); a != "" || c != "https://c.example/hook" {
		t.Errorf("after clearing the account's: the account's %q, its client's %q", a, c)
	}
	for _, o := range [][2]string{{"acct_none", ""}, {"acct_1", "cli_2"}, {"acct_1", "cli_none"}} {
		if _, err := s.DefaultWebhookURL(ctx, o[0], o[1]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DefaultWebhookURL(%s, %s): %v, want ErrNotFound", o[0], o[1], err)
		}
		if err := s.SetDefaultWebhookURL(ctx, o[0], o[1], "https://x.example/"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("SetDefaultWebhookURL(%s, %s): %v, want ErrNotFound", o[0], o[1], err)
		}
	}
	if u := get("acct_2", "cli_2"); u != "" {
		t.Errorf("another account's client got %q", u)
	}
}

func newDelivery(webhookID, accountID, id, eventID string, at time.Time) store.Delivery {
	return store.Delivery{ID: id, WebhookID: webhookID, AccountID: accountID, EventID: eventID, Event: "ai_visibility_change",
		Payload: []byte(`{"id":"` + eventID + `"}`), Status: store.DeliveryPending, NextAttemptAt: at, CreatedAt: at, UpdatedAt: at}
}

// deliveriesAt adds n delivered deliveries of w made at at (a second
// apart), each with two attempts, with ids made by store.NewDeliveryID,
// and returns their ids, oldest first.
func deliveriesAt(t *testing.T, s store.Store, w store.Webhook, at time.Time, n int) []string {
	t.Helper()
	var ids []string
	update(t, s, "deliveries", func(tx store.Tx) error {
		for i := range n {
			made := at.Add(time.Duration(i) * time.Second)
			d := newDelivery(w.ID, w.AccountID, store.NewDeliveryID(made), fmt.Sprintf("evt_%s_%d", made.Format("150405"), i), made)
			if _, err := tx.InsertDelivery(d); err != nil {
				return err
			}
			for try := 1; try <= 2; try++ {
				if err := tx.RecordOutcome(d.ID, "", store.DeliveryOutcome{Attempt: store.Attempt{DeliveryID: d.ID, N: try, At: made,
					StatusCode: 500 - 300*(try-1)}, Status: store.DeliverySucceeded, Step: try}); err != nil {
					return err
				}
			}
			ids = append(ids, d.ID)
		}
		return nil
	})
	return ids
}

// A deleted webhook or connection is kept, disabled and without its
// secrets, with its deliveries and their attempts (its pending ones
// failed), until they age out: then PruneDeleted forgets it. Meanwhile
// nothing new reaches it and it is neither matched, listed (but with
// Deleted), counted, changed nor deleted again.
func testDeletedWebhook(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	w := newWebhook("wh_1", "acct_1", "", "example.com", t0)
	c := newConnection("con_1", "acct_1", "", t0)
	insertWebhooks(t, s, w, c)
	sent := deliveriesAt(t, s, w, t0, 3)
	pending := newDelivery(w.ID, w.AccountID, store.NewDeliveryID(t0.Add(time.Minute)), "evt_p", t0.Add(time.Minute))
	pending.NextAttemptAt = t0.Add(time.Hour)
	update(t, s, "InsertDelivery", func(tx store.Tx) error { _, err := tx.InsertDelivery(pending); return err })

	deleted := t0.Add(2 * time.Minute)
	update(t, s, "DeleteWebhook", func(tx store.Tx) error {
		if err := tx.DeleteWebhook(w.AccountID, w.ID, "deleted by the account", deleted); err != nil {
			return err
		}
		return tx.DeleteWebhook(c.AccountID, c.ID, "deleted by the destination", deleted)
	})
	got, err := s.Webhook(ctx, w.AccountID, w.ID)
	if err != nil || !got.DeletedAt.Equal(deleted) || !got.Deleted() || got.Enabled || got.DisabledReason != "deleted by the account" ||
		got.Secret != "" || got.PrevSecret != "" || got.URL != w.URL {
		t.Errorf("the deleted webhook reads %+v, %v; want it kept, disabled, without secrets", got, err)
	}
	if got, err := s.Webhook(ctx, c.AccountID, c.ID); err != nil || !got.Deleted() || len(got.Settings) != 0 || got.Connector != "slack" {
		t.Errorf("the deleted connection reads %+v, %v; want it kept without its settings", got, err)
	}
	if d, _, err := s.Delivery(ctx, w.ID, pending.ID); err != nil || d.Status != store.DeliveryFailed || d.LastError != "deleted by the account" {
		t.Errorf("its pending delivery: %+v, %v; want failed, for the reason of the deletion", d, err)
	}
	if ds, _, err := s.ListDeliveries(ctx, store.DeliveryFilter{WebhookID: w.ID, Limit: 10}); err != nil || len(ds) != 4 {
		t.Errorf("its delivery log: %d deliveries, %v; want 4", len(ds), err)
	}
	if _, as, err := s.Delivery(ctx, w.ID, sent[0]); err != nil || len(as) != 2 {
		t.Errorf("a delivery's attempts: %d, %v; want 2", len(as), err)
	}
	update(t, s, "after the deletion", func(tx store.Tx) error {
		late := newDelivery(w.ID, w.AccountID, store.NewDeliveryID(deleted), "evt_late", deleted)
		if added, err := tx.InsertDelivery(late); added || err != nil {
			t.Errorf("InsertDelivery to the deleted webhook: added %v, %v; want nothing added", added, err)
		}
		if err := tx.DeleteWebhook(w.AccountID, w.ID, "again", deleted); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DeleteWebhook of a deleted webhook: %v, want ErrNotFound", err)
		}
		return nil
	})
	if ws, err := s.MatchWebhooks(ctx, w.AccountID, "", w.Domain); err != nil || len(ws) != 0 {
		t.Errorf("MatchWebhooks gives deleted targets: %+v, %v", webhookIDs(ws), err)
	}
	for _, conn := range []bool{false, true} {
		if n, err := s.CountWebhooks(ctx, w.AccountID, conn); err != nil || n != 0 {
			t.Errorf("CountWebhooks (connections %v) counts deleted ones: %d, %v", conn, n, err)
		}
		for _, del := range []bool{false, true} {
			ws, _, err := s.ListWebhooks(ctx, store.WebhookFilter{AccountID: w.AccountID, Connections: conn, Deleted: del})
			if err != nil || len(ws) != map[bool]int{false: 0, true: 1}[del] {
				t.Errorf("ListWebhooks (connections %v, deleted %v): %v, %v", conn, del, webhookIDs(ws), err)
			}
		}
	}

	// Its deliveries are younger than the cut: it stays.
	cut := deleted.Add(time.Hour)
	if n, err := s.PruneDeleted(ctx, cut, 10); err != nil || n != 1 {
		t.Fatalf("PruneDeleted = %d, %v; want only the connection, which has no deliveries", n, err)
	}
	if _, err := s.Webhook(ctx, w.AccountID, w.ID); err != nil {
		t.Fatalf("PruneDeleted forgot a deleted webhook that still has deliveries: %v", err)
	}
	if _, err := s.Webhook(ctx, c.AccountID, c.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the pruned connection: %v, want ErrNotFound", err)
	}
	if n, err := s.PruneDeliveries(ctx, cut, 10); err != nil || n != 4 {
		t.Fatalf("PruneDeliveries = %d, %v; want 4", n, err)
	}
	if n, err := s.PruneDeleted(ctx, deleted, 10); err != nil || n != 0 {
		t.Fatalf("PruneDeleted of those deleted before the time of its deletion = %d, %v; want 0", n, err)
	}
	if n, err := s.PruneDeleted(ctx, cut, 10); err != nil || n != 1 {
		t.Fatalf("PruneDeleted once its deliveries went = %d, %v; want 1", n, err)
	}
	if _, err := s.Webhook(ctx, w.AccountID, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after its history aged out: %v, want ErrNotFound", err)
	}
}

// PruneDeleted forgets the targets deleted before its cut whose
// deliveries have gone, the earliest deleted first, at most its limit a
// call; those deleted since, or with deliveries left, stay.
func testPruneDeleted(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	cut := t0.Add(time.Hour)
	var ids []string
	for i := range 7 {
		ids = append(ids, fmt.Sprintf("wh_%d", i))
	}
	kept := newWebhook("wh_kept", "acct_1", "", "example.com", t0)
	insertWebhooks(t, s, kept)
	deliveriesAt(t, s, kept, t0, 1)
	update(t, s, "DeleteWebhook", func(tx store.Tx) error {
		for i, id := range ids {
			w := newWebhook(id, "acct_1", "", "example.com", t0)
			if i%2 == 1 {
				w = newConnection(id, "acct_1", "", t0)
			}
			if err := tx.InsertWebhook(w); err != nil {
				return err
			}
			// Deleted in the reverse order of their ids, the last one at
			// the cut.
			at := cut.Add(-time.Duration(i+1) * time.Minute)
			if i == len(ids)-1 {
				at = cut
			}
			if err := tx.DeleteWebhook("acct_1", id, "deleted", at); err != nil {
				return err
			}
		}
		return tx.DeleteWebhook("acct_1", kept.ID, "deleted", t0)
	})
	gone := func(id string) bool {
		_, err := s.Webhook(ctx, "acct_1", id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Webhook(%s): %v", id, err)
		}
		return err != nil
	}
	var batches []int
	for len(batches) < 10 {
		n, err := s.PruneDeleted(ctx, cut, 2)
		must(t, err, "PruneDeleted")
		batches = append(batches, n)
		if len(batches) == 1 && (!gone(ids[5]) || !gone(ids[4]) || gone(ids[3]) || gone(ids[0])) {
			t.Errorf("after the first batch: gone %v, %v, %v, %v; want the two deleted first (%s, %s) and no other",
				gone(ids[5]), gone(ids[4]), gone(ids[3]), gone(ids[0]), ids[5], ids[4])
		}
		if n < 2 {
			break
		}
	}
	if !slices.Equal(batches, []int{2, 2, 2, 0}) {
		t.Errorf("PruneDeleted went in batches of %v, want [2 2 2 0]", batches)
	}
	if gone(ids[6]) || gone(kept.ID) {
		t.Errorf("PruneDeleted forgot one deleted at the cut (%v) or one with deliveries (%v)", gone(ids[6]), gone(kept.ID))
	}
}

// capUnderConcurrency runs 32 concurrent callers on two handles, each
// counting the account's webhooks (or connections) and adding one under
// a cap of 8, with one there already.
func capUnderConcurrency(t *testing.T, newStore Constructor, connections bool) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	newAccount(t, s, "acct_1", store.AccountAgency)
	newClient(t, s, "acct_1", "cli_1")
	target := func(i int) store.Webhook {
		if connections {
			return newConnection(fmt.Sprintf("con_%02d", i), "acct_1", []string{"", "cli_1"}[i%2], t0)
		}
		return newWebhook(fmt.Sprintf("wh_%02d", i), "acct_1", []string{"", "cli_1"}[i%2], "a.example", t0)
	}
	first := target(99)
	first.ClientID = "cli_1"
	// One of the other kind, which does not count.
	other := newWebhook("wh_other", "acct_1", "", "a.example", t0)
	if !connections {
		other = newConnection("con_other", "acct_1", "", t0)
	}
	insertWebhooks(t, s, first, other)
	var c tally
	Together(concurrency, func(i int) {
		c.add(hs[i%2].Update(ctx, func(tx store.Tx) error {
			n, err := tx.CountWebhooks("acct_1", connections)
			if err != nil {
				return err
			}
			if n >= 8 {
				return errRefused
			}
			return tx.InsertWebhook(target(i))
		}))
	})
	c.expect(t, fmt.Sprintf("a cap of 8 (connections %v), 1 there", connections), 7)
	if n, err := s.CountWebhooks(ctx, "acct_1", connections); err != nil || n != 8 {
		t.Errorf("CountWebhooks after the race: %d, %v; want 8", n, err)
	}
}

func testWebhookCapUnderConcurrency(t *testing.T, newStore Constructor) {
	capUnderConcurrency(t, newStore, false)
}

func testConnectionCapUnderConcurrency(t *testing.T, newStore Constructor) {
	capUnderConcurrency(t, newStore, true)
}

// A delivery keeps every field and is one per webhook and event (a second
// adds nothing and keeps the first); another webhook's is ErrNotFound;
// attempts keep every field (latency to the microsecond) and come oldest
// first; RecordOutcome writes the attempt and the delivery's new state; a
// webhook that is gone altogether takes no delivery (ErrConflict).
func testDeliveries(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	insertWebhooks(t, s, newWebhook("wh_1", "acct_1", "", "example.com", t0), newWebhook("wh_2", "acct_1", "", "example.com", t0))
	d := store.Delivery{ID: "dlv_1", WebhookID: "wh_1", AccountID: "acct_1", EventID: "evt_1", Event: "ai_visibility_change",
		Payload: []byte("{\"n\":\"\x00é\"}"), Status: store.DeliveryFailed, Attempts: 2, Step: 3, NextAttemptAt: t0.Add(time.Hour).In(elsewhere),
		LastAttemptAt: t0.Add(-time.Minute), LastStatus: 503, LastError: "HTTP 503", CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0,
		Trace: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	var added [3]bool
	update(t, s, "InsertDelivery", func(tx store.Tx) (err error) {
		if added[0], err = tx.InsertDelivery(d); err != nil {
			return err
		}
		again := newDelivery("wh_1", "acct_1", "dlv_again", "evt_1", t0)
		if added[1], err = tx.InsertDelivery(again); err != nil {
			return err
		}
		added[2], err = tx.InsertDelivery(newDelivery("wh_2", "acct_1", "dlv_2", "evt_1", t0))
		return err
	})
	if added != [3]bool{true, false, true} {
		t.Errorf("InsertDelivery added %v; want the first, not a second of the same webhook and event, and another webhook's", added)
	}
	want := d
	want.NextAttemptAt = want.NextAttemptAt.UTC()
	if got, as, err := s.Delivery(ctx, "wh_1", "dlv_1"); err != nil || !reflect.DeepEqual(got, want) || len(as) != 0 {
		t.Errorf("Delivery round trip:\n got  %+v, %d attempts, %v\n want %+v", got, len(as), err, want)
	}
	for _, k := range [][2]string{{"wh_2", "dlv_1"}, {"wh_1", "dlv_again"}} {
		if _, _, err := s.Delivery(ctx, k[0], k[1]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Delivery(%s, %s): %v, want ErrNotFound", k[0], k[1], err)
		}
	}
	if err := s.Update(ctx, func(tx store.Tx) error {
		_, err := tx.InsertDelivery(newDelivery("wh_none", "acct_1", "dlv_3", "evt_3", t0))
		return err
	}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("InsertDelivery to a webhook that does not exist: %v, want ErrConflict", err)
	}

	a1 := store.Attempt{DeliveryID: "dlv_1", N: 1, At: t0.Add(-2 * time.Minute).In(elsewhere), StatusCode: 0, Latency: 1500 * time.Microsecond,
		Error: "dial tcp: connection refused"}
	a2 := store.Attempt{DeliveryID: "dlv_1", N: 2, At: t0.Add(-time.Minute), StatusCode: 503, Latency: 2 * time.Second, ResponseBody: "busy\n\"é\"",
		Result: "retry"}
	o := store.DeliveryOutcome{Attempt: store.Attempt{DeliveryID: "dlv_1", N: 3, At: t0.Add(time.Minute), StatusCode: 200, Latency: time.Millisecond,
		ResponseBody: "ok"}, Status: store.DeliverySucceeded, Step: 4}
	update(t, s, "attempts", func(tx store.Tx) error {
		for _, a := range []store.Attempt{a2, a1} {
			if err := tx.AddAttempt(a); err != nil {
				return err
			}
		}
		return tx.RecordOutcome("dlv_1", "", o)
	})
	a1.At = a1.At.UTC()
	want.Status, want.Attempts, want.Step, want.NextAttemptAt = store.DeliverySucceeded, 3, 4, time.Time{}
	want.LastAttemptAt, want.LastStatus, want.LastError, want.UpdatedAt = o.Attempt.At, 200, "", o.Attempt.At
	got, as, err := s.Delivery(ctx, "wh_1", "dlv_1")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after RecordOutcome:\n got  %+v, %v\n want %+v", got, err, want)
	}
	if !reflect.DeepEqual(as, []store.Attempt{a1, a2, o.Attempt}) {
		t.Errorf("attempts (oldest first, every field):\n got  %+v\n want %+v", as, []store.Attempt{a1, a2, o.Attempt})
	}
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.AddAttempt(a1) }); !errors.Is(err, store.ErrConflict) {
		t.Errorf("AddAttempt of a number the delivery has: %v, want ErrConflict", err)
	}
}

// A webhook's deliveries are listed newest event first (event ids begin
// with their time), in pages that neither skip nor repeat, under a status
// filter too; Redeliver makes the failed deliveries of the events of a
// span of time, or those named, pending again from the schedule's start.
func testDeliveriesByEventTime(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	w := newWebhook("wh_1", "acct_1", "", "example.com", t0)
	insertWebhooks(t, s, w, newWebhook("wh_2", "acct_1", "", "example.com", t0))
	type dl struct {
		id, event string
		at        time.Time
		status    string
	}
	var all []dl
	update(t, s, "InsertDelivery", func(tx store.Tx) error {
		for i := range 40 {
			at := t0.Add(time.Duration(i%20) * time.Minute) // two events a minute
			ev := eventID(at, i)
			d := dl{fmt.Sprintf("dlv_%02d", i), ev, at, []string{store.DeliveryFailed, store.DeliverySucceeded}[i%3/2]}
			x := newDelivery(w.ID, w.AccountID, d.id, ev, t0.Add(time.Hour))
			x.Status = d.status
			if _, err := tx.InsertDelivery(x); err != nil {
				return err
			}
			all = append(all, d)
		}
		_, err := tx.InsertDelivery(newDelivery("wh_2", w.AccountID, "dlv_other", eventID(t0, 0), t0))
		return err
	})
	slices.SortFunc(all, func(a, b dl) int { return strings.Compare(b.event, a.event) })
	for _, status := range []string{"", store.DeliveryFailed} {
		var want []string
		for _, d := range all {
			if status == "" || d.status == status {
				want = append(want, d.id)
			}
		}
		for _, limit := range []int{1, 7, 40, 100} {
			got := walk(t, "ListDeliveries", limit, func(cursor string) ([]string, string, error) {
				page, next, err := s.ListDeliveries(ctx, store.DeliveryFilter{WebhookID: w.ID, Status: status, Cursor: cursor, Limit: limit})
				return idsOf(page, func(d store.Delivery) string { return d.ID }), next, err
			})
			if !slices.Equal(got, want) {
				t.Errorf("ListDeliveries, status %q, limit %d: pages hold %v, want %v", status, limit, got, want)
			}
		}
	}
	if _, _, err := s.ListDeliveries(ctx, store.DeliveryFilter{WebhookID: w.ID, Cursor: "!!!not a cursor!!!"}); !errors.Is(err, store.ErrMalformed) {
		t.Errorf("ListDeliveries with a cursor it cannot read: %v, want ErrMalformed", err)
	}

	// Replay [5 min, 12 min): the failed deliveries of the events of those
	// minutes, and no other.
	since, until := t0.Add(5*time.Minute), t0.Add(12*time.Minute)
	var want []string
	for _, d := range all {
		if d.status == store.DeliveryFailed && !d.at.Before(since) && d.at.Before(until) {
			want = append(want, d.id)
		}
	}
	now := t0.Add(2 * time.Hour)
	var n int
	update(t, s, "Redeliver", func(tx store.Tx) (err error) { n, err = tx.Redeliver(w.ID, nil, since, until, now); return err })
	pending, _, err := s.ListDeliveries(ctx, store.DeliveryFilter{WebhookID: w.ID, Status: store.DeliveryPending, Limit: 100})
	must(t, err, "ListDeliveries")
	var got []string
	for _, d := range pending {
		got = append(got, d.ID)
		if d.Step != 0 || !d.NextAttemptAt.Equal(now) {
			t.Errorf("redelivered %s: step %d, next attempt %v; want the schedule's start, now", d.ID, d.Step, d.NextAttemptAt)
		}
	}
	if n != len(want) || !slices.Equal(got, want) {
		t.Errorf("Redeliver of [5, 12) min: %d, pending %v; want %v", n, got, want)
	}
	// By id: a succeeded one and a pending one (which stays as it is), and
	// none of another webhook.
	var named []string
	for _, d := range all {
		if d.status == store.DeliverySucceeded {
			named = append(named, d.id)
			break
		}
	}
	named = append(named, want[0], "dlv_other")
	update(t, s, "Redeliver", func(tx store.Tx) (err error) {
		n, err = tx.Redeliver(w.ID, named, time.Time{}, time.Time{}, now)
		return err
	})
	if n != 1 {
		t.Errorf("Redeliver of a succeeded, a pending and another webhook's delivery: %d, want 1", n)
	}
	if d, _, err := s.Delivery(ctx, "wh_2", "dlv_other"); err != nil || d.Status != store.DeliveryPending || !d.NextAttemptAt.Equal(t0) {
		t.Errorf("another webhook's delivery: %+v, %v; want it untouched", d, err)
	}
	update(t, s, "Redeliver", func(tx store.Tx) (err error) {
		n, err = tx.Redeliver(w.ID, []string{}, time.Time{}, time.Time{}, now)
		return err
	})
	if n != 0 {
		t.Errorf("Redeliver of no ids: %d, want 0", n)
	}
}

// eventID is an event id that begins with its time, as events.New makes.
func eventID(at time.Time, n int) string {
	return fmt.Sprintf("%s%011d", events.IDFloor(at), n)
}

// NextDue is the earliest next attempt after now of a pending delivery,
// zero when there is none.
func testNextDue(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	insertWebhooks(t, s, newWebhook("wh_1", "acct_1", "", "example.com", t0))
	if next, err := s.NextDue(ctx, t0); err != nil || !next.IsZero() {
		t.Errorf("NextDue without deliveries: %v, %v; want zero", next, err)
	}
	update(t, s, "InsertDelivery", func(tx store.Tx) error {
		for i, d := range []struct {
			in     time.Duration
			status string
		}{{-time.Minute, store.DeliveryPending}, {0, store.DeliveryPending}, {time.Minute, store.DeliveryFailed},
			{3 * time.Minute, store.DeliveryPending}, {2 * time.Minute, store.DeliveryPending}} {
			x := newDelivery("wh_1", "acct_1", fmt.Sprintf("dlv_%d", i), fmt.Sprintf("evt_%d", i), t0.Add(d.in))
			x.Status = d.status
			if _, err := tx.InsertDelivery(x); err != nil {
				return err
			}
		}
		return nil
	})
	if next, err := s.NextDue(ctx, t0); err != nil || !next.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("NextDue = %v, %v; want %v (after now, pending only)", next, err, t0.Add(2*time.Minute))
	}
	if next, err := s.NextDue(ctx, t0.Add(time.Hour)); err != nil || !next.IsZero() {
		t.Errorf("NextDue after every one: %v, %v; want zero", next, err)
	}
}

// PruneDeliveries forgets the deliveries made before its cut, with their
// attempts, oldest first, at most its limit a call, and keeps every one
// made since.
func testPruneDeliveries(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	w := newWebhook("wh_1", "acct_1", "", "example.com", t0)
	insertWebhooks(t, s, w)
	cut := t0.Add(-30 * 24 * time.Hour)
	old := deliveriesAt(t, s, w, cut.Add(-time.Hour), 25)
	young := deliveriesAt(t, s, w, cut, 10) // the first made at the cut exactly
	var batches []int
	for {
		n, err := s.PruneDeliveries(ctx, cut, 10)
		must(t, err, "PruneDeliveries")
		batches = append(batches, n)
		if len(batches) == 1 {
			for i, id := range old {
				if _, _, err := s.Delivery(ctx, w.ID, id); errors.Is(err, store.ErrNotFound) != (i < 10) {
					t.Errorf("after the first batch, old delivery %d: %v; want the 10 oldest gone and no other", i, err)
				}
			}
		}
		if n < 10 || len(batches) > 10 {
			break
		}
	}
	if !slices.Equal(batches, []int{10, 10, 5}) {
		t.Errorf("PruneDeliveries went in batches of %v, want [10 10 5]", batches)
	}
	for _, id := range old {
		if _, _, err := s.Delivery(ctx, w.ID, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a delivery made before the cut, %s: %v", id, err)
		}
	}
	for _, id := range young {
		if d, as, err := s.Delivery(ctx, w.ID, id); err != nil || d.Status != store.DeliverySucceeded || len(as) != 2 {
			t.Errorf("a delivery made since the cut, %s: %+v, %d attempts, %v", id, d, len(as), err)
		}
	}
}

// An outcome of a delivery that retention removed while it was attempted
// is not recorded, and the transaction it shares with others stands.
func testOutcomeOfAPrunedDelivery(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	w := newWebhook("wh_1", "acct_1", "", "example.com", t0)
	insertWebhooks(t, s, w)
	ids := deliveriesAt(t, s, w, t0, 2)
	if n, err := s.PruneDeliveries(ctx, t0.Add(time.Second), 10); err != nil || n != 1 {
		t.Fatalf("PruneDeliveries = %d, %v; want 1", n, err)
	}
	update(t, s, "RecordOutcome", func(tx store.Tx) error {
		for _, id := range ids {
			if err := tx.RecordOutcome(id, "", store.DeliveryOutcome{Attempt: store.Attempt{DeliveryID: id, N: 3, At: t0, StatusCode: 200},
				Status: store.DeliverySucceeded, Step: 3}); err != nil {
				return err
			}
		}
		return nil
	})
	if _, as, err := s.Delivery(ctx, w.ID, ids[1]); err != nil || len(as) != 3 {
		t.Errorf("the other delivery's attempts: %d, %v; want 3", len(as), err)
	}
	if _, _, err := s.Delivery(ctx, w.ID, ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the pruned delivery came back: %v", err)
	}
}

// InsertDeliveries and RecordOutcomes do in one call what InsertDelivery
// and RecordOutcome do one at a time: a batch adds what is new to a live
// webhook (every field, a lease too) and nothing to a deleted webhook, one
// that is gone, or a webhook and event that has a delivery, in the store
// or earlier in the batch; its outcomes are written under the leases that
// hold them, refused as lost under another (nothing of them written), and
// nothing of a delivery that is gone; an attempt's number the delivery has
// is a conflict.
func testDeliveryBatches(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	insertWebhooks(t, s, newWebhook("wh_1", "acct_1", "", "example.com", t0), newWebhook("wh_del", "acct_1", "", "example.com", t0))
	update(t, s, "the first delivery and a deletion", func(tx store.Tx) error {
		if _, err := tx.InsertDelivery(newDelivery("wh_1", "acct_1", "dlv_old", "evt_1", t0)); err != nil {
			return err
		}
		return tx.DeleteWebhook("acct_1", "wh_del", "deleted by the account", t0)
	})
	full := store.Delivery{ID: "dlv_a", WebhookID: "wh_1", AccountID: "acct_1", EventID: "evt_2", Event: "ai_visibility_change",
		Payload: []byte("{\"n\":\"\x00é\"}"), Status: store.DeliveryFailed, Attempts: 2, Step: 3, NextAttemptAt: t0.Add(time.Hour),
		LastAttemptAt: t0.Add(-time.Minute), LastStatus: 503, LastError: "HTTP 503", CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0}
	leased := newDelivery("wh_1", "acct_1", "dlv_b", "evt_3", t0)
	leased.Lease, leased.LeaseUntil = "lease_1", t0.Add(time.Minute)
	batch := []store.Delivery{full, newDelivery("wh_1", "acct_1", "dlv_dup", "evt_1", t0), newDelivery("wh_del", "acct_1", "dlv_del", "evt_2", t0),
		newDelivery("wh_none", "acct_1", "dlv_gone", "evt_2", t0), leased, newDelivery("wh_1", "acct_1", "dlv_twin", "evt_2", t0)}
	var added []bool
	update(t, s, "InsertDeliveries", func(tx store.Tx) (err error) {
		added, err = tx.InsertDeliveries(batch)
		return err
	})
	if want := []bool{true, false, false, false, true, false}; !reflect.DeepEqual(added, want) {
		t.Errorf("InsertDeliveries added %v; want %v (new, repeated, deleted webhook, gone webhook, leased, repeated in the batch)", added, want)
	}
	if got, _, err := s.Delivery(ctx, "wh_1", "dlv_a"); err != nil || !reflect.DeepEqual(got, full) {
		t.Errorf("a delivery of a batch:\n got  %+v, %v\n want %+v", got, err, full)
	}
	if got, _, err := s.Delivery(ctx, "wh_1", "dlv_b"); err != nil || got.Lease != "lease_1" || !got.LeaseUntil.Equal(leased.LeaseUntil) {
		t.Errorf("a leased delivery of a batch: %+v, %v", got, err)
	}
	for _, k := range [][2]string{{"wh_1", "dlv_dup"}, {"wh_del", "dlv_del"}, {"wh_1", "dlv_twin"}} {
		if _, _, err := s.Delivery(ctx, k[0], k[1]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Delivery(%s, %s): %v, want ErrNotFound", k[0], k[1], err)
		}
	}

	at := t0.Add(2 * time.Minute)
	held := store.HeldOutcome{DeliveryID: "dlv_b", Lease: "lease_1", DeliveryOutcome: store.DeliveryOutcome{
		Attempt: store.Attempt{DeliveryID: "dlv_b", N: 1, At: at, StatusCode: 200, Latency: 1500 * time.Microsecond, ResponseBody: "ok\n\"é\"",
			Result: "delivered"}, Status: store.DeliverySucceeded, Step: 1}}
	retry := store.HeldOutcome{DeliveryID: "dlv_old", DeliveryOutcome: store.DeliveryOutcome{
		Attempt: store.Attempt{DeliveryID: "dlv_old", N: 1, At: at, Error: "dial tcp: connection refused", Result: "retry"},
		Status:  store.DeliveryPending, Step: 1, Next: at.Add(time.Minute)}}
	other := store.HeldOutcome{DeliveryID: "dlv_a", Lease: "lease_9", DeliveryOutcome: store.DeliveryOutcome{
		Attempt: store.Attempt{DeliveryID: "dlv_a", N: 3, At: at, StatusCode: 200}, Status: store.DeliverySucceeded, Step: 4}}
	gone := store.HeldOutcome{DeliveryID: "dlv_none", DeliveryOutcome: store.DeliveryOutcome{
		Attempt: store.Attempt{DeliveryID: "dlv_none", N: 1, At: at, StatusCode: 200}, Status: store.DeliverySucceeded, Step: 1}}
	var lost []bool
	update(t, s, "RecordOutcomes", func(tx store.Tx) (err error) {
		lost, err = tx.RecordOutcomes([]store.HeldOutcome{held, other, gone, retry})
		return err
	})
	if want := []bool{false, true, false, false}; !reflect.DeepEqual(lost, want) {
		t.Errorf("RecordOutcomes lost %v; want %v (held, another lease, gone, no lease)", lost, want)
	}
	got, as, err := s.Delivery(ctx, "wh_1", "dlv_b")
	if err != nil || got.Status != store.DeliverySucceeded || got.Attempts != 1 || got.Step != 1 || got.Lease != "" || !got.LeaseUntil.IsZero() ||
		got.LastStatus != 200 || got.LastError != "" || !got.LastAttemptAt.Equal(at) || !got.UpdatedAt.Equal(at) || !got.NextAttemptAt.IsZero() {
		t.Errorf("the held delivery after its outcome: %+v, %v", got, err)
	}
	if !reflect.DeepEqual(as, []store.Attempt{held.Attempt}) {
		t.Errorf("its attempts (every field):\n got  %+v\n want %+v", as, []store.Attempt{held.Attempt})
	}
	got, as, err = s.Delivery(ctx, "wh_1", "dlv_old")
	if err != nil || got.Status != store.DeliveryPending || got.Step != 1 || !got.NextAttemptAt.Equal(retry.Next) || got.LastStatus != 0 ||
		got.LastError != retry.Attempt.Error || len(as) != 1 {
		t.Errorf("the retried delivery: %+v, %d attempts, %v", got, len(as), err)
	}
	if got, as, err := s.Delivery(ctx, "wh_1", "dlv_a"); err != nil || !reflect.DeepEqual(got, full) || len(as) != 0 {
		t.Errorf("the delivery of another lease changed: %+v, %d attempts, %v", got, len(as), err)
	}
	again := retry
	again.Attempt.At = at.Add(time.Minute)
	if err := s.Update(ctx, func(tx store.Tx) error {
		_, err := tx.RecordOutcomes([]store.HeldOutcome{again})
		return err
	}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("RecordOutcomes of an attempt number the delivery has: %v, want ErrConflict", err)
	}
	if _, as, err := s.Delivery(ctx, "wh_1", "dlv_old"); err != nil || len(as) != 1 || !as[0].At.Equal(at) {
		t.Errorf("after the refused outcome: %+v, %v", as, err)
	}
}
