package storetest

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/aivis/aivis/core/store"
)

// Catalog reads every table of the store's database, as the database's
// own catalog lists them (sqlite_master, information_schema), each row as
// text: its values in order, bytes as text and as hex.
type Catalog func(t *testing.T) map[string][]string

// NoAccountData are the tables that hold no row of any account: the
// erasure case needs none of their rows gone. A table an engine adds
// that is in neither this list nor filled by the case fails it, so that
// DeleteAccount is made to cover it (or the table is named here, with
// why).
var NoAccountData = map[string]string{
	"plugins":           "the registered connector plugins, the operator's",
	"plugin_health":     "each instance's plugins' health",
	"cache_epoch":       "the caches' versions (SQLite)",
	"cache_versions":    "the caches' versions (PostgreSQL)",
	"cache_bumps":       "the caches' versions' increments (PostgreSQL)",
	"holders":           "the processes that hold claimed work (PostgreSQL)",
	"goose_db_version":  "the schema's version",
	"schema_migrations": "the schema's version (SQLite before goose)",
	"schema_floor":      "the lowest schema an aivis must know to run on the database",
	"sqlite_sequence":   "SQLite's AUTOINCREMENT counters",
	"plugin_builds":     "the registered connector plugins' builds",
	"bus_offsets":       "the bus's consumer groups' positions",
	"crawler_ranges":    "the crawlers' IP range lists, the operator's",
}

// RunErasure runs the erasure case: two accounts fill every table, one is
// exported (everything it owns, no secret, nothing of the other) and
// deleted; then no row of it remains in any table the catalog lists and
// the other's rows are as they were.
func RunErasure(t *testing.T, newStore func(t *testing.T) (store.Store, Catalog)) {
	t.Run("Erasure/ExportAndDeleteEverythingOfOneAccount", func(t *testing.T) {
		s, catalog := newStore(t)
		gone, kept := fillAccount(t, s, "gone"), fillAccount(t, s, "kept")
		before := catalog(t)
		var empty []string
		for table, rows := range before {
			if _, ok := NoAccountData[table]; ok || strings.HasPrefix(table, "watermill_") {
				continue
			}
			if !slices.ContainsFunc(rows, gone.in) || !slices.ContainsFunc(rows, kept.in) {
				empty = append(empty, table)
			}
		}
		if len(empty) > 0 {
			slices.Sort(empty)
			t.Fatalf("tables %v hold no row of one of the filled accounts: fill them here, or name them in NoAccountData", empty)
		}

		var records []store.Record
		must(t, s.ExportAccount(ctx, "acct_gone", func(r store.Record) error { records = append(records, r); return nil }), "ExportAccount")
		kinds := map[string]int{}
		for _, r := range records {
			kinds[r.Kind]++
			b, err := json.Marshal(r)
			must(t, err, "json of a record")
			if kept.in(string(b)) {
				t.Errorf("the export of acct_gone holds another account's %s: %s", r.Kind, b)
			}
			if strings.Contains(string(b), "sealed:") {
				t.Errorf("the export holds a sealed value in %s: %s", r.Kind, b)
			}
			for _, secret := range gone.secrets {
				if strings.Contains(string(b), secret) {
					t.Errorf("the export holds a secret (%q) in %s: %s", secret, r.Kind, b)
				}
			}
		}
		for _, r := range records {
			// A day is a time, as every engine exports one, not its own
			// number of days.
			if day, ok := r.Data["day"].(string); r.Kind == "crawler_hits" && (!ok || !strings.HasSuffix(day, "T00:00:00Z")) {
				t.Errorf("the export's crawler hits hold the day %#v, want its midnight in RFC 3339", r.Data["day"])
			}
			// When a change went live is a time too.
			if at, ok := r.Data["live_at"].(string); r.Kind == "domain_changes" && (!ok || at != t0.Format(time.RFC3339Nano)) {
				t.Errorf("the export's change went live at %#v, want %s", r.Data["live_at"], t0.Format(time.RFC3339Nano))
			}
		}
		for _, k := range store.Kinds {
			if kinds[k] == 0 {
				t.Errorf("the export holds no %s", k)
			}
		}
		if records[0].Kind != "accounts" || records[0].Data["id"] != "acct_gone" {
			t.Errorf("the export begins with %+v, not the account", records[0])
		}
		stop := errors.New("stop")
		n := 0
		if err := s.ExportAccount(ctx, "acct_gone", func(store.Record) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
			t.Errorf("ExportAccount with an emit that fails: %v after %d records, want its error after 1", err, n)
		}
		if err := s.ExportAccount(ctx, "acct_none", func(store.Record) error { return nil }); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ExportAccount of no account: %v, want ErrNotFound", err)
		}

		// The key read once first: a cached read must see the delete.
		_, err := s.PrincipalByKeyHash(ctx, []byte("kh-key_gone"))
		must(t, err, "PrincipalByKeyHash before DeleteAccount")
		// Batches of 2 rows: each big kind takes several.
		var steps []string
		must(t, s.DeleteAccount(store.WithDeleteSteps(ctx, func(what string) { steps = append(steps, what) }), "acct_gone", 2), "DeleteAccount")
		if len(steps) < 2+len(store.BigKinds) || steps[0] != "stop" || steps[len(steps)-1] != "account" {
			t.Errorf("DeleteAccount's steps %v: want stop, each big kind's batches, account", steps)
		}
		noneLeft(t, before, catalog(t), gone, kept)
		if _, err := s.Account(ctx, "acct_gone"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Account after DeleteAccount: %v, want ErrNotFound", err)
		}
		if _, err := s.PrincipalByKeyHash(ctx, []byte("kh-key_gone")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("PrincipalByKeyHash of a deleted account's key: %v, want ErrNotFound", err)
		}
		if _, err := s.PrincipalByKeyHash(ctx, []byte("kh-key_kept")); err != nil {
			t.Errorf("PrincipalByKeyHash of the other account's key: %v", err)
		}
		if err := s.DeleteAccount(ctx, "acct_gone", 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DeleteAccount again: %v, want ErrNotFound", err)
		}
	})
	t.Run("Erasure/DeleteStoppedMidwayIsFinishedByAnother", func(t *testing.T) {
		s, catalog := newStore(t)
		gone, kept := fillAccount(t, s, "gone"), fillAccount(t, s, "kept")
		before := catalog(t)
		_, err := s.PrincipalByKeyHash(ctx, []byte("kh-key_gone"))
		must(t, err, "PrincipalByKeyHash before DeleteAccount")
		stopped, stop := context.WithCancel(ctx)
		defer stop()
		steps := 0
		err = s.DeleteAccount(store.WithDeleteSteps(stopped, func(what string) {
			if steps++; what == store.BigKinds[1] {
				stop() // a crash, an operator's Ctrl-C
			}
		}), "acct_gone", 2)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("DeleteAccount stopped after %d steps: %v, want context.Canceled", steps, err)
		}
		if _, err := s.PrincipalByKeyHash(ctx, []byte("kh-key_gone")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("PrincipalByKeyHash of the key of an account whose delete stopped: %v, want ErrNotFound", err)
		}
		if _, err := s.Account(ctx, "acct_gone"); err != nil {
			t.Fatalf("the account whose delete stopped: %v; want it still there, to be deleted again", err)
		}
		must(t, s.DeleteAccount(ctx, "acct_gone", 0), "DeleteAccount again")
		noneLeft(t, before, catalog(t), gone, kept)
	})
}

// noneLeft checks that no row of gone is left in any table and that the
// rows of kept are those there were before.
func noneLeft(t *testing.T, before, after map[string][]string, gone, kept filled) {
	t.Helper()
	for table, rows := range after {
		for _, row := range rows {
			if gone.in(row) {
				t.Errorf("%s still holds a row of the deleted account: %s", table, row)
			}
		}
		keptBefore := slices.DeleteFunc(slices.Clone(before[table]), func(r string) bool { return !kept.in(r) })
		keptAfter := slices.DeleteFunc(slices.Clone(rows), func(r string) bool { return !kept.in(r) })
		slices.Sort(keptBefore)
		slices.Sort(keptAfter)
		if !slices.Equal(keptBefore, keptAfter) {
			t.Errorf("%s: the other account's rows changed:\nbefore %q\nafter  %q", table, keptBefore, keptAfter)
		}
	}
}

// filled is what fillAccount made: the account's marks (a row that holds
// one is the account's) and its secrets (which no export holds).
type filled struct {
	marks   []string
	secrets []string
}

func (f filled) in(row string) bool {
	for _, m := range f.marks {
		if strings.Contains(row, m) {
			return true
		}
	}
	return false
}

// fillAccount makes acct_<name> (an agency) with a row in every table that
// holds an account's: every id, name and domain holds name.
func fillAccount(t *testing.T, s store.Store, name string) filled {
	t.Helper()
	acct, cli := "acct_"+name, "cli_"+name
	newAccount(t, s, acct, store.AccountAgency)
	newClient(t, s, acct, cli)
	k := newKey("key_"+name, acct, "", t0)
	must(t, s.CreateKey(ctx, k), "CreateKey")
	must(t, s.CreateKey(ctx, newKey("key_"+name+"_c", acct, cli, t0)), "CreateKey")
	email := name + "@example.com"
	u := newUser(t, s, "usr_"+name, acct, email, "owner")
	sess := newSession(t, s, "tok-"+name, u.ID, t0.Add(time.Hour))
	must(t, s.CreateInvitation(ctx, store.Invitation{TokenHash: []byte("inv2-" + name), AccountID: acct, Email: "x" + email,
		Role: "viewer", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}), "CreateInvitation")

	w := newWebhook("wh_"+name, acct, "", name+".example", t0)
	c := newConnection("con_"+name, acct, cli, t0)
	c.Settings = json.RawMessage(`{"channel":"#seo","token":"xoxb-` + name + `"}`)
	insertWebhooks(t, s, w, c)
	dids := deliveriesAt(t, s, w, t0, 3)
	pending := newDelivery(c.ID, acct, store.NewDeliveryID(t0.Add(time.Minute)), "evt_"+name, t0.Add(time.Minute))
	update(t, s, "events", func(tx store.Tx) error {
		if _, err := tx.InsertDelivery(pending); err != nil {
			return err
		}
		// An event on its way: in the bus's table until it is fanned out.
		m := message.NewMessage("evt_"+name+"_bus", []byte(`{"id":"evt_`+name+`_bus"}`))
		m.Metadata.Set("account_id", acct)
		if err := tx.Publish("events", m); err != nil {
			return err
		}
		return tx.LogEvents(store.LoggedEvent{ID: "evt_" + name, AccountID: acct, Event: "ai_visibility_change",
			Domain: name + ".example", Payload: []byte(`{"id":"evt_` + name + `"}`), CreatedAt: t0})
	})

	d := newDomain("dom_"+name, acct, "", name+".example", t0)
	update(t, s, "InsertDomain", func(tx store.Tx) error { return tx.InsertDomain(d) })
	sc := newScan("scan_"+name, acct, "", d.ID, t0)
	sc.Domain, sc.Status, sc.FinishedAt = d.Domain, store.ScanCompleted, t0
	update(t, s, "InsertScan", func(tx store.Tx) error { return tx.InsertScan(sc) })
	insertAnswers(t, s, scanAnswers(sc.ID, 5, t0))
	tok := newIngestToken("itk_"+name, acct, d.ID)
	tok.Source, tok.SigningSecret = store.TrafficVercel, "sealed:drain-"+name
	must(t, s.CreateIngestToken(ctx, tok), "CreateIngestToken")
	var hits []store.CrawlerHits
	for i := range 5 {
		hits = append(hits, hit(dayN(-i), "/"+name, "GPTBot", "verified", int64(i+1)))
	}
	_, err := s.AddTrafficBatch(ctx, newBatch("tb_"+name, acct, d.ID, tok.ID, name, t0), hits,
		[]store.ReferralVisits{visit(day0, "/"+name, "chatgpt", 1), visit(dayN(-1), "/"+name, "chatgpt", 1), visit(dayN(-2), "/"+name, "chatgpt", 1)})
	must(t, err, "AddTrafficBatch")
	chg := newChange("chg_"+name, acct, d.ID, t0)
	chg.Pages, chg.Prompts, chg.ContentRequestID = []string{"/" + name}, []string{"best " + name + "?"}, "cr_"+name
	must(t, s.CreateChange(ctx, chg), "CreateChange")
	for i := range 5 {
		addReading(t, s, newReading(acct, "", d.Domain, 40+i, t0.Add(time.Duration(i)*time.Second)))
	}

	cr := contentRequest("cr_"+name, acct, cli, t0)
	cr.Domain = name + ".example"
	insertRequests(t, s, cr)
	update(t, s, "budget and idempotency", func(tx store.Tx) error {
		if err := tx.AddToBudgetMonth(acct, "2025-06", 0, cr.Budget); err != nil {
			return err
		}
		return tx.PutIdempotency(store.Idempotency{Scope: store.IdempotencyScopePrefix(acct) + cli, Key: "idem", RequestHash: []byte("h"),
			Status: 201, Body: []byte(`{"id":"cr_` + name + `"}`), CreatedAt: t0})
	})
	must(t, s.SaveCounts(ctx, []store.Window{{AccountID: acct, Window: "minute", Start: t0, Count: 3}},
		[]store.KeyUsage{{KeyID: k.ID, AccountID: acct, Hour: t0.Truncate(time.Hour), Count: 3, LastUsed: t0}}), "SaveCounts")
	keySubject, emailSubject := store.KeyGuardSubject(k.KeyHash), store.EmailGuardSubject(email)
	for _, subject := range [][]byte{keySubject, emailSubject} {
		_, _, err := s.TakeGuard(ctx, store.GuardTake{Guard: "auth", Subject: subject, Start: t0.Unix(), End: t0.Unix() + 60, Limit: 10})
		must(t, err, "TakeGuard")
	}

	marks := []string{name, hex.EncodeToString(keySubject), hex.EncodeToString(emailSubject)}
	for _, id := range dids {
		marks = append(marks, id)
	}
	marks = append(marks, pending.ID)
	secrets := []string{secret1, "xoxb-" + name, u.PasswordHash, sess.CSRF, string(sess.TokenHash), hex.EncodeToString(sess.TokenHash),
		base64.StdEncoding.EncodeToString(sess.TokenHash), base64.StdEncoding.EncodeToString(k.KeyHash),
		base64.StdEncoding.EncodeToString(k.SecretHash), base64.StdEncoding.EncodeToString([]byte("inv2-" + name)),
		base64.StdEncoding.EncodeToString(tok.Hash), hex.EncodeToString(tok.Hash), tok.SigningSecret}
	return filled{marks: marks, secrets: secrets}
}

// RowText is a row as a Catalog gives it: each value, bytes as text and
// as hex.
func RowText(vals []any) string {
	var b strings.Builder
	for _, v := range vals {
		if x, ok := v.([]byte); ok {
			fmt.Fprintf(&b, "%s|%x|", x, x)
			continue
		}
		fmt.Fprintf(&b, "%v|", v)
	}
	return b.String()
}
