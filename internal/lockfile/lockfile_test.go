package lockfile_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aivis/aivis/internal/lockfile"
)

// TestWaitTakesTheLockItsHolderLetsGo: of two open files, one holds the
// lock; the other's Try fails and its Wait returns once the first is
// closed.
func TestWaitTakesTheLockItsHolderLetsGo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	a, err := lockfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if ok, err := lockfile.Try(a); !ok || err != nil {
		t.Fatalf("the first Try: %v, %v", ok, err)
	}
	b, err := lockfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := lockfile.Try(b); ok || err != nil {
		t.Fatalf("a Try while another holds the lock: %v, %v", ok, err)
	}
	done := make(chan error, 1)
	go func() { done <- lockfile.Wait(context.Background(), b) }()
	a.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return in 10 s once the holder closed its file")
	}
	c, err := lockfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, _ := lockfile.Try(c); ok {
		t.Fatal("the lock Wait took was taken again")
	}
}

// TestCancelledWaitKeepsNoLock: a Wait whose context ends returns at once,
// and the lock it would have taken once the holder let go is free for
// another.
func TestCancelledWaitKeepsNoLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	a, err := lockfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := lockfile.Try(a); !ok || err != nil {
		t.Fatalf("the first Try: %v, %v", ok, err)
	}
	b, err := lockfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- lockfile.Wait(ctx, b) }()
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("Wait after its context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return in 10 s once its context ended")
	}
	a.Close()
	c, err := lockfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The cancelled wait may take the lock as a lets it go, and lets it go
	// as it returns: the third file gets it once that is done.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := lockfile.Try(c)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the lock stayed taken 10 s after its holder let go: the cancelled wait kept it")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
