// Package nats is the event bus on NATS JetStream (bus: nats), through
// Watermill's NATS adapter (github.com/ThreeDotsLabs/watermill-nats/v2,
// its pkg/nats with JetStream on). It passes Watermill's acceptance suite
// (pubsub/tests) with the features ConsumerGroups and Persistent, and with
// one message in flight GuaranteedOrder and
// GuaranteedOrderWithSingleSubscriber (at least once, not exactly once).
//
// # Names
//
// Everything the bus makes on the server begins with the deployment's
// cluster_name (config), so that deployments and test runs can share one
// NATS:
//
//	stream       <cluster>                      subjects <cluster>.topic.>
//	subject      <cluster>.topic.<topic>        one per Watermill topic
//	consumer     <cluster>_<group>__<topic>     durable, one per group and topic
//	deliver to   <cluster>.deliver.<consumer>   queue group <consumer>
//
// In consumer names, group and topic keep their letters, digits and '-';
// any other byte is written _XX (its hex), so that distinct groups and
// topics never share a consumer: aivis.events of the group webhooks is
// aivis_webhooks__aivis_2Eevents. A topic is refused unless it is a valid
// subject without wildcards (printable ASCII, no spaces, '*' or '>', no
// empty token).
//
// Open makes the stream if it is missing: file storage, events kept
// Retention (7 days) from their publication whether consumed or not, and a
// DuplicateWindow (2 minutes) in which a message published again on the
// same topic with the same UUID (its Nats-Msg-Id is both) is stored once.
// A stream of that name whose subjects are not the bus's is refused; one
// made by an operator with the same subjects (more replicas, say) is used
// as it is.
//
// # Publishing
//
// Publisher publishes each message with its topic and UUID as its
// Nats-Msg-Id. It sends the messages of a call in order without waiting
// for each one's acknowledgement (nats.go's asynchronous JetStream
// publish), then waits for all of them: a Publish that returned nil is
// stored, in the order of the call; one that failed may have stored some,
// which the stream stores once if they are published again within the
// DuplicateWindow. The adapter's publisher waits for each message's
// acknowledgement before it sends the next: about 50-70 µs a message on
// loopback, where a call of 100 costs about 11 µs a message. The UUID and the metadata travel as headers (the adapter's
// NATSMarshaler), so metadata must be what a header carries exactly: a key
// of printable ASCII without ':' that does not begin with "Nats-", a value
// without line breaks that neither begins nor ends with white space. A
// call with a message that breaks this is refused whole with ErrInvalid,
// before anything is sent.
//
// # Consumer groups, in flight and batches
//
// Each group has a durable push consumer per topic, which Subscribe makes
// or updates to the subscriber's settings (a create-or-update: the servers
// of several instances agree, and a changed setting is applied), then
// joins as a member of its queue group: every group receives every message
// of the topic, and the members of one group, in this process or another,
// share them. A new group starts from the oldest message in the stream.
//
// SubscriberConfig.Batch is the consumer's MaxAckPending (at least
// InFlight): how many messages the server pushes to the group before their
// acks, which is what a read fetches with a push consumer.
// SubscriberConfig.InFlight is how many of those a subscription hands over
// before their acks, concurrently; with one they come in stream order.
//
// The subscriber is the bus's own, on nats.go as the adapter's Subscriber
// is (a member of the queue group, messages unmarshaled by the adapter's
// NATSMarshaler): the adapter's closes its channel while a callback may
// still send on it (a panic, send on closed channel, which Watermill's
// suite under the race detector reproduces), and hands over one message
// per member at a time (its SubscribersCount). Marshaling is the
// adapter's.
//
// # Connections
//
// The bus, its publishers and each subscriber have a connection of their
// own, which reconnects every second, for as long as it is open, while the
// server is away (what is published meanwhile waits in the connection's
// buffer, and a Publish that gets no acknowledgement within PublishTimeout
// fails). The log given to Open has one warning when the first of the
// bus's connections loses the server, and one line when the last of those
// is back, naming neither the server's address nor its credentials.
//
// # At least once
//
// A message is acknowledged (asynchronously, explicit ack) once its
// handler acks it. One nacked is redelivered a second later (NackDelay), to
// any member. One neither acked nor nacked within AckWait (30 s by
// default), because its handler or its process died, is redelivered by the
// server. A subscription that ends gives back (naks) what it was pushed and
// had not handed over, and what it handed over if it is not acked within a
// second, with the message's context cancelled; a process that dies keeps
// its messages until AckWait has passed. Consumers outlive their
// subscribers: they are made here, not by the client library, which would
// delete them when its subscription ended. Handlers must be idempotent, as
// with every Watermill subscriber.
package nats
