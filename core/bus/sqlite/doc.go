// Package sqlite is a Watermill Publisher and Subscriber on a SQLite
// database (github.com/mattn/go-sqlite3), the embedded event bus of aivis.
// It passes Watermill's own acceptance suite (pubsub/tests).
//
// # Schema
//
// bus_messages holds every message: seq (INTEGER PRIMARY KEY AUTOINCREMENT,
// so a number is never reused after a deletion), topic, uuid, payload,
// metadata (a JSON object) and created_at. bus_offsets holds, per consumer
// group and topic, the seq of the last acknowledged message and the lease
// of the subscription that is reading (holder, lease_until).
//
// # Publishing
//
// PublishTx writes messages inside the caller's transaction: the
// transactional outbox. They become visible when that transaction commits
// and never if it rolls back. SQLite has one writer at a time, so seq order
// is commit order and a reader never skips a message committed late.
// Publisher.Publish does the same in a transaction of its own. Notify (which
// Publish calls) wakes this process's subscriptions of a topic at once;
// other processes see new messages at their next poll (PollInterval).
//
// # Subscribing
//
// Each consumer group reads each topic from the start (a new group receives
// the messages published before it subscribed) and in order: a message is
// sent only after the one before it was acknowledged; a nacked message is
// sent again. Subscriptions of one group to one topic compete: the one
// holding the lease reads, the others wait for it (a lease lasts
// LeaseDuration, is renewed while reading and released on close), in one
// process or across several.
//
// # At least once
//
// The offset of acknowledged messages is written when a batch is done, at
// most every CommitInterval while one is in progress, and when the
// subscription ends. A crash between an acknowledgement and that write sends
// the messages acknowledged since again (at most one batch, BatchSize): a
// consumer must be idempotent, as every Watermill consumer must.
//
// # Retention
//
// Cleanup deletes messages every consumer group of their topic has
// acknowledged and that are older than a given time; messages of a topic no
// group reads are deleted once older than it too.
package sqlite
