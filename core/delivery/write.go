package delivery

import (
	"context"

	"github.com/aivis/aivis/core/store"
)

// The writer: one goroutine commits what the fan-out and the attempts
// hand it, a transaction at a time, each taking everything that came
// while the one before ran (group commit): the deliveries of the events
// handled meanwhile (with several events in flight, the subscriber's
// MaxInFlight, one write serves them all) and the outcomes of the
// attempts made meanwhile. Under load the two go together, a transaction
// and its commit the fewer; alone, each is written as before.

// maxBatch bounds the insertions, and the outcomes, of one transaction.
const maxBatch = 256

// write runs the writer until the fan-out has stopped and the outcomes'
// channel is closed and drained.
func (e *Engine) write() {
	inserts, outcomes, stopped := e.inserts, e.outcomes, e.stopped
	batch := make([]insertion, 0, maxBatch)
	outs := make([]outcome, 0, maxBatch)
	for inserts != nil || outcomes != nil {
		batch, outs = batch[:0], outs[:0]
		select {
		case req := <-inserts:
			batch = append(batch, req)
		case o, ok := <-outcomes:
			if !ok {
				outcomes = nil
				continue
			}
			outs = append(outs, o)
		case <-stopped:
			inserts, stopped = nil, nil
			continue
		}
		// What came meanwhile goes too, up to the bounds.
	drain:
		for {
			in, out := inserts, outcomes
			if len(batch) == maxBatch {
				in = nil
			}
			if len(outs) == maxBatch {
				out = nil
			}
			select {
			case req := <-in:
				batch = append(batch, req)
			case o, ok := <-out:
				if !ok {
					outcomes = nil
					continue
				}
				outs = append(outs, o)
			default:
				break drain
			}
		}
		e.commit(batch, outs)
	}
}

// commit writes a batch of insertions and of outcomes in one transaction
// and says to each insertion what came of it. Should that transaction
// fail, the insertions are written again alone (either part may be what
// failed), and the outcomes as the recorder writes them alone.
func (e *Engine) commit(batch []insertion, outs []outcome) {
	if len(batch) == 0 {
		e.writeAll(outs)
		return
	}
	var pending []claimed
	for _, req := range batch {
		for _, c := range req.ds {
			if c.d.Status == store.DeliveryPending {
				pending = append(pending, c)
			}
		}
	}
	reserved := e.reserve(pending) // leases some: before they are copied
	added := make(map[*store.Delivery]bool, len(reserved))
	var notes healthNotes
	err := e.store.Update(context.Background(), func(tx store.Tx) error {
		if err := insertTx(tx, batch, added); err != nil {
			return err
		}
		if len(outs) == 0 {
			return nil
		}
		notes = healthNotes{}
		return e.apply(tx, outs, &notes)
	})
	recorded := err == nil
	if err != nil && len(outs) > 0 {
		err = e.store.Update(context.Background(), func(tx store.Tx) error { return insertTx(tx, batch, added) })
	}
	for _, req := range batch {
		req.done <- err
	}
	if err != nil {
		clear(added)
	}
	e.offer(reserved, added)
	switch {
	case len(outs) == 0:
	case recorded:
		e.recorded(outs, notes)
	default:
		e.writeAll(outs)
	}
}
