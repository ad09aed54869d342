package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// SubscriberConfig configures a Subscriber; zero fields take defaults.
type SubscriberConfig struct {
	// ConsumerGroup names the group; every group receives every message of
	// a topic, and the subscriptions of one group share them.
	ConsumerGroup string
	// PollInterval is how often to look for messages other processes wrote
	// (default 100 ms); this process's publishes wake subscriptions at once.
	PollInterval time.Duration
	// BatchSize is how many messages one query reads (default 100).
	BatchSize int
	// AckDeadline nacks a message not acknowledged within it (0: wait).
	AckDeadline time.Duration
	// NackResendSleep is the pause before a nacked message is sent again.
	NackResendSleep time.Duration
	// CommitInterval bounds how long acknowledgements wait to be written
	// while a batch is in progress (default 100 ms).
	CommitInterval time.Duration
	// LeaseDuration is how long a subscription's claim on its group and
	// topic lasts without renewal (default 30 s).
	LeaseDuration time.Duration
	// InitializeSchema creates the tables when the subscriber is made.
	InitializeSchema bool
}

// Subscriber reads messages of a consumer group.
type Subscriber struct {
	write, read *sql.DB
	cfg         SubscriberConfig
	log         watermill.LoggerAdapter

	mu      sync.Mutex
	closed  bool
	closing chan struct{}
	wg      sync.WaitGroup
}

// NewSubscriber makes a subscriber: write is used for offsets and leases
// (the single-connection writer pool of the database), read for reading
// messages (a reader pool of the same file, or the same pool).
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
	if cfg.InitializeSchema {
		if err := InitializeSchema(context.Background(), write); err != nil {
			return nil, err
		}
	}
	return &Subscriber{write: write, read: read, cfg: cfg, log: logger, closing: make(chan struct{})}, nil
}

// SubscribeInitialize creates the schema if the subscriber is configured to.
func (s *Subscriber) SubscribeInitialize(topic string) error {
	if s.cfg.InitializeSchema {
		return InitializeSchema(context.Background(), s.write)
	}
	return nil
}

// Subscribe returns the messages of topic for the subscriber's group; the
// channel closes when ctx ends or the subscriber is closed.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("bus: subscriber closed")
	}
	out := make(chan *message.Message)
	ctx, cancel := context.WithCancel(ctx)
	sub := &subscription{s: s, topic: topic, out: out, holder: watermill.NewShortUUID()}
	s.wg.Go(func() {
		defer close(out)
		defer cancel()
		go func() {
			select {
			case <-s.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		sub.run(ctx)
	})
	return out, nil
}

// Close ends every subscription and waits for them.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

type subscription struct {
	s      *Subscriber
	topic  string
	out    chan *message.Message
	holder string

	acked      int64 // the last acknowledged seq
	committed  int64 // the last seq written to bus_offsets
	lastCommit time.Time
	leaseEnd   time.Time
}

type row struct {
	seq     int64
	uuid    string
	payload []byte
	meta    string
}

func (sub *subscription) run(ctx context.Context) {
	wake, unwatch := watch(sub.topic)
	defer unwatch()
	defer sub.release()
	cfg := sub.s.cfg
	for ctx.Err() == nil {
		held, err := sub.acquire(ctx)
		if err != nil && ctx.Err() == nil {
			sub.s.log.Error("bus: lease", err, watermill.LogFields{"topic": sub.topic})
		}
		if !held {
			sub.wait(ctx, wake, cfg.PollInterval)
			continue
		}
		rows, err := sub.fetch(ctx)
		if err != nil {
			if ctx.Err() == nil {
				sub.s.log.Error("bus: read", err, watermill.LogFields{"topic": sub.topic})
				sub.wait(ctx, nil, cfg.PollInterval)
			}
			continue
		}
		for _, r := range rows {
			if !sub.deliver(ctx, r) {
				return
			}
			if time.Since(sub.lastCommit) >= cfg.CommitInterval {
				if !sub.commit(ctx) {
					break // the lease was lost: claim it again
				}
			}
		}
		if !sub.commit(ctx) {
			continue
		}
		if len(rows) < cfg.BatchSize {
			sub.wait(ctx, wake, cfg.PollInterval)
		}
	}
}

func (sub *subscription) wait(ctx context.Context, wake <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-wake:
	case <-t.C:
	}
}

// acquire takes or renews the lease of the group on the topic and reads the
// group's offset when it is newly taken.
func (sub *subscription) acquire(ctx context.Context) (bool, error) {
	now := time.Now()
	if now.Before(sub.leaseEnd.Add(-sub.s.cfg.LeaseDuration / 3)) {
		return true, nil
	}
	group := sub.s.cfg.ConsumerGroup
	// A cheap look first: a lease held by another subscription is left alone
	// without taking the write lock.
	var holder string
	var until int64
	err := sub.s.read.QueryRowContext(ctx, `SELECT holder, lease_until FROM bus_offsets WHERE consumer_group = ? AND topic = ?`,
		group, sub.topic).Scan(&holder, &until)
	if err == nil && holder != sub.holder && until > now.UnixNano() {
		return false, nil
	} else if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	end := now.Add(sub.s.cfg.LeaseDuration)
	var acked int64
	err = sub.s.write.QueryRowContext(ctx, `INSERT INTO bus_offsets (consumer_group, topic, acked, holder, lease_until) VALUES (?1, ?2, 0, ?3, ?4)
		ON CONFLICT (consumer_group, topic) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until
		WHERE bus_offsets.holder = excluded.holder OR bus_offsets.lease_until <= ?5
		RETURNING acked`, group, sub.topic, sub.holder, end.UnixNano(), now.UnixNano()).Scan(&acked)
	if errors.Is(err, sql.ErrNoRows) {
		sub.leaseEnd = time.Time{}
		return false, nil
	} else if err != nil {
		return false, err
	}
	if sub.leaseEnd.IsZero() || acked > sub.acked {
		// Newly taken: start after what the group acknowledged.
		sub.acked, sub.committed = acked, acked
	}
	sub.leaseEnd, sub.lastCommit = end, now
	return true, nil
}

func (sub *subscription) fetch(ctx context.Context) ([]row, error) {
	rs, err := sub.s.read.QueryContext(ctx, `SELECT seq, uuid, payload, metadata FROM bus_messages WHERE topic = ? AND seq > ?
		ORDER BY seq LIMIT ?`, sub.topic, sub.acked, sub.s.cfg.BatchSize)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.seq, &r.uuid, &r.payload, &r.meta); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// deliver sends one message until it is acknowledged; false when the
// subscription ends first.
func (sub *subscription) deliver(ctx context.Context, r row) bool {
	var meta message.Metadata
	if err := json.Unmarshal([]byte(r.meta), &meta); err != nil {
		sub.s.log.Error("bus: unreadable metadata; message skipped", err, watermill.LogFields{"uuid": r.uuid})
		sub.acked = r.seq
		return true
	}
	cfg := sub.s.cfg
	renew := time.NewTicker(cfg.LeaseDuration / 3)
	defer renew.Stop()
	for {
		msg := message.NewMessage(r.uuid, r.payload)
		msg.Metadata = make(message.Metadata, len(meta))
		for k, v := range meta {
			msg.Metadata[k] = v
		}
		mctx, cancel := context.WithCancel(ctx)
		msg.SetContext(mctx)
		select {
		case sub.out <- msg:
		case <-ctx.Done():
			cancel()
			return false
		}
		var deadline <-chan time.Time
		if cfg.AckDeadline > 0 {
			t := time.NewTimer(cfg.AckDeadline)
			deadline = t.C
			defer t.Stop()
		}
		acked := false
	waiting:
		for {
			select {
			case <-msg.Acked():
				acked = true
				break waiting
			case <-msg.Nacked():
				break waiting
			case <-deadline:
				break waiting
			case <-renew.C:
				sub.commit(ctx)
			case <-ctx.Done():
				cancel()
				return false
			}
		}
		cancel()
		if acked {
			sub.acked = r.seq
			return true
		}
		if cfg.NackResendSleep > 0 {
			sub.wait(ctx, nil, cfg.NackResendSleep)
		}
		if ctx.Err() != nil {
			return false
		}
	}
}

// commit writes the acknowledged offset and renews the lease; false when
// the lease was lost (another subscription took it after it expired).
func (sub *subscription) commit(ctx context.Context) bool {
	if ctx.Err() != nil {
		ctx = context.Background()
	}
	now := time.Now()
	end := now.Add(sub.s.cfg.LeaseDuration)
	res, err := sub.s.write.ExecContext(ctx, `UPDATE bus_offsets SET acked = max(acked, ?), lease_until = ?
		WHERE consumer_group = ? AND topic = ? AND holder = ?`, sub.acked, end.UnixNano(), sub.s.cfg.ConsumerGroup, sub.topic, sub.holder)
	if err != nil {
		sub.s.log.Error("bus: commit offset", err, watermill.LogFields{"topic": sub.topic})
		return true // tried again at the next commit
	}
	if n, _ := res.RowsAffected(); n == 0 {
		sub.leaseEnd = time.Time{}
		return false
	}
	sub.committed, sub.lastCommit, sub.leaseEnd = sub.acked, now, end
	return true
}

// release writes the offset and gives the lease up, so that another
// subscription of the group takes over at once.
func (sub *subscription) release() {
	if sub.leaseEnd.IsZero() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := sub.s.write.ExecContext(ctx, `UPDATE bus_offsets SET acked = max(acked, ?), lease_until = 0
		WHERE consumer_group = ? AND topic = ? AND holder = ?`, sub.acked, sub.s.cfg.ConsumerGroup, sub.topic, sub.holder)
	if err != nil {
		sub.s.log.Error("bus: release lease", fmt.Errorf("%w", err), watermill.LogFields{"topic": sub.topic})
	}
}
