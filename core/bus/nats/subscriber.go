package nats

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
)

// SubscriberConfig is a consumer group and how it takes messages.
type SubscriberConfig struct {
	Group string
	// InFlight is how many messages a subscription hands over at once
	// (default 1: one after the other, in order).
	InFlight int
	// Batch is how many messages the server pushes to the group before
	// their acks (at least InFlight).
	Batch int
	// AckWait is how long a message handed over may go unacknowledged
	// before the server sends it again (default AckWait).
	AckWait time.Duration
}

// closeGrace is how long a subscription that ends waits for the ack of a
// message it handed over before it gives the message back.
const closeGrace = time.Second

// subscriber is a subscriber of one consumer group on a connection of its
// own. It subscribes with nats.go as the adapter's Subscriber does (a
// member of the consumer's queue group, messages unmarshaled by its
// NATSMarshaler), but ends a subscription only once its callbacks and
// hand-overs have returned: the adapter's closes the channel while a
// callback may still send on it (a panic, send on closed channel, which
// Watermill's suite under the race detector reproduces).
type subscriber struct {
	bus     *Bus
	cfg     SubscriberConfig
	nc      *nats.Conn
	js      nats.JetStreamContext
	log     watermill.LoggerAdapter
	closing chan struct{}
	once    sync.Once
	subs    sync.WaitGroup
	mu      sync.Mutex
	closed  bool
}

// Subscriber is a subscriber of one consumer group, on a connection of its
// own, which Close closes.
func (b *Bus) Subscriber(c SubscriberConfig) (message.Subscriber, error) {
	if c.Group == "" {
		return nil, errors.New("bus nats: a subscriber needs a consumer group")
	}
	c.InFlight = max(c.InFlight, 1)
	c.Batch = max(c.Batch, c.InFlight)
	if c.AckWait <= 0 {
		c.AckWait = AckWait
	}
	nc, err := b.connect("subscriber " + c.Group)
	if err != nil {
		return nil, err
	}
	js, err := nc.JetStream()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bus nats: %w", err)
	}
	return &subscriber{bus: b, cfg: c, nc: nc, js: js, closing: make(chan struct{}),
		log: b.log.With(watermill.LogFields{"consumer_group": c.Group})}, nil
}

// Subscribe makes or updates the group's consumer of topic, then joins its
// queue group. The channel closes when ctx ends or the subscriber closes.
func (s *subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if err := checkTopic(topic); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("bus nats: subscriber closed")
	}
	name := s.bus.consumer(s.cfg.Group, topic)
	// UpdateConsumer creates the consumer or updates it: the request has
	// no action, which the server takes as either.
	_, err := s.js.UpdateConsumer(s.bus.cluster, &nats.ConsumerConfig{
		Durable: name, Description: "group " + s.cfg.Group + " of topic " + topic,
		DeliverSubject: s.bus.cluster + ".deliver." + name, DeliverGroup: name,
		DeliverPolicy: nats.DeliverAllPolicy, AckPolicy: nats.AckExplicitPolicy, AckWait: s.cfg.AckWait,
		MaxAckPending: s.cfg.Batch, FilterSubject: s.bus.subject(topic), ReplayPolicy: nats.ReplayInstantPolicy,
	}, nats.Context(ctx))
	if err != nil {
		return nil, fmt.Errorf("bus nats: consumer %s: %w", name, err)
	}
	sn := &subscription{sub: s, out: make(chan *message.Message), stop: make(chan struct{}),
		slots: make(chan struct{}, s.cfg.InFlight), log: s.log.With(watermill.LogFields{"topic": topic})}
	// Bound to the consumer just made: the client library neither makes
	// it nor deletes it when this subscription ends.
	sn.nsub, err = s.js.QueueSubscribe(s.bus.subject(topic), name, sn.receive, nats.Bind(s.bus.cluster, name), nats.ManualAck())
	if err != nil {
		return nil, fmt.Errorf("bus nats: subscribe to consumer %s: %w", name, err)
	}
	s.subs.Add(1)
	go func() {
		defer s.subs.Done()
		select {
		case <-ctx.Done():
		case <-s.closing:
		}
		sn.end()
	}()
	return sn.out, nil
}

// Close ends the subscriptions, then flushes their acks and closes the
// connection.
func (s *subscriber) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.closing)
		s.subs.Wait()
		s.nc.Flush()
		s.nc.Close()
	})
	return nil
}

// subscription is one Subscribe: a member of the consumer's queue group
// that hands over up to InFlight messages at once.
type subscription struct {
	sub   *subscriber
	nsub  *nats.Subscription
	out   chan *message.Message
	stop  chan struct{} // closed when the subscription ends
	slots chan struct{} // one per message handed over and not yet acked
	log   watermill.LoggerAdapter

	mu       sync.Mutex
	ended    bool
	handlers sync.WaitGroup
}

// receive is the callback of the NATS subscription: it waits for a slot,
// then hands the message over in a goroutine of its own.
func (sn *subscription) receive(m *nats.Msg) {
	select {
	case sn.slots <- struct{}{}:
	case <-sn.stop:
		sn.giveBack(m)
		return
	}
	sn.mu.Lock()
	if sn.ended {
		sn.mu.Unlock()
		<-sn.slots
		sn.giveBack(m)
		return
	}
	sn.handlers.Add(1)
	sn.mu.Unlock()
	go func() {
		defer sn.handlers.Done()
		defer func() { <-sn.slots }()
		sn.handOver(m)
	}()
}

// handOver sends the message on the channel and acks or naks it as its
// handler does.
func (sn *subscription) handOver(m *nats.Msg) {
	msg, err := (&wnats.NATSMarshaler{}).Unmarshal(m)
	if err != nil {
		// Sent again it would fail again: dropped, as a handler drops an
		// unreadable event.
		sn.log.Error("Unreadable message dropped", err, watermill.LogFields{"subject": m.Subject})
		sn.ack(m.Term())
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msg.SetContext(ctx)
	select {
	case sn.out <- msg:
	case <-sn.stop:
		sn.giveBack(m)
		return
	}
	timeout := time.NewTimer(sn.sub.cfg.AckWait)
	defer timeout.Stop()
	var grace <-chan time.Time
	stop := sn.stop
	for {
		select {
		case <-msg.Acked():
			sn.ack(m.Ack())
			return
		case <-msg.Nacked():
			sn.ack(m.NakWithDelay(NackDelay))
			return
		case <-timeout.C: // the server sends it again
			return
		case <-stop:
			cancel()
			stop, grace = nil, time.After(closeGrace)
		case <-grace:
			sn.giveBack(m)
			return
		}
	}
}

// giveBack naks a message this subscription will not hand over, for
// another member to take at once.
func (sn *subscription) giveBack(m *nats.Msg) { sn.ack(m.Nak()) }

func (sn *subscription) ack(err error) {
	if err != nil {
		sn.log.Error("Cannot acknowledge a message", err, nil)
	}
}

// end stops the subscription: its callbacks give back what was pushed to it
// and not handed over, then the NATS subscription is drained and, once the
// hand-overs have returned, the channel closes.
func (sn *subscription) end() {
	closed := sn.nsub.StatusChanged(nats.SubscriptionClosed)
	close(sn.stop)
	if err := sn.nsub.Drain(); err != nil {
		sn.log.Error("Cannot drain the subscription", err, nil)
	} else {
		select {
		case <-closed:
		case <-time.After(sn.sub.cfg.AckWait):
			sn.log.Error("The subscription did not drain", nil, nil)
			sn.nsub.Unsubscribe()
		}
	}
	sn.mu.Lock()
	sn.ended = true
	sn.mu.Unlock()
	sn.handlers.Wait()
	close(sn.out)
}
