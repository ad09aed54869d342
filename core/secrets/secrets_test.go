package secrets_test

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aivis/aivis/core/secrets"
)

func TestSealOpen(t *testing.T) {
	box, created, err := secrets.Load(filepath.Join(t.TempDir(), secrets.KeyFile), true)
	if err != nil || !created {
		t.Fatal(err, created)
	}
	s1, s2 := box.Seal("whsec_abc"), box.Seal("whsec_abc")
	if s1 == s2 || strings.Contains(s1, "whsec_abc") || !strings.HasPrefix(s1, "sealed:v1:") {
		t.Fatalf("sealed %q, %q", s1, s2)
	}
	if got, err := box.Open(s1); err != nil || got != "whsec_abc" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := box.Open("whsec_abc"); !errors.Is(err, secrets.ErrNotSealed) {
		t.Fatalf("plain text: %v", err)
	}
	tampered := s1[:len(s1)-2] + "AA"
	if _, err := box.Open(tampered); err == nil {
		t.Fatal("a tampered value opened")
	}
	other, _ := secrets.New(make([]byte, 32))
	if _, err := other.Open(s1); err == nil {
		t.Fatal("opened under another key")
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, secrets.KeyFile)
	if _, _, err := secrets.Load(path, false); err == nil {
		t.Fatal("a missing key file loaded without create")
	}
	a, created, err := secrets.Load(path, true)
	if err != nil || !created {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	b, created, err := secrets.Load(path, true)
	if err != nil || created {
		t.Fatal(err, created)
	}
	if got, err := b.Open(a.Seal("x")); err != nil || got != "x" {
		t.Fatalf("the key file does not give the same key: %v", err)
	}
	for _, bad := range []string{"not base64!", base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		os.WriteFile(path, []byte(bad), 0o600)
		if _, _, err := secrets.Load(path, true); err == nil {
			t.Errorf("key file %q accepted", bad)
		}
	}
}

// TestKeyMadeOnceForProcessesStartingAtOnce: of the processes that load a
// missing key file at once, one makes it and every one gets its key (none
// reads a file another is still writing).
func TestKeyMadeOnceForProcessesStartingAtOnce(t *testing.T) {
	for range 20 {
		path := filepath.Join(t.TempDir(), secrets.KeyFile)
		const n = 16
		boxes := make([]*secrets.Box, n)
		made := make([]bool, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { boxes[i], made[i], errs[i] = secrets.Load(path, true) })
		}
		wg.Wait()
		created := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("load %d: %v", i, errs[i])
			}
			if made[i] {
				created++
			}
			if got, err := boxes[i].Open(boxes[0].Seal("x")); err != nil || got != "x" {
				t.Fatalf("load %d has another key than load 0: %v", i, err)
			}
		}
		if created != 1 {
			t.Fatalf("%d loads say they made the key, want 1", created)
		}
		ents, _ := os.ReadDir(filepath.Dir(path))
		if len(ents) != 1 {
			t.Fatalf("the directory holds %v, want the key file alone", ents)
		}
	}
}
