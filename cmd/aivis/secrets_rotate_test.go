package main

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/internal/sqlitefile"
)

// sealV1 seals as aivis did before sealed values named their key.
func sealV1(k []byte, plain string) string {
	block, _ := aes.NewCipher(k)
	aead, _ := cipher.NewGCM(block)
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	return "sealed:v1:" + base64.RawStdEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(plain), nil))
}

// TestRotateSecrets: on a SQLite store, rotate re-seals with the first
// key the values of version 1 and those of the older key, leaves those
// sealed with the first key as they are, and leaves a value whose key the
// file lacks as it was, naming the key; status counts each.
func TestRotateSecrets(t *testing.T) {
	ctx := context.Background()
	newK, oldK, goneK := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 32)
	path := filepath.Join(t.TempDir(), "aivis.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	oldBox, _ := secrets.New(oldK)
	db.SetSecrets(oldBox)
	now := time.Now()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "A", Tier: "starter", Type: store.AccountStandard, CreatedAt: now}))
	hooks := map[string]string{"wh_1": "whsec_one", "wh_2": "whsec_two", "wh_3": "whsec_three", "wh_4": "whsec_four"}
	must(db.Update(ctx, func(tx store.Tx) error {
		for id, secret := range hooks {
			err := tx.InsertWebhook(store.Webhook{ID: id, AccountID: "acct_1", Domain: "example.com", URL: "https://example.com/" + id,
				Events: []string{"ai_visibility_change"}, Enabled: true, Secret: secret, CreatedAt: now, UpdatedAt: now})
			if err != nil {
				return err
			}
		}
		return nil
	}))
	// wh_2's secret as an earlier aivis sealed it (v1), wh_3's under the
	// new key already, wh_4's under a key the file no longer holds.
	newBox, _ := secrets.New(newK)
	goneBox, _ := secrets.New(goneK)
	raw, err := sql.Open("sqlite3", sqlitefile.DSN(path, sqlitefile.Params()))
	must(err)
	defer raw.Close()
	for id, v := range map[string]string{"wh_2": sealV1(oldK, hooks["wh_2"]), "wh_3": newBox.Seal(hooks["wh_3"]), "wh_4": goneBox.Seal(hooks["wh_4"])} {
		_, err := raw.Exec(`UPDATE webhooks SET secret = ? WHERE id = ?`, v, id)
		must(err)
	}
	sealedAs := func(id string) string {
		var v string
		must(raw.QueryRow(`SELECT secret FROM webhooks WHERE id = ?`, id).Scan(&v))
		return v
	}
	wh3, wh4 := sealedAs("wh_3"), sealedAs("wh_4")

	box, _ := secrets.New(newK, oldK)
	status := func() map[string]int {
		counts, err := secretsStatus(ctx, db, box)
		must(err)
		n := map[string]int{}
		for _, c := range counts {
			n[c.Key] = c.Values
		}
		return n
	}
	if got := status(); got[newBox.ID()] != 1 || got[oldBox.ID()] != 1 || got[secrets.V1] != 1 || got[goneBox.ID()] != 1 {
		t.Fatalf("status before: %v", got)
	}
	r, err := rotateSecrets(ctx, db, box, 1)
	must(err)
	if r.Resealed != 2 || r.ChangedMeanwhile != 0 || r.Unopened[goneBox.ID()] != 1 || len(r.Unopened) != 1 {
		t.Fatalf("rotate: %+v, want wh_1 and wh_2 re-sealed, wh_4 unopened", r)
	}
	if err := r.unopened(); err == nil || !strings.Contains(err.Error(), "1 need master key "+goneBox.ID()) {
		t.Fatalf("the rotation's error: %v", err)
	}
	if got := status(); got[newBox.ID()] != 3 || got[oldBox.ID()] != 0 || got[secrets.V1] != 0 || got[goneBox.ID()] != 1 {
		t.Fatalf("status after: %v", got)
	}
	if sealedAs("wh_3") != wh3 || sealedAs("wh_4") != wh4 {
		t.Fatal("rotate rewrote a value sealed with the first key, or one it could not open")
	}
	db.SetSecrets(box)
	for _, id := range []string{"wh_1", "wh_2", "wh_3"} {
		if w, err := db.Webhook(ctx, "acct_1", id); err != nil || w.Secret != hooks[id] {
			t.Errorf("%s after the rotation: %q, %v", id, w.Secret, err)
		}
	}
}
