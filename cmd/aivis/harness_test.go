package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/internal/syncbuf"
)

// binary is the aivis binary built once for the package's tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aivis-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "aivis")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building aivis:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if bad := messages.namingGo(); len(bad) > 0 {
		fmt.Fprintf(os.Stderr, "error messages of the API that name a Go type, package or function:\n%s", strings.Join(bad, ""))
		code = 1
	}
	os.Exit(code)
}

// messages collects the message of every error envelope do receives (and
// of each of its details), to check after the tests that none leaves the
// system naming Go's internals.
var messages errorMessages

type errorMessages struct {
	mu   sync.Mutex
	seen map[string]string // message -> the first request that got it
}

// goInternals matches a message that names a Go type, package or function.
var goInternals = regexp.MustCompile(`json:|Unmarshal|Marshal[A-Z]|\btime\.[A-Z]|\bstrconv\.|\breflect\b|\.go:\d|Go value|` +
	`Go struct|\bstruct\b|\*[a-z0-9]+\.[A-Z]\w*|\b(fmt|errors|pgx|pgconn|sql|sqlite3|json|http|url|net|os|io|context|store|fault|client)\.[A-Z]\w*|` +
	`parsing time|2006-01-02T15:04:05|goroutine \d|runtime error|SQLSTATE|invalid memory address`)

func (m *errorMessages) record(what string, body []byte) {
	var e client.ErrorEnvelope
	if json.Unmarshal(body, &e) != nil || e.Error.Message == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]string{}
	}
	msgs := []string{e.Error.Message}
	for _, d := range e.Error.Details {
		msgs = append(msgs, d.Message)
	}
	for _, msg := range msgs {
		if _, ok := m.seen[msg]; !ok {
			m.seen[msg] = what
		}
	}
}

// namingGo lists the messages seen that goInternals matches, each with
// the request that got it.
func (m *errorMessages) namingGo() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var bad []string
	for msg, what := range m.seen {
		if goInternals.MatchString(msg) {
			bad = append(bad, fmt.Sprintf("  %q (%s)\n", msg, what))
		}
	}
	slices.Sort(bad)
	return bad
}

// cli runs an administrative subcommand with --json and decodes its output.
func cli(t *testing.T, dataDir string, out any, args ...string) {
	t.Helper()
	cliOf(t, binary, dataDir, out, args...)
}

// cliOf is cli of the aivis binary at bin (an earlier build's).
func cliOf(t *testing.T, bin, dataDir string, out any, args ...string) {
	t.Helper()
	args = append(args, "--data-dir", dataDir, "--json")
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: output is not JSON: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, b)
		}
	}
}

// cliFails runs a subcommand that must fail and returns its stderr.
func cliFails(t *testing.T, dataDir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append(args, "--data-dir", dataDir)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("aivis %s succeeded; want a failure", strings.Join(args, " "))
	}
	return stderr.String()
}

type account struct {
	ID   string `json:"id"`
	Tier string `json:"tier"`
	Type string `json:"type"`
}

type key struct {
	ID        string   `json:"id"`
	Key       string   `json:"key"`
	Secret    string   `json:"secret"`
	Name      string   `json:"name"`
	ExpiresAt *string  `json:"expires_at"`
	Scopes    []string `json:"scopes"`
}

func newAccount(t *testing.T, dataDir, tier string, agency bool) account {
	var a account
	args := []string{"account", "create", "--name", "Acme " + tier, "--tier", tier}
	if agency {
		args = append(args, "--agency")
	}
	cli(t, dataDir, &a, args...)
	return a
}

func newKey(t *testing.T, dataDir, accountID string, extra ...string) key {
	var k key
	cli(t, dataDir, &k, append([]string{"key", "create", "--account", accountID, "--name", "test key"}, extra...)...)
	return k
}

// server is a running `aivis serve`.
type server struct {
	t       *testing.T
	cmd     *exec.Cmd
	URL     string
	DataDir string
	HTTP    *http.Client
	Stdout  *syncbuf.Buffer
	Stderr  *syncbuf.Buffer
	HTTPURL string
	// AdminURL is the admin listener's (http://host:port), "" when off.
	AdminURL string
	// earlier: an earlier build, whose answers follow its own
	// openapi.json, not this one's, and are not checked against it.
	earlier bool

	banner   chan [3]string // the URL, plain-HTTP URL and admin URL of the banner, once printed
	closed   chan struct{}  // its standard output ended: it exited
	stopOnce sync.Once
}

var listening = regexp.MustCompile(`aivis listening on (https://\S+)`)
var plainListening = regexp.MustCompile(`plain HTTP on (\S+) answers`)
var adminListening = regexp.MustCompile(`admin listener on (http://[^\s:]+:\d+)`)

// start runs the server on a free loopback port and waits until it listens.
func start(t *testing.T, dataDir string, args ...string) *server {
	t.Helper()
	s := launch(t, dataDir, args...)
	s.listening(t)
	return s
}

// launch runs the server on a free loopback port without waiting for it.
func launch(t *testing.T, dataDir string, args ...string) *server {
	t.Helper()
	return launchBinary(t, binary, dataDir, append([]string{"--admin-addr", "127.0.0.1:0"}, args...)...)
}

// launchBinary is launch of the aivis binary at bin (an earlier build's,
// which may lack the admin listener).
func launchBinary(t *testing.T, bin, dataDir string, args ...string) *server {
	t.Helper()
	args = append([]string{"serve", "--data-dir", dataDir, "--addr", "127.0.0.1:0", "--log-level", "warn"}, args...)
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, DataDir: dataDir, Stdout: &syncbuf.Buffer{}, Stderr: &syncbuf.Buffer{},
		banner: make(chan [3]string, 1), closed: make(chan struct{}), earlier: bin != binary}
	cmd.Stderr = s.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.closed)
		sc := bufio.NewScanner(stdout)
		var url, plain, admin string
		for sc.Scan() {
			line := sc.Text()
			s.Stdout.Write([]byte(line + "\n"))
			if m := plainListening.FindStringSubmatch(line); m != nil {
				plain = "http://" + m[1]
			}
			if m := adminListening.FindStringSubmatch(line); m != nil {
				admin = m[1]
			}
			if m := listening.FindStringSubmatch(line); m != nil {
				url = m[1]
			}
			// The banner ends with the data directory: everything read
			// before it is set before the test goes on.
			if strings.HasPrefix(line, "data directory:") && url != "" {
				s.banner <- [3]string{url, plain, admin}
				url = ""
			}
		}
	}()
	t.Cleanup(func() { s.stop() })
	return s
}

// listening waits until the server prints its banner: it serves the API.
func (s *server) listening(t *testing.T) {
	t.Helper()
	select {
	case b := <-s.banner:
		s.took(t, b)
	case <-s.closed:
		s.cmd.Wait()
		t.Fatalf("aivis serve exited before listening:\n%s\n%s", s.Stdout, s.Stderr)
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		t.Fatalf("aivis serve did not listen in 30 s:\n%s", s.Stderr)
	}
}

// took notes the URLs of the server's banner.
func (s *server) took(t *testing.T, banner [3]string) {
	s.URL, s.HTTPURL, s.AdminURL = banner[0], banner[1], banner[2]
	s.HTTP = httpsClient(t, filepath.Join(s.DataDir, "tls", "cert.pem"))
}

// printed waits until the server has printed text on its standard output.
func (s *server) printed(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.Stdout.String(), text) {
		select {
		case <-s.closed: // all it printed is in Stdout
			if !strings.Contains(s.Stdout.String(), text) {
				t.Fatalf("aivis serve exited without printing %q:\n%s\n%s", text, s.Stdout, s.Stderr)
			}
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("aivis serve did not print %q in 30 s:\n%s\n%s", text, s.Stdout, s.Stderr)
		}
	}
}

func httpsClient(t *testing.T, certFile string) *http.Client {
	pem, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("certificate not PEM")
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 64, ForceAttemptHTTP2: true}}
}

// stop sends SIGTERM and waits for a clean exit; a server that does not
// stop in 20 s is sent SIGQUIT, and the stacks it prints are reported.
func (s *server) stop() {
	s.stopOnce.Do(func() {
		if s.cmd.ProcessState != nil { // the test waited for it itself
			return
		}
		s.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- s.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				s.t.Errorf("aivis serve exited with %v after SIGTERM:\n%s", err, s.Stderr)
			}
		case <-time.After(20 * time.Second):
			s.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				s.cmd.Process.Kill()
				<-done
			}
			s.t.Errorf("aivis serve did not stop within 20 s of SIGTERM; its stderr:\n%s", s.Stderr)
		}
	})
}

// resp is a decoded response.
type resp struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r resp) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, r.Body)
	}
}

// errorCode reads the error code of a failure envelope.
func (r resp) errorCode(t *testing.T) string {
	t.Helper()
	var e struct {
		Success *bool `json:"success"`
		Error   struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	r.decode(t, &e)
	if e.Success == nil || *e.Success || e.Error.Code == "" || e.Error.Message == "" || e.Error.RequestID == "" {
		t.Fatalf("not a failure envelope: %s", r.Body)
	}
	if e.Error.RequestID != r.Header.Get("X-Request-Id") {
		t.Fatalf("error.request_id %q != X-Request-Id %q", e.Error.RequestID, r.Header.Get("X-Request-Id"))
	}
	return e.Error.Code
}

type req struct {
	method, path string
	header       map[string]string
	body         string
}

// do sends a request to the server and checks what every response carries.
func (s *server) do(t *testing.T, r req) resp {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequestWithContext(context.Background(), r.method, s.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		if v == "" {
			hr.Header.Del(k)
		} else {
			hr.Header.Set(k, v)
		}
	}
	res, err := s.HTTP.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := resp{Status: res.StatusCode, Header: res.Header, Body: b}
	if res.StatusCode >= 400 {
		messages.record(r.method+" "+r.path, b)
	}
	if res.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s %s: no X-Request-Id", r.method, r.path)
	}
	// A 503 RATE_LIMIT_UNAVAILABLE could count nothing, and a 503
	// SERVICE_UNAVAILABLE may come before the request was counted, so they
	// may have no rate-limit headers (docs/api.md).
	uncounted := res.StatusCode == http.StatusServiceUnavailable && (bytes.Contains(b, []byte(`"RATE_LIMIT_UNAVAILABLE"`)) ||
		bytes.Contains(b, []byte(`"SERVICE_UNAVAILABLE"`)))
	if (strings.HasPrefix(r.path, "/api/v1/ai") || strings.HasPrefix(r.path, "/v1")) && !uncounted {
		for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			if res.Header.Get(h) == "" {
				t.Errorf("%s %s (%d): no %s header", r.method, r.path, res.StatusCode, h)
			}
		}
	}
	if !s.earlier {
		validate(t, r.method, r.path, out)
	}
	return out
}

// logged reports whether the server logged a record with message msg and
// the attribute attr (key=value, as the text log writes it).
func (s *server) logged(msg, attr string) bool {
	for _, line := range strings.Split(s.Stderr.String(), "\n") {
		if strings.Contains(line, `msg="`+msg+`"`) && strings.Contains(line, " "+attr) {
			return true
		}
	}
	return false
}

// db opens the server's database read-only, for what a test checks of
// the stored state itself.
func (s *server) db(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(s.DataDir, "aivis.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// count runs a query of one number on the server's database.
func (s *server) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	if err := s.db(t).QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// eventsHandled waits until the fan-out (consumer group webhooks) has
// acknowledged every event committed before the call: it acknowledges an
// event once the event's log entry and deliveries are committed, and the
// bus's offset passes an event only once it and every one before it are
// acknowledged.
func (s *server) eventsHandled(t *testing.T) {
	t.Helper()
	db := s.db(t)
	last := map[string]int64{}
	rows, err := db.Query(`SELECT topic, max(seq) FROM bus_messages GROUP BY topic`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var topic string
		var seq int64
		if err := rows.Scan(&topic, &seq); err != nil {
			t.Fatal(err)
		}
		last[topic] = seq
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	for topic, seq := range last {
		waitFor(t, "the fan-out past the events of "+topic, func() bool {
			var acked int64
			err := db.QueryRow(`SELECT acked FROM bus_offsets WHERE consumer_group = 'webhooks' AND topic = ?`, topic).Scan(&acked)
			return err == nil && acked >= seq
		})
	}
}

// keyed and bearer build the headers of each interface.
func keyed(k key) map[string]string {
	return map[string]string{"X-API-Key": k.Key, "X-API-Secret": k.Secret}
}

func bearer(k key) map[string]string { return map[string]string{"Authorization": "Bearer " + k.Key} }

func with(h map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// awayFromMinuteEnd waits, when needed, so that a test counting requests
// in the minute window does not straddle a minute boundary.
func awayFromMinuteEnd(need time.Duration) {
	now := time.Now().UTC()
	end := now.Truncate(time.Minute).Add(time.Minute)
	if end.Sub(now) < need {
		time.Sleep(end.Sub(now) + 100*time.Millisecond)
	}
}
