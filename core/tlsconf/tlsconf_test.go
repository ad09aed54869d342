package tlsconf_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aivis/aivis/core/tlsconf"
)

// TestSelfSignedOnceForProcessesStartingAtOnce: servers starting at once
// on a new data directory make one self-signed pair between them and all
// serve it; a later start reads it.
func TestSelfSignedOnceForProcessesStartingAtOnce(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	got := make([]*tlsconf.Material, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = tlsconf.Load("", "", dir, []string{"example.test"}) })
	}
	wg.Wait()
	created := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("start %d: %v", i, errs[i])
		}
		if got[i].Fingerprint != got[0].Fingerprint {
			t.Errorf("start %d serves %s, start 0 %s", i, got[i].Fingerprint, got[0].Fingerprint)
		}
		if got[i].Created {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d starts say they made the pair, want 1", created)
	}
	again, err := tlsconf.Load("", "", dir, nil)
	if err != nil || again.Created || again.Fingerprint != got[0].Fingerprint {
		t.Fatalf("a later start: %v; made %v, serves %s, want %s", err, again.Created, again.Fingerprint, got[0].Fingerprint)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "tls" {
		t.Errorf("the data directory holds %v, want tls alone", ents)
	}
	if fi, err := os.Stat(filepath.Join(dir, "tls", "key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the key: %v, %v", fi, err)
	}
}
