package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"

	"github.com/aivis/aivis/core/bus/buslog"
)

// How the bus keeps and redelivers messages.
const (
	// Retention is how long the stream keeps a message after its
	// publication, consumed or not.
	Retention = 7 * 24 * time.Hour
	// DuplicateWindow is how long the stream remembers a message's UUID
	// and stores a message published again with it only once.
	DuplicateWindow = 2 * time.Minute
	// NackDelay is the pause before a nacked message is sent again.
	NackDelay = time.Second
	// AckWait is SubscriberConfig.AckWait's default.
	AckWait = 30 * time.Second
)

// ErrInvalid is in the error of a topic or a message the bus cannot carry
// as given.
var ErrInvalid = errors.New("bus nats")

// Bus is the bus of one deployment (its cluster name) on a NATS server.
// Its publishers and subscribers each have a connection of their own,
// which the adapter closes with them.
type Bus struct {
	servers string // nats_url, which may hold credentials: never shown
	cluster string
	admin   *nats.Conn // streams and consumers
	js      nats.JetStreamContext
	log     watermill.LoggerAdapter
	state   connState
}

// Open connects to the NATS servers of servers (nats_url) and makes the
// stream of cluster if it is missing. log (nil: none) is given the
// adapter's messages, through buslog, and the bus's losses of its server
// and returns to it.
func Open(ctx context.Context, servers, cluster string, log *slog.Logger) (*Bus, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Bus{servers: servers, cluster: cluster, log: buslog.New(log), state: connState{log: log, down: map[*nats.Conn]bool{}}}
	var err error
	if b.admin, err = b.connect("admin"); err != nil {
		return nil, err
	}
	if b.js, err = b.admin.JetStream(); err != nil {
		b.admin.Close()
		return nil, fmt.Errorf("bus nats: %w", err)
	}
	if err := b.ensureStream(ctx); err != nil {
		b.admin.Close()
		return nil, err
	}
	return b, nil
}

// Ping is a round trip to the server on the bus's own connection.
func (b *Bus) Ping(ctx context.Context) error { return b.admin.FlushWithContext(ctx) }

// Close closes the bus's own connection; its publishers and subscribers
// are closed by their owners.
func (b *Bus) Close() error {
	b.admin.Close()
	return nil
}

// connect opens a connection that reconnects for as long as it is open,
// and tells the bus's connState when it is lost and found again. Its
// errors name the servers without their credentials.
func (b *Bus) connect(role string) (*nats.Conn, error) {
	nc, err := nats.Connect(b.servers, nats.Name("aivis "+b.cluster+" "+role), nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second), nats.DisconnectErrHandler(b.state.lost), nats.ReconnectHandler(b.state.found),
		nats.ClosedHandler(b.state.closed))
	if err != nil {
		return nil, fmt.Errorf("bus nats: connect to %s: %w", Redact(b.servers), err)
	}
	return nc, nil
}

// connState is what the bus's connections say of the server: the log has
// one warning when the first of them loses it, and one line when the last
// of those is back, however many connections the bus has and in whatever
// order they reconnect. A connection closed by its owner is not a loss.
type connState struct {
	log  *slog.Logger
	mu   sync.Mutex
	down map[*nats.Conn]bool // lost and not yet back
}

func (s *connState) lost(nc *nats.Conn, err error) {
	if nc.IsClosed() { // Close calls the handler too
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.down) == 0 {
		s.log.Warn("bus nats: the NATS server is lost; events wait in the outbox, and are forwarded once it answers again", "err", reason(err))
	}
	s.down[nc] = true
}

func (s *connState) found(nc *nats.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down[nc] {
		return
	}
	delete(s.down, nc)
	if len(s.down) == 0 {
		s.log.Info("bus nats: the NATS server answers again")
	}
}

func (s *connState) closed(nc *nats.Conn) {
	s.mu.Lock()
	delete(s.down, nc)
	s.mu.Unlock()
}

// reason is why a connection was lost, without the addresses of a network
// error ("read tcp 10.0.0.1:5000->10.0.0.2:4222: ...").
func reason(err error) string {
	var op *net.OpError
	switch {
	case err == nil:
		return "closed by the server"
	case errors.As(err, &op) && op.Err != nil:
		return op.Op + ": " + reason(op.Err)
	}
	var sys *os.SyscallError
	if errors.As(err, &sys) {
		return sys.Err.Error()
	}
	return err.Error()
}

// Redact is servers (a nats_url) without the credentials its URLs may
// hold.
func Redact(servers string) string {
	parts := strings.Split(servers, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil {
			parts[i] = "(an invalid URL)"
			continue
		}
		u.User = nil
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}

func (b *Bus) subjects() string { return b.cluster + ".topic.>" }

func (b *Bus) subject(topic string) string { return b.cluster + ".topic." + topic }

func (b *Bus) consumer(group, topic string) string {
	return b.cluster + "_" + escape(group) + "__" + escape(topic)
}

// escape keeps a name's letters, digits and '-' and writes any other byte
// as _XX: distinct names stay distinct, in what a consumer name allows.
func escape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' {
			b.WriteByte(c)
		} else {
			b.Write([]byte{'_', hex[c>>4], hex[c&15]})
		}
	}
	return b.String()
}

// ensureStream makes the stream of the cluster, or checks that the one of
// that name is the bus's.
func (b *Bus) ensureStream(ctx context.Context) error {
	info, err := b.js.StreamInfo(b.cluster, nats.Context(ctx))
	if errors.Is(err, nats.ErrStreamNotFound) {
		info, err = b.js.AddStream(&nats.StreamConfig{
			Name: b.cluster, Description: "aivis events of cluster " + b.cluster, Subjects: []string{b.subjects()},
			Storage: nats.FileStorage, Retention: nats.LimitsPolicy, MaxAge: Retention, Duplicates: DuplicateWindow,
		}, nats.Context(ctx))
		if errors.Is(err, nats.ErrStreamNameAlreadyInUse) { // made meanwhile by another instance
			info, err = b.js.StreamInfo(b.cluster, nats.Context(ctx))
		}
	}
	if err != nil {
		return fmt.Errorf("bus nats: stream %s: %w", b.cluster, err)
	}
	if !slices.Contains(info.Config.Subjects, b.subjects()) {
		return fmt.Errorf("bus nats: the server has a stream %s of other subjects (%s), not aivis's; choose another cluster_name",
			b.cluster, strings.Join(info.Config.Subjects, ", "))
	}
	return nil
}

// checkTopic refuses a topic that is not a subject without wildcards.
func checkTopic(topic string) error {
	for tok := range strings.SplitSeq(topic, ".") {
		if tok == "" {
			return fmt.Errorf("%w: topic %q has an empty token", ErrInvalid, topic)
		}
	}
	for i := 0; i < len(topic); i++ {
		if c := topic[i]; c <= ' ' || c >= 0x7f || c == '*' || c == '>' {
			return fmt.Errorf("%w: topic %q is not a NATS subject without wildcards (printable ASCII, no spaces, '*' or '>')", ErrInvalid, topic)
		}
	}
	return nil
}

// checkMessage refuses metadata a NATS header would not carry exactly.
func checkMessage(m *message.Message) error {
	for k, v := range m.Metadata {
		bad := k == "" || k == wnats.WatermillUUIDHdr || len(k) >= 5 && strings.EqualFold(k[:5], "Nats-")
		for i := 0; i < len(k) && !bad; i++ {
			bad = k[i] <= ' ' || k[i] >= 0x7f || k[i] == ':'
		}
		if bad {
			return fmt.Errorf("%w: message %s: metadata key %q is not a header name (printable ASCII without ':', not Nats-...)", ErrInvalid, m.UUID, k)
		}
		if strings.ContainsAny(v, "\r\n") || v != strings.Trim(v, " \t") {
			return fmt.Errorf("%w: message %s: the value of metadata %q has a line break or begins or ends with white space", ErrInvalid, m.UUID, k)
		}
	}
	return nil
}

// marshaler is the adapter's NATSMarshaler (the UUID and the metadata as
// headers, the payload as the data) to the topic's subject, with the topic
// and the UUID as its Nats-Msg-Id: the stream's duplicates are those of a
// topic (the stream has every topic; the same UUID may be published on
// two).
type marshaler struct {
	wnats.NATSMarshaler
	bus *Bus
}

func (m *marshaler) Marshal(topic string, msg *message.Message) (*nats.Msg, error) {
	nm, err := m.NATSMarshaler.Marshal(topic, msg)
	if err != nil {
		return nil, err
	}
	nm.Subject = m.bus.subject(topic)
	nm.Header.Set(nats.MsgIdHdr, topic+" "+msg.UUID)
	return nm, nil
}

// Publisher is a publisher on a connection of its own, which Close closes.
func (b *Bus) Publisher() (message.Publisher, error) {
	nc, err := b.connect("publisher")
	if err != nil {
		return nil, err
	}
	js, err := nc.JetStream()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bus nats: %w", err)
	}
	return &publisher{nc: nc, js: js, marshaler: &marshaler{bus: b}}, nil
}

// PublishTimeout bounds the wait for the server's acknowledgements of a
// Publish.
const PublishTimeout = 10 * time.Second

type publisher struct {
	nc        *nats.Conn
	js        nats.JetStreamContext
	marshaler *marshaler
}

// Publish checks the topic and every message, then sends them all, in
// order, without waiting for each one's acknowledgement, and returns once
// the server has acknowledged every one (nil: all are stored), or with the
// first error once none is pending. The stream stores them in the order
// they were sent; some may be stored though Publish failed, and are
// stored once if published again within the DuplicateWindow.
func (p *publisher) Publish(topic string, msgs ...*message.Message) error {
	if err := checkTopic(topic); err != nil {
		return err
	}
	nms := make([]*nats.Msg, len(msgs))
	for i, m := range msgs {
		if err := checkMessage(m); err != nil {
			return err
		}
		nm, err := p.marshaler.Marshal(topic, m)
		if err != nil {
			return fmt.Errorf("bus nats: message %s: %w", m.UUID, err)
		}
		nms[i] = nm
	}
	acks := make([]nats.PubAckFuture, 0, len(nms))
	var errs []error
	for _, nm := range nms {
		f, err := p.js.PublishMsgAsync(nm)
		if err != nil {
			errs = append(errs, err)
			break
		}
		acks = append(acks, f)
	}
	timeout := time.NewTimer(PublishTimeout)
	defer timeout.Stop()
	for _, f := range acks {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			errs = append(errs, err)
		case <-timeout.C:
			return fmt.Errorf("bus nats: publish: no acknowledgement within %v", PublishTimeout)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("bus nats: publish: %w", errs[0])
	}
	return nil
}

// Close closes the publisher's connection once what it sent is flushed.
func (p *publisher) Close() error {
	p.nc.Flush()
	p.nc.Close()
	return nil
}
