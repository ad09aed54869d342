package testsvc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A private server never outlives the test binary that started it, even
// when that binary is killed. The binary runs itself again as a supervisor
// (init below, before any test runs), which starts the server and holds
// the read end of a pipe whose write end only the test binary has: when
// the test binary exits, however it exits, the pipe closes, and the
// supervisor stops the server, removes its directory and exits. Should
// the supervisor itself be killed, the kernel kills the server (Pdeathsig,
// set from the supervisor's main thread, which lives as long as it does).
// The supervisor has a process group of its own, so that a signal to the
// test binary's group (^C) reaches it only through the closed pipe.

// superviseEnv carries a spec to the test binary run as a supervisor.
const superviseEnv = "AIVIS_TESTSVC_SUPERVISE"

// spec is what a supervisor runs.
type spec struct {
	Argv []string
	Dir  string              // the server's directory, removed once it stopped
	Cred *syscall.Credential // the user the server runs as (nil: the supervisor's)
	Stop syscall.Signal      // asks the server to stop
}

func init() {
	if v := os.Getenv(superviseEnv); v != "" {
		os.Exit(supervise(v))
	}
}

// supervise runs the server of the spec in v, writing "pid N" on stdout
// once it started and "exit ..." should it exit by itself.
func supervise(v string) int {
	runtime.LockOSThread()
	// A write to a closed stdout must not kill the supervisor before it
	// cleaned up; notified, it fails instead (and the server starts with
	// SIGPIPE at its default, unlike an ignored one).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(eof)
	}()
	var sp spec
	if err := json.Unmarshal([]byte(v), &sp); err != nil || len(sp.Argv) == 0 {
		fmt.Printf("exit bad spec %q\n", v)
		return 2
	}
	defer os.RemoveAll(sp.Dir)

	cmd := exec.Command(sp.Argv[0], sp.Argv[1:]...)
	cmd.Dir = sp.Dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, superviseEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: sp.Cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Printf("exit %v\n", err)
		waitAny(eof, stop)
		return 1
	}
	fmt.Printf("pid %d\n", cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		fmt.Printf("exit %v\n", err)
		// The test binary reads the server's log before it lets go.
		waitAny(eof, stop)
	case <-eof:
		halt(cmd, sp.Stop, done)
	case <-stop:
		halt(cmd, sp.Stop, done)
	}
	return 0
}

func waitAny(a chan struct{}, b chan os.Signal) {
	select {
	case <-a:
	case <-b:
	}
}

// halt stops the server with sig, or kills it after 10 s.
func halt(cmd *exec.Cmd, sig syscall.Signal, done chan error) {
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// proc is a server supervised for this test binary.
type proc struct {
	stdin  io.Closer // closing it stops the server
	super  int       // the supervisor's pid
	pid    int       // the server's
	dir    string
	exited chan struct{} // closed once the server exited (or never started)
	why    string        // why, set before exited closes
}

var (
	procsMu sync.Mutex
	// procs holds every supervised server of this binary, and so the write
	// ends of their pipes, which must stay open while the binary runs.
	procs []*proc
)

// startSupervised starts sp's server under a supervisor and returns once
// the server started (or failed to).
func startSupervised(sp spec) (*proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(sp)
	if err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(sp.Dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), superviseEnv+"="+string(b))
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{stdin: stdin, super: cmd.Process.Pid, dir: sp.Dir, exited: make(chan struct{})}
	procsMu.Lock()
	procs = append(procs, p)
	procsMu.Unlock()
	started := make(chan struct{})
	go func() {
		var once sync.Once
		exited := func(why string) {
			once.Do(func() {
				p.why = why
				close(p.exited)
			})
		}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
				p.pid, _ = strconv.Atoi(n)
				close(started)
			} else if why, ok := strings.CutPrefix(sc.Text(), "exit "); ok {
				exited(why)
			}
		}
		exited("the supervisor exited")
		cmd.Wait()
	}()
	select {
	case <-started:
	case <-p.exited:
	}
	return p, nil
}

// waitReady waits until probe finds the server at url answering. If the
// server exits first, the error is an exitError with the end of its log.
func waitReady(p *proc, probe func(context.Context, string) error, url string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := probe(ctx, url)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return &exitError{fmt.Sprintf("exited (%s):\n%s", p.why, logTail(p.dir))}
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("did not answer within a minute: %v\n%s", err, logTail(p.dir))
		}
	}
}

type exitError struct{ msg string }

func (e *exitError) Error() string { return e.msg }

func logTail(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
