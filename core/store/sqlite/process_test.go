package sqlite_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// childEnv names the database a re-executed test binary opens as a second
// process (the operator's CLI beside the server) to change a tier.
const childEnv = "AIVIS_SQLITE_CHILD_DB"

// crashEnv names the database a re-executed test binary opens to claim
// work and die without closing it, as a server killed mid-attempt does.
const crashEnv = "AIVIS_SQLITE_CRASH_DB"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		db, err := sqlite.Open(ctx, path)
		if err == nil {
			now := time.Now()
			var ds []store.Delivery
			ds, _, err = db.ClaimWebhookDeliveries(ctx, db.Holder()+"/1", "wh_1", now, now.Add(time.Hour), 10)
			if err == nil && len(ds) != 10 {
				err = fmt.Errorf("claimed %d deliveries, want 10", len(ds))
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0) // no Close: the process dies holding its leases
	}
	if path := os.Getenv(childEnv); path != "" {
		db, err := sqlite.Open(ctx, path)
		if err == nil {
			err = errors.Join(db.SetTier(ctx, "acct_1", "professional"), db.Close())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSecondProcessKeepsTheWALIndex: a second process that opens the
// database while the server has it open must find the server's WAL index
// in use and keep it. The server's process holds a lock on the -shm file
// that says so, and POSIX drops every lock a process holds on a file when
// it closes any descriptor of that file: the commit watcher's descriptor
// stays open for that reason. Were the lock lost, the second process would
// reset the WAL index under the server, the commit counter would start
// again from zero, and the caches could serve a tier the CLI had changed.
func TestSecondProcessKeepsTheWALIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aivis.db")
	server := open(t, path)
	srv := cached(server)
	account(t, server, "acct_1", store.AccountStandard)
	k := store.Key{ID: "key_1", AccountID: "acct_1", Name: "k", KeyHash: []byte("h1"), SecretHash: []byte("s1"),
		Hint: "svc_…0001", Scopes: []string{"budget:read"}, CreatedAt: t0}
	must(t, server.CreateKey(ctx, k))
	for i := range 5 { // commits that leave the caches valid
		must(t, server.SaveCounts(ctx, []store.Window{{AccountID: "acct_1", Window: "minute", Start: t0, Count: int64(i + 1)}}, nil))
	}
	if p, err := srv.PrincipalByKeyHash(ctx, k.KeyHash); err != nil || p.Account.Tier != "starter" {
		t.Fatalf("principal: %+v, %v", p, err)
	}
	before, ok := sqlite.CommitCounter(server)
	if !ok {
		t.Fatal("the commit counter is not mapped")
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("second process: %v\n%s", err, out)
	}

	after, _ := sqlite.CommitCounter(server)
	if after != before+1 {
		t.Errorf("commit counter %d after one commit by another process, was %d: the WAL index was reset", after, before)
	}
	if p, err := srv.PrincipalByKeyHash(ctx, k.KeyHash); err != nil || p.Account.Tier != "professional" {
		t.Errorf("after the other process's tier change: %+v, %v", p.Account, err)
	}
}

// TestDeadHoldersLeasesEnd: a process that dies holding leases (here with
// an hour left) leaves them to the next sweep of another process on the
// file, which ends them at once: its work is claimed again within seconds.
func TestDeadHoldersLeasesEnd(t *testing.T) {
	db, path, _, w, ids := pendingDeliveries(t, 10)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the crashing process: %v\n%s", err, out)
	}
	now := time.Now()
	if d, _, err := db.Delivery(ctx, w.ID, ids[0]); err != nil || d.Lease == "" || d.LeaseUntil.Before(now.Add(50*time.Minute)) {
		t.Fatalf("the dead process's claim: %+v %v", d, err)
	}
	// The next sweep (every 2 s) finds its lock free.
	deadline := now.Add(10 * time.Second)
	for {
		ds, _, err := db.ClaimWebhookDeliveries(ctx, db.Holder()+"/1", w.ID, time.Now(), time.Now().Add(time.Minute), 10)
		must(t, err)
		if len(ds) == 10 {
			break
		}
		if len(ds) != 0 {
			t.Fatalf("%d of the dead process's 10 deliveries claimable", len(ds))
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead process's leases did not end in 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ents, _ := os.ReadDir(path + "-holders"); len(ents) != 1 || ents[0].Name() != db.Holder() {
		t.Errorf("holders left: %v; want this process's only", ents)
	}
}
