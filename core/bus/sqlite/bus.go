package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/aivis/aivis/internal/jsonstr"
)

// Executor is what a publish inside a caller's transaction needs: a
// *sql.Tx, *sql.DB or *sql.Conn.
type Executor interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// schema is the bus's tables; doc.go describes them.
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

// InitializeSchema creates the bus tables and indexes if they are missing.
// It is idempotent and safe to call at every start.
func InitializeSchema(ctx context.Context, db Executor) error {
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("bus: schema: %w", err)
	}
	return nil
}

// maxRowsPerInsert bounds the rows of one INSERT statement (5 parameters
// each, well under SQLite's limit of 32766 parameters).
const maxRowsPerInsert = 1000

// PublishTx writes messages to topic inside the caller's transaction: the
// transactional outbox. They become visible to subscribers when that
// transaction commits, and never if it rolls back. Call Notify(topic) after
// the commit to wake this process's subscribers at once.
//
// Metadata is stored as a JSON object, so its keys and values must be valid
// UTF-8 (JSON would silently replace invalid bytes; PublishTx refuses them
// instead, so that what is delivered is exactly what was published).
func PublishTx(ctx context.Context, tx Executor, topic string, msgs ...*message.Message) error {
	if topic == "" {
		return errors.New("bus: empty topic")
	}
	now := time.Now().UnixNano()
	for len(msgs) > 0 {
		n := min(len(msgs), maxRowsPerInsert)
		if err := insert(ctx, tx, topic, now, msgs[:n]); err != nil {
			return err
		}
		msgs = msgs[n:]
	}
	return nil
}

const insertHead = `INSERT INTO bus_messages (topic, uuid, payload, metadata, created_at) VALUES (?, ?, ?, ?, ?)`

func insert(ctx context.Context, tx Executor, topic string, now int64, msgs []*message.Message) error {
	q := insertHead
	if len(msgs) > 1 {
		var b strings.Builder
		b.Grow(len(insertHead) + 17*(len(msgs)-1))
		b.WriteString(insertHead)
		for range len(msgs) - 1 {
			b.WriteString(", (?, ?, ?, ?, ?)")
		}
		q = b.String()
	}
	args := make([]any, 0, 5*len(msgs))
	for _, m := range msgs {
		meta, err := encodeMetadata(m.Metadata)
		if err != nil {
			return fmt.Errorf("bus: message %s: %w", m.UUID, err)
		}
		payload := []byte(m.Payload)
		if payload == nil {
			payload = []byte{} // the column is NOT NULL
		}
		args = append(args, topic, m.UUID, payload, meta, now)
	}
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("bus: publish to %s: %w", topic, err)
	}
	return nil
}

// encodeMetadata writes metadata as json.Marshal writes a map of strings
// (keys sorted), without its reflection: it runs in the publishing
// transaction.
func encodeMetadata(md message.Metadata) (string, error) {
	if len(md) == 0 {
		return "{}", nil
	}
	keys := make([]string, 0, len(md))
	size := 2
	for k, v := range md {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return "", fmt.Errorf("metadata %q is not valid UTF-8", k)
		}
		keys = append(keys, k)
		size += len(k) + len(v) + 6
	}
	slices.Sort(keys)
	b := append(make([]byte, 0, size), '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, k)
		b = append(b, ':')
		b = jsonstr.Append(b, md[k])
	}
	return string(append(b, '}')), nil
}

func decodeMetadata(s string) (message.Metadata, error) {
	md := message.Metadata{}
	if s == "{}" || s == "" {
		return md, nil
	}
	if err := json.Unmarshal([]byte(s), (*map[string]string)(&md)); err != nil {
		return nil, err
	}
	return md, nil
}

// wakers are this process's subscriptions, by topic.
var wakers = struct {
	sync.Mutex
	m map[string]map[chan struct{}]struct{}
}{m: make(map[string]map[chan struct{}]struct{})}

// Notify wakes this process's subscribers of topic at once; call it after a
// commit that published to topic. Other processes see new messages at their
// next poll (SubscriberConfig.PollInterval). It never blocks.
func Notify(topic string) {
	wakers.Lock()
	for ch := range wakers.m[topic] {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	wakers.Unlock()
}

// watch registers a wake-up channel for topic; the returned function
// unregisters it.
func watch(topic string) (<-chan struct{}, func()) {
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
	// InitializeSchema calls InitializeSchema in NewPublisher.
	InitializeSchema bool
}

// Publisher is a message.Publisher that writes each Publish call's messages
// in a transaction of its own.
type Publisher struct {
	db     *sql.DB
	log    watermill.LoggerAdapter
	mu     sync.RWMutex
	closed bool
}

// NewPublisher makes a publisher on db, the database's writer pool (with
// _txlock=immediate, its transactions take the write lock at BEGIN). A nil
// logger logs nothing.
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

// Publish writes msgs to topic in one transaction (all or none) and then
// calls Notify(topic); when it returns nil the messages are durable (as
// durable as the database's synchronous setting makes a commit) and
// visible to subscribers.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return errors.New("bus: publisher closed")
	}
	if len(msgs) == 0 {
		return nil
	}
	ctx := context.Background()
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("bus: publish to %s: %w", topic, err)
	}
	if err := PublishTx(ctx, tx, topic, msgs...); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("bus: publish to %s: %w", topic, err)
	}
	Notify(topic)
	return nil
}

// Close stops the publisher after the publishes in progress; the database
// stays open (its owner closes it).
func (p *Publisher) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return nil
}

// cleanupChunk bounds the rows one DELETE removes, so that retention never
// holds the write lock for long.
const cleanupChunk = 1000

// Cleanup is the retention: it deletes the messages created before before
// that every consumer group of their topic has acknowledged; messages of a
// topic that no consumer group has ever subscribed to are deleted once
// created before before. It returns how many it deleted.
//
// It deletes in statements of at most 1000 rows, each its own short write
// transaction, so publishers are not held up; db is the writer pool. A
// consumer group that is gone for good holds its topics' messages back
// until it is removed with DropConsumerGroup. SubscriberConfig.Retention
// runs Cleanup periodically.
func Cleanup(ctx context.Context, db *sql.DB, before time.Time) (int64, error) {
	topics, err := cleanupTopics(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("bus: cleanup: %w", err)
	}
	var deleted int64
	for _, topic := range topics {
		n, err := cleanupTopic(ctx, db, topic, before.UnixNano())
		deleted += n
		if err != nil {
			return deleted, fmt.Errorf("bus: cleanup of %s: %w", topic, err)
		}
	}
	return deleted, nil
}

// cleanupTopics lists the topics that have messages, jumping through the
// (topic, seq) index rather than reading every row.
func cleanupTopics(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `WITH RECURSIVE t(topic) AS (
		  SELECT min(topic) FROM bus_messages
		  UNION ALL
		  SELECT (SELECT min(topic) FROM bus_messages WHERE topic > t.topic) FROM t WHERE t.topic IS NOT NULL
		) SELECT topic FROM t WHERE topic IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var topics []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		topics = append(topics, t)
	}
	return topics, rows.Err()
}

func cleanupTopic(ctx context.Context, db *sql.DB, topic string, before int64) (int64, error) {
	// Every group must have acknowledged a message for it to go.
	var acked sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT min(acked) FROM bus_offsets WHERE topic = ?`, topic).Scan(&acked); err != nil {
		return 0, err
	}
	limit := int64(math.MaxInt64)
	if acked.Valid {
		limit = acked.Int64
	}
	// And it must be old: stop before the first message that is not (seq
	// order is commit order, so later ones are younger but for clock skew
	// between publishers, which only keeps a few a little longer).
	var young int64
	err := db.QueryRowContext(ctx, `SELECT seq FROM bus_messages WHERE topic = ? AND seq <= ? AND created_at >= ?
		ORDER BY seq LIMIT 1`, topic, limit, before).Scan(&young)
	switch {
	case err == nil:
		limit = young - 1
	case !errors.Is(err, sql.ErrNoRows):
		return 0, err
	}
	var deleted int64
	for {
		res, err := db.ExecContext(ctx, `DELETE FROM bus_messages WHERE seq IN (
			SELECT seq FROM bus_messages WHERE topic = ? AND seq <= ? ORDER BY seq LIMIT ?)`, topic, limit, cleanupChunk)
		if err != nil {
			return deleted, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return deleted, err
		}
		deleted += n
		if n < cleanupChunk {
			return deleted, nil
		}
	}
}

// DropConsumerGroup forgets a consumer group: its offsets on every topic,
// so that Cleanup no longer keeps messages for it. Use it for a group that
// is retired; a subscription of the group that is still running would start
// over from the oldest message.
func DropConsumerGroup(ctx context.Context, db Executor, group string) error {
	if _, err := db.ExecContext(ctx, `DELETE FROM bus_offsets WHERE consumer_group = ?`, group); err != nil {
		return fmt.Errorf("bus: drop consumer group %s: %w", group, err)
	}
	return nil
}
