// Package servetest runs the aivis binary for tests outside cmd/aivis
// (the clients' tests in sdk/): it builds it, runs its administrative
// commands and starts aivis serve on a free loopback port.
package servetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aivis/aivis/internal/syncbuf"
)

// Build compiles cmd/aivis (and any other main packages of the module
// named by their paths from its root, such as "connectors/zapier") into a
// temporary directory and returns the binaries' paths, aivis's first.
func Build(t testing.TB, more ...string) []string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dir := t.TempDir()
	var bins []string
	for _, pkg := range append([]string{"cmd/aivis"}, more...) {
		bin := filepath.Join(dir, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-o", bin, "./"+pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./%s: %v\n%s", pkg, err, out)
		}
		bins = append(bins, bin)
	}
	return bins
}

// CLI runs an administrative subcommand of bin on the data directory
// with --json and decodes its output into out (unless nil).
func CLI(t testing.TB, bin, data string, out any, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--data-dir", data, "--json")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("aivis %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("aivis %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
}

var listening = regexp.MustCompile(`aivis listening on (https://\S+)`)

// Serve starts bin's aivis serve on the data directory on a free loopback
// port (its admin listener on another), with args, and returns its URL once its banner is printed (its
// certificate is data/tls/cert.pem). When the test ends it is sent
// SIGTERM and must exit cleanly within 20 s.
func Serve(t testing.TB, bin, data string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--data-dir", data, "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--log-level", "warn"}, args...)...)
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		url := ""
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				url = m[1]
			}
			// The banner ends with the data directory.
			if strings.HasPrefix(sc.Text(), "data directory:") && url != "" {
				urls <- url
				url = ""
			}
		}
		close(urls)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("aivis serve exited with %v after SIGTERM:\n%s", err, stderr)
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("aivis serve did not stop in 20 s after SIGTERM:\n%s", stderr)
		}
	})
	select {
	case url, ok := <-urls:
		if !ok {
			t.Fatalf("aivis serve exited before listening:\n%s", stderr)
		}
		return url
	case <-time.After(60 * time.Second):
		t.Fatalf("aivis serve did not listen in 60 s:\n%s", stderr)
	}
	return ""
}
