// Package scripttest runs a script as a terminal does, for tests: in a
// process group of its own, which Ctrl-C (SIGINT to the group) reaches.
package scripttest

import (
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aivis/aivis/internal/syncbuf"
)

// Script is a running script and what it has written.
type Script struct {
	Cmd    *exec.Cmd
	Out    *syncbuf.Buffer // its standard output and error
	exited chan error
	done   chan struct{} // closed once the script has exited
}

// Start starts cmd in a process group of its own, its output in Out. It
// starts while this process catches SIGINT, so that the script has the
// default (a signal caught is reset by exec, an ignored one stays ignored,
// as when the tests run in the background) and its trap of Ctrl-C is set.
// The group is killed when tb ends if the script still runs.
func Start(tb testing.TB, cmd *exec.Cmd) *Script {
	tb.Helper()
	s := &Script{Cmd: cmd, Out: &syncbuf.Buffer{}, exited: make(chan error, 1), done: make(chan struct{})}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = s.Out, s.Out
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	err := cmd.Start()
	signal.Stop(sigs)
	if err != nil {
		tb.Fatal(err)
	}
	go func() {
		s.exited <- cmd.Wait()
		close(s.done)
	}()
	tb.Cleanup(func() {
		select {
		case <-s.done:
		default:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	})
	return s
}

// WaitOutput waits until the script's output holds what, and reports
// true; or until the script exits first, and reports false with its exit.
// It fails tb if neither comes within d.
func (s *Script) WaitOutput(tb testing.TB, what string, d time.Duration) (bool, error) {
	tb.Helper()
	deadline := time.After(d)
	for !strings.Contains(s.Out.String(), what) {
		select {
		case err := <-s.exited:
			return false, err
		case <-deadline:
			tb.Fatalf("%s did not write %q in %v:\n%s", s.Cmd, what, d, s.Out)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true, nil
}

// Interrupt sends SIGINT to the script's process group, as Ctrl-C in a
// terminal does, and returns the script's exit; it fails tb if the script
// still runs after d.
func (s *Script) Interrupt(tb testing.TB, d time.Duration) error {
	tb.Helper()
	if err := syscall.Kill(-s.Cmd.Process.Pid, syscall.SIGINT); err != nil {
		tb.Fatal(err)
	}
	select {
	case err := <-s.exited:
		return err
	case <-time.After(d):
		tb.Fatalf("%s still runs %v after Ctrl-C:\n%s", s.Cmd, d, s.Out)
		return nil
	}
}
