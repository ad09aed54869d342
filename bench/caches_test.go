package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/aivis/aivis/core/api"
	"github.com/aivis/aivis/core/app"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/engines"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/tlsconf"
)

// BenchmarkCaches measures budget-status on one cluster instance (the
// PostgreSQL store, counter -cluster-counter), in this process, with the
// store's hot reads served three ways, each in a closed loop then in an
// open loop at half its peak:
//
//   - cache, versions read: the store's caches (core/store/cache) under
//     the engine's signal, which reads the topics' versions with one
//     statement per check, a check shared by the requests that began
//     before it (what the server runs);
//   - no cache: every read a statement (the key and its account, the
//     month's budget and active requests);
//   - cache, LISTEN/NOTIFY: the same caches under a signal fed by
//     notifications that triggers send at the commit of every change of a
//     topic; a check sends an empty statement on the listening connection,
//     since PostgreSQL sends every notification of a transaction that
//     committed before the statement ahead of its answer: without that
//     round trip a key revoked on another instance could be served until
//     its notification arrived.
//
// The CPU a request is reported for this process (the generator's
// included) and PostgreSQL. It runs its phases once whatever b.N is; run
// it with -benchtime=1x.
func BenchmarkCaches(b *testing.B) {
	ctx := context.Background()
	d := newDeployment(b, "cluster")
	svc := d.open(b)
	b.Cleanup(func() { svc.Close() })
	creds := newAccounts(b, svc)
	raw := svc.Store.(*cache.Store).Store
	listen := newNotifySignal(b, d.cfg.PostgresURL)

	mat, err := tlsconf.Load("", "", b.TempDir(), []string{"127.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	lim, err := engines.Counters[d.cfg.Counter](ctx, d.cfg, svc.Store, quiet())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lim.Close() })
	serve := func(st store.Store) Target {
		srv := api.New(api.Config{}, api.Deps{Store: st, Auth: &auth.Service{Keys: st, Accounts: st, Now: time.Now},
			Content: &content.Service{Store: st, Now: time.Now}, Counter: lim.Counter, Guard: limits.NewAuthGuard(1_000_000, time.Minute), Log: quiet()})
		addr := serveTLS(b, srv.Handler(), mat.Config())
		return Metered{Target: NewH1(addr, "localhost", "/api/v1/ai/budget-status", clientTLS(b, mat.Cert, "http/1.1"), creds),
			Meter: d.servers}
	}
	variants := []struct {
		name string
		st   store.Store
	}{
		{"cache, versions read", svc.Store},
		{"no cache", raw},
		{"cache, LISTEN/NOTIFY", cache.Wrap(raw, listen)},
	}
	for _, v := range variants {
		checkRevocation(b, d, svc, v.st)
	}

	var rs []Result
	var rows strings.Builder
	for _, v := range variants {
		t := serve(v.st)
		closed, err := ClosedLoop(ctx, "budget-status, "+v.name, t, *workers, *warmup, *phase)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		open, err := OpenLoop(ctx, "budget-status, "+v.name, t, *openWorkers, *openShare*closed.Rate(), *warmup, *phase)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		rs = append(rs, closed, open)
		fmt.Fprintf(&rows, "| %s | %.0f | %s/%s | %s/%s (%s) | %s |\n", v.name, closed.Rate(), ms(closed.P50), ms(closed.P99),
			ms(open.P50), ms(open.P99), ms(open.LagP99), closed.Procs.per(closed.Requests))
		key := strings.NewReplacer(", ", "-", " ", "-", "/", "").Replace(v.name)
		b.ReportMetric(closed.Rate(), key+"-req/s")
		b.ReportMetric(us(closed.Procs.get("postgres")/time.Duration(max(closed.Requests, 1))), key+"-postgres-µs/req")
	}
	for _, r := range rs {
		if r.OKShare() < 0.99 {
			b.Errorf("%s (%s loop): only %.2f%% of responses were 200 (statuses %v)", r.Name, r.Mode, 100*r.OKShare(), r.Status)
		}
	}
	b.ReportMetric(0, "ns/op")
	fmt.Fprintf(os.Stdout, "\nBenchmarkCaches: budget-status on one cluster instance in this process (counter %s), %d workers closed loop, open loop at %.0f%% of each one's peak\n\n%s\n",
		d.cfg.Counter, *workers, 100**openShare, Table(rs))
	fmt.Fprintf(os.Stdout, "| reads | req/s | p50/p99 ms closed | p50/p99 ms open (generator lag p99) | CPU µs a request (closed loop) |\n|---|---:|---|---|---|\n%s\n", rows.String())
}

// checkRevocation revokes a key through another handle of the
// deployment's database, as another instance or the CLI would, and checks
// that st, which has just served it, refuses it from the next request on.
func checkRevocation(b *testing.B, d *deployment, svc *app.Services, st store.Store) {
	ctx := context.Background()
	a, err := svc.Accounts.Create(ctx, "Revoked", "starter", false)
	if err != nil {
		b.Fatal(err)
	}
	k, err := svc.Auth.CreateKey(ctx, auth.NewKey{AccountID: a.ID, Name: "revoked"})
	if err != nil {
		b.Fatal(err)
	}
	as := &auth.Service{Keys: st, Accounts: st, Now: time.Now}
	if _, err := as.Authenticate(cache.AsOf(ctx, time.Now()), k.APIKey, k.Secret, true); err != nil {
		b.Fatal(err)
	}
	other := d.open(b)
	defer other.Close()
	if _, err := other.Auth.Revoke(ctx, k.Key.ID); err != nil {
		b.Fatal(err)
	}
	if _, err := as.Authenticate(cache.AsOf(ctx, time.Now()), k.APIKey, k.Secret, true); err == nil {
		b.Fatal("a key revoked through another handle was served by the next request")
	}
}

// notifySignal is a cache.Signal fed by LISTEN/NOTIFY: triggers on the
// tables of each topic (those that insert into cache_bumps) notify the
// channel aivis_cache with the topic, which PostgreSQL delivers once the
// transaction commits; a connection of its own listens and counts them.
// Versions sends an empty statement on it and returns the counts once
// the answer has come: every transaction that committed before the
// statement was sent signalled the listener's backend before its commit
// returned, and the backend sends what it was signalled ahead of the
// statement's answer.
type notifySignal struct {
	conn *pgx.Conn
	n    [3]atomic.Int64 // keys, budgets, targets
}

func newNotifySignal(b *testing.B, url string) *notifySignal {
	ctx := context.Background()
	s := &notifySignal{}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	topics := map[string]*atomic.Int64{"keys": &s.n[0], "budgets": &s.n[1], "targets": &s.n[2]}
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
		if c := topics[n.Payload]; c != nil {
			c.Add(1)
		}
	}
	if s.conn, err = pgx.ConnectConfig(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.conn.Close(context.Background()) })
	// The triggers that bump a topic notify it too.
	_, err = s.conn.Exec(ctx, `CREATE FUNCTION cache_notify() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_notify('aivis_cache', TG_ARGV[0]); RETURN NULL; END $$`)
	if err != nil {
		b.Fatal(err)
	}
	rows, err := s.conn.Query(ctx, `SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		WHERE NOT t.tgisinternal AND pg_get_triggerdef(t.oid) LIKE '%cache_bump(%'`)
	if err != nil {
		b.Fatal(err)
	}
	var defs []string
	for rows.Next() {
		var table, name, def string
		if err := rows.Scan(&table, &name, &def); err != nil {
			b.Fatal(err)
		}
		def = strings.Replace(def, "TRIGGER "+name+" ", "TRIGGER "+name+"_notify ", 1)
		defs = append(defs, strings.Replace(def, "cache_bump(", "cache_notify(", 1))
	}
	if err := rows.Err(); err != nil || len(defs) == 0 {
		b.Fatalf("the cache triggers: %d found (%v)", len(defs), err)
	}
	for _, def := range append(defs, "LISTEN aivis_cache") {
		if _, err := s.conn.Exec(ctx, def); err != nil {
			b.Fatalf("%s: %v", def, err)
		}
	}
	return s
}

// Versions fences the notifications: one check at a time (the cache
// makes them so).
func (s *notifySignal) Versions(ctx context.Context) (cache.Versions, error) {
	if _, err := s.conn.Exec(ctx, ";"); err != nil {
		return cache.Versions{}, err
	}
	return cache.Versions{Keys: s.n[0].Load(), Budgets: s.n[1].Load(), Targets: s.n[2].Load()}, nil
}
