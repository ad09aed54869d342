package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// Lag counts the messages of topic the consumer group has yet to
// acknowledge: those after its offset (after none, for a group that has
// not read the topic yet). The offset is written every CommitInterval
// while messages flow, so the count may include that interval's
// acknowledged ones.
func Lag(ctx context.Context, db *sql.DB, group, topic string) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM bus_messages WHERE topic = ?1
		AND seq > coalesce((SELECT acked FROM bus_offsets WHERE consumer_group = ?2 AND topic = ?1), 0)`, topic, group).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("bus: lag of %s on %s: %w", group, topic, err)
	}
	return n, nil
}
