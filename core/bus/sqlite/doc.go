// Package sqlite is a Watermill Publisher and Subscriber on a SQLite
// database (github.com/mattn/go-sqlite3): the embedded event bus of aivis.
// It passes Watermill's own acceptance suite (pubsub/tests) with the
// features ConsumerGroups, Persistent, GuaranteedOrder and
// GuaranteedOrderWithSingleSubscriber (at least once, not exactly once).
//
// # Schema
//
// InitializeSchema creates, if missing:
//
//	bus_messages (
//	  seq        INTEGER PRIMARY KEY AUTOINCREMENT, -- order of the bus
//	  topic      TEXT NOT NULL,
//	  uuid       TEXT NOT NULL,                     -- message.Message.UUID
//	  payload    BLOB NOT NULL,
//	  metadata   TEXT NOT NULL,                     -- a JSON object of strings
//	  created_at INTEGER NOT NULL                   -- Unix nanoseconds, at publication
//	)
//	INDEX bus_messages_topic ON bus_messages(topic, seq)
//
//	bus_offsets (                                   -- one row per consumer group and topic
//	  consumer_group TEXT NOT NULL,
//	  topic          TEXT NOT NULL,
//	  acked          INTEGER NOT NULL,              -- seq of the group's last acked message
//	  holder         TEXT NOT NULL DEFAULT '',      -- the subscription holding the lease
//	  lease_until    INTEGER NOT NULL DEFAULT 0,    -- Unix nanoseconds
//	  PRIMARY KEY (consumer_group, topic)
//	) WITHOUT ROWID
//
// AUTOINCREMENT means a seq is never used twice, even after retention
// deleted the newest messages. UUIDs, payloads and metadata come back
// exactly as published; metadata must be valid UTF-8 (PublishTx refuses it
// otherwise rather than let JSON alter it).
//
// # Publishing and ordering
//
// PublishTx inserts messages with the caller's transaction: the
// transactional outbox. They become visible when that transaction commits,
// and never if it rolls back. SQLite has one writer at a time and a
// transaction holds the write lock from its first write to its commit, so
// seq order is commit order: a reader that has seen seq n will never later
// find a committed message below n, and reading "seq > offset" loses
// nothing. Publisher.Publish does the same in a transaction of its own per
// call (all of a call's messages or none) and then calls Notify.
//
// # Polling and Notify
//
// A subscription that has caught up with its topic sleeps until Notify is
// called for the topic in this process, or for PollInterval (default
// 100ms), whichever comes first. Notify is in-memory and immediate; call it
// after committing a transaction that used PublishTx. Messages written by
// other processes sharing the database file are seen at the next poll.
//
// # Consumer groups, offsets and leases
//
// Every consumer group receives every message of a topic. A new group
// starts from the oldest message still stored: a message published before
// anyone subscribed is delivered to every group that subscribes later,
// until retention removes it. The group's position is bus_offsets.acked, so
// a group resumes after its last acked message when its process restarts.
//
// Subscriptions of one group to one topic (in one process or in several)
// compete through a lease on the group's bus_offsets row: one of them holds
// it and delivers; the others look at the row every PollInterval and take
// over when it is released (at once: a subscription gives it up, with its
// offset written, when its context ends or its Subscriber is closed) or has
// expired (LeaseDuration, default 30s, after the last renewal: the time a
// crashed process keeps its group's topic). The holder renews the lease
// every third of LeaseDuration, also while it waits for an ack. Taking and
// renewing the lease and writing the offset are single autocommit
// statements on the writer pool: no write transaction is ever held while a
// handler works.
//
// So a group delivers the messages of a topic one at a time, in seq order:
// the next message is sent only after the previous one was acked; a nacked
// message (or one not acked within AckDeadline) is sent again, after
// NackResendSleep, re-read from the database. Competing subscriptions
// provide failover, not parallelism; use several topics or groups for that.
//
// # At least once
//
// Acks are counted in memory and the offset is written, with the lease
// renewal, at most every CommitInterval (default 100ms) while messages
// flow, once the subscription has caught up with its topic, and when it
// ends. The windows in which a message is delivered again:
//
//   - a crash (of the process or the machine) redelivers what was acked in
//     the last CommitInterval before it, and the message being handled;
//   - a subscription that ends while its reader holds a message waits
//     CloseGrace (default 1s, with the message's context cancelled) for its
//     ack; without one, the message goes to the next holder, perhaps while
//     the first handler is still at it;
//   - a holder that cannot renew its lease for LeaseDuration (its process
//     stopped, or the database locked that long) loses it; the new holder
//     starts from the last written offset.
//
// Handlers must therefore be idempotent, as with every Watermill
// subscriber. In none of these cases is a message skipped, and but for the
// last two, two subscriptions of a group never have the same message at
// once.
//
// # Retention
//
// Cleanup deletes the messages older than a given time that every
// consumer group of their topic has acked (and those of topics no group has
// ever subscribed to), in short write transactions of at most 1000 rows.
// SubscriberConfig.Retention runs it periodically. A group that is gone for
// good holds its topics' messages back until DropConsumerGroup forgets it.
// The database file does not shrink; SQLite reuses the freed pages.
package sqlite
