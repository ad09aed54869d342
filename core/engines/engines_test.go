package engines_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/aivis/aivis/config"
	buspg "github.com/aivis/aivis/core/bus/postgres"
	"github.com/aivis/aivis/core/engines"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/internal/syncbuf"
	"github.com/aivis/aivis/internal/testsvc"
)

func TestCheck(t *testing.T) {
	if err := engines.Check(config.Default()); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*config.Config)
		want []string
	}{
		{"store", func(c *config.Config) { c.Store = "mysql" }, []string{`store "mysql"`, "known: postgres, sqlite"}},
		{"postgres without its settings", func(c *config.Config) { c.Store = "postgres" },
			[]string{"store postgres needs postgres_url (AIVIS_POSTGRES_URL, --postgres-url)",
				"store postgres needs master_key_file (AIVIS_MASTER_KEY_FILE, --master-key-file)"}},
		{"postgres without its master key", func(c *config.Config) { c.Store, c.PostgresURL = "postgres", "host=db" },
			[]string{"store postgres needs master_key_file"}},
		{"bus", func(c *config.Config) { c.Bus = "kafka" }, []string{`bus "kafka"`, "known: nats, postgres, sqlite"}},
		{"nats without its server", func(c *config.Config) { c.Bus = "nats" }, []string{"bus nats needs nats_url (AIVIS_NATS_URL, --nats-url)"}},
		{"counter", func(c *config.Config) { c.Counter = "" }, []string{`counter ""`, "known: memory, redis, store"}},
		{"redis without its server", func(c *config.Config) { c.Counter = "redis" },
			[]string{"counter redis needs redis_url (AIVIS_REDIS_URL, --redis-url)"}},
		{"all three", func(c *config.Config) { c.Store, c.Bus, c.Counter = "a", "b", "c" },
			[]string{`store "a"`, `bus "b"`, `counter "c"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			tc.mod(&cfg)
			err := engines.Check(cfg)
			if !errors.Is(err, config.ErrInvalid) || !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("error %v, want a configuration error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// Store postgres is given its database and the master key's file.
func TestCheckPostgresAndNATS(t *testing.T) {
	cfg := config.Default()
	cfg.Store, cfg.PostgresURL, cfg.MasterKeyFile = "postgres", "host=db", "/k"
	if err := engines.Check(cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Bus, cfg.NATSURL = "nats", "nats://127.0.0.1:4222"
	if err := engines.Check(cfg); err != nil {
		t.Fatal(err)
	}
}

// TestCheckServe: a server refuses counter memory on store postgres while
// it serves the API, naming the counters that share their counts; the
// other counters, a server of workers alone and the commands (Check) are
// let through; what Check refuses, CheckServe refuses too.
func TestCheckServe(t *testing.T) {
	cfg := config.Default()
	cfg.Store, cfg.PostgresURL, cfg.MasterKeyFile = "postgres", "postgres://aivis:s3cr3t@db.example/aivis", "/k"
	err := engines.CheckServe(cfg)
	if !errors.Is(err, config.ErrInvalid) || !strings.HasPrefix(err.Error(), "config: counter memory cannot serve the API of store postgres") ||
		!strings.Contains(err.Error(), "choose counter redis (or store)") || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("counter memory on store postgres: %v; want a configuration error naming the counters to choose", err)
	}
	if err := engines.Check(cfg); err != nil {
		t.Errorf("the commands' Check refuses counter memory on store postgres: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*config.Config)
	}{
		{"counter store", func(c *config.Config) { c.Counter = "store" }},
		{"counter redis", func(c *config.Config) { c.Counter, c.RedisURL = "redis", "redis://127.0.0.1:6379/0" }},
		{"the workers alone", func(c *config.Config) { c.API = false }},
		{"store sqlite", func(c *config.Config) { c.Store = "sqlite" }},
	} {
		c := cfg
		tc.mod(&c)
		if err := engines.CheckServe(c); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	c := cfg
	c.Bus = "kafka"
	if err := engines.CheckServe(c); err == nil || !strings.Contains(err.Error(), `bus "kafka"`) {
		t.Errorf("CheckServe of what Check refuses: %v", err)
	}
}

// open opens the configured store of a new data directory, as the server
// does.
func open(t *testing.T) (config.Config, store.Store, engines.Outbox) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	opened := openDir(t, cfg)
	return cfg, opened.Store, opened.Outbox
}

// openDir opens the configured store of cfg's data directory, as a server
// does, and closes it when the test ends.
func openDir(t *testing.T, cfg config.Config) engines.Opened {
	t.Helper()
	box, _, err := secrets.Load(filepath.Join(cfg.DataDir, secrets.KeyFile), true)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := engines.Stores[cfg.Store](t.Context(), cfg, box)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opened.Store.Close() })
	return opened
}

// TestSQLiteBusReadsTheStoresOutbox: the bus, opened from the store's
// outbox alone, delivers what the store's transactions published, to each
// consumer group.
func TestSQLiteBusReadsTheStoresOutbox(t *testing.T) {
	cfg, st, outbox := open(t)
	events, err := engines.Buses[cfg.Bus](t.Context(), cfg, outbox, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	receiveBoth(t, events, func(sent ...*message.Message) {
		if err := st.Update(t.Context(), func(tx store.Tx) error { return tx.Publish("topic", sent...) }); err != nil {
			t.Fatal(err)
		}
	})
}

// receiveBoth subscribes two groups to topic, calls publish, and checks
// that each group receives what it published.
func receiveBoth(t *testing.T, events engines.Bus, publish func(sent ...*message.Message)) {
	t.Helper()
	msgs := map[string]<-chan *message.Message{}
	for _, group := range []string{"one", "two"} {
		sub, err := events.Subscriber(engines.Consumer{Group: group, InFlight: 4, Batch: 10})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Close() })
		if msgs[group], err = sub.Subscribe(t.Context(), "topic"); err != nil {
			t.Fatal(err)
		}
	}
	sent := []*message.Message{message.NewMessage("m1", []byte("first")), message.NewMessage("m2", []byte("second"))}
	publish(sent...)
	for group, ch := range msgs {
		got := map[string]string{}
		for range sent {
			select {
			case m := <-ch:
				got[m.UUID] = string(m.Payload)
				m.Ack()
			case <-time.After(10 * time.Second):
				t.Fatalf("group %s: %d of %d messages in 10 s", group, len(got), len(sent))
			}
		}
		for _, want := range sent {
			if got[want.UUID] != string(want.Payload) {
				t.Errorf("group %s got %v, want %s %q", group, got, want.UUID, want.Payload)
			}
		}
	}
}

// TestBusesOfThePostgresStore: buses postgres and nats, opened from the
// outbox of the PostgreSQL store of the registry, deliver what its
// transactions published to each consumer group (nats through the
// forwarder).
func TestBusesOfThePostgresStore(t *testing.T) {
	for _, bus := range []string{"postgres", "nats"} {
		t.Run(bus, func(t *testing.T) {
			opened, events := openPostgresBus(t, bus)
			receiveBoth(t, events, func(sent ...*message.Message) {
				if err := opened.Store.Update(t.Context(), func(tx store.Tx) error { return tx.Publish("topic", sent...) }); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// openPostgresBus opens the PostgreSQL store of the registry on a new
// database and bus (postgres, or nats on a stream of its own) on its
// outbox, both closed when the test ends.
func openPostgresBus(t *testing.T, bus string) (engines.Opened, engines.Bus) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.Store, cfg.Bus, cfg.PostgresURL = t.TempDir(), "postgres", bus, testsvc.Postgres(t)
	cfg.NATSURL, cfg.ClusterName = testsvc.NATS(t)
	opened := openDir(t, cfg)
	events, err := engines.Buses[cfg.Bus](t.Context(), cfg, opened.Outbox, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { events.Close() })
	return opened, events
}

// TestNATSBusDropsOnlyWhatNATSCannotCarry: of the events of a transaction
// that the forwarder reads together, one whose metadata a NATS header
// cannot carry is dropped, and those before and after it arrive.
func TestNATSBusDropsOnlyWhatNATSCannotCarry(t *testing.T) {
	opened, events := openPostgresBus(t, "nats")
	sub, err := events.Subscriber(engines.Consumer{Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ch, err := sub.Subscribe(t.Context(), "topic")
	if err != nil {
		t.Fatal(err)
	}
	bad := message.NewMessage("bad", nil)
	bad.Metadata.Set("note", "two\nlines")
	sent := []*message.Message{message.NewMessage("first", nil), bad, message.NewMessage("last", nil)}
	if err := opened.Store.Update(t.Context(), func(tx store.Tx) error { return tx.Publish("topic", sent...) }); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first", "last"} {
		select {
		case m := <-ch:
			m.Ack()
			if m.UUID != want {
				t.Fatalf("got %s, want %s", m.UUID, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s in 10 s", want)
		}
	}
}

// TestBusesRefuseAnOutboxTheyCannotRead: each bus names the store it needs
// when given another's outbox, or one opened for another bus; nats needs
// its server.
func TestBusesRefuseAnOutboxTheyCannotRead(t *testing.T) {
	cfg := config.Default()
	cfg.NATSURL = "nats://127.0.0.1:4222"
	for _, tc := range []struct {
		bus    string
		outbox engines.Outbox
		want   []string
	}{
		{"postgres", engines.SQLiteOutbox{Path: "x"}, []string{`store "sqlite"`, "store postgres"}},
		{"nats", engines.SQLiteOutbox{Path: "x"}, []string{`store "sqlite"`, "store postgres"}},
		{"postgres", &buspg.Outbox{Forward: true}, []string{"opened for another bus"}},
		{"nats", &buspg.Outbox{Forward: false}, []string{"opened for another bus"}},
	} {
		b, err := engines.Buses[tc.bus](t.Context(), cfg, tc.outbox, nil)
		if err == nil {
			b.Close()
			t.Fatalf("bus %s opened on %#v", tc.bus, tc.outbox)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("bus %s: error %q does not say %q", tc.bus, err, w)
			}
		}
	}
	cfg.NATSURL = ""
	if _, err := engines.Buses["nats"](t.Context(), cfg, &buspg.Outbox{Forward: true}, nil); err == nil ||
		!strings.Contains(err.Error(), "nats_url") {
		t.Errorf("bus nats without nats_url: %v", err)
	}
}

func TestSQLiteBusRefusesAnotherStoresOutbox(t *testing.T) {
	cfg := config.Default()
	cfg.Store = "elsewhere"
	b, err := engines.Buses["sqlite"](context.Background(), cfg, struct{}{}, nil)
	if err == nil {
		b.Close()
		t.Fatal("the SQLite bus opened on the outbox of another store")
	}
	if !strings.Contains(err.Error(), `store "elsewhere"`) || !strings.Contains(err.Error(), "store sqlite") {
		t.Fatalf("error %q does not say which store it needs", err)
	}
}

// TestMemoryCounterPersistsBehindTheStore: the memory counter starts from
// the counts its store saved, and writes its own when Run ends.
func TestMemoryCounterPersistsBehindTheStore(t *testing.T) {
	cfg, st, _ := open(t)
	ctx := t.Context()
	a := store.Account{ID: "acct_1", Name: "A", Tier: "starter", Type: store.AccountStandard, CreatedAt: time.Now()}
	if err := st.CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	caps := [3]int{100, 1000, 10000}
	now := time.Now()
	opened, err := engines.Counters[cfg.Counter](ctx, cfg, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c := opened.Counter
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { c.Run(runCtx); close(done) }()
	for range 3 {
		if d, err := c.Take(ctx, limits.Use{AccountID: a.ID, KeyID: "key_1", At: now}, caps); err != nil || !d.Allowed {
			t.Fatalf("Take: %+v, %v", d, err)
		}
	}
	stop()
	<-done

	again, err := engines.Counters[cfg.Counter](ctx, cfg, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := again.Counter.Peek(ctx, a.ID, caps, now); err != nil || d.Count != [3]int{3, 3, 3} {
		t.Fatalf("a new counter sees the counts %v, want the 3 requests in each window", d.Count)
	}
}

// TestStoreCounterSharedByEveryHandle: the store counter of two servers on
// one data directory counts in the store they share: what one takes, the
// other sees and counts on from; and so do its guards of failed
// authentications: an address out of failures at one is refused at the
// other.
func TestStoreCounterSharedByEveryHandle(t *testing.T) {
	cfg, st, _ := open(t)
	cfg.Counter = "store"
	if err := engines.Check(cfg); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var cs []limits.Counter
	var gs []limits.Guard
	for _, s := range []store.Store{st, openDir(t, cfg).Store} {
		opened, err := engines.Counters[cfg.Counter](ctx, cfg, s, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if !opened.Counter.Shared() {
			t.Fatal("the store counter says its counts are not shared")
		}
		cs = append(cs, opened.Counter)
		gs = append(gs, opened.Guards("auth", 2, time.Minute))
	}
	a := limits.AddrSubject(netip.MustParseAddr("203.0.113.7"))
	for i := range 2 {
		if tl, err := gs[0].Take(ctx, a, time.Now()); err != nil || !tl.Allowed {
			t.Fatalf("failure %d at server 1: %+v, %v", i+1, tl, err)
		}
	}
	if tl, err := gs[1].Peek(ctx, a, time.Now()); err != nil || tl.Allowed || tl.Err() == nil {
		t.Fatalf("server 2's guard after the address's 2 failures at server 1: %+v, %v; want it refused", tl, err)
	}
	now, caps := time.Now(), [3]int{2, 1000, 10000}
	for i, c := range cs {
		if d, err := c.Take(ctx, limits.Use{AccountID: "acct_1", At: now}, caps); err != nil || !d.Allowed || d.Count[0] != i+1 {
			t.Fatalf("Take on server %d: %+v, %v; want allowed, the %d. of the minute", i+1, d, err, i+1)
		}
	}
	for i, c := range cs {
		if d, err := c.Peek(ctx, "acct_1", caps, now); err != nil || d.Allowed || d.Count[0] != 2 {
			t.Fatalf("Peek on server %d: %+v, %v; want both requests and the minute full", i+1, d, err)
		}
	}
}

// The postgres store of the registry: the database of postgres_url, read
// through its caches, with its outbox, which the SQLite bus refuses.
func TestPostgresStore(t *testing.T) {
	cfg := config.Default()
	cfg.Store, cfg.PostgresURL = "postgres", testsvc.Postgres(t)
	key := make([]byte, 32)
	box, err := secrets.New(key)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := engines.Stores[cfg.Store](t.Context(), cfg, box)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Store.Close()
	if _, ok := opened.Store.(*cache.Store); !ok || opened.Holder == "" {
		t.Errorf("store %T, holder %q: want the cached store and a holder", opened.Store, opened.Holder)
	}
	if ob, ok := opened.Outbox.(*buspg.Outbox); !ok || !ob.Forward {
		t.Errorf("outbox %T %+v, want a *buspg.Outbox that forwards (bus sqlite is not postgres)", opened.Outbox, opened.Outbox)
	}
	a := store.Account{ID: "acct_1", Name: "a", Tier: "starter", Type: store.AccountStandard, CreatedAt: time.Now()}
	if err := opened.Store.CreateAccount(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if _, err := opened.Store.Account(t.Context(), "acct_1"); err != nil {
		t.Fatal(err)
	}
	b, err := engines.Buses["sqlite"](t.Context(), cfg, opened.Outbox, nil)
	if err == nil {
		b.Close()
		t.Fatal("the SQLite bus opened on PostgreSQL's outbox")
	}
	if !strings.Contains(err.Error(), `store "postgres"`) {
		t.Errorf("error %q does not name the store", err)
	}
}

// Counter redis refuses to start when its server does not answer, and
// says so without the password of redis_url.
func TestRedisCounterRefusesAnUnansweringServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	cfg := config.Default()
	cfg.Counter, cfg.RedisURL = "redis", "redis://aivis:s3cr3t@"+dead+"/0"
	if err := engines.Check(cfg); err != nil {
		t.Fatal(err)
	}
	_, err = engines.Counters[cfg.Counter](t.Context(), cfg, nil, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "redis_url does not answer") || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("error %v; want one saying the server does not answer, without the password", err)
	}
	cfg.RedisURL = "redis://aivis:s3cr3t@" + dead + "/not-a-db"
	if _, err := engines.Counters[cfg.Counter](t.Context(), cfg, nil, slog.New(slog.DiscardHandler)); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("a malformed redis_url: %v", err)
	}
}

// TestNATSBusLogsALostServerOnce: bus nats on a NATS reached through a
// relay that the test cuts and mends. The cut is logged once, as a
// warning, and the return once, however many connections the bus has
// (its own, the forwarder's publisher, a subscriber), naming neither the
// password of nats_url nor the server's address; the events committed
// while NATS was away arrive once it is back.
func TestNATSBusLogsALostServerOnce(t *testing.T) {
	natsURL, cluster := testsvc.NATS(t)
	relay := testsvc.NewRelay(t, natsURL)
	u, err := url.Parse(relay.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("aivis", "s3cr3t")
	cfg := config.Default()
	cfg.DataDir, cfg.Store, cfg.Bus, cfg.PostgresURL = t.TempDir(), "postgres", "nats", testsvc.Postgres(t)
	cfg.NATSURL, cfg.ClusterName = u.String(), cluster
	opened := openDir(t, cfg)
	var logs syncbuf.Buffer
	events, err := engines.Buses[cfg.Bus](t.Context(), cfg, opened.Outbox, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	sub, err := events.Subscriber(engines.Consumer{Group: "g", InFlight: 4, Batch: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ch, err := sub.Subscribe(t.Context(), "topic")
	if err != nil {
		t.Fatal(err)
	}
	publish := func(ids ...string) {
		t.Helper()
		var msgs []*message.Message
		for _, id := range ids {
			msgs = append(msgs, message.NewMessage(id, nil))
		}
		if err := opened.Store.Update(t.Context(), func(tx store.Tx) error { return tx.Publish("topic", msgs...) }); err != nil {
			t.Fatal(err)
		}
	}
	receive := func(ids ...string) {
		t.Helper()
		want := map[string]bool{}
		for _, id := range ids {
			want[id] = true
		}
		for len(want) > 0 {
			select {
			case m := <-ch:
				m.Ack()
				delete(want, m.UUID)
			case <-time.After(30 * time.Second):
				t.Fatalf("%v not received in 30 s; the log:\n%s", slices.Sorted(maps.Keys(want)), logs.String())
			}
		}
	}
	const lost, back = "bus nats: the NATS server is lost", "bus nats: the NATS server answers again"
	publish("before")
	receive("before")
	relay.Cut()
	logs.WaitFor(t, lost, 30*time.Second)
	publish("during 1", "during 2")
	relay.Mend(t)
	logs.WaitFor(t, back, 30*time.Second)
	receive("during 1", "during 2")
	publish("after") // the fence: what the bus logs of the cut is logged before it
	receive("after")
	log := logs.String()
	if n, m := strings.Count(log, lost), strings.Count(log, back); n != 1 || m != 1 {
		t.Errorf("the cut is logged %d times and the return %d times, want once each:\n%s", n, m, log)
	}
	for line := range strings.Lines(log) {
		if strings.Contains(line, lost) && !strings.Contains(line, "level=WARN") || strings.Contains(line, back) && !strings.Contains(line, "level=INFO") {
			t.Errorf("want the cut as a warning and the return as information: %s", line)
		}
		if strings.Contains(line, "s3cr3t") || strings.Contains(line, u.Host) {
			t.Errorf("the log names the password or the server's address: %s", line)
		}
	}
}
