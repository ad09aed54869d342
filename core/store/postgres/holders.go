package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/randid"
)

// Every process that opens the database is a holder of the work it claims
// (deliveries, scans, content requests), named by Holder, with a row in
// holders that it marks seen every beat. Processes share no machine here,
// so nothing like a lock the kernel lets go tells that one died: a holder
// unseen for longer than its timeout is dead, and the first live one to
// sweep ends its leases at once instead of letting them run out, so that
// its work is taken again within seconds of its death. A holder that was
// only slow (paused, cut off from the database) finds its row gone at its
// next beat and writes it again; what it held meanwhile was taken by
// others, and its late writes are refused (ErrLost), as for any lease that
// ended.
type holders struct {
	id    string
	db    *DB
	times holderTimes
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// holderTimes are how often a holder beats and sweeps, and how long
// unseen a holder is taken for dead: several beats, so that a busy
// database or a pause of the process does not end live leases.
type holderTimes struct {
	beat, timeout time.Duration
}

var defaultHolderTimes = holderTimes{beat: 2 * time.Second, timeout: 15 * time.Second}

// startHolder registers this process as a holder and starts its beats.
func startHolder(ctx context.Context, db *DB, ht holderTimes) (*holders, error) {
	h := &holders{id: randid.New("proc"), db: db, times: ht, quit: make(chan struct{}), done: make(chan struct{})}
	if err := h.seen(ctx); err != nil {
		return nil, err
	}
	go h.run()
	return h, nil
}

// seen writes this holder's row, now.
func (h *holders) seen(ctx context.Context) error {
	_, err := h.db.pool.Exec(ctx, `INSERT INTO holders (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET seen = now()`, h.id)
	return err
}

// run beats, sweeps and folds the cache versions every beat until stop.
func (h *holders) run() {
	defer close(h.done)
	t := time.NewTicker(h.times.beat)
	defer t.Stop()
	for {
		select {
		case <-h.quit:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.times.timeout)
		// Errors are left for the next beat: the database may be away.
		if h.seen(ctx) == nil {
			h.sweep(ctx)
			h.db.signal.fold(ctx)
		}
		cancel()
	}
}

// sweep ends the leases of every dead holder and forgets it, in one
// transaction: a sweep that fails leaves the holder for the next.
func (h *holders) sweep(ctx context.Context) error {
	return pgx.BeginFunc(ctx, h.db.pool, func(tx pgx.Tx) error {
		dead, err := collect(ctx, tx, func(s scanner) (string, error) {
			var id string
			return id, s.Scan(&id)
		}, `DELETE FROM holders WHERE seen < now() - make_interval(secs => $1) RETURNING id`, h.times.timeout.Seconds())
		if err != nil {
			return err
		}
		for _, id := range dead {
			if err := endLeases(ctx, tx, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// endLeases ends, now, the leases a holder holds: its deliveries' are
// gone (a delivery's lease is its holder, "/" and the claim's number);
// its scans' and content requests' have ended (at 1970, as on SQLite), so
// that the next claim takes them (their claims count).
func endLeases(ctx context.Context, q querier, holder string) error {
	if _, err := q.Exec(ctx, `UPDATE webhook_deliveries SET lease = NULL, lease_until = NULL, lease_until_ns = NULL
		WHERE status = 'pending' AND starts_with(lease, $1)`, holder+"/"); err != nil {
		return err
	}
	ended := `lease_until = 'epoch', lease_until_ns = 0`
	if _, err := q.Exec(ctx, `UPDATE scans SET `+ended+` WHERE status = 'running' AND holder = $1`, holder); err != nil {
		return err
	}
	_, err := q.Exec(ctx, `UPDATE content_requests SET `+ended+` WHERE status = 'processing' AND holder = $1`, holder)
	return err
}

// stop ends the beats and forgets this holder: its leases run their
// course (a server that stops gracefully hands its work back first).
func (h *holders) stop() {
	h.once.Do(func() {
		close(h.quit)
		<-h.done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.db.pool.Exec(ctx, `DELETE FROM holders WHERE id = $1`, h.id)
	})
}

// Holder names this process in the work it claims: the holder of its
// scans and content requests, and the prefix of its deliveries' leases
// (Holder + "/" + the claim's number).
func (db *DB) Holder() string { return db.holders.id }
