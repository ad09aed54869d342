package sqlite

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/internal/lockfile"
)

// Every process that opens the database is a holder of the work it claims
// (deliveries, scans, content requests), named by Holder. It keeps a file
// of that name locked under the database's holders directory while it
// runs, and the kernel lets the lock go when the process ends, however it
// ends. A lock another process can take is a dead holder's: its leases
// are ended at once instead of running out, so that after a crash the
// restarted server, or the other processes on the file, take its work
// within a sweep. (Every process on a SQLite file shares its machine,
// which makes this possible; an engine shared across machines lets leases
// run out.)
type holders struct {
	dir  string
	id   string
	file *os.File
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// sweepEvery is how often the holders are looked at.
const sweepEvery = 2 * time.Second

// claimHolder registers this process as a holder of the database at path.
func claimHolder(path string) (*holders, error) {
	h := &holders{dir: path + "-holders", id: randid.New("proc"), quit: make(chan struct{}), done: make(chan struct{})}
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		return nil, err
	}
	// Locked under a name no sweep looks at, then named: a sweep never
	// sees the file of a live holder unlocked.
	tmp := filepath.Join(h.dir, h.id+".new")
	f, err := lockfile.Open(tmp)
	if err != nil {
		return nil, err
	}
	if ok, err := lockfile.Try(f); !ok {
		f.Close()
		return nil, cmp.Or(err, errors.New("sqlite: a new holder's file is locked"))
	}
	if err := os.Rename(tmp, filepath.Join(h.dir, h.id)); err != nil {
		f.Close()
		return nil, err
	}
	h.file = f
	return h, nil
}

// run sweeps the dead holders every sweepEvery until stop.
func (h *holders) run(db *DB) {
	defer close(h.done)
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		h.sweep(db)
		select {
		case <-h.quit:
			return
		case <-t.C:
		}
	}
}

// sweep ends the leases of every holder whose lock is free, and forgets it.
func (h *holders) sweep(db *DB) {
	ents, err := os.ReadDir(h.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if name == h.id || strings.HasSuffix(name, ".new") {
			continue
		}
		f, err := os.Open(filepath.Join(h.dir, name))
		if err != nil {
			continue
		}
		if ok, _ := lockfile.Try(f); ok {
			// Dead: its process's lock went with it. Its file goes once
			// its leases have ended.
			if db.endLeases(context.Background(), name) == nil {
				os.Remove(filepath.Join(h.dir, name))
			}
		}
		f.Close()
	}
}

// stop ends the sweeps and lets this holder's lock go, with its file.
func (h *holders) stop() {
	h.once.Do(func() {
		close(h.quit)
		<-h.done
		os.Remove(filepath.Join(h.dir, h.id))
		h.file.Close()
	})
}

// Holder names this process in the work it claims: the holder of its
// scans and content requests, and the prefix of its deliveries' leases
// (Holder + "/" + the claim's number).
func (db *DB) Holder() string { return db.holders.id }

// endLeases ends, now, the leases a holder holds: its deliveries' are
// gone, its scans' and content requests' have ended (their claims count).
func (db *DB) endLeases(ctx context.Context, holder string) error {
	return db.Update(ctx, func(tx store.Tx) error {
		t := tx.(*txn)
		// A leased delivery is pending: along the due index.
		if _, err := t.tx.Exec(`UPDATE webhook_deliveries INDEXED BY webhook_deliveries_due SET lease = NULL, lease_until = NULL
			WHERE status = 'pending' AND lease >= ?1 AND lease < ?2`, holder+"/", holder+"0"); err != nil {
			return err
		}
		if _, err := t.tx.Exec(`UPDATE scans SET lease_until = 0 WHERE status = 'running' AND holder = ?`, holder); err != nil {
			return err
		}
		_, err := t.tx.Exec(`UPDATE content_requests SET lease_until = 0 WHERE status = 'processing' AND holder = ?`, holder)
		return err
	})
}
