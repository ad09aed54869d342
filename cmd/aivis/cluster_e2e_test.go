package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/internal/scripttest"
	"github.com/aivis/aivis/internal/testsvc"
)

// cluster is a deployment of aivis on PostgreSQL, NATS JetStream and
// Redis, as docs/scaling.md sets one up: its settings are in the
// environment, which every aivis the test runs reads, serve and the
// commands alike, so that instances differ only in their data directories.
type cluster struct {
	testsvc.Cluster
	dir string // the commands' data directory
	db  *pgx.Conn
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{Cluster: testsvc.NewCluster(t), dir: t.TempDir()}
	for k, v := range map[string]string{"AIVIS_STORE": "postgres", "AIVIS_POSTGRES_URL": c.PostgresURL,
		"AIVIS_MASTER_KEY_FILE": masterKeyFile(t), "AIVIS_BUS": "nats", "AIVIS_NATS_URL": c.NATSURL,
		"AIVIS_COUNTER": "redis", "AIVIS_REDIS_URL": c.RedisURL, "AIVIS_CLUSTER_NAME": c.Name} {
		t.Setenv(k, v)
	}
	var err error
	if c.db, err = pgx.Connect(t.Context(), c.PostgresURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.db.Close(context.Background()) })
	return c
}

// masterKeyFile makes a master key in a file of its own and returns its
// path.
func masterKeyFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), secrets.KeyFile)
	if _, _, err := secrets.Load(path, true); err != nil {
		t.Fatal(err)
	}
	return path
}

// instance is a running instance of the cluster and its holder, the name
// under which it claims work in the store.
type instance struct {
	*server
	holder string
}

// start starts an instance with a data directory of its own. No other
// process may open the store meanwhile: its holder is the one it adds.
func (c *cluster) start(t *testing.T, args ...string) instance {
	t.Helper()
	before := c.holders(t)
	s := start(t, t.TempDir(), args...)
	for _, h := range c.holders(t) {
		if !slices.Contains(before, h) {
			return instance{s, h}
		}
	}
	t.Fatalf("no holder of the new instance among %v", before)
	return instance{}
}

func (c *cluster) holders(t *testing.T) []string {
	t.Helper()
	rows, err := c.db.Query(t.Context(), `SELECT id FROM holders`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// count runs a query of one number on the cluster's database.
func (c *cluster) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := c.db.QueryRow(t.Context(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitCount waits until a count of the database is n.
func (c *cluster) waitCount(t *testing.T, what string, n int, query string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for got := c.count(t, query, args...); got != n; got = c.count(t, query, args...) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", what, got, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClusterLimitsAndRevocation: two instances, each with its own data
// directory, on one PostgreSQL, NATS and Redis. Of 90 concurrent requests
// of a Starter account spread over both, exactly 60 pass and 30 are
// refused 429 with retry_after; a key revoked with the command line, and
// one revoked on instance A's dashboard, are refused by instance B from its
// next request on, though B had just served each.
func TestClusterLimitsAndRevocation(t *testing.T) {
	c := newCluster(t)
	starter := newKey(t, c.dir, newAccount(t, c.dir, "starter", false).ID)
	byCLI := newKey(t, c.dir, newAccount(t, c.dir, "starter", false).ID)
	owner := newAccount(t, c.dir, "starter", false)
	byDashboard := newKey(t, c.dir, owner.ID)
	a, b := c.start(t), c.start(t)

	// Every 429 is checked against the OpenAPI document, which requires
	// retry_after of RATE_LIMIT_EXCEEDED.
	awayFromMinuteEnd(10 * time.Second)
	admitted(t, starter, 60, a.server, b.server)
	bs := func(k key) req { return req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)} }
	for _, s := range []instance{a, b} {
		r := s.do(t, bs(starter))
		var e struct {
			Error struct {
				RetryAfter int `json:"retry_after"`
			} `json:"error"`
		}
		r.decode(t, &e)
		if r.Status != 429 || e.Error.RetryAfter < 1 || r.Header.Get("Retry-After") != strconv.Itoa(e.Error.RetryAfter) {
			t.Errorf("after the 60: %d %s, Retry-After %q; want 429 with retry_after", r.Status, r.Body, r.Header.Get("Retry-After"))
		}
	}

	for _, k := range []key{byCLI, byDashboard} {
		for _, s := range []instance{a, b} {
			if r := s.do(t, bs(k)); r.Status != 200 {
				t.Fatalf("the key before its revocation: %d %s", r.Status, r.Body)
			}
		}
	}
	cli(t, c.dir, nil, "key", "revoke", byCLI.ID)
	if r := b.do(t, bs(byCLI)); r.Status != 401 || r.errorCode(t) != "KEY_REVOKED" {
		t.Errorf("instance B, the key revoked with the command line: %d %s; want 401 KEY_REVOKED", r.Status, r.Body)
	}
	user := dashboardUser(t, a.server, owner.ID, "owner@example.com", "owner")
	form := url.Values{"csrf": {csrfOf(t, dashGet(t, user, a.URL+"/keys"))}}
	if code, body := dashPost(t, user, a.URL+"/keys/"+byDashboard.ID+"/revoke", form); code != 303 {
		t.Fatalf("revoking on instance A's dashboard: %d %s", code, body)
	}
	if r := b.do(t, bs(byDashboard)); r.Status != 401 || r.errorCode(t) != "KEY_REVOKED" {
		t.Errorf("instance B, the key revoked on instance A: %d %s; want 401 KEY_REVOKED", r.Status, r.Body)
	}
}

// TestClusterEventsSurviveAKill: two instances on one PostgreSQL, NATS and
// Redis take 10,000 events of 40 accounts, each account's webhook on one
// of 4 endpoints, from a round-robin client; instance A is killed
// (SIGKILL) at about 4,000 and B goes on alone. Every event accepted
// arrives; the only duplicates are attempts A had in flight, each sent
// once by A and once by B after the kill, with its event's webhook-id; B
// takes every delivery A held a lease on before that lease would have
// ended.
func TestClusterEventsSurviveAKill(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	const accounts, perAccount, endpoints = 40, 250, 4 // Enterprise allows 300 requests a minute
	began := time.Now()
	c := newCluster(t)
	tokens := make([]string, accounts)
	for i := range tokens {
		tokens[i] = newKey(t, c.dir, newAccount(t, c.dir, "enterprise", false).ID).Key
	}
	rc := newProcReceiver(t)
	flags := []string{"--allowed-targets", "127.0.0.1/32", "--allow-http-targets"}
	a, b := c.start(t, flags...), c.start(t, flags...)
	rc.watch(a.server, b.server)
	paths := map[string]string{} // by webhook id
	var secrets []string
	for i, tok := range tokens {
		path := fmt.Sprintf("/hook/%d", i%endpoints)
		code, body, err := post([]*server{a.server, b.server}[i%2], "/v1/webhooks", tok,
			jsonBody(client.CreateWebhook{Domain: "example.com", Events: []string{"ai_visibility_change"}, URL: rc.URL + path}))
		var wh client.Webhook
		json.Unmarshal(body, &wh)
		if err != nil || code != 201 {
			t.Fatalf("webhook %d: %d %s %v", i, code, body, err)
		}
		secrets = append(secrets, wh.Secret)
		paths[wh.ID] = path
	}
	rc.trust(t, secrets...)
	t.Logf("set up in %v", time.Since(began).Round(time.Millisecond))

	began = time.Now()
	burst := &readings{tokens: tokens, per: perAccount, accepted: make([][]string, accounts)}
	killed := make(chan struct{})
	var killedAt time.Time
	go func() {
		defer close(killed)
		for burst.total.Load() < 4000 {
			time.Sleep(time.Millisecond)
		}
		rc.kill(t, a.server) // SIGKILL: no shutdown, its holder left to be found dead
		killedAt = time.Now()
	}()
	burst.burst(t, a.server, b.server)
	<-killed
	t.Logf("instance A killed after %d accepted events, %v into the burst", burst.total.Load(), killedAt.Sub(began).Round(time.Millisecond))

	// The deliveries A held a lease on when it died, and when each lease
	// would have ended.
	type leased struct {
		path, event string
		until       time.Time
	}
	rows, err := c.db.Query(t.Context(), `SELECT webhook_id, event_id, lease_until FROM webhook_deliveries
		WHERE status = 'pending' AND starts_with(lease, $1)`, a.holder+"/")
	if err != nil {
		t.Fatal(err)
	}
	held, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (leased, error) {
		var l leased
		var hook string
		err := r.Scan(&hook, &l.event, &l.until)
		l.path = paths[hook]
		return l, err
	})
	if err != nil {
		t.Fatal(err)
	}

	burst.burst(t, b.server)
	if burst.total.Load() != accounts*perAccount {
		t.Fatalf("%d events accepted, want %d", burst.total.Load(), accounts*perAccount)
	}
	t.Logf("%d events accepted in %v", burst.total.Load(), time.Since(began).Round(time.Millisecond))

	// Every accepted event at its endpoint, and then nothing pending: the
	// arrivals are all there are.
	rc.delivered(t, burst, endpoints)
	t.Logf("every event delivered %v after the burst began", time.Since(began).Round(time.Millisecond))
	c.waitCount(t, "deliveries not succeeded", 0, `SELECT count(*) FROM webhook_deliveries WHERE status != 'succeeded'`)

	dups, by := rc.duplicates(t, a.server, killedAt)
	t.Logf("deliveries by process: %v (killed: %d); %d duplicates, each sent by the killed process before it died",
		by, a.cmd.Process.Pid, dups)

	// B took each of A's leases before it would have ended: A's holder
	// was found dead and its leases ended, sooner than they would have
	// run out.
	var last time.Duration
	for _, l := range held {
		as := rc.arrivals(l.path, l.event)
		i := slices.IndexFunc(as, func(a arrival) bool { return a.pid == b.cmd.Process.Pid })
		switch {
		case i < 0:
			t.Errorf("event %s, leased by A at its death, never arrived at %s from B: %+v", l.event, l.path, as)
		case !as[i].at.Before(l.until):
			t.Errorf("event %s, leased by A until %v, arrived from B at %v", l.event, l.until, as[i].at)
		default:
			last = max(last, as[i].at.Sub(killedAt))
		}
	}
	// A's holder is forgotten once it is found dead: at once when B needed
	// A's leases above, else within the 15 s a holder may go unseen.
	c.waitCount(t, "A's holder forgotten", 0, `SELECT count(*) FROM holders WHERE id = $1`, a.holder)
	t.Logf("A held %d leases when it died; B delivered the last of them %v after the kill", len(held), last.Round(time.Millisecond))
}

// TestClusterContentRequestsOnce: content requests created on both
// instances, at once, are each processed once: the engine is asked its
// two questions per request, each request is charged them once, and one
// content_optimized is logged per request.
func TestClusterContentRequestsOnce(t *testing.T) {
	const n = 12 // of 20 active a Professional account may have
	c := newCluster(t)
	engine := probefake.New()
	defer engine.Close()
	engine.AnswerTo("m", "What to fix:", engineRewrite)
	engine.AnswerTo("m", "\n\nText:\n\n", engineDrafts)
	cfg := contentConfig(t, t.TempDir(), engine)
	k := newKey(t, c.dir, newAccount(t, c.dir, "professional", false).ID)
	a, b := c.start(t, "--config", cfg), c.start(t, "--config", cfg)
	ss := []*server{a.server, b.server}

	ids := make([]string, n)
	got := concurrently(t, ss, n, func(i int) req {
		return req{method: "POST", path: crPath, header: keyed(k), body: jsonBody(client.CreateContentRequest{Domain: "acme.example",
			Budget: client.Dollars(1), Content: defectivePage(t), TargetQueries: []string{"best widgets for home"}})}
	})
	if got["201"] != n {
		t.Fatalf("creations: %v", got)
	}
	rows, err := c.db.Query(t.Context(), `SELECT id FROM content_requests`)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || len(ids) != n {
		t.Fatalf("%d requests stored (%v)", len(ids), err)
	}
	c.waitCount(t, "requests queued or processing", 0, `SELECT count(*) FROM content_requests WHERE status IN ('queued', 'processing')`)
	c.waitCount(t, "content_optimized logged", n, `SELECT count(*) FROM event_log WHERE event = 'content_optimized'`)

	if engine.Requests() != 2*n {
		t.Errorf("the engine was asked %d times for %d requests, want %d", engine.Requests(), n, 2*n)
	}
	var rewrite, drafts string
	for _, p := range engine.Prompts() {
		if strings.Contains(p, "What to fix:") {
			rewrite = p
		} else {
			drafts = p
		}
	}
	want := client.Dollars(0.002)*2 + words(rewrite) + 2*words(engineRewrite) + words(drafts) + 2*words(engineDrafts)
	byHolder := map[string]int{}
	for i, id := range ids {
		cr := getCR(t, ss[i%2], k, id)
		if cr.Status != "completed" || cr.Spent != want || cr.Reserved != 0 {
			t.Errorf("request %s: %s, spent %s, reserved %s; want completed, spent %s", id, cr.Status, cr.Spent, cr.Reserved, want)
		}
		var holder string
		c.db.QueryRow(t.Context(), `SELECT holder FROM content_requests WHERE id = $1`, id).Scan(&holder)
		byHolder[holder]++
		if n := c.count(t, `SELECT count(*) FROM event_log WHERE event = 'content_optimized' AND convert_from(payload, 'UTF8')::jsonb #>> '{data,id}' = $1`, id); n != 1 {
			t.Errorf("request %s: content_optimized logged %d times", id, n)
		}
	}
	t.Logf("requests processed by holder: %v (A %s, B %s)", byHolder, a.holder, b.holder)
}

// TestClusterScansOnce: scans asked of both instances, at once, are each
// run once: the engine is asked each scan's 21 probes once, each scan
// completes with one reading, and one scan_completed is logged per scan.
// No scan comes after: the scans asked for put the scheduled ones off.
func TestClusterScansOnce(t *testing.T) {
	const n = 6
	c := newCluster(t)
	engine := probefake.New()
	defer engine.Close()
	engine.Answer("fake-model", "The best options are Acme (https://acme.invalid/skates) and Globex. Acme is excellent.")
	cfg := scanConfig(t, t.TempDir(), engine)
	k := newKey(t, c.dir, newAccount(t, c.dir, "professional", false).ID)
	a, b := c.start(t, "--config", cfg), c.start(t, "--config", cfg)
	ss := []*server{a.server, b.server}
	domain := func(i int) string { return fmt.Sprintf("acme%d.invalid", i) }
	for i := range n {
		// .invalid never resolves: the readiness audit finds the site
		// unreachable, and the engine carries the reading.
		r := ss[i%2].do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: jsonBody(client.CreateDomain{Domain: domain(i),
			Brands: []string{"Acme"}, Competitors: []string{"Globex", "Initech"}, Prompts: []string{"Which rocket skates should I buy?"}})})
		if r.Status != 201 {
			t.Fatalf("domain: %d %s", r.Status, r.Body)
		}
	}
	got := concurrently(t, ss, n, func(i int) req {
		return req{method: "POST", path: "/v1/visibility/scans", header: bearer(k), body: `{"domain":"` + domain(i) + `"}`}
	})
	if got["202"] != n {
		t.Fatalf("scans: %v", got)
	}
	// A new domain's first scheduled scan is due at once: one the
	// scheduler enqueued before a request is the scan that request
	// returns, and one it ran to the end before the request comes beside
	// it. Either way every scan runs once, and a scan asked for puts the
	// next scheduled one a full interval on.
	defer func() {
		if t.Failed() { // what each scan came to, and what the instances said
			rows, err := c.db.Query(context.Background(), `SELECT id, domain, status, trigger, attempts, coalesce(holder, ''), coalesce(error, '') FROM scans`)
			for err == nil && rows.Next() {
				var id, d, status, trigger, holder, why string
				var attempts int
				rows.Scan(&id, &d, &status, &trigger, &attempts, &holder, &why)
				t.Logf("scan %s of %s: %s (%s), %d attempts, holder %s %s", id, d, status, trigger, attempts, holder, why)
			}
			t.Logf("instance A's log:\n%s\ninstance B's log:\n%s", a.Stderr.String(), b.Stderr.String())
		}
	}()
	c.waitCount(t, "scans completed", n, `SELECT count(*) FROM scans WHERE status = 'completed'`)
	m := c.count(t, `SELECT count(*) FROM scans`)
	c.waitCount(t, "every scan completed", m, `SELECT count(*) FROM scans WHERE status = 'completed'`)
	c.waitCount(t, "scan_completed logged", m, `SELECT count(*) FROM event_log WHERE event = 'scan_completed'`)
	if m != n {
		t.Logf("%d scans for %d requests: the scheduler ran %d first", m, n, m-n)
	}
	// 7 prompts (the owner's, 4 comparisons, 2 branded) asked 3 times.
	if engine.Requests() != 21*m {
		t.Errorf("the engine was asked %d times for %d scans, want %d", engine.Requests(), m, 21*m)
	}
	// Each scan kept its 21 answers, once.
	if a := c.count(t, `SELECT count(*) FROM scan_answers`); a != 21*m {
		t.Errorf("%d answers kept, want %d", a, 21*m)
	}
	rows, err := c.db.Query(t.Context(), `SELECT holder, count(*) FROM scans GROUP BY holder`)
	if err != nil {
		t.Fatal(err)
	}
	byHolder := map[string]int{}
	for rows.Next() {
		var h string
		var m int
		rows.Scan(&h, &m)
		byHolder[h] = m
	}
	for i := range n {
		var hist client.List[client.VisibilityReading]
		r := ss[(i+1)%2].do(t, req{method: "GET", path: "/v1/visibility/history?domain=" + domain(i), header: bearer(k)})
		r.decode(t, &hist)
		scans := c.count(t, `SELECT count(*) FROM scans WHERE domain = '`+domain(i)+`'`)
		if r.Status != 200 || len(hist.Items) != scans || scans == 0 {
			t.Errorf("%s: %d readings of %d scans, want one each: %d %s", domain(i), len(hist.Items), scans, r.Status, r.Body)
		}
	}
	t.Logf("scans run by holder: %v (A %s, B %s)", byHolder, a.holder, b.holder)
}

// TestRunCluster runs scripts/run-cluster.sh (make run-cluster) as an
// operator would, on a database that is not there yet: it creates it and
// a master key, starts two instances, and prints their URLs, a one-time
// link that signs the first owner in on either, and commands that act on
// the cluster. Ctrl-C (SIGINT to its process group, as a terminal sends it)
// stops both instances gracefully: each forgets its holder in the store
// on the way out, which a process killed in the middle of it would not.
func TestRunCluster(t *testing.T) {
	for _, tool := range []string{"bash", "psql", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("run-cluster.sh needs %s", tool)
		}
	}
	c := testsvc.NewCluster(t)
	u, _ := url.Parse(c.PostgresURL)
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	maintenance, err := pgx.Connect(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer maintenance.Close(context.Background())
	if _, err := maintenance.Exec(t.Context(), "DROP DATABASE "+name); err != nil {
		t.Fatal(err)
	}

	data := t.TempDir()
	cmd := exec.Command("bash", "../../scripts/run-cluster.sh")
	cmd.Env = append(os.Environ(), "BIN="+filepath.Dir(binary), "CLUSTER_DATA="+data, "CLUSTER_ADDRS=127.0.0.1:0 127.0.0.1:0", "CLUSTER_ADMIN_ADDRS=127.0.0.1:0 127.0.0.1:0",
		"AIVIS_POSTGRES_URL="+c.PostgresURL, "AIVIS_NATS_URL="+c.NATSURL, "AIVIS_REDIS_URL="+c.RedisURL, "AIVIS_CLUSTER_NAME="+c.Name)
	script := scripttest.Start(t, cmd)
	out := script.Out
	if started, err := script.WaitOutput(t, "Ctrl-C stops both instances.", time.Minute); !started {
		t.Fatalf("run-cluster.sh exited (%v):\n%s", err, out)
	}
	printed := out.String()
	t.Logf("run-cluster.sh printed:\n%s", printed)
	if !strings.Contains(printed, "database "+name+" created") || !strings.Contains(printed, "master key "+data+"/master.key made") {
		t.Errorf("the database and the master key are not said to be made")
	}
	// Each instance's banner names the commands with the settings it was
	// given, so that they act on its store, not on a file of the data
	// directory.
	for _, n := range []string{"a", "b"} {
		if want := "[" + n + "]   " + binary + " account create --config " + filepath.Join(data, "aivis.json") + " --data-dir "; !strings.Contains(printed, want) {
			t.Errorf("instance %s's banner does not say %q", n, want)
		}
	}

	// Both instances, and the link that signs the first owner in, which
	// the store's instances share: made by B, it works on A.
	var instances [2]*server
	for i, n := range []string{"a", "b"} {
		m := regexp.MustCompile(`instance ` + n + `: (https://\S+)/ `).FindStringSubmatch(printed)
		if m == nil {
			t.Fatalf("no URL of instance %s", n)
		}
		dir := filepath.Join(data, n)
		instances[i] = &server{t: t, URL: m[1], DataDir: dir, HTTP: httpsClient(t, filepath.Join(dir, "tls", "cert.pem"))}
	}
	a, b := instances[0], instances[1]
	link := regexp.MustCompile(`\n  (https://\S+/join\?token=(\S+))\n`).FindStringSubmatch(printed)
	if link == nil || !strings.HasPrefix(link[1], b.URL+"/") {
		t.Fatalf("no one-time link of instance b")
	}
	jar, _ := cookiejar.New(nil)
	owner := &http.Client{Transport: a.HTTP.Transport, Jar: jar}
	res, err := owner.PostForm(a.URL+"/join", url.Values{"csrf": {csrfOf(t, dashGet(t, owner, a.URL+"/join?token="+link[2]))},
		"token": {link[2]}, "account_name": {"Trial"}, "tier": {"starter"}, "email": {"owner@example.com"},
		"password": {"twelve characters"}, "password_again": {"twelve characters"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if page := dashGet(t, owner, a.URL+"/keys"); !strings.Contains(page, `action="/signout"`) {
		t.Errorf("not signed in on A with the link B printed:\n%s", page)
	}

	// The commands it prints act on the cluster.
	command := regexp.MustCompile(`\n  \S+/aivis account create --config (\S+) `).FindStringSubmatch(printed)
	if command == nil {
		t.Fatal("no command printed")
	}
	var acct account
	var k key
	for _, args := range [][]string{{"account", "create", "--name", "Trial", "--tier", "starter"}, {"key", "create", "--account", "", "--name", "trial"}} {
		if args[0] == "key" {
			args[3] = acct.ID
		}
		stdout, stderr, code := aivis(t, nil, append(args, "--config", command[1], "--json")...)
		if code != 0 {
			t.Fatalf("aivis %v: %d %s", args, code, stderr)
		}
		out := any(&acct)
		if args[0] == "key" {
			out = &k
		}
		if err := json.Unmarshal([]byte(stdout), out); err != nil {
			t.Fatal(err)
		}
	}
	awayFromMinuteEnd(5 * time.Second)
	for i, s := range instances {
		var st client.Envelope[client.BudgetStatus]
		r := s.do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)})
		r.decode(t, &st)
		if r.Status != 200 || st.Data.Usage.RequestsThisMinute != i+1 {
			t.Errorf("instance %d: %d %s; want 200 and the requests of both counted", i, r.Status, r.Body)
		}
	}

	if err := script.Interrupt(t, time.Minute); err != nil {
		t.Errorf("run-cluster.sh after Ctrl-C: %v\n%s", err, out)
	}
	db, err := pgx.Connect(t.Context(), c.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var holders int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM holders`).Scan(&holders); err != nil || holders != 0 {
		t.Errorf("%d holders left after Ctrl-C (%v): an instance did not stop gracefully\n%s", holders, err, out)
	}
	for _, s := range instances {
		if _, err := s.HTTP.Get(s.URL + "/healthz"); err == nil {
			t.Errorf("%s still answers after Ctrl-C", s.URL)
		}
	}
}
