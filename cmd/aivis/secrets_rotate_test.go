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

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/internal/sqlitefile"
	"github.com/aivis/aivis/internal/testsvc"
)

// sealV1 seals as aivis did before sealed values named their key.
func sealV1(k []byte, plain string) string {
	block, _ := aes.NewCipher(k)
	aead, _ := cipher.NewGCM(block)
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	return "sealed:v1:" + base64.RawStdEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(plain), nil))
}

// rotateEngine opens stores of one database with the keys given, and
// runs SQL on it behind the store's back.
type rotateEngine struct {
	name string
	open func(t *testing.T, box *secrets.Box) store.Store
	exec func(t *testing.T, q string, args ...any)
	one  func(t *testing.T, q string, args ...any) string
}

func rotateEngines(t *testing.T) []rotateEngine {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "aivis.db")
	var raw *sql.DB
	lite := rotateEngine{name: "sqlite",
		open: func(t *testing.T, box *secrets.Box) store.Store {
			db, err := sqlite.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			db.SetSecrets(box)
			if raw == nil {
				raw, _ = sql.Open("sqlite3", sqlitefile.DSN(path, sqlitefile.Params()))
				t.Cleanup(func() { raw.Close() })
			}
			return db
		},
		exec: func(t *testing.T, q string, args ...any) {
			if _, err := raw.Exec(q, args...); err != nil {
				t.Fatal(err)
			}
		},
		one: func(t *testing.T, q string, args ...any) (v string) {
			if err := raw.QueryRow(q, args...).Scan(&v); err != nil {
				t.Fatal(err)
			}
			return v
		},
	}
	url := ""
	var conn *pgx.Conn
	pg := rotateEngine{name: "postgres",
		open: func(t *testing.T, box *secrets.Box) store.Store {
			if url == "" {
				url = testsvc.Postgres(t)
			}
			db, err := postgres.Open(ctx, url, box)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if conn == nil {
				if conn, err = pgx.Connect(ctx, url); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { conn.Close(ctx) })
			}
			return db
		},
		exec: func(t *testing.T, q string, args ...any) {
			if _, err := conn.Exec(ctx, q, args...); err != nil {
				t.Fatal(err)
			}
		},
		one: func(t *testing.T, q string, args ...any) (v string) {
			if err := conn.QueryRow(ctx, q, args...).Scan(&v); err != nil {
				t.Fatal(err)
			}
			return v
		},
	}
	return []rotateEngine{lite, pg}
}

// TestRotateSecrets: on each engine, rotate re-seals with the first key
// the values of version 1 and those of the older key, leaves those sealed
// with the first key as they are, and leaves a value whose key the file
// lacks as it was, naming the key; status counts each.
func TestRotateSecrets(t *testing.T) {
	for _, e := range rotateEngines(t) {
		t.Run(e.name, func(t *testing.T) { testRotateSecrets(t, e) })
	}
}

func testRotateSecrets(t *testing.T, e rotateEngine) {
	ctx := context.Background()
	newK, oldK, goneK := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 32)
	oldBox, _ := secrets.New(oldK)
	db := e.open(t, oldBox)
	now := time.Now()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "A", Tier: "starter", Type: store.AccountStandard, CreatedAt: now}))
	hooks := map[string]string{"wh_1": "whsec_one", "wh_2": "whsec_two", "wh_3": "whsec_three", "wh_4": "whsec_four", "wh_5": "whsec_five"}
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
	// new key already, wh_4's under a key the file no longer holds, wh_5's
	// in clear (which no aivis writes: status shows it, rotate leaves it).
	newBox, _ := secrets.New(newK)
	goneBox, _ := secrets.New(goneK)
	for id, v := range map[string]string{"wh_2": sealV1(oldK, hooks["wh_2"]), "wh_3": newBox.Seal(hooks["wh_3"]), "wh_4": goneBox.Seal(hooks["wh_4"]), "wh_5": hooks["wh_5"]} {
		e.exec(t, `UPDATE webhooks SET secret = $1 WHERE id = $2`, v, id)
	}
	sealedAs := func(id string) string { return e.one(t, `SELECT secret FROM webhooks WHERE id = $1`, id) }
	wh3, wh4 := sealedAs("wh_3"), sealedAs("wh_4")

	box, _ := secrets.New(newK, oldK)
	db = e.open(t, box)
	status := func() map[string]int {
		counts, err := secretsStatus(ctx, db, box)
		must(err)
		n := map[string]int{}
		for _, c := range counts {
			n[c.Key] = c.Values
		}
		return n
	}
	if got := status(); got[newBox.ID()] != 1 || got[oldBox.ID()] != 1 || got[secrets.V1] != 1 || got[goneBox.ID()] != 1 || got[notSealed] != 1 {
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
	if got := status(); got[newBox.ID()] != 3 || got[oldBox.ID()] != 0 || got[secrets.V1] != 0 || got[goneBox.ID()] != 1 || got[notSealed] != 1 {
		t.Fatalf("status after: %v", got)
	}
	if sealedAs("wh_3") != wh3 || sealedAs("wh_4") != wh4 || sealedAs("wh_5") != hooks["wh_5"] {
		t.Fatal("rotate rewrote a value sealed with the first key, or one it could not open")
	}
	for _, id := range []string{"wh_1", "wh_2", "wh_3"} {
		if w, err := db.Webhook(ctx, "acct_1", id); err != nil || w.Secret != hooks[id] {
			t.Errorf("%s after the rotation: %q, %v", id, w.Secret, err)
		}
	}
}
