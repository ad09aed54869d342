// Package postgres is the PostgreSQL store's outbox and the event bus on
// it: Watermill's SQL pub/sub (github.com/ThreeDotsLabs/watermill-sql/v4,
// its PostgreSQL schema and offsets adapter) on pgx.
//
// # The outbox
//
// The store's transactions (core/store/postgres, Tx.Publish) publish
// through Outbox.Publisher, in the same pgx transaction as the change that
// causes the event: the event commits with it, or not at all. Where the
// events go depends on the bus the outbox was made for (NewOutbox; the
// store's ForBus):
//
//   - bus: postgres reads them where they are: each topic is a table,
//     watermill_<topic> (offset, uuid, payload BYTEA, metadata JSON, the
//     writing transaction's xid8), and each topic's consumer groups keep
//     their position in watermill_offsets_<topic>.
//   - any other bus (nats) is fed by the forwarder: the events are
//     enveloped as Watermill's forwarder (components/forwarder) envelopes
//     them (their topic, UUID, payload and metadata in JSON) in the table
//     of the topic "outbox" (ForwarderTopic), and Forward moves them, in
//     commit order and in batches, to the bus's publisher.
//
// The tables are made the first time a process publishes to or subscribes
// to a topic (on a connection of their own: the publishing transaction
// holds one of the pool's).
//
// # Subscribers, at least once
//
// A subscriber of a group reads a topic in the order the transactions
// committed (transaction id, then offset; a message is read only once
// every transaction older than it has ended), up to Batch messages in one
// REPEATABLE READ transaction that locks the group's offset row, hands
// them over one at a time, each only after the one before it was acked,
// and writes the offset of the last acked one when the batch ends. So a
// group's messages come in commit order, one in flight; the subscribers of
// one group (in this process or another) take turns batch by batch. A
// nacked message is sent again a second later; one not acked within 30 s
// ends the batch, and the next read begins with it. A crash sends the
// unfinished batch again: at least once. Handlers must be idempotent.
// Watermill's acceptance suite passes with the features ConsumerGroups,
// Persistent, GuaranteedOrder and GuaranteedOrderWithSingleSubscriber.
//
// # Retention
//
// Watermill keeps every message. Each subscription here prunes its topic
// as it starts and every hour (Prune): a message goes once every consumer
// group of the topic has read past it and it is Retention (7 days) old;
// the forwarder's subscription prunes the outbox's table so. A group that
// is gone for good holds its topic's messages back until its row of
// watermill_offsets_<topic> is deleted.
//
// # pgx
//
// The bus is on pgx itself (watermill-sql's pgx adapters, TxFromPgx and
// BeginnerFromPgx), not on database/sql over pgx's stdlib: the store's
// transactions are pgx transactions, which the outbox must write in, and
// one driver and one kind of pool serve both.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	sql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/aivis/aivis/core/tracing"
)

// Name is the bus's name in the settings (bus: postgres).
const Name = "postgres"

// ForwarderTopic is the topic whose table holds the enveloped events the
// forwarder moves to another bus.
const ForwarderTopic = "outbox"

// PollInterval is how long a subscriber that has read all there is waits
// before it reads again.
const PollInterval = 100 * time.Millisecond

// Retention is how long a message is kept once every consumer group of
// its topic has read past it (a topic no group reads: from its
// publication); a subscription prunes its topic every PruneEvery.
const (
	Retention  = 7 * 24 * time.Hour
	PruneEvery = time.Hour
)

// pruneBatch bounds the rows one statement of Prune deletes.
const pruneBatch = 1000

// maxTopic is the longest topic: PostgreSQL cuts names at 63 bytes, which
// would give two long topics one offsets table.
const maxTopic = 63 - len("watermill_offsets_")

// schema is the adapter's PostgreSQL schema, payloads as bytes (an event's
// payload is JSON, another message's need not be).
func schema(batch int) sql.DefaultPostgreSQLSchema {
	return sql.DefaultPostgreSQLSchema{SubscribeBatchSize: batch, GeneratePayloadType: func(string) string { return "BYTEA" }}
}

var offsets = sql.DefaultPostgreSQLOffsetsAdapter{}

// Outbox is the outbox of the PostgreSQL store: where its transactions
// write the events they publish (Publisher), on its pool's database.
type Outbox struct {
	Pool *pgxpool.Pool
	// Forward says that the events go to another bus through the
	// forwarder (every bus but postgres).
	Forward bool
	tables  sync.Map   // topics whose tables this process has made
	making  sync.Mutex // one making of tables at a time
}

// NewOutbox is the outbox of the store on pool for the bus of the
// settings (config bus).
func NewOutbox(pool *pgxpool.Pool, bus string) *Outbox {
	return &Outbox{Pool: pool, Forward: bus != Name}
}

// Publisher is the publisher of Tx.Publish: it writes to the outbox in tx,
// enveloped for the forwarder if the events are forwarded. It may be used
// for as long as tx is open; Close does nothing.
func (o *Outbox) Publisher(tx pgx.Tx) message.Publisher {
	// NewPublisher fails only for a nil handle or adapter.
	p, _ := sql.NewPublisher(sql.TxFromPgx(tx), sql.PublisherConfig{SchemaAdapter: schema(0)}, nil)
	var pub message.Publisher = p
	if o.Forward {
		pub = forwarder.NewPublisher(pub, forwarder.PublisherConfig{ForwarderTopic: ForwarderTopic})
	}
	return txPublisher{o, pub}
}

type txPublisher struct {
	o   *Outbox
	pub message.Publisher
}

func (p txPublisher) Publish(topic string, msgs ...*message.Message) error {
	table := topic
	if p.o.Forward {
		table = ForwarderTopic
	}
	if err := checkTopic(topic); err != nil {
		return err
	}
	ctx := context.Background()
	if len(msgs) > 0 {
		ctx = msgs[0].Context() // the publisher's, as the insert's
	}
	if err := p.o.makeTables(ctx, table); err != nil {
		return err
	}
	return p.pub.Publish(topic, msgs...)
}

func (txPublisher) Close() error { return nil }

// makeTables makes the tables of topic, once per process, on a connection
// of its own: taking one from the pool could wait for ever while every
// pooled connection is held by a transaction publishing for the first
// time.
func (o *Outbox) makeTables(ctx context.Context, topic string) error {
	if _, ok := o.tables.Load(topic); ok {
		return nil
	}
	// The first publishers of a topic, many at once, wait for one
	// connection's making instead of each opening its own.
	o.making.Lock()
	defer o.making.Unlock()
	if _, ok := o.tables.Load(topic); ok {
		return nil
	}
	conn, err := pgx.ConnectConfig(ctx, o.Pool.Config().ConnConfig)
	if err != nil {
		return fmt.Errorf("bus postgres: tables of %s: %w", topic, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	sub, err := sql.NewSubscriber(sql.BeginnerFromPgx(conn), sql.SubscriberConfig{SchemaAdapter: schema(0), OffsetsAdapter: offsets}, nil)
	if err == nil {
		err = sub.SubscribeInitialize(topic)
	}
	if err != nil {
		return fmt.Errorf("bus postgres: tables of %s: %w", topic, err)
	}
	o.tables.Store(topic, true)
	return nil
}

func checkTopic(topic string) error {
	if len(topic) > maxTopic {
		return fmt.Errorf("bus postgres: topic %q is longer than %d bytes", topic, maxTopic)
	}
	return nil
}

// OpenPool opens the bus's own pool on the outbox's database (a subscriber
// holds a connection while it hands a batch over), as the application
// "aivis bus".
func OpenPool(ctx context.Context, o *Outbox) (*pgxpool.Pool, error) {
	cfg := o.Pool.Config()
	cfg.MaxConns, cfg.MinConns = 8, 0
	cfg.ConnConfig.RuntimeParams["application_name"] = "aivis bus"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bus postgres: %w", err)
	}
	return pool, nil
}

// SubscriberConfig is a consumer group and how it reads.
type SubscriberConfig struct {
	Group string
	// Batch is how many messages one transaction reads (default 100).
	Batch int
	// PollInterval is how long a subscription that has read all there is
	// waits before it reads again (default PollInterval).
	PollInterval time.Duration
	// ResendInterval is the pause before a nacked message is sent again
	// (default a second).
	ResendInterval time.Duration
}

// NewSubscriber is a subscriber of a consumer group on db.
func NewSubscriber(db *pgxpool.Pool, c SubscriberConfig, log watermill.LoggerAdapter) (message.Subscriber, error) {
	if c.Group == "" {
		return nil, errors.New("bus postgres: a subscriber needs a consumer group")
	}
	if c.PollInterval <= 0 {
		c.PollInterval = PollInterval
	}
	sub, err := sql.NewSubscriber(sql.BeginnerFromPgx(db), sql.SubscriberConfig{
		ConsumerGroup: c.Group, PollInterval: c.PollInterval, ResendInterval: c.ResendInterval,
		SchemaAdapter: schema(c.Batch), OffsetsAdapter: offsets, InitializeSchema: true,
	}, log)
	if err != nil {
		return nil, fmt.Errorf("bus postgres: %w", err)
	}
	if log == nil {
		log = watermill.NopLogger{}
	}
	return &subscriber{sub: sub, db: db, log: log, closing: make(chan struct{})}, nil
}

// subscriber is the adapter's, whose channels it relays: the adapter's
// Close returns before it closes them (a subscription's goroutine marks
// itself done, then closes its channel), while Close here returns once
// they are closed. Each subscription prunes its topic (Prune) as it
// starts and every PruneEvery.
type subscriber struct {
	sub     *sql.Subscriber
	db      *pgxpool.Pool
	log     watermill.LoggerAdapter
	closing chan struct{}
	once    sync.Once
	relays  sync.WaitGroup
}

func (s *subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if err := checkTopic(topic); err != nil {
		return nil, err
	}
	in, err := s.sub.Subscribe(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := make(chan *message.Message)
	s.relays.Add(2)
	go func() {
		defer s.relays.Done()
		defer close(out)
		for m := range in {
			select {
			case out <- m:
			case <-s.closing: // not acked: the adapter ends its batch
			}
		}
	}()
	go func() {
		defer s.relays.Done()
		for {
			if _, err := Prune(ctx, s.db, topic, Retention); err != nil && ctx.Err() == nil {
				s.log.Error("Cannot prune the topic", err, watermill.LogFields{"topic": topic})
			}
			select {
			case <-time.After(PruneEvery):
			case <-ctx.Done():
				return
			case <-s.closing:
				return
			}
		}
	}()
	return out, nil
}

// Prune deletes the messages of topic older than olderThan that every
// consumer group of the topic has read past (all of them, of a topic no
// group reads), in statements of at most 1000 rows, and says how many it
// deleted. The table does not shrink; PostgreSQL reuses the space.
func Prune(ctx context.Context, db *pgxpool.Pool, topic string, olderThan time.Duration) (int64, error) {
	if err := checkTopic(topic); err != nil {
		return 0, err
	}
	table, offs := schema(0).MessagesTable(topic), offsets.MessagesOffsetsTable(topic)
	q := `DELETE FROM ` + table + ` WHERE ctid IN (SELECT m.ctid FROM ` + table + ` m
		WHERE m.created_at < LOCALTIMESTAMP - $1::interval AND NOT EXISTS (SELECT 1 FROM ` + offs + ` o
			WHERE (m.transaction_id, m."offset") > (o.last_processed_transaction_id, o.offset_acked))
		LIMIT ` + fmt.Sprint(pruneBatch) + `)`
	var n int64
	for {
		tag, err := db.Exec(ctx, q, olderThan)
		if err != nil {
			return n, fmt.Errorf("bus postgres: prune %s: %w", topic, err)
		}
		if n += tag.RowsAffected(); tag.RowsAffected() < pruneBatch {
			return n, nil
		}
	}
}

func (s *subscriber) Close() error {
	var err error
	s.once.Do(func() {
		close(s.closing)
		err = s.sub.Close()
		s.relays.Wait()
	})
	return err
}

// Forwarder moves the outbox's enveloped events to another bus.
type Forwarder struct {
	db     *pgxpool.Pool
	to     message.Publisher
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
}

// ForwardBatch is how many events the forwarder reads, and publishes, at
// once.
const ForwardBatch = 256

// forwarderGroup is the forwarder's consumer group of the outbox's topic.
const forwarderGroup = "forwarder"

// Forward starts the forwarder on db: it reads the outbox's table as the
// consumer group "forwarder" of the topic ForwarderTopic, with Watermill's
// queries (its PostgreSQL schema and offsets adapters), up to ForwardBatch
// events a read, in the order their transactions committed; it publishes
// them with to (one Publish per run of events of one topic, which bus nats
// sends without waiting for each one's acknowledgement), and writes the
// group's offset past them once every one is published, in the transaction
// of the read. One forwarder of all instances' reads at a time: each
// read's transaction first tries to lock the group's offsets table (LOCK
// TABLE ... NOWAIT, which, unlike a statement that reads, takes no
// snapshot), so that the read that follows sees the offset the one before
// wrote; a forwarder that finds the table locked leaves the events to the
// one that holds it, and tries again after PollInterval, so that the one
// at work goes on from batch to batch without handing the lock over each
// time. (Watermill's row lock alone, taken by a read whose snapshot was
// older than another forwarder's write, failed it with a serialization
// failure.) A read that fails, or whose events to refuses,
// is made again a second later: at least once; the first failure of a run
// of them is logged as an error, the others at debug level, and the first
// success after them as information. Where Watermill's forwarder
// (components/forwarder) and subscriber hand over one event at a time,
// each published once the one before it was acknowledged, this one pays
// two round trips to PostgreSQL, a commit and a server's round trip per
// batch. The envelopes are Watermill's forwarder's; one that cannot be
// read is passed over with an error in the log. log may be nil. Close
// stops it.
func Forward(db *pgxpool.Pool, to message.Publisher, log *slog.Logger) (*Forwarder, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := forwarderOffsets(ctx, db); err != nil {
		cancel()
		return nil, err
	}
	f := &Forwarder{db: db, to: to, log: log, cancel: cancel, done: make(chan struct{})}
	go f.run(ctx)
	return f, nil
}

// forwarderOffsets makes the outbox's tables and the forwarder group's
// offset row, from which a read starts at the first event.
func forwarderOffsets(ctx context.Context, db *pgxpool.Pool) error {
	conn, err := db.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("bus postgres: forwarder: %w", err)
	}
	defer conn.Release()
	sub, err := sql.NewSubscriber(sql.BeginnerFromPgx(conn.Conn()), sql.SubscriberConfig{SchemaAdapter: schema(0), OffsetsAdapter: offsets}, nil)
	if err == nil {
		err = sub.SubscribeInitialize(ForwarderTopic)
	}
	if err != nil {
		return fmt.Errorf("bus postgres: forwarder: %w", err)
	}
	qs, err := offsets.BeforeSubscribingQueries(sql.BeforeSubscribingQueriesParams{Topic: ForwarderTopic, ConsumerGroup: forwarderGroup})
	for _, q := range qs {
		if err == nil {
			_, err = conn.Exec(ctx, q.Query, q.Args...)
		}
	}
	if err != nil {
		return fmt.Errorf("bus postgres: forwarder: %w", err)
	}
	return nil
}

// The forwarder's pauses: after a read that found nothing to forward, a
// short one, doubling while reads find nothing, up to PollInterval; after
// finding another forwarder at work, PollInterval; after an error, a
// second.
const (
	forwardIdleMin = time.Millisecond
	forwardRetry   = time.Second
)

// errBusy is forward's answer when another forwarder holds the lock.
var errBusy = errors.New("bus postgres: another forwarder is at work")

func (f *Forwarder) run(ctx context.Context) {
	defer close(f.done)
	idle, failures := forwardIdleMin, 0
	for ctx.Err() == nil {
		n, err := f.forward(ctx)
		pause := time.Duration(0)
		switch {
		case err != nil && ctx.Err() != nil:
		case errors.Is(err, errBusy):
			pause = PollInterval
		case err != nil:
			if failures++; failures == 1 {
				f.log.Error("bus postgres: cannot forward the outbox's events; trying again every second", "err", err)
			} else {
				f.log.Debug("bus postgres: cannot forward the outbox's events", "err", err, "failures", failures)
			}
			pause = forwardRetry
		default:
			if failures > 0 {
				f.log.Info("bus postgres: the outbox's events are forwarded again", "failures", failures)
				failures = 0
			}
			if n == 0 {
				pause, idle = idle, min(2*idle, PollInterval)
			} else {
				idle = forwardIdleMin
			}
		}
		if pause > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
	}
}

// envelope is Watermill's forwarder's (components/forwarder): an event and
// the topic it is forwarded to.
type envelope struct {
	DestinationTopic string            `json:"destination_topic"`
	UUID             string            `json:"uuid"`
	Payload          []byte            `json:"payload"`
	Metadata         map[string]string `json:"metadata"`
}

// forward forwards one batch in a transaction of its own and says how
// many events it read. Its statements go in two batches, each one round
// trip: the BEGIN, the lock and the read; then, once the events are
// published, the offset and the COMMIT.
func (f *Forwarder) forward(ctx context.Context) (int, error) {
	q, err := schema(ForwardBatch).SelectQuery(sql.SelectQueryParams{Topic: ForwarderTopic, ConsumerGroup: forwarderGroup, OffsetsAdapter: offsets})
	if err != nil {
		return 0, err
	}
	conn, err := f.db.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	ended := false
	defer func() {
		if !ended { // an error: the transaction is rolled back, or the connection closed if that fails
			conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
		conn.Release()
	}()
	var b pgx.Batch
	b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ")
	b.Queue("LOCK TABLE " + offsets.MessagesOffsetsTable(ForwarderTopic) + " IN SHARE ROW EXCLUSIVE MODE NOWAIT")
	b.Queue(q.Query, q.Args...)
	br := conn.SendBatch(ctx, &b)
	last, n, runs, topics, err := f.read(br)
	if err = errors.Join(err, br.Close()); err != nil {
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available
			return 0, errBusy
		}
		return 0, err
	}
	if n == 0 {
		_, err := conn.Exec(ctx, "COMMIT")
		ended = err == nil
		return 0, err
	}
	end := traceForward(topics, runs, n)
	for i, topic := range topics {
		if err := f.to.Publish(topic, runs[i]...); err != nil {
			end(err)
			return 0, fmt.Errorf("publish to %s: %w", topic, err)
		}
	}
	end(nil)
	ack, err := offsets.AckMessageQuery(sql.AckMessageQueryParams{Topic: ForwarderTopic, LastRow: last, ConsumerGroup: forwarderGroup})
	if err != nil {
		return 0, err
	}
	b = pgx.Batch{}
	b.Queue(ack.Query, ack.Args...)
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, &b).Close(); err != nil {
		return 0, err
	}
	ended = true
	return n, nil
}

// traceForward starts, with tracing on, a span for each event that came
// with a trace ("forward <topic>", a child of the span that published it)
// and gives the event that span's context, so that the consumers' spans
// follow it; end ends them, failed if the publish failed. Tracing off, it
// does nothing.
func traceForward(topics []string, runs [][]*message.Message, n int) (end func(error)) {
	if !tracing.Enabled() {
		return func(error) {}
	}
	var spans []trace.Span
	for i, topic := range topics {
		for _, m := range runs[i] {
			tp := m.Metadata.Get(tracing.Traceparent)
			if tp == "" {
				continue
			}
			ctx, span := tracing.Start(tracing.FromParent(context.Background(), tp), "forward "+topic,
				trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(semconv.MessagingOperationTypeKey.String("send"),
					semconv.MessagingDestinationNameKey.String(topic), semconv.MessagingMessageIDKey.String(m.UUID),
					semconv.MessagingBatchMessageCountKey.Int(n)))
			tracing.Inject(ctx, m)
			spans = append(spans, span)
		}
	}
	return func(err error) {
		for _, s := range spans {
			if err != nil {
				tracing.Fail(s, "publish")
			}
			s.End()
		}
	}
}

// read reads the results of the BEGIN, the lock and the read of forward:
// the last row read, how many, and their events by runs of one topic.
func (f *Forwarder) read(br pgx.BatchResults) (last sql.Row, n int, runs [][]*message.Message, topics []string, err error) {
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return last, 0, nil, nil, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return last, 0, nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r sql.Row
		var xid sql.XID8
		var metadata []byte
		if err := rows.Scan(&r.Offset, &xid, &r.UUID, &r.Payload, &metadata); err != nil {
			return last, 0, nil, nil, err
		}
		r.ExtraData = map[string]any{"transaction_id": xid}
		last, n = r, n+1
		var e envelope
		if err := json.Unmarshal(r.Payload, &e); err != nil || e.DestinationTopic == "" {
			f.log.Error("bus postgres: an outbox event without a readable envelope was passed over", "uuid", string(r.UUID), "err", err)
			continue
		}
		m := message.NewMessage(e.UUID, e.Payload)
		if e.Metadata != nil {
			m.Metadata = e.Metadata
		}
		if len(topics) == 0 || topics[len(topics)-1] != e.DestinationTopic {
			topics, runs = append(topics, e.DestinationTopic), append(runs, nil)
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], m)
	}
	if err := rows.Err(); err != nil {
		return last, 0, nil, nil, err
	}
	return last, n, runs, topics, nil
}

// Close stops the forwarder. A batch it was forwarding is left to be read
// again, by the next forwarder.
func (f *Forwarder) Close() error {
	f.cancel()
	<-f.done
	return nil
}
