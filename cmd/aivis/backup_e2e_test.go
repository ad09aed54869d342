package main

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/secrets"
)

// accepted is a reading the API answered 2xx: its owner, its time (the
// key of what the test looks for in the restored database), its event and
// when the answer came.
type accepted struct {
	account  string
	measured time.Time
	event    string
	at       time.Time
}

// TestBackupRestoreWhileWriting backs up a data directory while 12
// writers record readings against aivis serve, each of an account of its
// own with a webhook whose receiver verifies and counts deliveries,
// restores the backup into a new directory and serves it: every reading
// accepted before the backup started is in the restored database, and
// each of their events is delivered (its delivery succeeded in the
// restored database, the receiver got it).
func TestBackupRestoreWhileWriting(t *testing.T) {
	dir := t.TempDir()
	rc := newHookReceiver(t)
	const writers = 12
	type writer struct {
		a      account
		k      key
		domain string
	}
	ws := make([]writer, writers)
	for i := range ws {
		a := newAccount(t, dir, "enterprise", false)
		ws[i] = writer{a: a, k: newKey(t, dir, a.ID), domain: fmt.Sprintf("w%d.example", i)}
	}
	args := []string{"--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "3s"}
	s := start(t, dir, args...)
	var hookSecrets []string
	for _, w := range ws {
		r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(w.k),
			body: jsonBody(client.CreateWebhook{Domain: w.domain, Events: []string{"ai_visibility_change"}, URL: rc.URL})})
		var wh client.Webhook
		r.decode(t, &wh)
		if r.Status != 201 {
			t.Fatalf("create webhook: %d %s", r.Status, r.Body)
		}
		hookSecrets = append(hookSecrets, wh.Secret)
	}
	rc.mu.Lock()
	rc.secrets = hookSecrets // from now on, each delivery verifies
	rc.mu.Unlock()

	var mu sync.Mutex
	var got []accepted
	var failures []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i, w := range ws {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
				measured := base.Add(time.Duration(i*100_000+n) * time.Millisecond).UTC()
				body := fmt.Sprintf(`{"domain":%q,"visibility_score":%d,"sentiment":"neutral","measured_at":%q}`,
					w.domain, 20+40*(n%2), measured.Format(time.RFC3339Nano))
				rq, _ := http.NewRequest("POST", s.URL+"/v1/visibility", strings.NewReader(body))
				rq.Header.Set("Authorization", "Bearer "+w.k.Key)
				rq.Header.Set("Content-Type", "application/json")
				res, err := s.HTTP.Do(rq)
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					continue
				}
				var rec client.RecordedReading
				err = json.NewDecoder(res.Body).Decode(&rec)
				res.Body.Close()
				mu.Lock()
				if res.StatusCode/100 == 2 && err == nil {
					a := accepted{account: w.a.ID, measured: measured, at: time.Now()}
					if rec.EventID != nil {
						a.event = *rec.EventID
					}
					got = append(got, a)
				} else if res.StatusCode != 429 {
					failures = append(failures, fmt.Sprintf("%d", res.StatusCode))
				}
				mu.Unlock()
			}
		})
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	waitFor(t, "readings from the 12 writers", func() bool { return count() >= 120 })
	// From now on the receiver answers 503: the events of the readings
	// accepted from here to the backup wait for a retry in the backup, and
	// only the restored server can deliver them.
	rc.mu.Lock()
	rc.status = http.StatusServiceUnavailable
	rc.mu.Unlock()
	held := count()
	waitFor(t, "readings while the receiver refuses", func() bool { return count() >= held+24 })

	backupFile := filepath.Join(t.TempDir(), "aivis.backup")
	started := time.Now()
	var m backupManifest
	cli(t, dir, &m, "backup", "--out", backupFile)
	took := time.Since(started)
	ended := time.Now()
	// Stopped at once: a delivery refused by the receiver is tried again 5
	// s later, and a second refusal would put its next try 5 minutes away,
	// beyond what the restored server is waited for.
	close(stop)
	wg.Wait()
	s.stop()
	if len(failures) != 0 {
		t.Fatalf("writes failed: %v", failures)
	}
	box, _, err := secrets.Load(filepath.Join(dir, secrets.KeyFile), false)
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != backupFormat || m.Engine != "sqlite" || m.SchemaVersion == 0 || m.MasterKeyID != box.ID() ||
		m.SealedWith[box.ID()] != writers || m.DatabaseSHA256 == "" {
		t.Fatalf("manifest %+v", m)
	}
	zr, err := gzip.NewReader(bytes.NewReader(readFile(t, backupFile)))
	if err != nil {
		t.Fatal(err)
	}
	whole, err := io.ReadAll(zr)
	keyText := strings.TrimSpace(string(readFile(t, filepath.Join(dir, secrets.KeyFile))))
	keyRaw, _ := base64.StdEncoding.DecodeString(keyText)
	if err != nil || len(keyRaw) != 32 || bytes.Contains(whole, []byte(keyText)) || bytes.Contains(whole, keyRaw) {
		t.Fatalf("the backup holds the master key, or does not read: %v", err)
	}
	var before []accepted
	events, during := 0, 0
	for _, a := range got {
		if !a.at.Before(started) && a.at.Before(ended) {
			during++
		}
		if a.at.Before(started) {
			before = append(before, a)
			if a.event != "" {
				events++
			}
		}
	}
	pending := 0
	for _, a := range before {
		if a.event != "" && !rc.got(a.event) {
			pending++ // not delivered by the first server: the restored one must
		}
	}
	if pending == 0 {
		t.Fatal("every event was delivered before the backup: the restored server is left nothing to deliver")
	}
	rc.mu.Lock()
	rc.status = 0
	rc.mu.Unlock()
	t.Logf("%d readings accepted in all, %d before the backup began (%d events), %d while it ran; the backup took %v, %d bytes",
		len(got), len(before), events, during, took.Round(time.Millisecond), m.DatabaseBytes)

	// The restore, into a new directory holding the master key alone.
	restored := filepath.Join(t.TempDir(), "restored")
	if err := os.MkdirAll(restored, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(restored, secrets.KeyFile), readFile(t, filepath.Join(dir, secrets.KeyFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	var rm backupManifest
	cli(t, restored, &rm, "restore", "--from", backupFile)
	if rm.DatabaseSHA256 != m.DatabaseSHA256 || rm.SchemaVersion != m.SchemaVersion {
		t.Fatalf("restore read the manifest %+v, the backup wrote %+v", rm, m)
	}
	s2 := start(t, restored, args...)
	db := s2.db(t)
	measured := map[string]map[int64]bool{}
	for _, w := range ws {
		measured[w.a.ID] = map[int64]bool{}
		rows, err := db.Query(`SELECT measured_at FROM visibility_readings WHERE account_id = ?`, w.a.ID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var ns int64
			rows.Scan(&ns)
			measured[w.a.ID][ns] = true
		}
		rows.Close()
	}
	for _, a := range before {
		if !measured[a.account][a.measured.UnixNano()] {
			t.Fatalf("the reading of %s at %s, accepted before the backup began, is not in the restored database", a.account, a.measured)
		}
	}
	delivered := func(db *sql.DB) map[string]bool {
		out := map[string]bool{}
		rows, err := db.Query(`SELECT event_id FROM webhook_deliveries WHERE status = 'succeeded'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			rows.Scan(&id)
			out[id] = true
		}
		return out
	}
	waitFor(t, "every event of a reading before the backup delivered by the restored server", func() bool {
		done := delivered(db)
		for _, a := range before {
			if a.event != "" && (!done[a.event] || !rc.got(a.event)) {
				return false
			}
		}
		return true
	})
	rc.mu.Lock()
	invalid := rc.invalid
	rc.mu.Unlock()
	if invalid != 0 {
		t.Fatalf("%d deliveries did not verify", invalid)
	}
	t.Logf("of those events, %d were delivered by the restored server alone", pending)

	// The restored directory serves: a key authenticates, a new reading's
	// event is delivered, signed with the restored secret.
	ev := recordEvent(t, s2, ws[0].k, fmt.Sprintf(`{"domain":%q,"visibility_score":99,"sentiment":"positive"}`, ws[0].domain))
	waitFor(t, "a new event from the restored server", func() bool { return rc.got(ev) })
}

// TestRestoreRefusals: restore refuses, changing nothing, a data
// directory that is not empty, a missing master key, a key file that
// lacks the backup's key (naming its id), a backup of a schema newer than
// the binary, and what is not a backup; backup refuses an existing file
// and PostgreSQL.
func TestRestoreRefusals(t *testing.T) {
	dir := t.TempDir()
	newAccount(t, dir, "starter", false)
	file := filepath.Join(t.TempDir(), "b.tgz")
	var m backupManifest
	cli(t, dir, &m, "backup", "--out", file)
	if msg := cliFails(t, dir, "backup", "--out", file); !strings.Contains(msg, "exists") {
		t.Errorf("backup over a file: %s", msg)
	}
	if msg := cliFails(t, dir, "backup", "--out", file+"2", "--store", "postgres", "--postgres-url", "postgres://u@127.0.0.1:1/x",
		"--master-key-file", filepath.Join(dir, secrets.KeyFile)); !strings.Contains(msg, "pg_dump") {
		t.Errorf("backup on postgres: %s", msg)
	}
	key := readFile(t, filepath.Join(dir, secrets.KeyFile))
	unchanged := func(d string, want ...string) {
		t.Helper()
		ents, _ := os.ReadDir(d)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if strings.Join(names, " ") != strings.Join(want, " ") {
			t.Errorf("%s holds %v after a refused restore, want %v", d, names, want)
		}
	}

	// Not empty.
	if msg := cliFails(t, dir, "restore", "--from", file); !strings.Contains(msg, "not empty") {
		t.Errorf("restore into a used directory: %s", msg)
	}
	// No key.
	empty := filepath.Join(t.TempDir(), "new")
	if msg := cliFails(t, empty, "restore", "--from", file); !strings.Contains(msg, "no master key file") {
		t.Errorf("restore without a key: %s", msg)
	}
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Errorf("a refused restore made %s", empty)
	}
	// Another key.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, secrets.KeyFile), []byte(secrets.NewKeyLine()), 0o600)
	msg := cliFails(t, other, "restore", "--from", file)
	if !strings.Contains(msg, "master key "+m.MasterKeyID) || strings.Contains(msg, strings.TrimSpace(string(key))) {
		t.Errorf("restore with another key: %s", msg)
	}
	unchanged(other, secrets.KeyFile)
	// Not a backup.
	os.WriteFile(filepath.Join(t.TempDir(), "x"), nil, 0o600)
	withKey := t.TempDir()
	os.WriteFile(filepath.Join(withKey, secrets.KeyFile), key, 0o600)
	if msg := cliFails(t, withKey, "restore", "--from", filepath.Join(dir, secrets.KeyFile)); !strings.Contains(msg, "not an aivis backup") {
		t.Errorf("restore of a key file: %s", msg)
	}
	unchanged(withKey, secrets.KeyFile)

	// A newer schema: the database says it applied a migration this
	// binary does not have.
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	newer := filepath.Join(t.TempDir(), "newer.tgz")
	cli(t, dir, nil, "backup", "--out", newer)
	msg = cliFails(t, withKey, "restore", "--from", newer)
	if !strings.Contains(msg, "schema version 99999 is newer than this aivis knows") {
		t.Errorf("restore of a newer schema: %s", msg)
	}
	unchanged(withKey, secrets.KeyFile)

	// And the first backup restores there.
	cli(t, withKey, nil, "restore", "--from", file)
	unchanged(withKey, "aivis.db", secrets.KeyFile)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
