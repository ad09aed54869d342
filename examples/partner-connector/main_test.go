package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/plugins/host"
	"github.com/aivis/aivis/plugins/sdk"
	"github.com/aivis/aivis/plugins/sdk/sdktest"
)

// build compiles this connector into a temporary directory.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "partner-connector")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func checksum(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return sum[:]
}

// TestThroughTheHost runs the connector as the server does: a separate
// process, gRPC with mutual TLS, checksum verified, no environment but
// the outbound policy.
func TestThroughTheHost(t *testing.T) {
	bin := build(t)
	var mu sync.Mutex
	var got []map[string]string
	answer := http.StatusOK
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]string
		json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Idempotency-Key") == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if answer == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "7")
		}
		w.WriteHeader(answer)
		if answer == http.StatusOK {
			got = append(got, m)
		}
	}))
	defer fake.Close()

	t.Setenv("AIVIS_SERVER_SECRET", "must-not-leak")
	p, err := host.Start(host.Options{Path: bin, Checksum: checksum(t, bin),
		Env: []string{sdk.EnvAllowedTargets + "=127.0.0.1/32"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if p.Protocol != 1 {
		t.Errorf("protocol %d", p.Protocol)
	}
	// The plugin sees none of the server's environment.
	environ, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.Pid()), "environ"))
	if err != nil || strings.Contains(string(environ), "must-not-leak") || !strings.Contains(string(environ), sdk.EnvAllowedTargets) {
		t.Errorf("plugin environment (pid %d, %v): %q", p.Pid(), err, environ)
	}
	c := p.Connector()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := c.Info(ctx)
	if err != nil || info.Name != "partner-chat" || info.Kind != "chat" || !json.Valid(info.SettingsSchema) || info.SecretFields[0] != "webhook_url" {
		t.Fatalf("info %+v, %v", info, err)
	}
	fes, err := c.ValidateSettings(ctx, json.RawMessage(`{"webhook_url": "not a url", "color": 1}`))
	if err != nil || len(fes) == 0 {
		t.Fatalf("bad settings accepted: %+v %v", fes, err)
	}
	fes, _ = c.ValidateSettings(ctx, json.RawMessage(`{"webhook_url": "ftp://x"}`))
	if len(fes) != 1 || fes[0].Field != "webhook_url" {
		t.Fatalf("field errors %+v", fes)
	}
	settings := json.RawMessage(`{"webhook_url": "` + fake.URL + `/hook", "username": "aivis"}`)
	if fes, _ := c.ValidateSettings(ctx, settings); len(fes) != 0 {
		t.Fatalf("good settings refused: %+v", fes)
	}
	ev := sdk.Event{ID: "evt_1", Kind: "ai_visibility_change", Timestamp: time.Now(), Domain: "example.com", AccountID: "acct_1",
		Body: []byte(`{"id":"evt_1","event":"ai_visibility_change","data":{"domain":"example.com","visibility_score":72,"sentiment":"positive"}}`)}
	for _, tc := range []struct {
		status int
		want   sdk.Outcome
	}{{200, sdk.Delivered}, {429, sdk.Retry}, {503, sdk.Retry}, {404, sdk.PermanentFailure}} {
		mu.Lock()
		answer = tc.status
		mu.Unlock()
		rs, err := c.Deliver(ctx, settings, []sdk.Event{ev})
		if err != nil || len(rs) != 1 || rs[0].Outcome != tc.want {
			t.Fatalf("status %d: %+v %v", tc.status, rs, err)
		}
		if tc.status == 429 && rs[0].RetryAfter != 7*time.Second {
			t.Errorf("Retry-After: %v", rs[0].RetryAfter)
		}
	}
	mu.Lock()
	if len(got) != 1 || !strings.Contains(got[0]["content"], "visibility 72") || got[0]["username"] != "aivis" {
		t.Errorf("the destination got %+v", got)
	}
	mu.Unlock()
	res, err := c.Test(ctx, settings, ev)
	if err != nil || res.Outcome != sdk.PermanentFailure {
		t.Errorf("test while the fake answers 404: %+v %v", res, err)
	}

	// The plugin's outbound guard: loopback is refused unless allowed.
	p2, err := host.Start(host.Options{Path: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Kill()
	rs, err := p2.Connector().Deliver(ctx, settings, []sdk.Event{ev})
	if err != nil || rs[0].Outcome != sdk.Retry || !strings.Contains(rs[0].Reason, "not allowed") {
		t.Errorf("a plugin without the allow-list reached loopback: %+v %v", rs, err)
	}
}

func TestChecksumAndCrash(t *testing.T) {
	bin := build(t)
	sum := checksum(t, bin)
	sum[0] ^= 0xff
	if _, err := host.Start(host.Options{Path: bin, Checksum: sum}); err == nil || !host.IsChecksum(err) {
		t.Fatalf("a changed binary started: %v", err)
	}
	p, err := host.Start(host.Options{Path: bin, Checksum: checksum(t, bin)})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.Kill()
	if !p.Exited() {
		t.Fatal("not exited after Kill")
	}
	if _, err := p.Connector().Info(context.Background()); err == nil {
		t.Fatal("a killed plugin answered")
	}
}

// TestConformance runs the SDK's conformance kit, as a partner would.
func TestConformance(t *testing.T) {
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer fake.Close()
	sdktest.Run(t, sdktest.Suite{
		Binary: build(t),
		Valid:  []json.RawMessage{json.RawMessage(`{"webhook_url": "https://chat.example/hook"}`)},
		Invalid: []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`{"webhook_url": 5}`),
			json.RawMessage(`{"webhook_url": "https://chat.example/hook", "extra": true}`)},
		Deliverable: json.RawMessage(`{"webhook_url": "` + fake.URL + `"}`),
		Env:         []string{sdk.EnvAllowedTargets + "=127.0.0.1/32"},
	})
}

func TestRefusesToRunAlone(t *testing.T) {
	bin := build(t)
	out, err := exec.Command(bin).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "aivis server runs it") {
		t.Fatalf("run by hand: %v %s", err, out)
	}
}
