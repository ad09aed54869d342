package sqlite

import (
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// checkpointInterval is how often the checkpointer copies the WAL into
// the database file.
const checkpointInterval = 200 * time.Millisecond

// A checkpointer copies the WAL into the database file from its own
// connection, in the background. SQLite's automatic checkpoint runs inside
// the commit that takes the WAL past 1,000 pages, its fsync included, and
// made that commit, and every Update waiting behind it, several times
// slower than the rest; the writer connection has it turned off.
//
// The checkpoints are PASSIVE: they copy what no reader still needs and
// never wait for the writer or the readers, and the writer starts the WAL
// over once a checkpoint has copied all of it.
type checkpointer struct {
	db       *sql.DB
	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func startCheckpointer(dsn string) (*checkpointer, error) {
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open the checkpointer: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	c := &checkpointer{db: db, quit: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
			// A busy or failing checkpoint leaves the WAL as it is: the
			// next tick tries again.
			var busy, frames, copied int
			err := c.db.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
			if afterCheckpoint != nil && err == nil {
				afterCheckpoint(frames, copied)
			}
		}
	}
}

// afterCheckpoint, when set (by tests), is told after each checkpoint how
// many frames the WAL held and how many of them it copied.
var afterCheckpoint func(frames, copied int)

// stop ends the checkpoints and closes their connection.
func (c *checkpointer) stop() {
	c.stopOnce.Do(func() {
		close(c.quit)
		<-c.done
		c.db.Close()
	})
}
