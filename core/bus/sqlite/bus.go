package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// Executor is what a publish inside a caller's transaction needs: a
// *sql.Tx, *sql.DB or *sql.Conn.
type Executor interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

const schema = `
CREATE TABLE IF NOT EXISTS bus_messages (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  topic      TEXT NOT NULL,
  uuid       TEXT NOT NULL,
  payload    BLOB NOT NULL,
  metadata   TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS bus_messages_topic ON bus_messages(topic, seq);
CREATE TABLE IF NOT EXISTS bus_offsets (
  consumer_group TEXT NOT NULL,
  topic          TEXT NOT NULL,
  acked          INTEGER NOT NULL,
  holder         TEXT NOT NULL DEFAULT '',
  lease_until    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (consumer_group, topic)
) WITHOUT ROWID;`

// InitializeSchema creates the bus's tables if they are missing.
func InitializeSchema(ctx context.Context, db Executor) error {
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("bus: schema: %w", err)
	}
	return nil
}

// PublishTx writes messages to topic in the caller's transaction.
func PublishTx(ctx context.Context, tx Executor, topic string, msgs ...*message.Message) error {
	if topic == "" {
		return errors.New("bus: empty topic")
	}
	if len(msgs) == 0 {
		return nil
	}
	now := time.Now().UnixNano()
	for len(msgs) > 0 {
		n := min(len(msgs), 1000) // SQLite bounds the parameters of one statement
		if err := insert(ctx, tx, topic, now, msgs[:n]); err != nil {
			return err
		}
		msgs = msgs[n:]
	}
	return nil
}

func insert(ctx context.Context, tx Executor, topic string, now int64, msgs []*message.Message) error {
	var q strings.Builder
	q.WriteString(`INSERT INTO bus_messages (topic, uuid, payload, metadata, created_at) VALUES `)
	args := make([]any, 0, 5*len(msgs))
	for i, m := range msgs {
		meta, err := json.Marshal(m.Metadata)
		if err != nil {
			return fmt.Errorf("bus: metadata of %s: %w", m.UUID, err)
		}
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?)")
		payload := []byte(m.Payload)
		if payload == nil {
			payload = []byte{}
		}
		args = append(args, topic, m.UUID, payload, string(meta), now)
	}
	if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
		return fmt.Errorf("bus: publish to %s: %w", topic, err)
	}
	return nil
}

// wakers are this process's subscriptions waiting for a topic.
var wakers = struct {
	sync.Mutex
	m map[string]map[chan struct{}]struct{}
}{m: make(map[string]map[chan struct{}]struct{})}

// Notify wakes this process's subscriptions of topic.
func Notify(topic string) {
	wakers.Lock()
	for ch := range wakers.m[topic] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	wakers.Unlock()
}

func watch(topic string) (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	wakers.Lock()
	if wakers.m[topic] == nil {
		wakers.m[topic] = make(map[chan struct{}]struct{})
	}
	wakers.m[topic][ch] = struct{}{}
	wakers.Unlock()
	return ch, func() {
		wakers.Lock()
		delete(wakers.m[topic], ch)
		if len(wakers.m[topic]) == 0 {
			delete(wakers.m, topic)
		}
		wakers.Unlock()
	}
}

// PublisherConfig configures a Publisher; the zero value is usable.
type PublisherConfig struct {
	// InitializeSchema creates the tables when the publisher is made.
	InitializeSchema bool
}

// Publisher publishes each call's messages in a transaction of its own.
type Publisher struct {
	db     *sql.DB
	log    watermill.LoggerAdapter
	mu     sync.RWMutex
	closed bool
}

// NewPublisher makes a publisher on db.
func NewPublisher(db *sql.DB, cfg PublisherConfig, logger watermill.LoggerAdapter) (*Publisher, error) {
	if db == nil {
		return nil, errors.New("bus: nil database")
	}
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	if cfg.InitializeSchema {
		if err := InitializeSchema(context.Background(), db); err != nil {
			return nil, err
		}
	}
	return &Publisher{db: db, log: logger}, nil
}

// Publish writes messages to topic; they are visible when it returns.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return errors.New("bus: publisher closed")
	}
	ctx := context.Background()
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("bus: publish: %w", err)
	}
	if err := PublishTx(ctx, tx, topic, msgs...); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("bus: publish: %w", err)
	}
	Notify(topic)
	return nil
}

// Close stops the publisher; the database stays open (its owner closes it).
func (p *Publisher) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return nil
}

// Cleanup deletes the messages older than before that every consumer group
// of their topic has acknowledged, and those of topics no group reads.
func Cleanup(ctx context.Context, db Executor, before time.Time) (int64, error) {
	res, err := db.ExecContext(ctx, `DELETE FROM bus_messages WHERE created_at < ?1 AND
		seq <= coalesce((SELECT min(o.acked) FROM bus_offsets o WHERE o.topic = bus_messages.topic), seq)`, before.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("bus: cleanup: %w", err)
	}
	return res.RowsAffected()
}
