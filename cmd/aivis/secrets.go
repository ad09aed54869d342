package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aivis/aivis/core/app"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
)

// The master key's rotation: new-key adds a key at the top of the key
// file, every process that reads the file is restarted, rotate re-seals
// what the store keeps with it, status shows when the old key holds
// nothing more and can be taken out of the file (docs/operations.md,
// "Rotating the master key").

func secretsCmd() *cobra.Command {
	return group("secrets", "Rotate the master key that seals the stored secrets",
		secretsNewKeyCmd(), secretsRotateCmd(), secretsStatusCmd())
}

func secretsNewKeyCmd() *cobra.Command {
	return withConfig(&cobra.Command{
		Use:   "new-key",
		Short: "Add a new master key at the top of the key file",
		Long: `Add a new random master key at the top of the master key file (master_key_file,
else master.key in the data directory), keeping the others below it. The file
is replaced whole, mode 0600. Processes read the file when they start: restart
every one that reads it (a cluster shares one content of the file), then run
"aivis secrets rotate".`,
		Args: takes(0, "no arguments"),
	}, func(ctx context.Context, in *invocation, _ []string) error {
		path := app.MasterKeyPath(in.cfg)
		id, err := secrets.AddKey(path)
		if err != nil {
			return err
		}
		return in.out.value(map[string]string{"key": id, "file": path},
			fmt.Sprintf("master key %s added at the top of %s: it seals from the next start of each process that reads the file\n", id, path))
	})
}

func secretsRotateCmd() *cobra.Command {
	var batch int
	c := withServices(&cobra.Command{
		Use:   "rotate",
		Short: "Re-seal every stored secret with the first key of the master key file",
		Long: `Re-seal every stored secret (webhook signing secrets, connections' secret
settings) not sealed with the first key of the master key file, while the
servers run: in batches of --batch webhooks and connections, each a short
transaction that replaces a value only if it is still the one read (a change
made meanwhile wins). Run it once every process reads the file with the new
key first; "aivis secrets status" then counts the values per key.`,
		Args: takes(0, "no arguments"),
	}, func(ctx context.Context, in *invocation, _ []string) error {
		if batch < 1 || batch > 1000 {
			return usageError("--batch is 1 to 1000, not %d", batch)
		}
		r, err := rotateSecrets(ctx, in.svc.Store, in.svc.Box, batch)
		if err != nil {
			return err
		}
		text := fmt.Sprintf("re-sealed %d values with master key %s (%d changed meanwhile, left as written)\n", r.Resealed, r.Key, r.ChangedMeanwhile)
		if err := in.out.value(r, text); err != nil {
			return err
		}
		return r.unopened()
	})
	c.Flags().IntVar(&batch, "batch", 100, "webhooks and connections re-sealed per transaction")
	return c
}

func secretsStatusCmd() *cobra.Command {
	return withServices(&cobra.Command{
		Use:   "status",
		Short: "Count the stored secrets per master key",
		Long: `Count the stored sealed values per master key id: the keys of the file
(the first seals), keys the file no longer holds, and values of version 1,
which name no key. A key of the file that seals no value can be removed from
it.`,
		Args: takes(0, "no arguments"),
	}, func(ctx context.Context, in *invocation, _ []string) error {
		counts, err := secretsStatus(ctx, in.svc.Store, in.svc.Box)
		if err != nil {
			return err
		}
		return in.out.table("KEY\tVALUES\tIN FILE", len(counts), func(i int) (any, string) {
			c := counts[i]
			where := "no: these values cannot be opened"
			switch {
			case c.Seals:
				where = "yes, seals"
			case c.InFile:
				where = "yes"
			case c.Key == secrets.V1:
				where = "(version 1, names no key)"
			case c.Key == notSealed:
				where = "(stored in clear)"
			}
			return c, fmt.Sprintf("%s\t%d\t%s\n", c.Key, c.Values, where)
		})
	})
}

// notSealed is what status counts a stored value under that is not a
// sealed value at all.
const notSealed = "not-sealed"

// keyCount is how many stored values name one key.
type keyCount struct {
	Key    string `json:"key"` // the key's id, or v1
	Values int    `json:"values"`
	InFile bool   `json:"in_file"`
	Seals  bool   `json:"seals"` // the first key of the file
}

// secretsStatus counts the stored sealed values per key: each key of
// box, the sealing one first, then the keys the file lacks, then v1
// (each of those only when some value names it).
func secretsStatus(ctx context.Context, st store.Sealed, box *secrets.Box) ([]keyCount, error) {
	n := map[string]int{}
	err := eachSealedPage(ctx, st, 100, func(vs []store.SealedValue) error {
		for _, v := range vs {
			id, err := secrets.KeyOf(v.Value)
			if err != nil {
				id = notSealed
			}
			n[id]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []keyCount
	for i, id := range box.IDs() {
		out = append(out, keyCount{Key: id, Values: n[id], InFile: true, Seals: i == 0})
		delete(n, id)
	}
	var rest []string
	for id := range n {
		rest = append(rest, id)
	}
	slices.Sort(rest)
	if i := slices.Index(rest, secrets.V1); i >= 0 { // v1 last
		rest = append(slices.Delete(rest, i, i+1), secrets.V1)
	}
	for _, id := range rest {
		out = append(out, keyCount{Key: id, Values: n[id]})
	}
	return out, nil
}

// eachSealedPage hands every page of the store's sealed values to f.
func eachSealedPage(ctx context.Context, st store.Sealed, limit int, f func([]store.SealedValue) error) error {
	cursor := ""
	for {
		vs, next, err := st.SealedValues(ctx, cursor, limit)
		if err != nil {
			return err
		}
		if err := f(vs); err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// rotation is what rotateSecrets did.
type rotation struct {
	Key              string `json:"key"` // the key the values were re-sealed with
	Resealed         int    `json:"resealed"`
	ChangedMeanwhile int    `json:"changed_meanwhile"`
	// Unopened counts, per key id the file lacks, the values that could
	// not be opened (v1: of version 1, which no key of the file opens).
	Unopened map[string]int `json:"unopened,omitempty"`
}

// unopened is the error of a rotation that left values it could not
// open, naming the keys they need.
func (r rotation) unopened() error {
	if len(r.Unopened) == 0 {
		return nil
	}
	var parts []string
	for id, n := range r.Unopened {
		parts = append(parts, fmt.Sprintf("%d need master key %s", n, id))
	}
	slices.Sort(parts)
	return fmt.Errorf("values left sealed as they were, which no key of the master key file opens: %s; put the key back in the file and run rotate again",
		strings.Join(parts, ", "))
}

// rotateSecrets re-seals with box's first key every stored value sealed
// otherwise, batch webhooks at a time, each batch one ReplaceSealed (a
// short transaction, compare-and-set on the value read).
func rotateSecrets(ctx context.Context, st store.Sealed, box *secrets.Box, batch int) (rotation, error) {
	r := rotation{Key: box.ID(), Unopened: map[string]int{}}
	err := eachSealedPage(ctx, st, batch, func(vs []store.SealedValue) error {
		var rs []store.Resealed
		for _, v := range vs {
			if box.Sealed(v.Value) {
				continue
			}
			plain, err := box.Open(v.Value)
			if errors.Is(err, secrets.ErrNotSealed) {
				continue // not a sealed value: nothing to re-seal
			} else if err != nil {
				id, _ := secrets.KeyOf(v.Value)
				r.Unopened[id]++
				continue
			}
			rs = append(rs, store.Resealed{SealedValue: v, With: box.Seal(plain)})
		}
		if len(rs) == 0 {
			return nil
		}
		n, err := st.ReplaceSealed(ctx, rs)
		r.Resealed += n
		r.ChangedMeanwhile += len(rs) - n
		return err
	})
	if len(r.Unopened) == 0 {
		r.Unopened = nil
	}
	return r, err
}
