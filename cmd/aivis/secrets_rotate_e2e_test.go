package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/connectors/segment/segmentfake"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/internal/testsvc"
)

// keyStatus runs aivis secrets status and gives the values per key id.
func keyStatus(t *testing.T, dir string) map[string]keyCount {
	t.Helper()
	var counts []keyCount
	cli(t, dir, &counts, "secrets", "status")
	out := map[string]keyCount{}
	for _, c := range counts {
		out[c.Key] = c
	}
	return out
}

// writers record readings on their domains, one writer a domain, until
// stopped, each reading moving the score so that it makes an event.
type writers struct {
	s       *server
	k       key
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	events  map[string][]string // domain: its events' ids
	refused []string
}

func startWriters(s *server, k key, domains []string, pause time.Duration) *writers {
	w := &writers{s: s, k: k, stop: make(chan struct{}), events: map[string][]string{}}
	for _, d := range domains {
		w.wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-w.stop:
					return
				case <-time.After(pause):
				}
				body := fmt.Sprintf(`{"domain":%q,"visibility_score":%d,"sentiment":"neutral"}`, d, 20+40*(n%2))
				id, err := w.record(body)
				w.mu.Lock()
				if errors.Is(err, errLimited) {
					// over the tier's minute: not what the test is about
				} else if err != nil {
					w.refused = append(w.refused, err.Error())
				} else if id != "" {
					w.events[d] = append(w.events[d], id)
				}
				w.mu.Unlock()
			}
		})
	}
	return w
}

// errLimited is a reading refused by the rate limits (429).
var errLimited = errors.New("rate limited")

// record posts one reading and returns its event's id.
func (w *writers) record(body string) (string, error) {
	rq, _ := http.NewRequest("POST", w.s.URL+"/v1/visibility", strings.NewReader(body))
	rq.Header.Set("Authorization", "Bearer "+w.k.Key)
	rq.Header.Set("Content-Type", "application/json")
	res, err := w.s.HTTP.Do(rq)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var rec client.RecordedReading
	var b bytes.Buffer
	b.ReadFrom(res.Body)
	if res.StatusCode == http.StatusTooManyRequests {
		return "", errLimited
	}
	if res.StatusCode != 201 || json.Unmarshal(b.Bytes(), &rec) != nil {
		return "", fmt.Errorf("%d %s", res.StatusCode, b.String())
	}
	if rec.EventID == nil {
		return "", nil
	}
	return *rec.EventID, nil
}

func (w *writers) halt() {
	close(w.stop)
	w.wg.Wait()
}

func (w *writers) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ids := range w.events {
		n += len(ids)
	}
	return n
}

// TestMasterKeyRotation rotates the master key while deliveries flow:
// three signed webhooks, each checked by a receiver that verifies its
// signature, and a Segment connection (the official plugin) whose write
// key, a secret setting, the fake checks on every call. A new key is
// added and the server restarted, then aivis secrets rotate re-seals
// everything while readings are recorded: every event reaches every
// target, every signature verifies, and status shows every value on the
// new key; the old key is then taken out of the file and the server
// restarted: deliveries go on, signed and authenticated.
func TestMasterKeyRotation(t *testing.T) {
	dir := t.TempDir()
	cli(t, dir, nil, "plugin", "register", buildPlugin(t, "../../connectors/segment", "segment"))
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	args := []string{"--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "3s"}
	s := start(t, dir, args...)
	seg := segmentfake.New()
	defer seg.Close()

	domains := []string{"a.example", "b.example", "c.example"}
	rcs := map[string]*hookReceiver{}
	for _, d := range domains {
		rc := newHookReceiver(t)
		r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k),
			body: jsonBody(client.CreateWebhook{Domain: d, Events: []string{"ai_visibility_change"}, URL: rc.URL})})
		var wh client.Webhook
		r.decode(t, &wh)
		if r.Status != 201 {
			t.Fatalf("create webhook: %d %s", r.Status, r.Body)
		}
		rc.mu.Lock()
		rc.secrets = []string{wh.Secret}
		rc.mu.Unlock()
		rcs[d] = rc
	}
	r := s.do(t, req{method: "POST", path: "/v1/connections", header: bearer(k), body: connectionBody(t, client.CreateConnection{
		Connector: "segment", Events: []string{"ai_visibility_change"}, Domains: domains,
		Settings: json.RawMessage(`{"write_key":"` + segmentfake.WriteKey + `","api_url":"` + seg.URL() + `"}`)})})
	if r.Status != 201 {
		t.Fatalf("create connection: %d %s", r.Status, r.Body)
	}
	const values = 4 // three signing secrets, the connection's settings

	// every event of w reached its webhook, verified, and Segment.
	allDelivered := func(w *writers) func() bool {
		return func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			seen := map[string]bool{}
			for _, c := range seg.Received() {
				seen[c.MessageID] = true
			}
			for d, ids := range w.events {
				for _, id := range ids {
					if !rcs[d].got(id) || !seen[id] {
						return false
					}
				}
			}
			return true
		}
	}
	verified := func(phase string, w *writers) {
		t.Helper()
		waitFor(t, phase+": every event at its webhook and at Segment", allDelivered(w))
		for d, rc := range rcs {
			rc.mu.Lock()
			invalid := rc.invalid
			rc.mu.Unlock()
			if invalid != 0 {
				t.Fatalf("%s: %d deliveries to %s's webhook did not verify", phase, invalid, d)
			}
		}
		if len(w.refused) != 0 {
			t.Fatalf("%s: readings refused: %v", phase, w.refused)
		}
	}

	w := startWriters(s, k, domains, 0)
	waitFor(t, "some readings", func() bool { return w.count() >= 6 })
	w.halt()
	verified("before the rotation", w)
	old := keyStatus(t, dir)
	if len(old) != 1 {
		t.Fatalf("status with one key: %+v", old)
	}
	var oldID string
	for id, c := range old {
		if oldID = id; !c.Seals || c.Values != values {
			t.Fatalf("status before the rotation: %+v, want %d values on the one key", old, values)
		}
	}

	// A new key at the top of the file, then a restart: it seals what is
	// written from now on, the old one still opens.
	var added struct{ Key, File string }
	cli(t, dir, &added, "secrets", "new-key")
	if added.Key == oldID || added.File != filepath.Join(dir, secrets.KeyFile) {
		t.Fatalf("new-key: %+v", added)
	}
	s.stop()
	s = start(t, dir, args...)
	if st := keyStatus(t, dir); !st[added.Key].Seals || st[added.Key].Values != 0 || st[oldID].Values != values || st[oldID].Seals {
		t.Fatalf("status after new-key: %+v", st)
	}

	// The rotation, one webhook a batch, while readings are recorded.
	w = startWriters(s, k, domains, 20*time.Millisecond)
	waitFor(t, "readings flowing", func() bool { return w.count() >= 6 })
	var rot rotation
	cli(t, dir, &rot, "secrets", "rotate", "--batch", "1")
	at := w.count()
	waitFor(t, "readings after the rotation", func() bool { return w.count() >= at+6 })
	w.halt()
	if rot.Key != added.Key || rot.Resealed+rot.ChangedMeanwhile != values || rot.Unopened != nil {
		t.Fatalf("rotate: %+v, want %d values re-sealed with %s", rot, values, added.Key)
	}
	verified("during the rotation", w)
	if st := keyStatus(t, dir); st[added.Key].Values != values || st[oldID].Values != 0 {
		t.Fatalf("status after the rotation: %+v, want every value on %s", st, added.Key)
	}

	// The old key out of the file, and a restart: everything still opens.
	text, err := os.ReadFile(added.File)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(text), "\n")
	if err := os.WriteFile(added.File, []byte(first+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.stop()
	s = start(t, dir, args...)
	if st := keyStatus(t, dir); len(st) != 1 || st[added.Key].Values != values {
		t.Fatalf("status with the old key gone: %+v", st)
	}
	w = startWriters(s, k, domains, 0)
	waitFor(t, "readings with the old key gone", func() bool { return w.count() >= 6 })
	w.halt()
	verified("with the old key gone", w)
}

// TestMasterKeyRotationOnPostgres: the same rotation on PostgreSQL with
// master_key_file, a signed webhook checked by a verifying receiver: a
// key added to the file, the server restarted, rotate re-seals the
// webhook's secret, status shows it on the new key, and with the old key
// taken out of the file and the server restarted the deliveries still
// verify.
func TestMasterKeyRotationOnPostgres(t *testing.T) {
	dir := t.TempDir()
	keyFile := masterKeyFile(t)
	pg := []string{"--store", "postgres", "--postgres-url", testsvc.Postgres(t), "--master-key-file", keyFile}
	var a account
	cli(t, dir, &a, append([]string{"account", "create", "--name", "On PostgreSQL", "--tier", "enterprise"}, pg...)...)
	var k key
	cli(t, dir, &k, append([]string{"key", "create", "--account", a.ID, "--name", "pg"}, pg...)...)
	serve := append(slices.Clone(pg), "--bus", "postgres", "--counter", "store", "--allowed-targets", "127.0.0.1/32", "--allow-http-targets")
	s := start(t, dir, serve...)
	rc := newHookReceiver(t)
	r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k),
		body: jsonBody(client.CreateWebhook{Domain: "example.com", Events: []string{"ai_visibility_change"}, URL: rc.URL})})
	var wh client.Webhook
	r.decode(t, &wh)
	if r.Status != 201 {
		t.Fatalf("create webhook: %d %s", r.Status, r.Body)
	}
	rc.mu.Lock()
	rc.secrets = []string{wh.Secret}
	rc.mu.Unlock()
	score := 10
	delivered := func(phase string) {
		t.Helper()
		score = 110 - score // 10, 100, 10, ...: each reading an event
		ev := recordEvent(t, s, k, fmt.Sprintf(`{"domain":"example.com","visibility_score":%d,"sentiment":"neutral"}`, score))
		waitFor(t, phase+": the event at the webhook", func() bool { return rc.got(ev) })
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if rc.invalid != 0 {
			t.Fatalf("%s: %d deliveries did not verify", phase, rc.invalid)
		}
	}
	status := func() map[string]keyCount {
		t.Helper()
		var counts []keyCount
		cli(t, dir, &counts, append([]string{"secrets", "status"}, pg...)...)
		out := map[string]keyCount{}
		for _, c := range counts {
			out[c.Key] = c
		}
		return out
	}
	delivered("before the rotation")
	old, _, err := secrets.Load(keyFile, false)
	if err != nil {
		t.Fatal(err)
	}

	var added struct{ Key, File string }
	cli(t, dir, &added, append([]string{"secrets", "new-key"}, pg...)...)
	if added.File != keyFile {
		t.Fatalf("new-key wrote %s, want master_key_file %s", added.File, keyFile)
	}
	s.stop()
	s = start(t, dir, serve...)
	var rot rotation
	cli(t, dir, &rot, append([]string{"secrets", "rotate", "--batch", "1"}, pg...)...)
	if rot.Key != added.Key || rot.Resealed != 1 {
		t.Fatalf("rotate: %+v, want the secret re-sealed with %s", rot, added.Key)
	}
	if st := status(); st[added.Key].Values != 1 || st[old.ID()].Values != 0 {
		t.Fatalf("status after the rotation: %+v", st)
	}
	delivered("after the rotation")

	text, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(text), "\n")
	if err := os.WriteFile(keyFile, []byte(first+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.stop()
	s = start(t, dir, serve...)
	delivered("with the old key gone")
}
