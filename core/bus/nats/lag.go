package nats

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Lag is how many messages of topic the consumer group has yet to
// acknowledge, as JetStream tells it of the group's consumer: those not
// yet delivered and those delivered but not acknowledged.
func (b *Bus) Lag(ctx context.Context, group, topic string) (int64, error) {
	info, err := b.js.ConsumerInfo(b.cluster, b.consumer(group, topic), nats.Context(ctx))
	if err != nil {
		return 0, fmt.Errorf("bus nats: consumer of group %s on %s: %w", group, topic, err)
	}
	return int64(info.NumPending) + int64(info.NumAckPending), nil
}
