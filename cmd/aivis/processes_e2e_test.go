package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/webhook"
)

// arrival is one delivery of an event at a receiver: when, and from which
// aivis process.
type arrival struct {
	at  time.Time
	pid int
}

// procReceiver is a webhook endpoint that notes each arrival of an event
// at each path, with the aivis process that sent it (the other end of its
// connection, found in /proc), verifying every signature and that
// webhook-id is the event's id. The test payload a webhook's creation
// sends is answered 200 unverified (its secret is not known yet).
type procReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	verifier *webhook.Verifier
	pids     []int                           // the processes a connection may come from
	gone     map[int]int                     // the client ports of processes stopped for good, to their pids
	got      map[string]map[string][]arrival // path -> event id -> arrivals
	bad      []string
	hold     chan struct{} // while not nil, events are answered once it closes

	scan    sync.Mutex  // one look at /proc at a time
	scanned time.Time   // when the last look began
	ports   map[int]int // client ports to the pids holding them, as of that look
}

// peer is a connection to the receiver: its client's port, when it was
// accepted, and, once a request on it asked, its process.
type peer struct {
	port     int
	accepted time.Time
	once     sync.Once
	pid      int
}

type peerKey struct{}

func newProcReceiver(t *testing.T) *procReceiver {
	p := &procReceiver{got: map[string]map[string][]arrival{}}
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev webhook.Event
		err := json.Unmarshal(body, &ev)
		if ev.Event == "webhook_test" {
			return
		}
		c := r.Context().Value(peerKey{}).(*peer)
		c.once.Do(func() { c.pid = p.pidOf(c) })
		p.mu.Lock()
		if verr := p.verifier.Verify(r.Header, body); verr != nil || err != nil || r.Header.Get("webhook-id") != ev.ID {
			p.bad = append(p.bad, fmt.Sprintf("%s %s: %v %v", r.URL.Path, r.Header.Get("webhook-id"), verr, err))
			p.mu.Unlock()
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if p.got[r.URL.Path] == nil {
			p.got[r.URL.Path] = map[string][]arrival{}
		}
		p.got[r.URL.Path][ev.ID] = append(p.got[r.URL.Path][ev.ID], arrival{time.Now(), c.pid})
		hold := p.hold
		p.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done(): // the sender is gone
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	// Nothing slow here: the server accepts its connections one at a
	// time, calling this for each.
	p.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, peerKey{}, &peer{port: c.RemoteAddr().(*net.TCPAddr).Port, accepted: time.Now()})
	}
	p.Start()
	t.Cleanup(p.Close)
	return p
}

// pidOf is the process, of those watched, that holds the other end of c:
// as a look at /proc made after c was accepted found it (one look finds
// every connection accepted before it), else, for a connection of a
// process killed since, as kill noted it. 0: none of them. A look may miss
// a socket that comes or goes while the kernel's table is read, so a
// connection not found is looked for again.
func (p *procReceiver) pidOf(c *peer) int {
	p.scan.Lock()
	defer p.scan.Unlock()
	for range 3 {
		if p.scanned.After(c.accepted) {
			if pid, ok := p.ports[c.port]; ok {
				return pid
			}
		}
		p.look()
	}
	if pid, ok := p.ports[c.port]; ok {
		return pid
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gone[c.port]
}

// look maps the client ports of the connections to the receiver to the
// watched processes that hold them: each such socket of /proc/net/tcp
// (its remote port the receiver's) is one of the process's open files.
func (p *procReceiver) look() {
	p.scanned = time.Now()
	p.mu.Lock()
	pids := p.pids
	p.mu.Unlock()
	server := p.Listener.Addr().(*net.TCPAddr).Port
	clients := map[string]int{} // socket inodes to their local ports
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n") {
			if fs := strings.Fields(line); len(fs) >= 10 && hexPort(fs[2]) == server {
				clients[fs[9]] = hexPort(fs[1])
			}
		}
	}
	p.ports = map[int]int{}
	for _, pid := range pids {
		for _, inode := range sockets(pid) {
			if port, ok := clients[inode]; ok {
				p.ports[port] = pid
			}
		}
	}
}

// watch sets the processes whose connections are told apart.
func (p *procReceiver) watch(ss ...*server) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pids = nil
	for _, s := range ss {
		p.pids = append(p.pids, s.cmd.Process.Pid)
	}
}

// kill kills s with SIGKILL. It is stopped (SIGSTOP) first, so that the
// receiver knows its connections, of which it may still read requests
// sent before the end.
func (p *procReceiver) kill(t *testing.T, s *server) {
	pid := s.cmd.Process.Pid
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	own := sockets(pid)
	p.mu.Lock()
	if p.gone == nil {
		p.gone = map[int]int{}
	}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n") {
			if fs := strings.Fields(line); len(fs) >= 10 && slices.Contains(own, fs[9]) {
				p.gone[hexPort(fs[1])] = pid
			}
		}
	}
	p.mu.Unlock()
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// delivered waits until every event the burst's writers saw accepted
// has arrived, writer i's at /hook/<i % endpoints>.
func (p *procReceiver) delivered(t *testing.T, b *readings, endpoints int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		missing, all := 0, 0
		for i := range b.accepted {
			for _, id := range b.accepted[i] {
				all++
				if len(p.arrivals(fmt.Sprintf("/hook/%d", i%endpoints), id)) == 0 {
					missing++
				}
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries never arrived", missing, all)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// duplicates checks every arrival so far, once killed was killed (at
// killedAt) and its work taken over: each verified, and none twice but
// for deliveries the killed process sent before it died and did not
// record, each of those once by it and once, after its death, by a
// survivor. It returns how many there are, and the arrivals by process.
func (p *procReceiver) duplicates(t *testing.T, killed *server, killedAt time.Time) (dups int, by map[int]int) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.bad) > 0 {
		t.Errorf("%d deliveries failed verification, e.g. %s", len(p.bad), p.bad[0])
	}
	pid := killed.cmd.Process.Pid
	by = map[int]int{}
	for path, ids := range p.got {
		for id, as := range ids {
			for _, a := range as {
				by[a.pid]++
			}
			if len(as) == 1 {
				continue
			}
			dups++
			fromKilled := slices.IndexFunc(as, func(a arrival) bool { return a.pid == pid })
			if len(as) != 2 || fromKilled < 0 || as[1-fromKilled].pid == pid || as[1-fromKilled].pid == 0 || !as[1-fromKilled].at.After(killedAt) {
				t.Errorf("event %s arrived at %s %d times: %+v (the killed process is %d, killed at %v)", id, path, len(as), as, pid, killedAt)
			}
		}
	}
	// What the killed process could have sent and not recorded: its
	// attempts in flight (at most 256) and the outcomes waiting for its
	// recorder (a batch being written, 256, and 1,024 queued).
	if dups > 256+256+1024 {
		t.Errorf("%d duplicates: more than one process can have in flight", dups)
	}
	return dups, by
}

// trust sets the secrets the receiver verifies signatures with.
func (p *procReceiver) trust(t *testing.T, secrets ...string) {
	v, err := webhook.NewVerifier(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.verifier = v
	p.mu.Unlock()
}

// arrivals are the arrivals of an event at a path, so far.
func (p *procReceiver) arrivals(path, eventID string) []arrival {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got[path][eventID])
}

// hexPort reads the port of an address of /proc/net/tcp (0100007F:1F90).
func hexPort(addr string) int {
	_, p, _ := strings.Cut(addr, ":")
	n, _ := strconv.ParseUint(p, 16, 16)
	return int(n)
}

// sockets are the inodes of the sockets a process has open.
func sockets(pid int) []string {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, _ := os.ReadDir(dir)
	var out []string
	for _, fd := range fds {
		if l, err := os.Readlink(dir + "/" + fd.Name()); err == nil && strings.HasPrefix(l, "socket:[") {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]"))
		}
	}
	return out
}

// listens lists the TCP addresses (of /proc/net/tcp) a process listens on.
func listens(t *testing.T, pid int) []string {
	t.Helper()
	own := sockets(pid)
	if len(own) == 0 {
		t.Fatalf("no sockets of process %d in /proc (is it running?)", pid)
	}
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			fs := strings.Fields(line)
			if len(fs) >= 10 && fs[3] == "0A" && slices.Contains(own, fs[9]) { // 0A: LISTEN
				out = append(out, fs[1])
			}
		}
	}
	return out
}

// TestWorkersOnly: with api false, set in the file, by AIVIS_API or by
// --api=false, serve says it runs the workers only and listens on
// nothing but its admin listener, and it delivers: a server dies (SIGKILL) in the middle of an
// attempt, and the process with api false, the only one left, delivers the
// event again.
func TestWorkersOnly(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	dir := t.TempDir()
	flags := []string{"--allowed-targets", "127.0.0.1/32", "--allow-http-targets"}
	k := newKey(t, dir, newAccount(t, dir, "enterprise", false).ID)
	rc := newProcReceiver(t)
	s := start(t, dir, flags...)
	r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k),
		body: jsonBody(client.CreateWebhook{Domain: "example.com", Events: []string{"ai_visibility_change"}, URL: rc.URL + "/hook"})})
	var wh client.Webhook
	r.decode(t, &wh)
	if r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	rc.trust(t, wh.Secret)
	s.stop()

	for i, source := range []string{"file", "AIVIS_API", "--api=false"} {
		t.Run(source, func(t *testing.T) {
			// A server takes the event's delivery and dies in the middle of
			// its attempt.
			rc.mu.Lock()
			rc.hold = make(chan struct{})
			rc.mu.Unlock()
			s := start(t, dir, flags...)
			rc.watch(s)
			id := recordEvent(t, s, k, fmt.Sprintf(`{"domain":"example.com","visibility_score":%d,"sentiment":"neutral"}`, 10+i))
			waitFor(t, "the attempt of the server that dies", func() bool { return len(rc.arrivals("/hook", id)) == 1 })
			s.cmd.Process.Kill()
			s.cmd.Wait()
			rc.mu.Lock()
			close(rc.hold)
			rc.hold = nil
			rc.mu.Unlock()

			args := flags
			switch source {
			case "file":
				args = append(args, "--config", writeConfig(t, t.TempDir(), map[string]any{"api": false}))
			case "AIVIS_API":
				t.Setenv("AIVIS_API", "false")
			default:
				args = append(args, source)
			}
			w := launch(t, dir, args...)
			rc.watch(w)
			w.printed(t, "aivis runs the workers only (api: false)")
			waitFor(t, "the event delivered by the process with api false", func() bool {
				a := rc.arrivals("/hook", id)
				return len(a) == 2 && a[1].pid == w.cmd.Process.Pid
			})
			admin := adminListening.FindStringSubmatch(w.Stdout.String())
			if admin == nil {
				t.Fatalf("the process with api false names no admin listener:\n%s", w.Stdout)
			}
			port, _ := strconv.Atoi(admin[1][strings.LastIndex(admin[1], ":")+1:])
			if l := listens(t, w.cmd.Process.Pid); len(l) != 1 || l[0] != fmt.Sprintf("0100007F:%04X", port) {
				t.Errorf("the process with api false listens on %v, where only its admin listener (port %d) should be", l, port)
			}
			if out := w.Stdout.String(); strings.Contains(out, "listening") {
				t.Errorf("the process with api false printed:\n%s", out)
			}
			w.stop()
		})
	}
}

// TestThreeProcessesOneDataDirectory runs three `aivis serve` on one data
// directory with the memory counter: one serves the API (it holds
// api.lock), the other two wait as standbys and every one runs the
// workers. 5,000 events of 20 accounts go to 10 endpoints; the server
// serving the API is killed (SIGKILL) at about 2,500 and a standby takes
// the API over. Every event arrives; the only duplicates are deliveries
// the killed process had sent before it died and not recorded; the rate
// limits are exact before and after the takeover, and a key revoked with
// the CLI is refused from the next request on. Then the new server stops
// gracefully and the last standby takes over from every count it made.
func TestThreeProcessesOneDataDirectory(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	const accounts, perAccount, endpoints = 20, 250, 10 // Enterprise allows 300 requests a minute
	began := time.Now()
	dir := t.TempDir()
	flags := []string{"--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "5s"}
	tokens := make([]string, accounts)
	for i := range tokens {
		tokens[i] = newKey(t, dir, newAccount(t, dir, "enterprise", false).ID).Key
	}
	starter, fresh := newKey(t, dir, newAccount(t, dir, "starter", false).ID), newKey(t, dir, newAccount(t, dir, "starter", false).ID)
	revoked := newKey(t, dir, newAccount(t, dir, "starter", false).ID)
	rc := newProcReceiver(t)

	// The first writes its counts behind every 100 ms; the standbys once a
	// minute: what they counted reaches the next one by their last write,
	// when they stop.
	api := start(t, dir, append(flags, "--counter-flush-interval", "100ms")...)
	standbys := []*server{launch(t, dir, append(flags, "--counter-flush-interval", "1m")...),
		launch(t, dir, append(flags, "--counter-flush-interval", "1m")...)}
	for _, s := range standbys {
		s.printed(t, "another aivis process serves the API of this data directory")
	}
	rc.watch(api, standbys[0], standbys[1])
	var secrets []string
	for i, tok := range tokens {
		code, body, err := post(api, "/v1/webhooks", tok, jsonBody(client.CreateWebhook{Domain: "example.com",
			Events: []string{"ai_visibility_change"}, URL: fmt.Sprintf("%s/hook/%d", rc.URL, i%endpoints)}))
		var wh client.Webhook
		json.Unmarshal(body, &wh)
		if err != nil || code != 201 {
			t.Fatalf("webhook %d: %d %s %v", i, code, body, err)
		}
		secrets = append(secrets, wh.Secret)
	}
	rc.trust(t, secrets...)
	t.Logf("set up in %v", time.Since(began).Round(time.Millisecond))

	// The rate limits: only the process holding the lock serves, so its
	// counts are the account's.
	budget := func(k key) func(int) req {
		return func(int) req { return req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)} }
	}
	awayFromMinuteEnd(10 * time.Second)
	minute1, hour1 := windowsNow()
	admitted(t, starter, 60, api)
	windows := func(k key) (minute, hour int) {
		var acct string
		db := api.db(t)
		db.QueryRow(`SELECT account_id FROM api_keys WHERE id = ?`, k.ID).Scan(&acct)
		db.QueryRow(`SELECT coalesce(sum(count) FILTER (WHERE window = 'minute'), 0), coalesce(sum(count) FILTER (WHERE window = 'hour'), 0)
			FROM rate_windows WHERE account_id = ?`, acct).Scan(&minute, &hour)
		return minute, hour
	}
	waitFor(t, "the 60 requests written behind", func() bool { m, h := windows(starter); return m == 60 && h == 60 })

	// A key revoked with the CLI is refused from the next request on.
	if r := api.do(t, budget(revoked)(0)); r.Status != 200 {
		t.Fatalf("the key before its revocation: %d %s", r.Status, r.Body)
	}
	cli(t, dir, nil, "key", "revoke", revoked.ID)
	if r := api.do(t, budget(revoked)(0)); r.Status != 401 || r.errorCode(t) != "KEY_REVOKED" {
		t.Fatalf("the revoked key: %d %s", r.Status, r.Body)
	}

	b := &readings{tokens: tokens, per: perAccount, accepted: make([][]string, accounts)}
	killed := make(chan struct{})
	var killedAt time.Time
	go func() {
		defer close(killed)
		for b.total.Load() < accounts*perAccount/2 {
			time.Sleep(time.Millisecond)
		}
		rc.kill(t, api) // SIGKILL: no shutdown, no flush, the lock let go by the kernel
		killedAt = time.Now()
	}()
	b.burst(t, api)
	<-killed
	t.Logf("the server serving the API killed after %d accepted events, at %v", b.total.Load(), time.Since(began).Round(time.Millisecond))

	next := firstListening(t, standbys...)
	t.Logf("a standby serves the API at %v", time.Since(began).Round(time.Millisecond))
	if r := next.do(t, budget(revoked)(0)); r.Status != 401 || r.errorCode(t) != "KEY_REVOKED" {
		t.Fatalf("the revoked key, after the takeover: %d %s", r.Status, r.Body)
	}
	b.burst(t, next)
	if b.total.Load() != accounts*perAccount {
		t.Fatalf("%d events accepted, want %d", b.total.Load(), accounts*perAccount)
	}
	t.Logf("%d events accepted at %v", b.total.Load(), time.Since(began).Round(time.Millisecond))

	// The takeover counts from what the killed process wrote behind: the
	// Starter account's 60 still count in their minute, and another
	// account gets exactly 60 of 90.
	awayFromMinuteEnd(10 * time.Second)
	minute2, hour2 := windowsNow()
	again := 60
	if minute2.Equal(minute1) {
		again = 0
	}
	admitted(t, starter, again, next)
	admitted(t, fresh, 60, next)

	// Every accepted event at its endpoint, and then nothing pending: the
	// arrivals are all there are.
	rc.delivered(t, b, endpoints)
	t.Logf("every event delivered at %v", time.Since(began).Round(time.Millisecond))
	waitFor(t, "no delivery pending", func() bool {
		return next.count(t, `SELECT count(*) FROM webhook_deliveries WHERE status != 'succeeded'`) == 0
	})

	dups, by := rc.duplicates(t, api, killedAt)
	t.Logf("deliveries by process: %v (killed: %d); %d duplicates, each sent by the killed process before it died", by, api.cmd.Process.Pid, dups)

	// A process that stops gracefully lets the lock go only once it has
	// written its counts: the last standby starts from every one of them
	// (the one that stopped wrote none before its last write).
	next.stop()
	last := firstListening(t, standbys...)
	if _, h := windows(starter); h != carried(hour1, hour2)+again {
		t.Errorf("the Starter account's hour: %d requests written, want %d", h, carried(hour1, hour2)+again)
	}
	awayFromMinuteEnd(10 * time.Second)
	more := 60
	minute3, hour3 := windowsNow()
	if minute3.Equal(minute2) {
		more = 0
	}
	admitted(t, fresh, more, last)
	last.stop()
	if _, h := windows(fresh); h != carried(hour2, hour3)+more {
		t.Errorf("the other Starter account's hour: %d requests written, want %d", h, carried(hour2, hour3)+more)
	}
}

// windowsNow are the minute and the hour a request sent now counts in.
func windowsNow() (minute, hour time.Time) {
	now := time.Now().UTC()
	return now.Truncate(time.Minute), now.Truncate(time.Hour)
}

// carried is what the hour of a batch sent in hour `then` still counts of
// the 60 requests admitted in hour `before`.
func carried(before, then time.Time) int {
	if then.Equal(before) {
		return 60
	}
	return 0
}

// admitted sends 90 requests of a Starter account (60 a minute) at once,
// spread over the servers, and checks that exactly n are allowed and the
// rest refused with 429.
func admitted(t *testing.T, k key, n int, ss ...*server) {
	t.Helper()
	// A connection to each first, for the 90 to share: requests sent at
	// once with none dial one each, and an HTTP/2 connection set up as the
	// server begins to shut down keeps it waiting for its shutdown_timeout
	// (golang/go#81153).
	for _, s := range ss {
		if r := s.do(t, req{method: "GET", path: "/healthz"}); r.Status != 200 {
			t.Fatalf("healthz: %d", r.Status)
		}
	}
	got := concurrently(t, ss, 90, func(int) req { return req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)} })
	if got["200"] != n || got["429 RATE_LIMIT_EXCEEDED"] != 90-n {
		t.Fatalf("90 requests of a Starter account at once over %d servers: %v, want %d x 200 and %d x 429", len(ss), got, n, 90-n)
	}
}

// TestThreeProcessesSharedCounter: with counter store the three processes
// on one data directory, started at once on it, all serve the API (none
// waits for api.lock): of 90 requests of a Starter account spread over the
// three, exactly 60 pass; a key revoked with the CLI is refused by each
// from its next request on; with one of them killed, the two left still
// count exactly.
func TestThreeProcessesSharedCounter(t *testing.T) {
	dir := t.TempDir()
	starter, fresh := newKey(t, dir, newAccount(t, dir, "starter", false).ID), newKey(t, dir, newAccount(t, dir, "starter", false).ID)
	revoked := newKey(t, dir, newAccount(t, dir, "starter", false).ID)
	ss := []*server{launch(t, dir, "--counter", "store"), launch(t, dir, "--counter", "store"), launch(t, dir, "--counter", "store")}
	for _, s := range ss {
		s.listening(t)
	}
	for i, s := range ss {
		if strings.Contains(s.Stdout.String(), "another aivis process serves the API") {
			t.Errorf("process %d waits for the API lock with counter store:\n%s", i, s.Stdout)
		}
	}

	awayFromMinuteEnd(10 * time.Second)
	admitted(t, starter, 60, ss...)

	budget := req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(revoked)}
	for i, s := range ss {
		if r := s.do(t, budget); r.Status != 200 {
			t.Fatalf("process %d, the key before its revocation: %d %s", i, r.Status, r.Body)
		}
	}
	cli(t, dir, nil, "key", "revoke", revoked.ID, "--counter", "store")
	for i, s := range ss {
		if r := s.do(t, budget); r.Status != 401 || r.errorCode(t) != "KEY_REVOKED" {
			t.Errorf("process %d, the revoked key: %d %s", i, r.Status, r.Body)
		}
	}

	ss[0].cmd.Process.Kill()
	ss[0].cmd.Wait()
	awayFromMinuteEnd(10 * time.Second)
	admitted(t, fresh, 60, ss[1:]...)
}

// firstListening waits until one of the servers prints its banner and
// returns it.
func firstListening(t *testing.T, ss ...*server) *server {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range ss {
			select {
			case b := <-s.banner:
				s.took(t, b)
				return s
			default:
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no standby served the API within 30 s")
	return nil
}
