package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Lag counts the messages of topic the consumer group has yet to
// acknowledge: those after its position in the topic's offsets table, along
// the messages' primary key (all of them, for a group that has not read the
// topic yet).
func Lag(ctx context.Context, db *pgxpool.Pool, group, topic string) (int64, error) {
	if err := checkTopic(topic); err != nil {
		return 0, err
	}
	table, offs := schema(0).MessagesTable(topic), offsets.MessagesOffsetsTable(topic)
	var n int64
	err := db.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE ("transaction_id", "offset") >
		(SELECT last_processed_transaction_id, coalesce(offset_acked, 0) FROM `+offs+` WHERE consumer_group = $1)`, group).Scan(&n)
	if err == nil && n == 0 {
		// No row of the group: it has read nothing.
		var read bool
		if err = db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+offs+` WHERE consumer_group = $1)`, group).Scan(&read); err == nil && !read {
			err = db.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("bus postgres: lag of %s on %s: %w", group, topic, err)
	}
	return n, nil
}

// ForwarderLag counts the events in the outbox the forwarder has yet to
// hand to the other bus.
func ForwarderLag(ctx context.Context, db *pgxpool.Pool) (int64, error) {
	return Lag(ctx, db, forwarderGroup, ForwarderTopic)
}
