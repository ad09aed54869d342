package content_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

var ctx = context.Background()

// t0 is mid-June 2025, UTC.
var t0 = time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)

const dollar = 1_000_000

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// env is a real database with accounts, clients and principals made from
// real keys.
type env struct {
	path  string
	db    *sqlite.DB
	clock *clock
	auth  *auth.Service
	svc   *content.Service

	starter, pro, agency, agencyCliA, agencyCliB, other auth.Principal
}

func newEnv(t *testing.T) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "aivis.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := &clock{t: t0}
	e := &env{path: path, db: db, clock: c, auth: &auth.Service{Keys: db, Accounts: db, Now: c.Now},
		svc: &content.Service{Store: db, Now: c.Now}}
	for _, a := range []store.Account{
		{ID: "acct_starter", Name: "S", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0},
		{ID: "acct_pro", Name: "P", Tier: "professional", Type: store.AccountStandard, CreatedAt: t0},
		{ID: "acct_agency", Name: "A", Tier: "enterprise", Type: store.AccountAgency, CreatedAt: t0},
		{ID: "acct_other", Name: "O", Tier: "enterprise", Type: store.AccountAgency, CreatedAt: t0},
	} {
		must(t, db.CreateAccount(ctx, a))
	}
	for _, cl := range []store.Client{
		{ID: "cli_a", AccountID: "acct_agency", Name: "A", CreatedAt: t0},
		{ID: "cli_b", AccountID: "acct_agency", Name: "B", CreatedAt: t0},
		{ID: "cli_x", AccountID: "acct_other", Name: "X", CreatedAt: t0},
	} {
		must(t, db.CreateClient(ctx, cl))
	}
	e.starter = e.principal(t, "acct_starter", "")
	e.pro = e.principal(t, "acct_pro", "")
	e.agency = e.principal(t, "acct_agency", "")
	e.agencyCliA = e.principal(t, "acct_agency", "cli_a")
	e.agencyCliB = e.principal(t, "acct_agency", "cli_b")
	e.other = e.principal(t, "acct_other", "")
	return e
}

func (e *env) principal(t *testing.T, account, client string) auth.Principal {
	t.Helper()
	c, err := e.auth.CreateKey(ctx, auth.NewKey{AccountID: account, ClientID: client, Name: "test"})
	must(t, err)
	p, err := e.auth.Authenticate(ctx, c.APIKey, c.Secret, true)
	must(t, err)
	return p
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func req(budget client.USD) client.CreateContentRequest {
	return client.CreateContentRequest{Domain: "example.com", Budget: budget}
}

func (e *env) create(t *testing.T, p auth.Principal, in client.CreateContentRequest) store.ContentRequest {
	t.Helper()
	cr, rp, err := e.svc.Create(ctx, p, in, nil)
	if err != nil {
		t.Fatalf("Create(%+v): %v", in, err)
	}
	if rp != nil {
		t.Fatal("a create without an idempotency key replayed")
	}
	return cr
}

func (e *env) ledger(t *testing.T, account, month string) (store.BudgetMonth, int) {
	t.Helper()
	b, active, err := e.db.Budget(ctx, account, month)
	must(t, err)
	return b, active
}

func wantCode(t *testing.T, err error, code fault.Code, status int) *fault.Error {
	t.Helper()
	fe, ok := fault.As(err)
	if !ok {
		t.Fatalf("error %v (%T) is not a *fault.Error; want %s", err, err, code)
	}
	if fe.Code != code || fe.Code.Status() != status {
		t.Fatalf("got %s (%d): %s; want %s (%d)", fe.Code, fe.Code.Status(), fe.Message, code, status)
	}
	return fe
}

func fields(fe *fault.Error) []string {
	var out []string
	for _, d := range fe.Details {
		out = append(out, d.Field)
	}
	return out
}

func meta(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%02d", i)] = "v"
	}
	return m
}

func queries(n int) []string {
	q := make([]string, n)
	for i := range q {
		q[i] = fmt.Sprintf("query %d", i)
	}
	return q
}

// TestCreateValidation walks every field rule of content.validate.
func TestCreateValidation(t *testing.T) {
	e := newEnv(t)
	longURL := "https://example.com/" + strings.Repeat("a", content.MaxURLLength-len("https://example.com/"))
	for _, tc := range []struct {
		name   string
		mod    func(*client.CreateContentRequest)
		fields []string // nil: valid
	}{
		{"minimal", func(r *client.CreateContentRequest) {}, nil},
		{"missing domain", func(r *client.CreateContentRequest) { r.Domain = "" }, []string{"domain"}},
		{"bad domain", func(r *client.CreateContentRequest) { r.Domain = "http://example.com" }, []string{"domain"}},
		{"IP domain", func(r *client.CreateContentRequest) { r.Domain = "10.0.0.1" }, []string{"domain"}},
		{"zero budget", func(r *client.CreateContentRequest) { r.Budget = 0 }, []string{"budget"}},
		{"negative budget", func(r *client.CreateContentRequest) { r.Budget = -1 }, []string{"budget"}},
		{"smallest budget", func(r *client.CreateContentRequest) { r.Budget = 1 }, nil},
		{"url on the domain", func(r *client.CreateContentRequest) { r.URL = "https://example.com/a?b=c#d" }, nil},
		{"url on a subdomain", func(r *client.CreateContentRequest) { r.URL = "http://blog.EXAMPLE.com./x" }, nil},
		{"url with a port", func(r *client.CreateContentRequest) { r.URL = "https://example.com:8443/" }, nil},
		{"url of the longest length", func(r *client.CreateContentRequest) { r.URL = longURL }, nil},
		{"url too long", func(r *client.CreateContentRequest) { r.URL = longURL + "a" }, []string{"url"}},
		{"url relative", func(r *client.CreateContentRequest) { r.URL = "/page" }, []string{"url"}},
		{"url without scheme", func(r *client.CreateContentRequest) { r.URL = "example.com/page" }, []string{"url"}},
		{"url ftp", func(r *client.CreateContentRequest) { r.URL = "ftp://example.com/" }, []string{"url"}},
		{"url javascript", func(r *client.CreateContentRequest) { r.URL = "javascript:alert(1)" }, []string{"url"}},
		{"url without host", func(r *client.CreateContentRequest) { r.URL = "https:///path" }, []string{"url"}},
		{"url with credentials", func(r *client.CreateContentRequest) { r.URL = "https://user:pw@example.com/" }, []string{"url"}},
		{"url with user only", func(r *client.CreateContentRequest) { r.URL = "https://user@example.com/" }, []string{"url"}},
		{"url unparsable", func(r *client.CreateContentRequest) { r.URL = "https://exa mple.com/\x7f" }, []string{"url"}},
		{"url on another domain", func(r *client.CreateContentRequest) { r.URL = "https://evil.com/" }, []string{"url"}},
		{"url on a look-alike", func(r *client.CreateContentRequest) { r.URL = "https://notexample.com/" }, []string{"url"}},
		{"url suffix trick", func(r *client.CreateContentRequest) { r.URL = "https://example.com.evil.net/" }, []string{"url"}},
		{"url parent of the domain", func(r *client.CreateContentRequest) { r.Domain = "blog.example.com"; r.URL = "https://example.com/" }, []string{"url"}},
		{"content at the limit", func(r *client.CreateContentRequest) { r.Content = strings.Repeat("x", content.MaxContentBytes) }, nil},
		{"content too large", func(r *client.CreateContentRequest) { r.Content = strings.Repeat("x", content.MaxContentBytes+1) }, []string{"content"}},
		{"20 queries", func(r *client.CreateContentRequest) { r.TargetQueries = queries(20) }, nil},
		{"21 queries", func(r *client.CreateContentRequest) { r.TargetQueries = queries(21) }, []string{"target_queries"}},
		{"empty query", func(r *client.CreateContentRequest) { r.TargetQueries = []string{"ok", ""} }, []string{"target_queries[1]"}},
		{"blank query", func(r *client.CreateContentRequest) { r.TargetQueries = []string{" \t\n "} }, []string{"target_queries[0]"}},
		{"query of 200 runes", func(r *client.CreateContentRequest) { r.TargetQueries = []string{strings.Repeat("ü", 200)} }, nil},
		{"query of 201 runes", func(r *client.CreateContentRequest) { r.TargetQueries = []string{strings.Repeat("ü", 201)} }, []string{"target_queries[0]"}},
		{"query with a control character", func(r *client.CreateContentRequest) { r.TargetQueries = []string{"a\x00b"} }, []string{"target_queries[0]"}},
		{"query with an inner newline", func(r *client.CreateContentRequest) { r.TargetQueries = []string{"a\nb"} }, []string{"target_queries[0]"}},
		{"query with C1 control", func(r *client.CreateContentRequest) { r.TargetQueries = []string{"a\u0085b"} }, []string{"target_queries[0]"}},
		{"type optimize", func(r *client.CreateContentRequest) { r.Type = "optimize" }, nil},
		{"type analyze", func(r *client.CreateContentRequest) { r.Type = "analyze" }, nil},
		{"type unknown", func(r *client.CreateContentRequest) { r.Type = "summarize" }, []string{"type"}},
		{"type case matters", func(r *client.CreateContentRequest) { r.Type = "Optimize" }, []string{"type"}},
		{"20 metadata keys", func(r *client.CreateContentRequest) { r.Metadata = meta(20) }, nil},
		{"21 metadata keys", func(r *client.CreateContentRequest) { r.Metadata = meta(21) }, []string{"metadata"}},
		{"empty metadata key", func(r *client.CreateContentRequest) { r.Metadata = map[string]string{"": "v"} }, []string{"metadata"}},
		{"metadata key of 40 runes", func(r *client.CreateContentRequest) { r.Metadata = map[string]string{strings.Repeat("é", 40): "v"} }, nil},
		{"metadata key of 41 runes", func(r *client.CreateContentRequest) { r.Metadata = map[string]string{strings.Repeat("é", 41): "v"} }, []string{"metadata"}},
		{"metadata key with control", func(r *client.CreateContentRequest) { r.Metadata = map[string]string{"a\tb": "v"} }, []string{"metadata"}},
		{"metadata value of 500 runes", func(r *client.CreateContentRequest) { r.Metadata = map[string]string{"k": strings.Repeat("é", 500)} }, nil},
		{"metadata value of 501 runes", func(r *client.CreateContentRequest) { r.Metadata = map[string]string{"k": strings.Repeat("é", 501)} }, []string{"metadata.k"}},
		{"empty metadata value", func(r *client.CreateContentRequest) { r.Metadata = map[string]string{"k": ""} }, nil},
		{"several at once", func(r *client.CreateContentRequest) {
			r.Domain, r.Budget, r.Type, r.TargetQueries = "", 0, "x", []string{""}
		}, []string{"domain", "budget", "target_queries[0]", "type"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := req(dollar)
			tc.mod(&in)
			before := e.count(t, e.agency)
			cr, _, err := e.svc.Create(ctx, e.agency, in, nil)
			if tc.fields == nil {
				if err != nil {
					t.Fatalf("Create: %v", err)
				}
				if cr.Status != client.StatusQueued || !strings.HasPrefix(cr.ID, "cr_") {
					t.Fatalf("created %+v", cr)
				}
				// Cancel, so the active limit never gets in the way.
				if _, _, err := e.svc.Cancel(ctx, e.agency, cr.ID, nil); err != nil {
					t.Fatal(err)
				}
				return
			}
			fe := wantCode(t, err, fault.ValidationError, http.StatusBadRequest)
			if got := fields(fe); !slices.Equal(got, tc.fields) {
				t.Fatalf("fields %v, want %v (%s)", got, tc.fields, fe.Message)
			}
			for _, d := range fe.Details {
				if d.Message == "" {
					t.Fatalf("empty message for %s", d.Field)
				}
			}
			if after := e.count(t, e.agency); after != before {
				t.Fatal("an invalid request was stored")
			}
		})
	}
}

func (e *env) count(t *testing.T, p auth.Principal) int {
	t.Helper()
	return len(e.listAll(t, p, store.ContentFilter{}))
}

func (e *env) listAll(t *testing.T, p auth.Principal, f store.ContentFilter) []store.ContentRequest {
	t.Helper()
	var out []store.ContentRequest
	f.Limit = 7
	for {
		page, next, err := e.svc.List(ctx, p, f)
		must(t, err)
		out = append(out, page...)
		if next == "" {
			return out
		}
		f.Cursor = next
	}
}

func TestCreateNormalizesAndStores(t *testing.T) {
	e := newEnv(t)
	in := client.CreateContentRequest{
		Domain: "BÜCHER.de.", Budget: 12_500_000, URL: "https://shop.xn--bcher-kva.de/p?q=1", Content: "Hello",
		TargetQueries: []string{"  best books  ", "bücher"}, Metadata: map[string]string{"campaign": "summer"},
	}
	cr := e.create(t, e.starter, in)
	if cr.Domain != "xn--bcher-kva.de" || cr.Type != client.TypeOptimize || cr.Budget != 12_500_000 ||
		!slices.Equal(cr.TargetQueries, []string{"best books", "bücher"}) || cr.AccountID != "acct_starter" ||
		cr.KeyID != e.starter.Key.ID || cr.ClientID != "" || cr.BudgetMonth != "2025-06" || !cr.CreatedAt.Equal(t0) {
		t.Fatalf("created %+v", cr)
	}
	got, err := e.svc.Get(ctx, e.starter, cr.ID)
	must(t, err)
	if got.Domain != cr.Domain || got.Content != "Hello" || got.URL != in.URL || got.Metadata["campaign"] != "summer" {
		t.Fatalf("read back %+v", got)
	}
	if b, active := e.ledger(t, "acct_starter", "2025-06"); b != (store.BudgetMonth{Reserved: 12_500_000}) || active != 1 {
		t.Fatalf("ledger %+v, active %d", b, active)
	}
}

func TestBudgetAboveTierMax(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		p      auth.Principal
		max    client.USD
		tierNm string
	}{
		{e.starter, 1_000 * dollar, "Starter"},
		{e.pro, 5_000 * dollar, "Professional"},
		{e.agency, 20_000 * dollar, "Enterprise"},
	} {
		t.Run(tc.tierNm, func(t *testing.T) {
			cr := e.create(t, tc.p, req(tc.max))
			if _, _, err := e.svc.Cancel(ctx, tc.p, cr.ID, nil); err != nil {
				t.Fatal(err)
			}
			for _, over := range []client.USD{tc.max + 1, tc.max * 2, client.MaxUSD} {
				_, _, err := e.svc.Create(ctx, tc.p, req(over), nil)
				fe := wantCode(t, err, fault.BudgetExceedsTierLimit, http.StatusUnprocessableEntity)
				if !strings.Contains(fe.Message, tc.tierNm) || !slices.Equal(fields(fe), []string{"budget"}) {
					t.Fatalf("error %+v", fe)
				}
			}
		})
	}
}

func TestActiveRequestLimit(t *testing.T) {
	e := newEnv(t)
	var crs []store.ContentRequest
	for range 5 {
		crs = append(crs, e.create(t, e.starter, req(dollar)))
	}
	_, _, err := e.svc.Create(ctx, e.starter, req(dollar), nil)
	fe := wantCode(t, err, fault.ActiveRequestLimit, http.StatusTooManyRequests)
	if fe.RetryAfter != limits.ActiveRequestRetry || !strings.HasSuffix(fe.Message, fmt.Sprintf("retry after %d seconds", fe.RetryAfter)) {
		t.Errorf("retry_after %d, message %q: want %d seconds, named by the message", fe.RetryAfter, fe.Message, limits.ActiveRequestRetry)
	}
	if !strings.Contains(fe.Message, "5") {
		t.Errorf("message %q does not give the limit", fe.Message)
	}
	if b, active := e.ledger(t, "acct_starter", "2025-06"); active != 5 || b.Reserved != 5*dollar {
		t.Fatalf("refused request changed the ledger: %+v, %d active", b, active)
	}
	// Cancelling one frees a place.
	if _, _, err := e.svc.Cancel(ctx, e.starter, crs[0].ID, nil); err != nil {
		t.Fatal(err)
	}
	crs[0] = e.create(t, e.starter, req(dollar))
	// Ended requests do not count: complete one and fail one behind the service's back.
	must(t, e.db.Update(ctx, func(tx store.Tx) error {
		for i, status := range []string{client.StatusCompleted, client.StatusFailed} {
			c := crs[i]
			c.Status = status
			if err := tx.UpdateContentRequest(c, 0); err != nil {
				return err
			}
		}
		return nil
	}))
	e.create(t, e.starter, req(dollar))
	e.create(t, e.starter, req(dollar))
	_, _, err = e.svc.Create(ctx, e.starter, req(dollar), nil)
	wantCode(t, err, fault.ActiveRequestLimit, http.StatusTooManyRequests)
	// Processing requests count as active.
	must(t, e.db.Update(ctx, func(tx store.Tx) error {
		c := crs[2]
		c.Status = client.StatusProcessing
		return tx.UpdateContentRequest(c, 0)
	}))
	_, _, err = e.svc.Create(ctx, e.starter, req(dollar), nil)
	wantCode(t, err, fault.ActiveRequestLimit, http.StatusTooManyRequests)
	// The limit is per account: another account is not affected.
	e.create(t, e.pro, req(dollar))
}

func TestMonthlyBudgetLimit(t *testing.T) {
	e := newEnv(t)
	var crs []store.ContentRequest
	for range 5 {
		crs = append(crs, e.create(t, e.pro, req(5_000*dollar)))
	}
	// 25,000 is exactly the professional monthly limit: allowed. One more micro-dollar is not.
	_, _, err := e.svc.Create(ctx, e.pro, req(1), nil)
	fe := wantCode(t, err, fault.MonthlyBudgetExceeded, http.StatusPaymentRequired)
	if !strings.Contains(fe.Message, "$25,000") {
		t.Errorf("message %q does not give the limit", fe.Message)
	}
	// Cancelling releases the reservation: the ledger goes back down and the room is free again.
	if _, _, err := e.svc.Cancel(ctx, e.pro, crs[0].ID, nil); err != nil {
		t.Fatal(err)
	}
	if b, active := e.ledger(t, "acct_pro", "2025-06"); b != (store.BudgetMonth{Reserved: 20_000 * dollar}) || active != 4 {
		t.Fatalf("after cancel: %+v, %d active", b, active)
	}
	_, _, err = e.svc.Create(ctx, e.pro, req(5_000*dollar+1), nil)
	wantCode(t, err, fault.BudgetExceedsTierLimit, http.StatusUnprocessableEntity)
	e.create(t, e.pro, req(4_999*dollar))
	e.create(t, e.pro, req(dollar))
	_, _, err = e.svc.Create(ctx, e.pro, req(1), nil)
	wantCode(t, err, fault.MonthlyBudgetExceeded, http.StatusPaymentRequired)

	// Spent money counts as committed, like reserved money.
	e2 := newEnv(t)
	must(t, e2.db.Update(ctx, func(tx store.Tx) error { return tx.AddToBudgetMonth("acct_starter", "2025-06", 4_500*dollar, 0) }))
	e2.create(t, e2.starter, req(500*dollar))
	_, _, err = e2.svc.Create(ctx, e2.starter, req(1), nil)
	wantCode(t, err, fault.MonthlyBudgetExceeded, http.StatusPaymentRequired)

	// A new UTC month starts afresh; a cancel of last month's request releases last month's reservation.
	e.clock.Set(time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC))
	july := e.create(t, e.pro, req(5_000*dollar))
	if july.BudgetMonth != "2025-07" {
		t.Fatalf("budget month %q", july.BudgetMonth)
	}
	if _, _, err := e.svc.Cancel(ctx, e.pro, crs[1].ID, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := e.ledger(t, "acct_pro", "2025-06"); b.Reserved != 20_000*dollar {
		t.Errorf("June after cancelling a June request in July: %+v", b)
	}
	if b, _ := e.ledger(t, "acct_pro", "2025-07"); b.Reserved != 5_000*dollar {
		t.Errorf("July: %+v", b)
	}
}

func TestCancel(t *testing.T) {
	e := newEnv(t)
	cr := e.create(t, e.starter, req(100*dollar))
	e.clock.Add(time.Minute)
	got, rp, err := e.svc.Cancel(ctx, e.starter, cr.ID, nil)
	if err != nil || rp != nil {
		t.Fatalf("Cancel: %v, %v", err, rp)
	}
	if got.Status != client.StatusCancelled || !got.EndedAt.Equal(t0.Add(time.Minute)) || !got.UpdatedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("cancelled %+v", got)
	}
	if content.Reserved(got) != 0 {
		t.Fatalf("a cancelled request still reserves %d", content.Reserved(got))
	}
	if b, active := e.ledger(t, "acct_starter", "2025-06"); b != (store.BudgetMonth{}) || active != 0 {
		t.Fatalf("ledger after cancel %+v, %d active", b, active)
	}
	_, _, err = e.svc.Cancel(ctx, e.starter, cr.ID, nil)
	fe := wantCode(t, err, fault.InvalidState, http.StatusConflict)
	if !strings.Contains(fe.Message, "cancelled") {
		t.Errorf("message %q", fe.Message)
	}
	if b, _ := e.ledger(t, "acct_starter", "2025-06"); b != (store.BudgetMonth{}) {
		t.Fatalf("a second cancel released again: %+v", b)
	}
	_, _, err = e.svc.Cancel(ctx, e.starter, "cr_doesnotexist", nil)
	wantCode(t, err, fault.NotFound, http.StatusNotFound)

	// A processing request that spent part of its budget releases the rest.
	cr = e.create(t, e.starter, req(1_000*dollar))
	must(t, e.db.Update(ctx, func(tx store.Tx) error {
		c := cr
		c.Status, c.Spent = client.StatusProcessing, 300*dollar
		if err := tx.UpdateContentRequest(c, 0); err != nil {
			return err
		}
		return tx.AddToBudgetMonth("acct_starter", "2025-06", 300*dollar, -300*dollar)
	}))
	got, _, err = e.svc.Cancel(ctx, e.starter, cr.ID, nil)
	must(t, err)
	if got.Spent != 300*dollar || got.Status != client.StatusCancelled {
		t.Fatalf("cancelled %+v", got)
	}
	if b, _ := e.ledger(t, "acct_starter", "2025-06"); b != (store.BudgetMonth{Spent: 300 * dollar}) {
		t.Fatalf("ledger %+v, want 300 spent and nothing reserved", b)
	}
	// Completed and failed requests cannot be cancelled.
	for _, status := range []string{client.StatusCompleted, client.StatusFailed} {
		c := e.create(t, e.starter, req(dollar))
		c.Status = status
		must(t, e.db.Update(ctx, func(tx store.Tx) error { return tx.UpdateContentRequest(c, 0) }))
		_, _, err := e.svc.Cancel(ctx, e.starter, c.ID, nil)
		wantCode(t, err, fault.InvalidState, http.StatusConflict)
	}
}

func TestTransitions(t *testing.T) {
	all := []string{client.StatusQueued, client.StatusProcessing, client.StatusCompleted, client.StatusFailed, client.StatusCancelled}
	allowed := map[[2]string]bool{
		{"queued", "processing"}: true, {"queued", "cancelled"}: true,
		{"processing", "completed"}: true, {"processing", "failed"}: true, {"processing", "cancelled"}: true,
	}
	for _, from := range all {
		for _, to := range all {
			err := content.Transition(store.ContentRequest{ID: "cr_1", Status: from}, to)
			if allowed[[2]string{from, to}] != (err == nil) {
				t.Errorf("%s -> %s: %v", from, to, err)
			}
			if err != nil {
				wantCode(t, err, fault.InvalidState, http.StatusConflict)
			}
		}
		if ended := from == "completed" || from == "failed" || from == "cancelled"; content.Ended(from) != ended {
			t.Errorf("Ended(%s) = %v", from, !ended)
		}
	}
	for _, tc := range []struct {
		status string
		want   int64
	}{{"queued", 70}, {"processing", 70}, {"completed", 0}, {"failed", 0}, {"cancelled", 0}} {
		if got := content.Reserved(store.ContentRequest{Status: tc.status, Budget: 100, Spent: 30}); got != tc.want {
			t.Errorf("Reserved(%s) = %d, want %d", tc.status, got, tc.want)
		}
	}
}

// idem builds an Idempotency whose stored body is the request's id.
func idem(key, body string, renders *atomic.Int64) *content.Idempotency {
	return &content.Idempotency{Key: key, Hash: []byte("POST /content-requests\n" + body),
		Render: func(cr store.ContentRequest) (int, []byte, error) {
			if renders != nil {
				renders.Add(1)
			}
			b, err := json.Marshal(map[string]string{"id": cr.ID, "status": cr.Status})
			return 201, b, err
		}}
}

func TestIdempotency(t *testing.T) {
	e := newEnv(t)
	var renders atomic.Int64
	first, rp, err := e.svc.Create(ctx, e.agency, req(dollar), idem("key-1", "A", &renders))
	if err != nil || rp != nil {
		t.Fatalf("first: %v, %v", err, rp)
	}
	want, _ := json.Marshal(map[string]string{"id": first.ID, "status": "queued"})
	for range 3 {
		cr, rp, err := e.svc.Create(ctx, e.agency, req(dollar), idem("key-1", "A", &renders))
		if err != nil || rp == nil {
			t.Fatalf("replay: %+v, %v, %v", cr, rp, err)
		}
		if rp.Status != 201 || string(rp.Body) != string(want) {
			t.Fatalf("replayed %d %s, want 201 %s", rp.Status, rp.Body, want)
		}
		if cr.ID != "" {
			t.Fatalf("a replay also returned a request %+v", cr)
		}
	}
	if renders.Load() != 1 {
		t.Fatalf("rendered %d times, want once", renders.Load())
	}
	if n := e.count(t, e.agency); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	if b, _ := e.ledger(t, "acct_agency", "2025-06"); b.Reserved != dollar {
		t.Fatalf("reserved %d, want one reservation", b.Reserved)
	}

	// The same key with another request is a conflict, and creates nothing.
	_, _, err = e.svc.Create(ctx, e.agency, req(2*dollar), idem("key-1", "B", nil))
	fe := wantCode(t, err, fault.IdempotencyConflict, http.StatusConflict)
	if !strings.Contains(fe.Message, "key-1") {
		t.Errorf("message %q does not name the key", fe.Message)
	}
	if n := e.count(t, e.agency); n != 1 {
		t.Fatalf("%d requests after a conflict", n)
	}

	// Keys belong to their account and client: the same key elsewhere is new.
	for _, p := range []auth.Principal{e.agencyCliA, e.agencyCliB, e.other} {
		_, rp, err := e.svc.Create(ctx, p, req(dollar), idem("key-1", "B", nil))
		if err != nil || rp != nil {
			t.Fatalf("same key, principal %s/%s: %v, %v", p.AccountID(), p.ClientID(), rp, err)
		}
	}

	// After 24 hours the key may be used again, for anything.
	e.clock.Add(content.IdempotencyTTL)
	_, _, err = e.svc.Create(ctx, e.agency, req(2*dollar), idem("key-1", "B", nil))
	wantCode(t, err, fault.IdempotencyConflict, http.StatusConflict)
	e.clock.Add(time.Nanosecond)
	cr, rp, err := e.svc.Create(ctx, e.agency, req(2*dollar), idem("key-1", "B", nil))
	if err != nil || rp != nil || cr.Budget != 2*dollar {
		t.Fatalf("after 24 h: %+v, %v, %v", cr, rp, err)
	}
	_, rp, err = e.svc.Create(ctx, e.agency, req(2*dollar), idem("key-1", "B", nil))
	if err != nil || rp == nil || !strings.Contains(string(rp.Body), cr.ID) {
		t.Fatalf("replay of the new use: %v, %v", rp, err)
	}
}

func TestIdempotencyNotStoredOnFailure(t *testing.T) {
	e := newEnv(t)
	for range 5 {
		e.create(t, e.starter, req(dollar))
	}
	// Refused by the active limit inside the transaction: nothing is stored...
	_, _, err := e.svc.Create(ctx, e.starter, req(dollar), idem("k", "A", nil))
	wantCode(t, err, fault.ActiveRequestLimit, http.StatusTooManyRequests)
	// ...so after room is made the same key creates the request.
	list := e.listAll(t, e.starter, store.ContentFilter{})
	if _, _, err := e.svc.Cancel(ctx, e.starter, list[0].ID, nil); err != nil {
		t.Fatal(err)
	}
	cr, rp, err := e.svc.Create(ctx, e.starter, req(dollar), idem("k", "A", nil))
	if err != nil || rp != nil || cr.ID == "" {
		t.Fatalf("retry after the limit: %v, %v", rp, err)
	}

	// A render that fails rolls the whole create back.
	bad := &content.Idempotency{Key: "k2", Hash: []byte("x"), Render: func(store.ContentRequest) (int, []byte, error) {
		return 0, nil, errors.New("render failed")
	}}
	if _, _, err := e.svc.Cancel(ctx, e.starter, cr.ID, nil); err != nil {
		t.Fatal(err)
	}
	before := e.count(t, e.starter)
	bBefore, _ := e.ledger(t, "acct_starter", "2025-06")
	if _, _, err := e.svc.Create(ctx, e.starter, req(dollar), bad); err == nil {
		t.Fatal("create with a failing render succeeded")
	}
	if e.count(t, e.starter) != before {
		t.Fatal("the request was stored although its response could not be")
	}
	if b, _ := e.ledger(t, "acct_starter", "2025-06"); b != bBefore {
		t.Fatalf("ledger moved: %+v -> %+v", bBefore, b)
	}
}

func TestCancelIdempotency(t *testing.T) {
	e := newEnv(t)
	cr := e.create(t, e.starter, req(dollar))
	k := &content.Idempotency{Key: "cancel-1", Hash: []byte("POST cancel " + cr.ID), Render: func(c store.ContentRequest) (int, []byte, error) {
		return 200, []byte(`{"status":"` + c.Status + `"}`), nil
	}}
	if _, rp, err := e.svc.Cancel(ctx, e.starter, cr.ID, k); err != nil || rp != nil {
		t.Fatalf("cancel: %v, %v", rp, err)
	}
	// Retrying the same cancel replays its answer instead of INVALID_STATE.
	_, rp, err := e.svc.Cancel(ctx, e.starter, cr.ID, k)
	if err != nil || rp == nil || rp.Status != 200 || string(rp.Body) != `{"status":"cancelled"}` {
		t.Fatalf("retried cancel: %+v, %v", rp, err)
	}
	if b, _ := e.ledger(t, "acct_starter", "2025-06"); b != (store.BudgetMonth{}) {
		t.Fatalf("ledger %+v", b)
	}
}

// TestConcurrentIdempotentCreates: 20 goroutines send the same create with
// the same Idempotency-Key: exactly one request exists afterwards and every
// caller sees it.
func TestConcurrentIdempotentCreates(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	var created, replayed atomic.Int64
	ids := make(chan string, 20)
	for range 20 {
		wg.Go(func() {
			cr, rp, err := e.svc.Create(ctx, e.agency, req(dollar), idem("same", "A", nil))
			switch {
			case err != nil:
				t.Error(err)
			case rp != nil:
				replayed.Add(1)
				var body struct{ ID string }
				json.Unmarshal(rp.Body, &body)
				ids <- body.ID
			default:
				created.Add(1)
				ids <- cr.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	if created.Load() != 1 || replayed.Load() != 19 {
		t.Fatalf("created %d, replayed %d; want 1 and 19", created.Load(), replayed.Load())
	}
	var first string
	for id := range ids {
		if first == "" {
			first = id
		}
		if id != first || id == "" {
			t.Fatalf("callers saw different requests: %q and %q", first, id)
		}
	}
	if n := e.count(t, e.agency); n != 1 {
		t.Fatalf("%d requests stored", n)
	}
	if b, active := e.ledger(t, "acct_agency", "2025-06"); b.Reserved != dollar || active != 1 {
		t.Fatalf("ledger %+v, %d active", b, active)
	}
}

// TestConcurrentCreatesRespectLimits: many concurrent creates never pass
// the active-request limit or the monthly budget.
func TestConcurrentCreatesRespectLimits(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	var ok, limited atomic.Int64
	for range 30 {
		wg.Go(func() {
			_, _, err := e.svc.Create(ctx, e.starter, req(dollar), nil)
			if err == nil {
				ok.Add(1)
				return
			}
			if fe, isFault := fault.As(err); isFault && fe.Code == fault.ActiveRequestLimit {
				limited.Add(1)
				return
			}
			t.Error(err)
		})
	}
	wg.Wait()
	if ok.Load() != 5 || limited.Load() != 25 {
		t.Fatalf("%d created, %d refused; want 5 and 25", ok.Load(), limited.Load())
	}
	if b, active := e.ledger(t, "acct_starter", "2025-06"); active != 5 || b.Reserved != 5*dollar {
		t.Fatalf("ledger %+v, %d active", b, active)
	}

	// Monthly: 12 concurrent $5,000 creates on professional (limit $25,000): 5 pass.
	ok.Store(0)
	var monthly atomic.Int64
	for range 12 {
		wg.Go(func() {
			_, _, err := e.svc.Create(ctx, e.pro, req(5_000*dollar), nil)
			if err == nil {
				ok.Add(1)
				return
			}
			if fe, isFault := fault.As(err); isFault && fe.Code == fault.MonthlyBudgetExceeded {
				monthly.Add(1)
				return
			}
			t.Error(err)
		})
	}
	wg.Wait()
	if ok.Load() != 5 || monthly.Load() != 7 {
		t.Fatalf("%d created, %d refused; want 5 and 7", ok.Load(), monthly.Load())
	}
	if b, _ := e.ledger(t, "acct_pro", "2025-06"); b.Reserved != 25_000*dollar {
		t.Fatalf("professional reserved %d", b.Reserved)
	}
}

func TestClientResolution(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name   string
		p      auth.Principal
		client string
		want   string     // the stored client id
		code   fault.Code // or an error
	}{
		{"account key, no client", e.agency, "", "", ""},
		{"account key for a client", e.agency, "cli_a", "cli_a", ""},
		{"account key, unknown client", e.agency, "cli_none", "", fault.NotFound},
		{"account key, another agency's client", e.agency, "cli_x", "", fault.NotFound},
		{"client key, own client implied", e.agencyCliA, "", "cli_a", ""},
		{"client key, own client named", e.agencyCliA, "cli_a", "cli_a", ""},
		{"client key, sibling client", e.agencyCliA, "cli_b", "", fault.NotFound},
		{"standard account with a client", e.starter, "cli_a", "", fault.PlanNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := req(dollar)
			in.ClientID = tc.client
			cr, _, err := e.svc.Create(ctx, tc.p, in, nil)
			if tc.code != "" {
				status := map[fault.Code]int{fault.NotFound: 404, fault.PlanNotAllowed: 403}[tc.code]
				wantCode(t, err, tc.code, status)
				return
			}
			must(t, err)
			if cr.ClientID != tc.want {
				t.Fatalf("client %q, want %q", cr.ClientID, tc.want)
			}
			_, _, err = e.svc.Cancel(ctx, tc.p, cr.ID, nil)
			must(t, err)
		})
	}
}

// TestAgencyIsolation: a client key sees only its client's requests; an
// account key sees all and may filter by client; other accounts see nothing.
func TestAgencyIsolation(t *testing.T) {
	e := newEnv(t)
	a1 := e.create(t, e.agencyCliA, req(dollar))
	e.clock.Add(time.Second)
	b1 := e.create(t, e.agencyCliB, req(dollar))
	e.clock.Add(time.Second)
	own := e.create(t, e.agency, req(dollar))
	e.clock.Add(time.Second)
	in := req(dollar)
	in.ClientID = "cli_a"
	a2 := e.create(t, e.agency, in)

	ids := func(crs []store.ContentRequest) []string {
		var out []string
		for _, c := range crs {
			out = append(out, c.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		p    auth.Principal
		f    store.ContentFilter
		want []string
	}{
		{"account key sees all", e.agency, store.ContentFilter{}, []string{a2.ID, own.ID, b1.ID, a1.ID}},
		{"account key filters cli_a", e.agency, store.ContentFilter{ClientID: "cli_a"}, []string{a2.ID, a1.ID}},
		{"account key filters cli_b", e.agency, store.ContentFilter{ClientID: "cli_b"}, []string{b1.ID}},
		{"account key filters an unknown client", e.agency, store.ContentFilter{ClientID: "cli_x"}, nil},
		{"client A", e.agencyCliA, store.ContentFilter{}, []string{a2.ID, a1.ID}},
		{"client A asking for its own", e.agencyCliA, store.ContentFilter{ClientID: "cli_a"}, []string{a2.ID, a1.ID}},
		{"client A asking for B", e.agencyCliA, store.ContentFilter{ClientID: "cli_b"}, nil},
		{"client B", e.agencyCliB, store.ContentFilter{}, []string{b1.ID}},
		{"another account", e.other, store.ContentFilter{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(e.listAll(t, tc.p, tc.f)); !slices.Equal(got, tc.want) {
				t.Fatalf("listed %v, want %v", got, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		name string
		p    auth.Principal
		id   string
		ok   bool
	}{
		{"client A gets its own", e.agencyCliA, a1.ID, true},
		{"client A gets one the account made for it", e.agencyCliA, a2.ID, true},
		{"client A gets B's", e.agencyCliA, b1.ID, false},
		{"client A gets the account's own", e.agencyCliA, own.ID, false},
		{"client B gets A's", e.agencyCliB, a1.ID, false},
		{"account gets A's", e.agency, a1.ID, true},
		{"account gets B's", e.agency, b1.ID, true},
		{"another account gets A's", e.other, a1.ID, false},
		{"another account gets the account's", e.other, own.ID, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.svc.Get(ctx, tc.p, tc.id)
			if tc.ok {
				if err != nil || got.ID != tc.id {
					t.Fatalf("Get: %+v, %v", got, err)
				}
				return
			}
			fe := wantCode(t, err, fault.NotFound, http.StatusNotFound)
			if got.ID != "" || got.AccountID != "" {
				t.Fatalf("a NOT_FOUND leaked the request %+v", got)
			}
			if strings.Contains(fe.Message, "client") || strings.Contains(fe.Message, "account") {
				t.Fatalf("message %q hints at whose it is", fe.Message)
			}
			_, _, err = e.svc.Cancel(ctx, tc.p, tc.id, nil)
			wantCode(t, err, fault.NotFound, http.StatusNotFound)
			if c, _ := e.svc.Get(ctx, e.agency, tc.id); c.Status != client.StatusQueued {
				t.Fatalf("a refused cancel changed the request: %s", c.Status)
			}
		})
	}
}

func TestListValidation(t *testing.T) {
	e := newEnv(t)
	e.create(t, e.starter, client.CreateContentRequest{Domain: "bücher.de", Budget: dollar})
	e.create(t, e.starter, req(dollar))
	for _, tc := range []struct {
		name  string
		f     store.ContentFilter
		field string
		n     int
	}{
		{"status queued", store.ContentFilter{Status: "queued"}, "", 2},
		{"status completed", store.ContentFilter{Status: "completed"}, "", 0},
		{"unknown status", store.ContentFilter{Status: "done"}, "status", 0},
		{"status case matters", store.ContentFilter{Status: "QUEUED"}, "status", 0},
		{"domain normalized", store.ContentFilter{Domain: "BÜCHER.de."}, "", 1},
		{"domain punycode", store.ContentFilter{Domain: "xn--bcher-kva.de"}, "", 1},
		{"bad domain", store.ContentFilter{Domain: "https://example.com"}, "domain", 0},
		{"malformed cursor", store.ContentFilter{Cursor: "%%%"}, "cursor", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.Limit = 10
			items, _, err := e.svc.List(ctx, e.starter, tc.f)
			if tc.field != "" {
				fe := wantCode(t, err, fault.ValidationError, http.StatusBadRequest)
				if !slices.Equal(fields(fe), []string{tc.field}) {
					t.Fatalf("fields %v, want %s", fields(fe), tc.field)
				}
				return
			}
			if err != nil || len(items) != tc.n {
				t.Fatalf("%d items, %v; want %d", len(items), err, tc.n)
			}
		})
	}
}

func TestGetUnknown(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"cr_none", "", "'; DROP TABLE content_requests; --", strings.Repeat("x", 10_000)} {
		_, err := e.svc.Get(ctx, e.starter, id)
		wantCode(t, err, fault.NotFound, http.StatusNotFound)
	}
}

func TestUnknownTierIsInternal(t *testing.T) {
	e := newEnv(t)
	p := e.starter
	p.Account.Tier = "platinum"
	_, _, err := e.svc.Create(ctx, p, req(dollar), nil)
	if err == nil {
		t.Fatal("create on an unknown tier succeeded")
	}
	if _, ok := fault.As(err); ok {
		t.Fatalf("an unknown tier is a server fault, not a user error: %v", err)
	}
}

// TestURLWithUnicodeHostOnIDNDomain: the domain is stored in punycode
// ("bücher.de" -> "xn--bcher-kva.de"); a URL whose host is written in
// Unicode or another case is still on it.
func TestURLWithUnicodeHostOnIDNDomain(t *testing.T) {
	e := newEnv(t)
	for _, u := range []string{"https://bücher.de/neu", "https://shop.BÜCHER.de/"} {
		_, _, err := e.svc.Create(ctx, e.agency, client.CreateContentRequest{Domain: "bücher.de", Budget: dollar, URL: u}, nil)
		if err != nil {
			t.Errorf("url %q on domain bücher.de: %v", u, err)
		}
	}
}

// TestIdempotentReplayAfterTierDowngrade: a repeat of a request that
// succeeded replays the stored response whatever the account's state now,
// a cheaper tier included, so a client is never told a created request failed.
func TestIdempotentReplayAfterTierDowngrade(t *testing.T) {
	e := newEnv(t)
	first, _, err := e.svc.Create(ctx, e.pro, req(3_000*dollar), idem("retry-me", "A", nil))
	must(t, err)
	must(t, e.db.SetTier(ctx, "acct_pro", "starter"))
	p := e.pro
	p.Account.Tier = "starter" // as the next authentication would see it
	_, rp, err := e.svc.Create(ctx, p, req(3_000*dollar), idem("retry-me", "A", nil))
	if err != nil || rp == nil || !strings.Contains(string(rp.Body), first.ID) {
		t.Errorf("retry of a created request after a downgrade: replay %v, error %v; want the stored response for %s", rp, err, first.ID)
	}
}

// TestInvalidDomainDoesNotBlameURL: validate checks the url against
// in.Domain, which it overwrites only when the domain is valid; an invalid
// domain keeps its raw value, so a url on the very host the client meant
// gets a second, spurious error ("must be on example.com:443 or one of its
// subdomains") that echoes the invalid domain. Only the domain is at fault.
func TestInvalidDomainDoesNotBlameURL(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ domain, url string }{
		{"example.com:443", "https://example.com/"},
		{"http://example.com", "http://example.com/page"},
		{"example.com/path", "https://example.com/path"},
		{"localhost", "http://localhost/"},
	} {
		_, _, err := e.svc.Create(ctx, e.starter, client.CreateContentRequest{Domain: tc.domain, Budget: dollar, URL: tc.url}, nil)
		fe := wantCode(t, err, fault.ValidationError, http.StatusBadRequest)
		if got := fields(fe); !slices.Equal(got, []string{"domain"}) {
			t.Errorf("domain %q, url %q: fields %v, want only [domain] (%+v)", tc.domain, tc.url, got, fe.Details)
		}
	}
}

// TestPruneIdempotency: the pruner forgets, with the service's clock,
// records older than IdempotencyTTL and keeps younger ones; it stops when
// its context ends.
func TestPruneIdempotency(t *testing.T) {
	e := newEnv(t)
	old, _, err := e.svc.Create(ctx, e.agency, req(dollar), idem("old", "A", nil))
	must(t, err)
	e.clock.Add(20 * time.Hour)
	_, _, err = e.svc.Create(ctx, e.agency, req(dollar), idem("young", "A", nil))
	must(t, err)
	e.clock.Add(4*time.Hour + time.Second) // "old" is 24 h 1 s old, "young" 4 h 1 s

	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		e.svc.PruneIdempotency(pctx, time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
		close(done)
	}()
	gone := func(key string) bool {
		var err error
		must(t, e.db.Update(ctx, func(tx store.Tx) error {
			_, err = tx.Idempotency(e.agency.AccountID()+"/", key, time.Time{})
			return nil
		}))
		return errors.Is(err, store.ErrNotFound)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !gone("old") {
		if time.Now().After(deadline) {
			t.Fatal("the record older than 24 h was not pruned")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("PruneIdempotency did not return when its context ended")
	}
	if gone("young") {
		t.Fatal("a record younger than 24 h was pruned")
	}
	// The pruned key is free again; the young one still replays.
	cr, rp, err := e.svc.Create(ctx, e.agency, req(2*dollar), idem("old", "B", nil))
	if err != nil || rp != nil || cr.ID == old.ID {
		t.Fatalf("reuse of the pruned key: %+v, %v, %v", cr, rp, err)
	}
	if _, rp, err := e.svc.Create(ctx, e.agency, req(dollar), idem("young", "A", nil)); err != nil || rp == nil {
		t.Fatalf("young key: %v, %v", rp, err)
	}
}
