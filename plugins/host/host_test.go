package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aivis/aivis/plugins/host"
	"github.com/aivis/aivis/plugins/sdk"
)

func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "testplugin")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/testplugin").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

var events = []sdk.Event{{ID: "evt_1", Kind: "ai_visibility_change", Timestamp: time.Now(), Body: []byte(`{}`)}}

func deliver(t *testing.T, s *host.Supervisor, mode string) ([]sdk.Result, error) {
	t.Helper()
	return s.Deliver(context.Background(), json.RawMessage(`{"mode":"`+mode+`"}`), events)
}

// eventually retries a delivery until the supervisor has the plugin back.
func eventually(t *testing.T, s *host.Supervisor) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		rs, err := deliver(t, s, "ok")
		if err == nil && len(rs) == 1 && rs[0].Outcome == sdk.Delivered {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plugin did not come back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSupervisorContainsMisbehaviour: a plugin that crashes, hangs past its
// deadline, breaks the protocol or is killed from outside costs the caller
// one error, never the server, and is running again soon after.
func TestSupervisorContainsMisbehaviour(t *testing.T) {
	bin := build(t)
	s := host.Supervise(host.Options{Path: bin}, 2*time.Second)
	defer s.Stop()
	eventually(t, s)
	if h := s.Health(); h.State != "running" || h.Restarts != 0 {
		t.Fatalf("health %+v", h)
	}

	for _, mode := range []string{"crash", "hang", "garbage"} {
		start := time.Now()
		if _, err := deliver(t, s, mode); err == nil {
			t.Fatalf("%s: no error", mode)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: the call took %v; its deadline is 2 s", mode, took)
		}
		eventually(t, s)
	}

	info, err := s.Info(context.Background())
	if err != nil || info.MaxBatch != 10 {
		t.Fatalf("info %+v %v", info, err)
	}
	h := s.Health()
	if h.Restarts < 3 || h.LastError == "" {
		t.Errorf("after three failures: %+v", h)
	}
}

// TestReasonsAreText: a reason holds what a destination answered, which
// may be any bytes; the SDK sends it as text (protobuf's strings are
// UTF-8: a reply with other bytes would not be sent at all, and the
// outcome would be the plugin's failure instead of the destination's).
func TestReasonsAreText(t *testing.T) {
	s := host.Supervise(host.Options{Path: build(t)}, 5*time.Second)
	defer s.Stop()
	eventually(t, s)
	rs, err := deliver(t, s, "dirty")
	if err != nil || len(rs) != 1 {
		t.Fatalf("a failure with a dirty reason: %v %v", rs, err)
	}
	if rs[0].Outcome != sdk.PermanentFailure || rs[0].Reason != "hook answered 400: badrequest \uFFFD" {
		t.Errorf("result %+v, want the permanent failure with its reason as text", rs[0])
	}
}

func TestSupervisorRestartsAKilledPlugin(t *testing.T) {
	bin := build(t)
	p, err := host.Start(host.Options{Path: bin})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.Pid()
	syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for !p.Exited() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !p.Exited() {
		t.Fatal("a SIGKILLed plugin is not seen as exited")
	}
	if _, err := p.Connector().Deliver(context.Background(), json.RawMessage(`{}`), events); err == nil {
		t.Fatal("a killed plugin delivered")
	}

	s := host.Supervise(host.Options{Path: bin}, 2*time.Second)
	defer s.Stop()
	eventually(t, s)
	s.Stop()
	if _, err := deliver(t, s, "ok"); !errors.Is(err, host.ErrUnavailable) {
		t.Fatalf("after Stop: %v", err)
	}
	if s.Health().State != "stopped" {
		t.Fatalf("health %+v", s.Health())
	}
}

func TestWatchRestartsWithoutACall(t *testing.T) {
	s := host.Supervise(host.Options{Path: build(t)}, 2*time.Second)
	defer s.Stop()
	eventually(t, s)
	s.Watch(20 * time.Millisecond)
	var pid int
	waitUntil(t, "the plugin started by the watch", func() bool {
		pid = s.Pid()
		return pid != 0
	})
	syscall.Kill(pid, syscall.SIGKILL)
	waitUntil(t, "a new process", func() bool {
		h := s.Health()
		return h.Restarts == 1 && h.State == "running" && s.Pid() != 0 && s.Pid() != pid
	})
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestVersionNegotiation: a plugin that also speaks a newer protocol than
// the host is spoken to in the newest version both know.
func TestVersionNegotiation(t *testing.T) {
	p, err := host.Start(host.Options{Path: build(t), Env: []string{"TESTPLUGIN_NEWER=1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if p.Protocol != 1 {
		t.Fatalf("negotiated protocol %d, want 1", p.Protocol)
	}
	rs, err := p.Connector().Deliver(context.Background(), json.RawMessage(`{"mode":"ok"}`), events)
	if err != nil || len(rs) != 1 || rs[0].Outcome != sdk.Delivered {
		t.Fatalf("deliver over the negotiated version: %v %v", rs, err)
	}
}

func TestBackoff(t *testing.T) {
	if host.Backoff(1) != 500*time.Millisecond || host.Backoff(100) != 30*time.Second || host.Backoff(0) != 250*time.Millisecond {
		t.Fatal(host.Backoff(1), host.Backoff(100))
	}
}
