package postgres_test

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	buspg "github.com/aivis/aivis/core/bus/postgres"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/internal/testsvc"
)

// conn is a plain connection to the database at dsn, for looking at what
// the store wrote.
func conn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, dsn)
	must(t, err)
	t.Cleanup(func() { c.Close(ctx) })
	return c
}

// migrationFiles counts the migrations the engine embeds.
func migrationFiles(t *testing.T) int {
	t.Helper()
	files, err := fs.Glob(os.DirFS("migrations"), "*.sql")
	must(t, err)
	return len(files)
}

// applied lists the versions goose recorded as applied, with how many
// times each was.
func applied(t *testing.T, dsn string) map[int64]int {
	t.Helper()
	rows, err := conn(t, dsn).Query(ctx, `SELECT version_id FROM goose_db_version WHERE version_id > 0 AND is_applied`)
	must(t, err)
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	must(t, err)
	out := map[int64]int{}
	for _, v := range vs {
		out[v]++
	}
	return out
}

// Open migrates an empty database, and opens a migrated one again without
// applying anything twice.
func TestMigrationsOnAnEmptyDatabaseAndAgain(t *testing.T) {
	dsn, key := testsvc.Postgres(t), box(t)
	want := migrationFiles(t)
	db, err := postgres.Open(ctx, dsn, key)
	must(t, err)
	must(t, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "a", Tier: "starter", Type: store.AccountStandard, CreatedAt: time.Now()}))
	db.Close()
	db = open(t, dsn, key)
	if _, err := db.Account(ctx, "acct_1"); err != nil {
		t.Errorf("the account after opening again: %v", err)
	}
	got := applied(t, dsn)
	if len(got) != want {
		t.Errorf("%d migrations applied, want %d: %v", len(got), want, got)
	}
	for v, n := range got {
		if n != 1 {
			t.Errorf("migration %d applied %d times", v, n)
		}
	}
}

// Instances that open one new database at once wait for the one that
// migrates it: each migration is applied once, and every open succeeds.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	dsn, key := testsvc.Postgres(t), box(t)
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			<-start
			db, err := postgres.Open(ctx, dsn, key)
			if err == nil {
				db.Close()
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
	got := applied(t, dsn)
	if len(got) != migrationFiles(t) {
		t.Errorf("migrations applied: %v, want each of %d once", got, migrationFiles(t))
	}
	for v, n := range got {
		if n != 1 {
			t.Errorf("migration %d applied %d times", v, n)
		}
	}
}

// The claims' queries go along their indexes on tables that hold far more
// rows than they take.
func TestClaimPlansUseIndexes(t *testing.T) {
	dsn := testsvc.Postgres(t)
	open(t, dsn, box(t))
	c := conn(t, dsn)
	_, err := c.Exec(ctx, `
		INSERT INTO accounts (id, name, tier, type, created_at, created_at_ns) VALUES ('acct_1', 'a', 'starter', 'standard', now(), 0);
		INSERT INTO webhooks (id, account_id, domain, url, events, min_score_change, enabled, secret, failures, name, domains,
			settings, secret_fields, subscription, created_at, created_at_ns, updated_at, updated_at_ns)
			SELECT 'wh_' || i, 'acct_1', 'd' || i || '.example', 'https://example.com', '{}', 0, true, '', 0, '', '{}', '', '{}', false,
				now(), 0, now(), 0 FROM generate_series(1, 200) i;
		INSERT INTO webhook_deliveries (id, webhook_id, account_id, event_id, event, payload, status, attempts, step,
			next_attempt_at, next_attempt_at_ns, created_at, created_at_ns, updated_at, updated_at_ns)
			SELECT 'dlv_' || lpad(i::text, 8, '0'), 'wh_' || (i % 200 + 1), 'acct_1', 'evt_' || lpad(i::text, 8, '0'), 'e', '\x00',
				CASE WHEN i % 500 = 0 THEN 'pending' ELSE 'succeeded' END, 1, 0,
				CASE WHEN i % 500 = 0 THEN now() - interval '1 minute' END, CASE WHEN i % 500 = 0 THEN 0 END, now(), 0, now(), 0
			FROM generate_series(1, 50000) i;
		INSERT INTO scans (id, account_id, domain_id, domain, trigger, status, created_at, created_at_ns)
			SELECT 'scan_' || i, 'acct_1', 'dom_' || i, 'd.example', 'scheduled',
				CASE WHEN i % 500 = 0 THEN 'queued' ELSE 'completed' END, now(), 0 FROM generate_series(1, 50000) i;
		INSERT INTO content_requests (id, account_id, client_id, type, status, domain, target_queries, metadata, budget, spent,
			budget_month, created_at, created_at_ns, updated_at, updated_at_ns, started_at, started_at_ns)
			SELECT 'cr_' || i, 'acct_1', 'cli_' || (i % 10), 'analyze',
				CASE WHEN i % 500 = 0 THEN 'queued' WHEN i % 500 = 1 THEN 'processing' ELSE 'completed' END, 'd.example',
				'{}', '{}', 10, 0, '2025-06', now(), 0, now(), 0, now(), 0 FROM generate_series(1, 50000) i;
		UPDATE content_requests SET lease_until = now() + interval '1 minute', lease_until_ns = 0 WHERE status = 'processing';
		ANALYZE`)
	must(t, err)
	for _, q := range postgres.ClaimQueries {
		rows, err := c.Query(ctx, `EXPLAIN `+q.Query, postgres.ClaimArgs(q.Name, time.Now())...)
		must(t, err)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		must(t, err)
		plan := strings.Join(lines, "\n")
		for _, table := range []string{"webhook_deliveries", "scans", "content_requests"} {
			if strings.Contains(plan, "Seq Scan on "+table) {
				t.Errorf("%s scans %s whole:\n%s", q.Name, table, plan)
			}
		}
		if !strings.Contains(plan, q.Index) {
			t.Errorf("%s does not use %s:\n%s", q.Name, q.Index, plan)
		}
	}
}

// An Update that loses a serialization failure to a transaction that
// committed meanwhile runs again, and sees what that one wrote: whether
// its function returned the failure or went on as if nothing happened.
// A transaction that finds the locks' shared memory full runs again: the
// server's error (53200, "out of shared memory", which the predicate locks
// of many SERIALIZABLE transactions at once can cause) raised in its
// first run, the second run commits.
func TestUpdateRunsAgainWhenTheLocksMemoryIsFull(t *testing.T) {
	db := open(t, testsvc.Postgres(t), box(t))
	must(t, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "a", Tier: "starter", Type: store.AccountStandard, CreatedAt: time.Now()}))
	runs := 0
	err := db.Update(ctx, func(tx store.Tx) error {
		runs++
		if runs == 1 {
			return postgres.ExecIn(tx, `DO $$ BEGIN RAISE EXCEPTION 'out of shared memory'
				USING ERRCODE = '53200', HINT = 'You might need to increase max_pred_locks_per_transaction.'; END $$`)
		}
		return tx.InsertDomain(store.MonitoredDomain{ID: "dom_a", AccountID: "acct_1", Domain: "a.example", CreatedAt: time.Now(), UpdatedAt: time.Now()})
	})
	if err != nil || runs != 2 {
		t.Fatalf("Update: %v after %d runs, want nil after 2", err, runs)
	}
	if _, err := db.MonitoredDomain(ctx, "acct_1", "dom_a"); err != nil {
		t.Errorf("the second run's domain: %v", err)
	}
}

func TestUpdateRunsAgainAfterASerializationFailure(t *testing.T) {
	for _, swallow := range []bool{false, true} {
		name := map[bool]string{false: "ErrorReturned", true: "ErrorSwallowed"}[swallow]
		t.Run(name, func(t *testing.T) {
			db := open(t, testsvc.Postgres(t), box(t))
			must(t, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "a", Tier: "starter", Type: store.AccountStandard, CreatedAt: time.Now()}))
			domain := func(id, name string) store.MonitoredDomain {
				return store.MonitoredDomain{ID: id, AccountID: "acct_1", Domain: name, CreatedAt: time.Now(), UpdatedAt: time.Now()}
			}
			read, written := make(chan struct{}), make(chan error)
			go func() {
				<-read
				written <- db.Update(ctx, func(tx store.Tx) error {
					if _, err := tx.CountDomains("acct_1"); err != nil {
						return err
					}
					return tx.InsertDomain(domain("dom_b", "b.example"))
				})
			}()
			var counts []int
			err := db.Update(ctx, func(tx store.Tx) error {
				n, err := tx.CountDomains("acct_1")
				if err != nil {
					return err
				}
				counts = append(counts, n)
				if len(counts) == 1 {
					close(read)
					if err := <-written; err != nil {
						t.Errorf("the other Update: %v", err)
					}
				}
				err = tx.InsertDomain(domain("dom_a", "a.example"))
				if swallow {
					return nil
				}
				return err
			})
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
			if len(counts) != 2 || counts[0] != 0 || counts[1] != 1 {
				t.Errorf("the function counted %v domains in its runs, want [0 1]: a run, and another after the conflict", counts)
			}
			for _, id := range []string{"dom_a", "dom_b"} {
				if _, err := db.MonitoredDomain(ctx, "acct_1", id); err != nil {
					t.Errorf("%s: %v", id, err)
				}
			}
		})
	}
}

// A holder unseen for longer than its timeout is dead: a survivor ends its
// leases (deliveries, scans, content requests), which are claimed again
// long before they would have run out; a live holder's stay.
func TestDeadHoldersLeasesEnded(t *testing.T) {
	dsn, key := testsvc.Postgres(t), box(t)
	handle := func() *postgres.DB {
		db, err := postgres.OpenBeating(ctx, dsn, key, 50*time.Millisecond, 2*time.Second)
		must(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	}
	dead, survivor, live := handle(), handle(), handle()
	now := time.Now()
	hour := now.Add(time.Hour)
	must(t, dead.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "a", Tier: "starter", Type: store.AccountStandard, CreatedAt: now}))
	delivery := func(id, lease string) store.Delivery {
		return store.Delivery{ID: id, WebhookID: "wh_1", AccountID: "acct_1", EventID: "evt_" + id, Event: "e", Payload: []byte("{}"),
			Status: store.DeliveryPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now, Lease: lease, LeaseUntil: hour}
	}
	deadLease, liveLease := dead.Holder()+"/1", live.Holder()+"/1"
	err := dead.Update(ctx, func(tx store.Tx) error {
		if err := tx.InsertWebhook(store.Webhook{ID: "wh_1", AccountID: "acct_1", Domain: "example.com", URL: "https://example.com",
			Enabled: true, Secret: "whsec_x", CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		for _, d := range []store.Delivery{delivery("dlv_1", deadLease), delivery("dlv_2", liveLease)} {
			if _, err := tx.InsertDelivery(d); err != nil {
				return err
			}
		}
		if err := tx.InsertScan(store.Scan{ID: "scan_1", AccountID: "acct_1", DomainID: "dom_1", Domain: "example.com",
			Trigger: store.ScanManual, Status: store.ScanQueued, CreatedAt: now}); err != nil {
			return err
		}
		return tx.InsertContentRequest(store.ContentRequest{ID: "cr_1", AccountID: "acct_1", Type: "analyze", Status: "queued",
			Domain: "example.com", Budget: 10, BudgetMonth: "2025-06", CreatedAt: now, UpdatedAt: now})
	})
	must(t, err)
	err = dead.Update(ctx, func(tx store.Tx) error {
		if _, err := tx.ClaimScan(dead.Holder(), now, hour); err != nil {
			return err
		}
		_, err := tx.ClaimContentRequest(dead.Holder(), now, hour)
		return err
	})
	must(t, err)

	postgres.Crash(dead)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds, _, err := survivor.ClaimWebhookDeliveries(ctx, survivor.Holder()+"/1", "wh_1", now, hour, 10)
		must(t, err)
		if len(ds) > 0 {
			if len(ds) != 1 || ds[0].ID != "dlv_1" {
				t.Fatalf("claimed %+v after the holder died; want dlv_1 alone (dlv_2's holder lives)", ds)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead holder's delivery was not claimed again within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if d, _, err := survivor.Delivery(ctx, "wh_1", "dlv_2"); err != nil || d.Lease != liveLease || !d.LeaseUntil.Equal(hour) {
		t.Errorf("the live holder's delivery: lease %q until %v (%v); want %q until %v", d.Lease, d.LeaseUntil, err, liveLease, hour)
	}
	err = survivor.Update(ctx, func(tx store.Tx) error {
		sc, err := tx.ClaimScan(survivor.Holder(), now, hour)
		if err != nil || sc.ID != "scan_1" || sc.Attempts != 2 {
			return errors.Join(err, errors.New("scan_1 not claimed again"))
		}
		cr, err := tx.ClaimContentRequest(survivor.Holder(), now, hour)
		if err != nil || cr.ID != "cr_1" || cr.Attempts != 2 {
			return errors.Join(err, errors.New("cr_1 not claimed again"))
		}
		return nil
	})
	if err != nil {
		t.Errorf("the dead holder's scan and content request, before their leases end: %v", err)
	}
}

// Folding the bumps into the versions leaves every version as it was; a
// later change moves it again.
func TestFoldKeepsTheVersions(t *testing.T) {
	dsn := testsvc.Postgres(t)
	db := open(t, dsn, box(t))
	v1, err := db.Signal().Versions(ctx)
	must(t, err)
	must(t, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "a", Tier: "starter", Type: store.AccountStandard, CreatedAt: time.Now()}))
	v2, err := db.Signal().Versions(ctx)
	must(t, err)
	if v2.Keys == v1.Keys {
		t.Fatalf("a new account left the keys' version at %d", v2.Keys)
	}
	must(t, postgres.Fold(ctx, db))
	var left int
	must(t, conn(t, dsn).QueryRow(ctx, `SELECT count(*) FROM cache_bumps`).Scan(&left))
	if v3, err := db.Signal().Versions(ctx); err != nil || v3 != v2 || left != 0 {
		t.Errorf("versions after the fold: %+v (%v), %d bumps left; want %+v, none", v3, err, left, v2)
	}
	must(t, db.SetTier(ctx, "acct_1", "professional"))
	if v4, err := db.Signal().Versions(ctx); err != nil || v4.Keys == v2.Keys {
		t.Errorf("a tier changed after the fold left the keys' version at %d (%v)", v4.Keys, err)
	}
}

// Signing secrets and a connection's settings are sealed in the database.
func TestSecretsSealedAtRest(t *testing.T) {
	dsn := testsvc.Postgres(t)
	db := open(t, dsn, box(t))
	now := time.Now()
	must(t, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "a", Tier: "starter", Type: store.AccountStandard, CreatedAt: now}))
	must(t, db.Update(ctx, func(tx store.Tx) error {
		return tx.InsertWebhook(store.Webhook{ID: "wh_1", AccountID: "acct_1", Enabled: true, Secret: "whsec_plain", PrevSecret: "whsec_older",
			CreatedAt: now, UpdatedAt: now, Connection: store.Connection{Connector: "slack", Settings: []byte(`{"token":"xoxb-plain"}`)}})
	}))
	var secret, prev, settings string
	must(t, conn(t, dsn).QueryRow(ctx, `SELECT secret, prev_secret, settings FROM webhooks`).Scan(&secret, &prev, &settings))
	for _, v := range []string{secret, prev, settings} {
		if !strings.HasPrefix(v, "sealed:v2:") || strings.Contains(v, "plain") || strings.Contains(v, "older") {
			t.Errorf("stored %q, want it sealed", v)
		}
	}
	if w, err := db.Webhook(ctx, "acct_1", "wh_1"); err != nil || w.Secret != "whsec_plain" || string(w.Settings) != `{"token":"xoxb-plain"}` {
		t.Errorf("read back: %q, %s (%v)", w.Secret, w.Settings, err)
	}
}

// An error of opening never shows the URL's password.
func TestOpenErrorsHideThePassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://aivis:s3cr3t-pw@127.0.0.1:1/aivis?sslmode=disable&connect_timeout=2",
		"postgres://aivis:s3cr3t-pw@127.0.0.1:notaport/aivis",
		"host=127.0.0.1 port=1 user=aivis password=s3cr3t-pw dbname=aivis sslmode=disable connect_timeout=2",
		"postgres://aivis:s3cr3t-pw@127.0.0.1:5432/aivis?sslmode=disable&nosuchsetting=%zz",
	} {
		_, err := postgres.Open(ctx, dsn, box(t))
		if err == nil {
			t.Errorf("Open of %s succeeded", dsn)
			continue
		}
		if strings.Contains(err.Error(), "s3cr3t-pw") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

// What an Update publishes reaches a Watermill SQL subscriber of the
// outbox once it commits, and never when it rolls back.
func TestOutboxIsWatermillSQL(t *testing.T) {
	dsn := testsvc.Postgres(t)
	db := open(t, dsn, box(t))
	sub, err := buspg.NewSubscriber(db.Outbox().Pool, buspg.SubscriberConfig{Group: "test", PollInterval: 50 * time.Millisecond}, nil)
	must(t, err)
	t.Cleanup(func() { sub.Close() })
	msgs, err := sub.Subscribe(ctx, "aivis.events")
	must(t, err)
	boom := errors.New("boom")
	if err := db.Update(ctx, func(tx store.Tx) error {
		if err := tx.Publish("aivis.events", message.NewMessage("rolled-back", []byte("\x00no"))); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Update: %v", err)
	}
	must(t, db.Update(ctx, func(tx store.Tx) error {
		return tx.Publish("aivis.events", message.NewMessage("committed", []byte("\x00yes")))
	}))
	select {
	case m := <-msgs:
		if m.UUID != "committed" || string(m.Payload) != "\x00yes" {
			t.Errorf("received %s %q, want the committed message alone", m.UUID, m.Payload)
		}
		m.Ack()
	case <-time.After(2 * time.Minute):
		// A reader of the outbox takes a message once every transaction
		// older than its own has ended, on the whole server.
		var oldest string
		conn(t, dsn).QueryRow(ctx, `SELECT coalesce(max(now() - xact_start)::text, 'none') FROM pg_stat_activity
			WHERE backend_xid IS NOT NULL`).Scan(&oldest)
		t.Fatalf("the committed message did not arrive within 2 minutes (the oldest writing transaction on the server: %s)", oldest)
	}
}

// The first publish of a topic, which makes the topic's table, needs no
// connection of the pool: every one may be held by an Update publishing.
func TestFirstPublishOnAFullPool(t *testing.T) {
	u, err := url.Parse(testsvc.Postgres(t))
	must(t, err)
	q := u.Query()
	q.Set("pool_max_conns", "1")
	u.RawQuery = q.Encode()
	db := open(t, u.String(), box(t))
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	err = db.Update(ctx, func(tx store.Tx) error { return tx.Publish("aivis.events", message.NewMessage("m1", []byte("{}"))) })
	if err != nil {
		t.Fatalf("Update on a pool of one connection: %v", err)
	}
}

// TestConflictOfACopyRunsAgain: an Update whose COPY (a scan's answers)
// PostgreSQL refuses as a serialization failure runs again, as for any
// other statement. Between the Update's read of a scan and its COPY,
// another serializable transaction reads the scan's answers and changes
// the scan, and commits: the two could not have run one after the other.
func TestConflictOfACopyRunsAgain(t *testing.T) {
	u := testsvc.Postgres(t)
	db := open(t, u, box(t))
	must(t, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "A", Tier: "starter", Type: store.AccountStandard, CreatedAt: time.Now()}))
	sc := store.Scan{ID: "scan_1", AccountID: "acct_1", DomainID: "dom_1", Domain: "a.example", Trigger: store.ScanManual,
		Status: store.ScanRunning, CreatedAt: time.Now()}
	must(t, db.Update(ctx, func(tx store.Tx) error { return tx.InsertScan(sc) }))
	other, err := pgx.Connect(ctx, u)
	must(t, err)
	defer other.Close(context.Background())
	runs := 0
	err = db.Update(ctx, func(tx store.Tx) error {
		runs++
		if _, err := tx.ActiveScan("dom_1"); err != nil {
			return err
		}
		if runs == 1 {
			err := pgx.BeginTxFunc(ctx, other, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(t2 pgx.Tx) error {
				var n int
				if err := t2.QueryRow(ctx, `SELECT count(*) FROM scan_answers WHERE scan_id = 'scan_1'`).Scan(&n); err != nil {
					return err
				}
				_, err := t2.Exec(ctx, `UPDATE scans SET attempts = attempts + 1 WHERE id = 'scan_1'`)
				return err
			})
			if err != nil {
				t.Fatalf("the other transaction: %v", err)
			}
		}
		return tx.InsertScanAnswers([]store.ScanAnswer{{ScanID: "scan_1", Prompt: "Which skates?", Intent: "custom", Engine: "gpt",
			Kind: "openai-chat", Text: "Acme.", Detail: []byte(`{}`), RecordedAt: time.Now()}})
	})
	if err != nil || runs != 2 {
		t.Fatalf("Update: %v after %d runs; want it run again once", err, runs)
	}
	var n int
	must(t, other.QueryRow(ctx, `SELECT count(*) FROM scan_answers WHERE scan_id = 'scan_1'`).Scan(&n))
	if n != 1 {
		t.Errorf("%d answers kept, want 1", n)
	}
}
