package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

const crPath = "/api/v1/ai/content-requests"

// queueOnly starts a server that processes no content request: the tests
// of the queue itself (limits, states, pages) see requests stay queued.
var queueOnly = []string{"--content-workers", "0"}

func create(t *testing.T, s *server, h map[string]string, body string) (client.ContentRequest, resp) {
	t.Helper()
	r := s.do(t, req{method: "POST", path: crPath, header: h, body: body})
	var env client.Envelope[client.ContentRequest]
	if r.Status == 201 {
		r.decode(t, &env)
	}
	return env.Data, r
}

func list(t *testing.T, s *server, h map[string]string, query string) client.List[client.ContentRequest] {
	t.Helper()
	r := s.do(t, req{method: "GET", path: crPath + query, header: h})
	if r.Status != 200 {
		t.Fatalf("list %s: %d %s", query, r.Status, r.Body)
	}
	var env client.Envelope[client.List[client.ContentRequest]]
	r.decode(t, &env)
	return env.Data
}

func TestContentRequests(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "starter", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, queueOnly...)
	h := keyed(k)

	cr, r := create(t, s, h, `{"domain":"Example.COM","budget":12.5,"url":"https://blog.example.com/post","target_queries":["best widgets"],"metadata":{"team":"seo"}}`)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if !strings.HasPrefix(cr.ID, "cr_") || cr.Status != "queued" || cr.Domain != "example.com" || cr.Budget != client.Dollars(12.5) ||
		cr.Reserved != cr.Budget || cr.Spent != 0 || cr.Type != "optimize" || cr.Metadata["team"] != "seo" {
		t.Errorf("created: %+v", cr)
	}
	if loc := r.Header.Get("Location"); loc != crPath+"/"+cr.ID {
		t.Errorf("Location %q", loc)
	}
	g := s.do(t, req{method: "GET", path: crPath + "/" + cr.ID, header: h})
	if g.Status != 200 || !bytes.Contains(g.Body, []byte(cr.ID)) {
		t.Errorf("get: %d %s", g.Status, g.Body)
	}
	if r := s.do(t, req{method: "GET", path: crPath + "/cr_doesnotexist", header: h}); r.Status != 404 || r.errorCode(t) != "NOT_FOUND" {
		t.Errorf("get unknown: %d %s", r.Status, r.Body)
	}

	// Cancel: queued -> cancelled, the reservation released; a second cancel is a 409.
	c := s.do(t, req{method: "POST", path: crPath + "/" + cr.ID + "/cancel", header: h})
	var env client.Envelope[client.ContentRequest]
	c.decode(t, &env)
	if c.Status != 200 || env.Data.Status != "cancelled" || env.Data.Reserved != 0 || env.Data.EndedAt == nil {
		t.Errorf("cancel: %d %s", c.Status, c.Body)
	}
	if c := s.do(t, req{method: "POST", path: crPath + "/" + cr.ID + "/cancel", header: h}); c.Status != 409 || c.errorCode(t) != "INVALID_STATE" {
		t.Errorf("second cancel: %d %s", c.Status, c.Body)
	}
	if st := budgetStatus(t, s, k); st.Budget.Reserved != 0 || st.ActiveRequests.Current != 0 {
		t.Errorf("after cancel: %+v %+v", st.Budget, st.ActiveRequests)
	}

	// Tier limits: above the max per request is 422; the sixth active request is 429.
	if _, r := create(t, s, h, `{"domain":"example.com","budget":1000.01}`); r.Status != 422 || r.errorCode(t) != "BUDGET_EXCEEDS_TIER_LIMIT" {
		t.Errorf("over max per request: %d %s", r.Status, r.Body)
	}
	var ids []string
	for i := range 5 {
		cr, r := create(t, s, h, fmt.Sprintf(`{"domain":"site%d.example.com","budget":1000}`, i))
		if r.Status != 201 {
			t.Fatalf("create %d: %d %s", i, r.Status, r.Body)
		}
		ids = append(ids, cr.ID)
	}
	if _, r := create(t, s, h, `{"domain":"example.com","budget":1}`); r.Status != 429 || r.errorCode(t) != "ACTIVE_REQUEST_LIMIT_EXCEEDED" {
		t.Errorf("sixth active: %d %s", r.Status, r.Body)
	}

	// Pagination, newest first, no gaps or repeats; filters.
	var seen []string
	cursor := ""
	for page := 0; ; page++ {
		q := "?limit=2"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		l := list(t, s, h, q)
		for _, it := range l.Items {
			if it.Content != nil {
				t.Errorf("list items carry content")
			}
			seen = append(seen, it.ID)
		}
		if !l.HasMore {
			if l.NextCursor != nil {
				t.Errorf("last page has a cursor")
			}
			break
		}
		cursor = *l.NextCursor
		if page > 10 {
			t.Fatal("pagination does not end")
		}
	}
	want := append([]string{ids[4], ids[3], ids[2], ids[1], ids[0]}, cr.ID)
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("pages:\n got %v\nwant %v", seen, want)
	}
	if l := list(t, s, h, "?status=cancelled"); len(l.Items) != 1 || l.Items[0].ID != cr.ID {
		t.Errorf("status filter: %+v", l.Items)
	}
	if l := list(t, s, h, "?domain=site3.example.com"); len(l.Items) != 1 || l.Items[0].ID != ids[3] {
		t.Errorf("domain filter: %+v", l.Items)
	}
	for _, q := range []string{"?limit=0", "?limit=101", "?limit=x", "?status=done", "?cursor=garbage", "?domain=not_a_domain"} {
		if r := s.do(t, req{method: "GET", path: crPath + q, header: h}); r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" {
			t.Errorf("list %s: %d %s", q, r.Status, r.Body)
		}
	}
}

func TestMonthlyBudgetAndIdempotency(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "professional", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, queueOnly...)
	h := keyed(k)
	for i := range 5 {
		if _, r := create(t, s, h, `{"domain":"example.com","budget":5000}`); r.Status != 201 {
			t.Fatalf("create %d: %d %s", i, r.Status, r.Body)
		}
	}
	// $25,000 committed: the month's limit is reached.
	if _, r := create(t, s, h, `{"domain":"example.com","budget":0.01}`); r.Status != 402 || r.errorCode(t) != "MONTHLY_BUDGET_EXCEEDED" {
		t.Errorf("over the monthly limit: %d %s", r.Status, r.Body)
	}
	// Cancelling one frees its reservation for a new request.
	l := list(t, s, h, "?limit=1")
	if r := s.do(t, req{method: "POST", path: crPath + "/" + l.Items[0].ID + "/cancel", header: h}); r.Status != 200 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}

	ih := with(h, "Idempotency-Key", "order-42")
	body := `{"domain":"example.com","budget":100}`
	first, r1 := create(t, s, ih, body)
	again, r2 := create(t, s, ih, body)
	if r1.Status != 201 || r2.Status != 201 || first.ID != again.ID || r2.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %d %d %s %s", r1.Status, r2.Status, first.ID, again.ID)
	}
	if _, r := create(t, s, ih, `{"domain":"example.com","budget":101}`); r.Status != 409 || r.errorCode(t) != "IDEMPOTENCY_CONFLICT" {
		t.Errorf("reuse with another body: %d %s", r.Status, r.Body)
	}
	if l := list(t, s, h, "?limit=100"); len(l.Items) != 6 {
		t.Errorf("%d requests stored, want 6", len(l.Items))
	}
	st := budgetStatus(t, s, k)
	if st.Budget.Committed != client.Dollars(20100) {
		t.Errorf("committed %v, want 20100", st.Budget.Committed)
	}
}

// newClients makes two clients of an agency account, Client One and Two.
func newClients(t *testing.T, dir, accountID string) (c1, c2 struct {
	ID string `json:"id"`
}) {
	cli(t, dir, &c1, "client", "create", "--account", accountID, "--name", "Client One")
	cli(t, dir, &c2, "client", "create", "--account", accountID, "--name", "Client Two")
	return c1, c2
}

func TestAgencyClients(t *testing.T) {
	dir := t.TempDir()
	ag := newAccount(t, dir, "enterprise", true)
	c1, c2 := newClients(t, dir, ag.ID)
	k1 := newKey(t, dir, ag.ID, "--client", c1.ID)
	k2 := newKey(t, dir, ag.ID, "--client", c2.ID)
	ka := newKey(t, dir, ag.ID)
	std := newAccount(t, dir, "starter", false)
	if msg := cliFails(t, dir, "client", "create", "--account", std.ID, "--name", "x"); !strings.Contains(msg, "agency") {
		t.Errorf("client on a standard account: %s", msg)
	}
	ks := newKey(t, dir, std.ID)
	s := start(t, dir, queueOnly...)

	cr1, r := create(t, s, keyed(k1), `{"domain":"one.example","budget":10}`)
	if r.Status != 201 || cr1.ClientID == nil || *cr1.ClientID != c1.ID {
		t.Fatalf("client 1 create: %d %s", r.Status, r.Body)
	}
	if _, r := create(t, s, keyed(k2), `{"domain":"two.example","budget":10,"client_id":"`+c1.ID+`"}`); r.Status != 404 {
		t.Errorf("client 2 naming client 1: %d %s", r.Status, r.Body)
	}
	cr2, _ := create(t, s, keyed(ka), `{"domain":"two.example","budget":10,"client_id":"`+c2.ID+`"}`)
	for _, p := range []string{crPath + "/" + cr1.ID, crPath + "/" + cr1.ID + "/cancel"} {
		m := "GET"
		if strings.HasSuffix(p, "cancel") {
			m = "POST"
		}
		if r := s.do(t, req{method: m, path: p, header: keyed(k2)}); r.Status != 404 {
			t.Errorf("client 2 %s %s: %d", m, p, r.Status)
		}
	}
	if l := list(t, s, keyed(k2), ""); len(l.Items) != 1 || l.Items[0].ID != cr2.ID {
		t.Errorf("client 2 sees %+v", l.Items)
	}
	if l := list(t, s, keyed(ka), ""); len(l.Items) != 2 {
		t.Errorf("the account key sees %d requests, want 2", len(l.Items))
	}
	if l := list(t, s, keyed(ka), "?client_id="+c1.ID); len(l.Items) != 1 || l.Items[0].ID != cr1.ID {
		t.Errorf("client_id filter: %+v", l.Items)
	}
	if _, r := create(t, s, keyed(ks), `{"domain":"x.example","budget":1,"client_id":"`+c1.ID+`"}`); r.Status != 403 || r.errorCode(t) != "PLAN_NOT_ALLOWED" {
		t.Errorf("client_id on a standard account: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "GET", path: crPath + "/" + cr1.ID, header: keyed(ks)}); r.Status != 404 {
		t.Errorf("another account's request: %d", r.Status)
	}
	// Usage is recorded per key and client.
	st := budgetStatus(t, s, k1)
	if st.ClientID == nil || *st.ClientID != c1.ID || st.AccountID != ag.ID {
		t.Errorf("budget-status of a client key: %+v", st)
	}
}

func TestVisibility(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "starter", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, queueOnly...)
	h := bearer(k)
	for _, q := range []string{"", "?domain=", "?domain=http://example.com", "?domain=localhost", "?domain=10.0.0.1", "?domain=" + strings.Repeat("a", 300) + ".com"} {
		if r := s.do(t, req{method: "GET", path: "/v1/visibility" + q, header: h}); r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" {
			t.Errorf("visibility%s: %d %s", q, r.Status, r.Body)
		}
	}
	if r := s.do(t, req{method: "GET", path: "/v1/visibility?domain=example.com", header: h}); r.Status != 404 {
		t.Errorf("no reading yet: %d %s", r.Status, r.Body)
	}
	// Readings are written by the engines (later) or by trackers; here the
	// database is written directly, as another process would.
	db, err := sqlite.Open(t.Context(), filepath.Join(dir, "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	for _, rd := range []struct {
		score int
		ago   time.Duration
	}{{30, 40 * 24 * time.Hour}, {55, 10 * 24 * time.Hour}, {40, 2 * time.Minute}, {72, time.Minute}} {
		_, err := db.AddReading(t.Context(), store.Reading{AccountID: a.ID, Domain: "example.com", VisibilityScore: rd.score,
			Sentiment: "positive", SentimentScore: 0.6, Source: "api", MeasuredAt: now.Add(-rd.ago)})
		if err != nil {
			t.Fatal(err)
		}
	}
	r := s.do(t, req{method: "GET", path: "/v1/visibility?domain=EXAMPLE.com", header: h})
	var v client.VisibilityStatus
	r.decode(t, &v)
	if r.Status != 200 || v.VisibilityScore != 72 || v.Domain != "example.com" || v.Sentiment != "positive" {
		t.Errorf("latest reading: %d %s", r.Status, r.Body)
	}
	// As of 7 days before the latest: the reading 10 days ago (55); as of 30: the one 40 days ago (30).
	if v.Trend.Days7 == nil || v.Trend.Days7.VisibilityScore != 55 || v.Trend.Days7.Change != 17 ||
		v.Trend.Days30 == nil || v.Trend.Days30.VisibilityScore != 30 || v.Trend.Days30.Change != 42 {
		t.Errorf("trend: %s", r.Body)
	}
	var page client.List[client.VisibilityReading]
	var scores []int
	for path := "/v1/visibility/history?domain=example.com&limit=3"; ; {
		s.do(t, req{method: "GET", path: path, header: h}).decode(t, &page)
		for _, it := range page.Items {
			scores = append(scores, it.VisibilityScore)
		}
		if !page.HasMore {
			break
		}
		path = "/v1/visibility/history?domain=example.com&limit=3&cursor=" + *page.NextCursor
	}
	if fmt.Sprint(scores) != "[72 40 55 30]" {
		t.Errorf("history: %v", scores)
	}
	if bytes.Contains(r.Body, []byte(`"success"`)) {
		t.Errorf("the bearer interface must not wrap resources in the envelope: %s", r.Body)
	}
}

// TestBadInput: each bad request gets its 4xx code in the envelope and stores nothing.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "starter", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, queueOnly...)
	h := keyed(k)
	long := strings.Repeat("x", 5000)
	cases := []struct {
		name   string
		header map[string]string
		body   string
		status int
		code   string
	}{
		{"malformed JSON", h, `{"domain":`, 400, "INVALID_JSON"},
		{"not an object", h, `[1,2]`, 400, "INVALID_JSON"},
		{"two objects", h, `{"domain":"example.com","budget":1}{}`, 400, "INVALID_JSON"},
		{"wrong content type", with(h, "Content-Type", "text/plain"), `{"domain":"example.com","budget":1}`, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"form content type", with(h, "Content-Type", "application/x-www-form-urlencoded"), `domain=example.com`, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"oversized", h, `{"domain":"example.com","budget":1,"content":"` + strings.Repeat("a", 1<<20) + `"}`, 413, "PAYLOAD_TOO_LARGE"},
		{"unknown field", h, `{"domain":"example.com","budget":1,"colour":"red"}`, 400, "VALIDATION_ERROR"},
		{"negative budget", h, `{"domain":"example.com","budget":-5}`, 400, "VALIDATION_ERROR"},
		{"zero budget", h, `{"domain":"example.com","budget":0}`, 400, "VALIDATION_ERROR"},
		{"NaN budget", h, `{"domain":"example.com","budget":NaN}`, 400, "INVALID_JSON"},
		{"string NaN budget", h, `{"domain":"example.com","budget":"NaN"}`, 400, "VALIDATION_ERROR"},
		{"huge budget", h, `{"domain":"example.com","budget":1e400}`, 400, "VALIDATION_ERROR"},
		{"sub-micro budget", h, `{"domain":"example.com","budget":0.0000001}`, 400, "VALIDATION_ERROR"},
		{"missing budget", h, `{"domain":"example.com"}`, 400, "VALIDATION_ERROR"},
		{"missing domain", h, `{"budget":1}`, 400, "VALIDATION_ERROR"},
		{"invalid domain", h, `{"domain":"exa mple.com","budget":1}`, 400, "VALIDATION_ERROR"},
		{"domain with scheme", h, `{"domain":"https://example.com","budget":1}`, 400, "VALIDATION_ERROR"},
		{"long domain", h, `{"domain":"` + long + `.com","budget":1}`, 400, "VALIDATION_ERROR"},
		{"url off domain", h, `{"domain":"example.com","budget":1,"url":"https://evil.test/x"}`, 400, "VALIDATION_ERROR"},
		{"url not http", h, `{"domain":"example.com","budget":1,"url":"file:///etc/passwd"}`, 400, "VALIDATION_ERROR"},
		{"long query", h, `{"domain":"example.com","budget":1,"target_queries":["` + long + `"]}`, 400, "VALIDATION_ERROR"},
		{"too many queries", h, `{"domain":"example.com","budget":1,"target_queries":[` + strings.Repeat(`"q",`, 20) + `"q"]}`, 400, "VALIDATION_ERROR"},
		{"bad type", h, `{"domain":"example.com","budget":1,"type":"rewrite-everything"}`, 400, "VALIDATION_ERROR"},
		{"long metadata", h, `{"domain":"example.com","budget":1,"metadata":{"k":"` + long + `"}}`, 400, "VALIDATION_ERROR"},
		{"wrong field type", h, `{"domain":42,"budget":1}`, 400, "VALIDATION_ERROR"},
		{"long idempotency key", with(h, "Idempotency-Key", long), `{"domain":"example.com","budget":1}`, 400, "VALIDATION_ERROR"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.do(t, req{method: "POST", path: crPath, header: c.header, body: c.body})
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %.300s", r.Status, c.status, r.Body)
			}
			if got := r.errorCode(t); got != c.code {
				t.Errorf("code %s, want %s", got, c.code)
			}
		})
	}
	if r := s.do(t, req{method: "DELETE", path: crPath, header: h}); r.Status != 405 || r.errorCode(t) != "METHOD_NOT_ALLOWED" {
		t.Errorf("DELETE: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "GET", path: "/api/v1/ai/nothing-here", header: h}); r.Status != 404 || r.errorCode(t) != "NOT_FOUND" {
		t.Errorf("unknown route: %d %s", r.Status, r.Body)
	}
	// Header injection: a raw request with a CR in a header never reaches a handler.
	if status := rawStatus(t, s, "GET /api/v1/ai/budget-status HTTP/1.1\r\nHost: localhost\r\nX-API-Key: svc_x\rInjected: 1\r\nX-API-Secret: y\r\n\r\n"); status != 400 {
		t.Errorf("header with a bare CR: status %d, want 400", status)
	}
	// Nothing was stored.
	if l := list(t, s, h, ""); len(l.Items) != 0 {
		t.Errorf("bad requests stored %d content requests", len(l.Items))
	}
	if st := budgetStatus(t, s, k); st.Budget.Reserved != 0 || st.ActiveRequests.Current != 0 {
		t.Errorf("bad requests changed the budget: %+v", st.Budget)
	}
}

// rawStatus sends bytes over TLS and returns the status code of the answer.
func rawStatus(t *testing.T, s *server, raw string) int {
	t.Helper()
	pem, _ := os.ReadFile(filepath.Join(s.DataDir, "tls", "cert.pem"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	addr := strings.TrimPrefix(s.URL, "https://")
	host, port, _ := net.SplitHostPort(addr)
	conn, err := tls.Dial("tcp", net.JoinHostPort(host, port), &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, raw)
	line := make([]byte, 12)
	if _, err := io.ReadFull(conn, line); err != nil {
		t.Fatal(err)
	}
	var status int
	fmt.Sscanf(string(line), "HTTP/1.1 %d", &status)
	return status
}
