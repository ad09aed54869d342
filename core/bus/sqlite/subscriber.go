package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// SubscriberConfig configures a Subscriber; zero fields take their defaults.
type SubscriberConfig struct {
	// ConsumerGroup names the group. Every group receives every message of
	// a topic; the subscriptions of one group to one topic share them (one
	// of them delivers at a time, see the package documentation). Empty is
	// a group like any other.
	ConsumerGroup string
	// PollInterval is how often to look for messages written by other
	// processes (default 100ms); Notify wakes this process's subscriptions
	// at once. A subscription waiting for its group's lease looks at it as
	// often.
	PollInterval time.Duration
	// BatchSize is how many messages one query reads (default 100).
	BatchSize int
	// MaxInFlight is how many messages may be unacknowledged at once
	// (default 1). With 1, the next message is sent only after the one
	// before it was acked: order is guaranteed. With more, messages are
	// sent in order but handled concurrently (a Watermill router runs a
	// handler per message), and the offset moves past a message only once
	// it and every message before it were acked; a nacked message is sent
	// again. A handler that commits several messages' work in one
	// transaction gets them together this way.
	MaxInFlight int
	// AckDeadline nacks a message that is neither acked nor nacked within
	// it; 0 waits for ack or nack forever.
	AckDeadline time.Duration
	// NackResendSleep is the pause before a nacked message is sent again
	// (default 0: at once).
	NackResendSleep time.Duration
	// InitializeSchema calls InitializeSchema in NewSubscriber and in
	// SubscribeInitialize.
	InitializeSchema bool

	// CloseGrace is how long a subscription that ends (its context done,
	// or Close) waits for the ack or nack of a message its reader has
	// received; the message's context is cancelled at once, as a signal to
	// stop. An ack in time counts; otherwise the message is delivered
	// again, to another subscription of the group or after a restart,
	// perhaps while the first handler is still at it. Default 1s; negative
	// does not wait.
	CloseGrace time.Duration

	// CommitInterval is how long acks may wait to be written as the
	// group's offset (default 100ms): the offset is written at most once
	// per CommitInterval, whether messages keep coming or trickle, within
	// CommitInterval of the last ack once the subscription has caught up,
	// and when the subscription ends. It is the at-least-once window: a
	// crash redelivers what was acked in at most the last CommitInterval.
	CommitInterval time.Duration
	// LeaseDuration is how long the lease of a subscription on its group
	// and topic lasts unless renewed (default 30s); it is renewed every
	// third of it. It is how long a crashed process keeps the other
	// processes of its group from taking over a topic.
	LeaseDuration time.Duration

	// Retention, when positive, makes the subscriber run Cleanup on the
	// writer pool with messages older than Retention every
	// RetentionInterval (default 10 minutes) and once at the start. One
	// subscriber of a database doing it is enough; more do no harm.
	Retention         time.Duration
	RetentionInterval time.Duration
}

// Subscriber is a message.Subscriber (and message.SubscribeInitializer) of
// one consumer group.
type Subscriber struct {
	write, read *sql.DB
	cfg         SubscriberConfig
	log         watermill.LoggerAdapter

	mu      sync.Mutex
	closed  bool
	stop    context.Context // done when Close is called
	cancel  context.CancelFunc
	running sync.WaitGroup
}

// NewSubscriber makes a subscriber. write is used for offsets and leases
// (the product's single-connection writer pool, _txlock=immediate); read
// for reading messages (a read-only pool of the same file, or the same
// *sql.DB; nil means write). A nil logger logs nothing.
func NewSubscriber(write, read *sql.DB, cfg SubscriberConfig, logger watermill.LoggerAdapter) (*Subscriber, error) {
	if write == nil {
		return nil, errors.New("bus: nil database")
	}
	if read == nil {
		read = write
	}
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 100
	}
	if cfg.CommitInterval <= 0 {
		cfg.CommitInterval = 100 * time.Millisecond
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = 30 * time.Second
	}
	cfg.LeaseDuration = max(cfg.LeaseDuration, 10*time.Millisecond)
	if cfg.CloseGrace == 0 {
		cfg.CloseGrace = time.Second
	}
	if cfg.RetentionInterval <= 0 {
		cfg.RetentionInterval = 10 * time.Minute
	}
	if cfg.InitializeSchema {
		if err := InitializeSchema(context.Background(), write); err != nil {
			return nil, err
		}
	}
	s := &Subscriber{write: write, read: read, cfg: cfg, log: logger}
	s.stop, s.cancel = context.WithCancel(context.Background())
	if cfg.Retention > 0 {
		s.running.Go(s.retain)
	}
	return s, nil
}

// SubscribeInitialize creates the schema if the subscriber is configured to
// (InitializeSchema); topics need nothing of their own.
func (s *Subscriber) SubscribeInitialize(topic string) error {
	if s.cfg.InitializeSchema {
		return InitializeSchema(context.Background(), s.write)
	}
	return nil
}

// Subscribe returns the messages of topic for the subscriber's consumer
// group, in order, each sent after the one before it was acked. The channel
// is closed when ctx is done or the subscriber is closed. Each message's
// context is derived from ctx and cancelled once the message is acked or
// nacked.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if topic == "" {
		return nil, errors.New("bus: empty topic")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("bus: subscriber closed")
	}
	out := make(chan *message.Message)
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(s.stop, cancel)
	sub := &subscription{s: s, topic: topic, out: out, holder: watermill.NewULID()}
	s.running.Go(func() {
		defer close(out)
		defer cancel()
		defer unhook()
		sub.run(ctx)
	})
	return out, nil
}

// Close ends every subscription, writing its offset and giving up its
// lease, and waits for them; their channels are closed when it returns.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel()
	s.mu.Unlock()
	s.running.Wait()
	return nil
}

func (s *Subscriber) retain() {
	t := time.NewTicker(s.cfg.RetentionInterval)
	defer t.Stop()
	for {
		n, err := Cleanup(s.stop, s.write, time.Now().Add(-s.cfg.Retention))
		if err != nil && s.stop.Err() == nil {
			s.log.Error("bus: retention", err, nil)
		} else if n > 0 {
			s.log.Debug("bus: retention", watermill.LogFields{"deleted": n})
		}
		select {
		case <-s.stop.Done():
			return
		case <-t.C:
		}
	}
}

// subscription is one Subscribe call: a goroutine that takes the lease of
// its group on its topic, reads batches after the group's offset and
// delivers them one at a time.
type subscription struct {
	s      *Subscriber
	topic  string
	out    chan *message.Message
	holder string // this subscription's name in bus_offsets.holder

	held       bool      // the lease is ours until leaseEnd
	leaseEnd   time.Time //
	acked      int64     // seq of the last message acked (in memory)
	committed  int64     // seq last written to bus_offsets
	lastCommit time.Time // when the lease was last written
	renew      *time.Ticker
}

type row struct {
	seq     int64
	uuid    string
	payload []byte
	meta    string
}

// leaseKey names, among the wake-ups, the release of a group's lease on a
// topic (no topic starts with a NUL byte).
func leaseKey(group, topic string) string { return "\x00lease\x00" + group + "\x00" + topic }

func (sub *subscription) run(ctx context.Context) {
	// Holding the lease, the subscription wakes for new messages; waiting
	// for it, only for its release (and to look every PollInterval).
	wake, unwatch := watch(sub.topic)
	defer unwatch()
	freed, unwatchFreed := watch(leaseKey(sub.s.cfg.ConsumerGroup, sub.topic))
	defer unwatchFreed()
	defer sub.release()
	cfg := &sub.s.cfg
	sub.renew = time.NewTicker(cfg.LeaseDuration / 3)
	defer sub.renew.Stop()
	rows := make([]row, 0, cfg.BatchSize)
	for ctx.Err() == nil {
		if !sub.hold(ctx) {
			sub.wait(ctx, freed, cfg.PollInterval)
			continue
		}
		var err error
		rows, err = sub.fetch(ctx, rows[:0])
		if err != nil {
			if ctx.Err() == nil {
				sub.s.log.Error("bus: read messages", err, watermill.LogFields{"topic": sub.topic})
				sub.wait(ctx, nil, cfg.PollInterval)
			}
			continue
		}
		if cfg.MaxInFlight > 1 {
			if !sub.deliverWindow(ctx, rows) {
				return // ctx is done
			}
		}
		for i := range rows {
			if cfg.MaxInFlight > 1 {
				break
			}
			if !sub.deliver(ctx, &rows[i]) {
				return // ctx is done
			}
			if !sub.held {
				break // lost the lease: its new holder goes on
			}
			if sub.acked != sub.committed && time.Since(sub.lastCommit) >= cfg.CommitInterval {
				if !sub.commit(ctx) {
					break
				}
			}
		}
		if !sub.held {
			continue
		}
		if len(rows) < cfg.BatchSize {
			// Caught up. Write the offset if CommitInterval has gone by
			// since the last write, else wake up when it has: a trickle of
			// messages costs a write per CommitInterval, not one each.
			idle := min(cfg.PollInterval, cfg.LeaseDuration/3) // and keep the lease
			if sub.acked != sub.committed {
				if due := cfg.CommitInterval - time.Since(sub.lastCommit); due > 0 {
					idle = min(idle, due)
				} else if !sub.commit(ctx) {
					continue
				}
			}
			sub.wait(ctx, wake, idle)
		}
	}
}

// wait returns after d, a wake-up, or the end of ctx.
func (sub *subscription) wait(ctx context.Context, wake <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-wake:
	case <-t.C:
	}
}

// hold reports whether the subscription holds the lease of its group on its
// topic, renewing it when a third of it has gone by or trying to take it.
func (sub *subscription) hold(ctx context.Context) bool {
	if sub.held {
		if time.Until(sub.leaseEnd) > sub.s.cfg.LeaseDuration*2/3 {
			return true
		}
		return sub.commit(ctx)
	}
	held, err := sub.acquire(ctx)
	if err != nil && ctx.Err() == nil {
		sub.s.log.Error("bus: take lease", err, watermill.LogFields{"topic": sub.topic, "consumer_group": sub.s.cfg.ConsumerGroup})
	}
	return held
}

// acquire takes the lease if it is free or expired (creating the group's
// offset row at 0, the oldest message, for a new group) and then goes on
// from the group's offset.
func (sub *subscription) acquire(ctx context.Context) (bool, error) {
	group := sub.s.cfg.ConsumerGroup
	now := time.Now()
	// A look first, on the reader pool: a lease held by another
	// subscription is left alone without taking the write lock.
	var holder string
	var until int64
	err := sub.s.read.QueryRowContext(ctx, `SELECT holder, lease_until FROM bus_offsets WHERE consumer_group = ? AND topic = ?`,
		group, sub.topic).Scan(&holder, &until)
	switch {
	case err == nil:
		if holder != sub.holder && until > now.UnixNano() {
			return false, nil
		}
	case !errors.Is(err, sql.ErrNoRows):
		return false, err
	}
	end := now.Add(sub.s.cfg.LeaseDuration)
	var acked int64
	err = sub.s.write.QueryRowContext(ctx, `INSERT INTO bus_offsets (consumer_group, topic, acked, holder, lease_until)
		VALUES (?1, ?2, 0, ?3, ?4)
		ON CONFLICT (consumer_group, topic) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until
		WHERE bus_offsets.holder = excluded.holder OR bus_offsets.lease_until <= ?5
		RETURNING acked`, group, sub.topic, sub.holder, end.UnixNano(), now.UnixNano()).Scan(&acked)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // another subscription took it first
	} else if err != nil {
		return false, err
	}
	sub.held, sub.leaseEnd, sub.lastCommit = true, end, now
	sub.acked, sub.committed = acked, acked
	return true, nil
}

// commit writes the acked offset and renews the lease. It returns whether
// the lease is still held: false when another subscription took it (after
// it expired), or when it could not be renewed before it ran out.
func (sub *subscription) commit(ctx context.Context) bool {
	if ctx.Err() != nil {
		ctx = context.WithoutCancel(ctx) // the offset is worth writing still
	}
	ctx, cancel := context.WithTimeout(ctx, sub.s.cfg.LeaseDuration/3)
	defer cancel()
	now := time.Now()
	end := now.Add(sub.s.cfg.LeaseDuration)
	acked := sub.acked
	res, err := sub.s.write.ExecContext(ctx, `UPDATE bus_offsets SET acked = max(acked, ?), lease_until = ?
		WHERE consumer_group = ? AND topic = ? AND holder = ?`, acked, end.UnixNano(), sub.s.cfg.ConsumerGroup, sub.topic, sub.holder)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		sub.s.log.Error("bus: write offset", err, watermill.LogFields{"topic": sub.topic, "consumer_group": sub.s.cfg.ConsumerGroup})
		if time.Now().After(sub.leaseEnd) {
			sub.held = false // it may be someone else's by now
		}
		return sub.held
	}
	if n == 0 {
		sub.s.log.Info("bus: lease lost", watermill.LogFields{"topic": sub.topic, "consumer_group": sub.s.cfg.ConsumerGroup})
		sub.held = false
		return false
	}
	sub.committed, sub.lastCommit, sub.leaseEnd = acked, now, end
	return true
}

// release writes the offset and gives the lease up, waking this process's
// other subscriptions of the group and topic so that one of them takes over
// at once.
func (sub *subscription) release() {
	if !sub.held {
		return
	}
	sub.held = false
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := sub.s.write.ExecContext(ctx, `UPDATE bus_offsets SET acked = max(acked, ?), lease_until = 0
		WHERE consumer_group = ? AND topic = ? AND holder = ?`, sub.acked, sub.s.cfg.ConsumerGroup, sub.topic, sub.holder)
	if err != nil {
		sub.s.log.Error("bus: release lease", err, watermill.LogFields{"topic": sub.topic, "consumer_group": sub.s.cfg.ConsumerGroup})
		return
	}
	Notify(leaseKey(sub.s.cfg.ConsumerGroup, sub.topic))
}

func (sub *subscription) fetch(ctx context.Context, rows []row) ([]row, error) {
	rs, err := sub.s.read.QueryContext(ctx, `SELECT seq, uuid, payload, metadata FROM bus_messages
		WHERE topic = ? AND seq > ? ORDER BY seq LIMIT ?`, sub.topic, sub.acked, sub.s.cfg.BatchSize)
	if err != nil {
		return rows, err
	}
	defer rs.Close()
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.seq, &r.uuid, &r.payload, &r.meta); err != nil {
			return rows, err
		}
		rows = append(rows, r)
	}
	return rows, rs.Err()
}

// deliver sends one message until it is acked. It returns false when ctx
// ends first; it also returns (true) when the lease is lost, with sub.held
// false and the message not acked unless it was.
func (sub *subscription) deliver(ctx context.Context, r *row) bool {
	cfg := &sub.s.cfg
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			// The handler owned the payload and metadata it was given and
			// may have changed them: send what is stored.
			sub.reload(ctx, r)
		}
		msg, cancel := sub.message(ctx, r)
		acked, ended := sub.send(ctx, msg)
		cancel()
		if acked {
			sub.acked = r.seq
			return !ended
		}
		if ended {
			return false
		}
		if !sub.held {
			return true // the new holder sends it again
		}
		if cfg.NackResendSleep > 0 {
			sub.wait(ctx, nil, cfg.NackResendSleep)
			if ctx.Err() != nil {
				return false
			}
		}
	}
}

// message makes the message of a stored row, with a context of its own
// (cancelled once the message is acked or nacked).
func (sub *subscription) message(ctx context.Context, r *row) (*message.Message, context.CancelFunc) {
	md, err := decodeMetadata(r.meta)
	if err != nil {
		// Not written by PublishTx: deliver what can be read rather than
		// stop the topic.
		sub.s.log.Error("bus: unreadable metadata", err, watermill.LogFields{"topic": sub.topic, "uuid": r.uuid})
		md = message.Metadata{}
	}
	msg := message.NewMessage(r.uuid, r.payload)
	msg.Metadata = md
	mctx, cancel := context.WithCancel(ctx)
	msg.SetContext(mctx)
	return msg, cancel
}

// deliverWindow sends a batch with up to MaxInFlight messages unacked at
// once; false when ctx ended. The offset moves over the acked prefix.
func (sub *subscription) deliverWindow(ctx context.Context, rows []row) bool {
	cfg := &sub.s.cfg
	type result struct {
		i     int
		acked bool
	}
	results := make(chan result, len(rows))
	acked := make([]bool, len(rows))
	var wg sync.WaitGroup
	defer wg.Wait()
	quit := make(chan struct{})
	defer close(quit)
	send := func(i int, again bool) bool {
		r := &rows[i]
		if again {
			sub.reload(ctx, r)
		}
		msg, cancel := sub.message(ctx, r)
		for sent := false; !sent; {
			select {
			case sub.out <- msg:
				sent = true
			case <-sub.renew.C:
				sub.commit(ctx)
			case <-ctx.Done():
				cancel()
				return false
			}
		}
		wg.Go(func() {
			defer cancel()
			var expired <-chan time.Time
			if d := cfg.AckDeadline; d > 0 {
				t := time.NewTimer(d)
				defer t.Stop()
				expired = t.C
			}
			res := result{i: i}
			select {
			case <-msg.Acked():
				res.acked = true
			case <-msg.Nacked():
			case <-expired:
			case <-ctx.Done():
				res.acked = sub.grace(msg)
			case <-quit:
				return
			}
			results <- res
		})
		return true
	}
	next, pending, lowest := 0, 0, 0
	for lowest < len(rows) {
		for next < len(rows) && pending < cfg.MaxInFlight && sub.held {
			if !send(next, false) {
				return false
			}
			next++
			pending++
		}
		select {
		case res := <-results:
			pending--
			if !res.acked {
				if cfg.NackResendSleep > 0 {
					sub.wait(ctx, nil, cfg.NackResendSleep)
				}
				if !sub.held || !send(res.i, true) {
					return ctx.Err() == nil
				}
				pending++
				continue
			}
			acked[res.i] = true
			for lowest < len(rows) && acked[lowest] {
				sub.acked = rows[lowest].seq
				lowest++
			}
			if sub.acked != sub.committed && time.Since(sub.lastCommit) >= cfg.CommitInterval {
				sub.commit(ctx)
			}
		case <-sub.renew.C:
			sub.commit(ctx)
		case <-ctx.Done():
			return false
		}
		if !sub.held && pending == 0 {
			return true // lost the lease: its new holder goes on
		}
	}
	return true
}

// reload reads a message's payload and metadata again for a redelivery.
// Retention cannot have deleted it: the group has not acked it.
func (sub *subscription) reload(ctx context.Context, r *row) {
	var payload []byte
	var meta string
	err := sub.s.read.QueryRowContext(ctx, `SELECT payload, metadata FROM bus_messages WHERE seq = ?`, r.seq).Scan(&payload, &meta)
	if err != nil {
		if ctx.Err() == nil {
			sub.s.log.Error("bus: reread message", err, watermill.LogFields{"topic": sub.topic, "uuid": r.uuid})
		}
		payload = append([]byte(nil), r.payload...)
		meta = r.meta
	}
	r.payload, r.meta = payload, meta
}

// send hands msg to the subscriber's reader and waits for its ack or nack
// (or the deadline, a nack), renewing the lease meanwhile. ended is true
// when ctx ended first; if the message was handed over by then, its handler
// has CloseGrace to ack it (its context is cancelled with ctx).
func (sub *subscription) send(ctx context.Context, msg *message.Message) (acked, ended bool) {
	for sent := false; !sent; {
		select {
		case sub.out <- msg:
			sent = true
		case <-sub.renew.C:
			if !sub.commit(ctx) {
				return false, false // not sent: the new holder sends it
			}
		case <-ctx.Done():
			return false, true
		}
	}
	var expired <-chan time.Time
	if d := sub.s.cfg.AckDeadline; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		expired = t.C
	}
	for {
		select {
		case <-msg.Acked():
			return true, false
		case <-msg.Nacked():
			return false, false
		case <-expired:
			return false, false
		case <-sub.renew.C:
			// Renewed even if the message is acked after the lease was
			// lost: the new holder may deliver it too (at least once).
			sub.commit(ctx)
		case <-ctx.Done():
			return sub.grace(msg), true
		}
	}
}

// grace waits up to CloseGrace for the ack of a message whose handler is
// at work when its subscription ends, so that another subscription of the
// group does not get it while that handler still has it.
func (sub *subscription) grace(msg *message.Message) (acked bool) {
	d := sub.s.cfg.CloseGrace
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-msg.Acked():
		return true
	case <-msg.Nacked():
	case <-t.C:
	}
	return false
}
