package limits

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"github.com/aivis/aivis/core/store"
)

// TestGuardSubjectsOfAnErasure: the subjects a deleted account's guard
// windows are found by (store.KeyGuardSubject of a key's hash,
// store.EmailGuardSubject of a user's email) are those the shared guards
// keep.
func TestGuardSubjectsOfAnErasure(t *testing.T) {
	const key = "svc_0123456789abcdefghijABCDEFGHIJ0123456789"
	hash := sha256.Sum256([]byte(key))
	if got, want := store.KeyGuardSubject(hash[:]), KeySubject(key).key(); !bytes.Equal(got, want) {
		t.Errorf("store.KeyGuardSubject = %x, the guards keep %x", got, want)
	}
	if got, want := store.EmailGuardSubject(" Owner@Example.com "), EmailSubject("owner@example.com").key(); !bytes.Equal(got, want) {
		t.Errorf("store.EmailGuardSubject = %x, the guards keep %x", got, want)
	}
}
