package nats_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"

	bus "github.com/aivis/aivis/core/bus/nats"
	"github.com/aivis/aivis/internal/bustest"
	"github.com/aivis/aivis/internal/testsvc"
)

func publisher(t testing.TB, b *bus.Bus) message.Publisher {
	t.Helper()
	pub, err := b.Publisher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	return pub
}

func subscribe(t testing.TB, b *bus.Bus, c bus.SubscriberConfig, topic string) <-chan *message.Message {
	t.Helper()
	sub, err := b.Subscriber(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	ch, err := sub.Subscribe(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func receive(t *testing.T, ch <-chan *message.Message) *message.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message in 10 s")
		return nil
	}
}

// TestNamesBeginWithTheCluster: the stream, its subjects and the
// consumers are the cluster's; two clusters on one server see only their
// own messages, and a group's topic has a consumer of its own even where
// names differ only in what a consumer name cannot hold.
func TestNamesBeginWithTheCluster(t *testing.T) {
	url, cluster := testsvc.NATS(t)
	_, other := testsvc.NATS(t)
	b, err := bus.Open(t.Context(), url, cluster, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	o, err := bus.Open(t.Context(), url, other, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()

	// Topics a.b and a_b, groups g.1 and g_1: four consumers.
	chans := map[string]<-chan *message.Message{}
	for _, topic := range []string{"a.b", "a_b"} {
		for _, group := range []string{"g.1", "g_1"} {
			chans[group+" "+topic] = subscribe(t, b, bus.SubscriberConfig{Group: group}, topic)
		}
	}
	otherCh := subscribe(t, o, bus.SubscriberConfig{Group: "g.1"}, "a.b")
	if err := publisher(t, b).Publish("a.b", message.NewMessage("m-ab", []byte("1"))); err != nil {
		t.Fatal(err)
	}
	if err := publisher(t, b).Publish("a_b", message.NewMessage("m-a_b", []byte("2"))); err != nil {
		t.Fatal(err)
	}
	// The other cluster's message is published after this cluster's: the
	// other cluster's subscriber receives it first.
	if err := publisher(t, o).Publish("a.b", message.NewMessage("fence", nil)); err != nil {
		t.Fatal(err)
	}
	for key, ch := range chans {
		m := receive(t, ch)
		want := map[string]string{"a.b": "m-ab", "a_b": "m-a_b"}[strings.Fields(key)[1]]
		if m.UUID != want {
			t.Errorf("%s received %s, want %s", key, m.UUID, want)
		}
		m.Ack()
	}
	if m := receive(t, otherCh); m.UUID != "fence" {
		t.Errorf("cluster %s received %s of cluster %s", other, m.UUID, cluster)
	}

	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := nc.JetStream()
	info, err := js.StreamInfo(cluster)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.Config.Subjects, []string{cluster + ".topic.>"}) || info.Config.MaxAge != bus.Retention ||
		info.Config.Duplicates != bus.DuplicateWindow || info.State.Msgs != 2 {
		t.Errorf("stream %+v, %d messages", info.Config, info.State.Msgs)
	}
	var names []string
	for c := range js.Consumers(cluster) {
		names = append(names, c.Name)
		if !strings.HasPrefix(c.Config.DeliverSubject, cluster+".deliver."+c.Name) || c.Config.DeliverGroup != c.Name ||
			!strings.HasPrefix(c.Config.FilterSubject, cluster+".topic.") {
			t.Errorf("consumer %+v", c.Config)
		}
	}
	slices.Sort(names)
	want := []string{cluster + "_g_2E1__a_2Eb", cluster + "_g_2E1__a_5Fb", cluster + "_g_5F1__a_2Eb", cluster + "_g_5F1__a_5Fb"}
	if !slices.Equal(names, want) {
		t.Errorf("consumers %v, want %v", names, want)
	}
}

// TestRefusesWhatHeadersCannotCarry: a call with one message whose
// metadata a NATS header would alter publishes nothing; a topic with a
// wildcard is refused.
func TestRefusesWhatHeadersCannotCarry(t *testing.T) {
	b := open(t)
	pub := publisher(t, b)
	ch := subscribe(t, b, bus.SubscriberConfig{Group: "g"}, "t")
	for _, md := range []message.Metadata{
		{"a:b": "x"}, {"a b": "x"}, {"": "x"}, {"Nats-Msg-Id": "x"}, {"nats-expected-stream": "x"},
		{"k": "line\nbreak"}, {"k": " leading space"}, {"k": "\tleading tab"}, {"k": "trailing space "},
		{"_watermill_message_uuid": "x"},
	} {
		good := message.NewMessage(watermill.NewUUID(), nil)
		bad := message.NewMessage(watermill.NewUUID(), nil)
		bad.Metadata = md
		if err := pub.Publish("t", good, bad); !errors.Is(err, bus.ErrInvalid) {
			t.Errorf("metadata %q: error %v", md, err)
		}
	}
	for _, topic := range []string{"t.*", "t.>", "t..u", "", "t u", ".t"} {
		if err := pub.Publish(topic, message.NewMessage(watermill.NewUUID(), nil)); !errors.Is(err, bus.ErrInvalid) {
			t.Errorf("topic %q: error %v", topic, err)
		}
	}
	fine := message.NewMessage("fence", []byte("x"))
	fine.Metadata = message.Metadata{"Type": "reading.created", "k": "inner  space", "e": "", "unicode": "é"}
	if err := pub.Publish("t", fine); err != nil {
		t.Fatal(err)
	}
	m := receive(t, ch)
	if m.UUID != "fence" || !maps(m.Metadata, fine.Metadata) {
		t.Fatalf("received %s %v, want the fence %v: a refused call published", m.UUID, m.Metadata, fine.Metadata)
	}
}

func maps(a, b message.Metadata) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			return false
		}
	}
	return true
}

// TestInFlight: a subscription hands over InFlight messages before any is
// acked, and the next once one is.
func TestInFlight(t *testing.T) {
	b := open(t)
	pub := publisher(t, b)
	if err := pub.Publish("t", bustest.Messages(5)...); err != nil {
		t.Fatal(err)
	}
	ch := subscribe(t, b, bus.SubscriberConfig{Group: "g", InFlight: 4, Batch: 8}, "t")
	var held []*message.Message
	for range 4 {
		held = append(held, receive(t, ch))
	}
	held[2].Ack()
	receive(t, ch).Ack()
	for _, m := range held {
		m.Ack()
	}
}

// TestCredentialsNotShown: an error of Open names the server without the
// credentials of nats_url.
func TestCredentialsNotShown(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, url := range []string{"nats://admin:s3cret@127.0.0.1:1", "nats://s3cret@127.0.0.1:1,nats://u:s3cret@127.0.0.1:2"} {
		_, err := bus.Open(ctx, url, "aivis", nil)
		if err == nil {
			t.Fatal("connected to nothing")
		}
		if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Errorf("error %q", err)
		}
	}
}

// TestForeignStream: a stream of the cluster's name with other subjects is
// not taken over.
func TestForeignStream(t *testing.T) {
	url, cluster := testsvc.NATS(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := nc.JetStream()
	if _, err := js.AddStream(&nats.StreamConfig{Name: cluster, Subjects: []string{"orders." + cluster + ".>"}}); err != nil {
		t.Fatal(err)
	}
	_, err = bus.Open(t.Context(), url, cluster, nil)
	if err == nil || !strings.Contains(err.Error(), "choose another cluster_name") {
		t.Fatalf("error %v", err)
	}
}
