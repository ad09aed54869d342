package traffic_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/core/traffic"
)

// service is a traffic.Service on a SQLite file with one domain.
func service(t *testing.T) (*traffic.Service, store.MonitoredDomain, *sqlite.DB) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	box, _, err := secrets.Load(filepath.Join(t.TempDir(), secrets.KeyFile), true)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	if err := db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "A", Tier: "enterprise", Type: store.AccountStandard, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	d := store.MonitoredDomain{ID: "dom_1", AccountID: "acct_1", Domain: "acme.invalid", CreatedAt: now, UpdatedAt: now}
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.InsertDomain(d) }); err != nil {
		t.Fatal(err)
	}
	return &traffic.Service{Store: db, Catalog: traffic.NewCatalog(traffic.Snapshot()), Box: box, Now: func() time.Time { return now },
		MaxBatch: 1 << 20}, d, db
}

func code(err error) fault.Code {
	if fe, ok := fault.As(err); ok {
		return fe.Code
	}
	return ""
}

// TestTokens: a token made is found by its secret, only for its source
// and until it is revoked; what a token may not be is refused by field.
func TestTokens(t *testing.T) {
	ctx := context.Background()
	svc, d, db := service(t)
	for _, bad := range []struct {
		n     traffic.NewToken
		field string
	}{
		{traffic.NewToken{Name: "", Source: "cloudflare"}, "name"},
		{traffic.NewToken{Name: "x", Source: "akamai"}, "source"},
		{traffic.NewToken{Name: "x", Source: "vercel"}, "signing_secret"},
		{traffic.NewToken{Name: "x", Source: "cloudflare", SigningSecret: "s"}, "signing_secret"},
		{traffic.NewToken{Name: "x", Source: "cloudflare", FastlyServiceID: "abc"}, "fastly_service_id"},
		{traffic.NewToken{Name: "x", Source: "fastly", FastlyServiceID: "a/b"}, "fastly_service_id"},
	} {
		_, _, err := svc.CreateToken(ctx, d, bad.n)
		fe, ok := fault.As(err)
		if !ok || fe.Code != fault.ValidationError || len(fe.Details) == 0 || fe.Details[0].Field != bad.field {
			t.Errorf("%+v: %v; want a validation error of %s", bad.n, err, bad.field)
		}
	}
	tok, secret, err := svc.CreateToken(ctx, d, traffic.NewToken{Name: "edge", Source: "cloudflare"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, traffic.TokenPrefix) || !strings.HasPrefix(secret, tok.Prefix) || bytes.Contains(tok.Hash, []byte(secret)) {
		t.Errorf("token %+v, secret %s", tok, secret)
	}
	if got, err := svc.Authenticate(ctx, "cloudflare", secret); err != nil || got.ID != tok.ID || got.DomainID != d.ID {
		t.Errorf("Authenticate: %+v %v", got, err)
	}
	for name, try := range map[string][2]string{"another source": {"fastly", secret}, "an unknown secret": {"cloudflare", secret + "x"},
		"no prefix": {"cloudflare", strings.TrimPrefix(secret, traffic.TokenPrefix)}} {
		if _, err := svc.Authenticate(ctx, try[0], try[1]); code(err) != fault.InvalidCredentials {
			t.Errorf("%s: %v; want INVALID_CREDENTIALS", name, err)
		}
	}
	if err := db.RevokeIngestToken(ctx, d.AccountID, d.ID, tok.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, "cloudflare", secret); code(err) != fault.InvalidCredentials {
		t.Errorf("a revoked token: %v", err)
	}
}

// TestVercelSignature: a delivery is Vercel's when its signature is the
// HMAC-SHA1 of the exact bytes under the drain's secret, kept sealed.
func TestVercelSignature(t *testing.T) {
	ctx := context.Background()
	svc, d, db := service(t)
	tok, _, err := svc.CreateToken(ctx, d, traffic.NewToken{Name: "drain", Source: "vercel", SigningSecret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := db.ListIngestTokens(ctx, d.AccountID, d.ID)
	if len(kept) != 1 || kept[0].SigningSecret == "" || strings.Contains(kept[0].SigningSecret, "s3cret") {
		t.Fatalf("the signing secret kept: %+v", kept)
	}
	body := []byte(`[{"id":"1"}]`)
	mac := hmac.New(sha1.New, []byte("s3cret"))
	mac.Write(body)
	sig := hex.EncodeToString(mac.Sum(nil))
	if !svc.SignedByVercel(kept[0], body, sig) || !svc.SignedByVercel(tok, body, strings.ToUpper(sig)) {
		t.Error("the right signature refused")
	}
	for name, c := range map[string]struct {
		body []byte
		sig  string
	}{"another body": {[]byte(`[{"id":"2"}]`), sig}, "no signature": {body, ""}, "not hex": {body, "zz"}, "short": {body, sig[:20]}} {
		if svc.SignedByVercel(kept[0], c.body, c.sig) {
			t.Errorf("%s: taken", name)
		}
	}
}

// TestIngestRefusals: a body that is no batch is refused with the API's
// codes and keeps nothing; Cloudflare's validation upload keeps nothing.
func TestIngestRefusals(t *testing.T) {
	ctx := context.Background()
	svc, d, db := service(t)
	tok, _, err := svc.CreateToken(ctx, d, traffic.NewToken{Name: "edge", Source: "cloudflare"})
	if err != nil {
		t.Fatal(err)
	}
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	if r, err := svc.Ingest(ctx, tok, bytes.NewReader(gz(`{"content":"tests"}`))); err != nil || !r.Validation {
		t.Errorf("the validation upload: %+v %v", r, err)
	}
	broken := gz(strings.Repeat(`{"ClientIP":"192.0.2.1"}`+"\n", 100))
	broken[len(broken)-6] ^= 0xff // the CRC
	if _, err := svc.Ingest(ctx, tok, bytes.NewReader(broken)); code(err) != fault.ValidationError {
		t.Errorf("broken gzip: %v; want VALIDATION_ERROR", err)
	}
	big := gz(strings.Repeat("x", 2<<20))
	if _, err := svc.Ingest(ctx, tok, bytes.NewReader(big)); code(err) != fault.PayloadTooLarge {
		t.Errorf("2 MiB past a 1 MiB cap: %v; want PAYLOAD_TOO_LARGE", err)
	}
	bs, err := db.ListTrafficBatches(ctx, d.AccountID, d.ID, 10)
	if err != nil || len(bs) != 0 {
		t.Errorf("batches kept after refusals: %+v %v", bs, err)
	}
}

// TestReplaceRanges: lists replaced are checked, kept in the store (so a
// service on another handle loads them) and verify from then on; a list
// that is not one, or of no known name, is refused and changes nothing.
func TestReplaceRanges(t *testing.T) {
	ctx := context.Background()
	svc, _, db := service(t)
	gptbot := svc.Catalog.Agent("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot")
	if gptbot == nil {
		t.Fatal("GPTBot is not in the catalog")
	}
	ip := netip.MustParseAddr("203.0.113.9")
	if v := svc.Catalog.Verify(gptbot, ip); v != traffic.Spoofed {
		t.Fatalf("before: %s", v)
	}
	for name, doc := range map[string]string{"not JSON": `[`, "an unknown list": `{"nope":{"prefixes":[{"ipv4Prefix":"203.0.113.0/24"}]}}`,
		"an empty list": `{"openai-gptbot":{"prefixes":[]}}`, "an HTML page": `{"openai-gptbot":"<html>"}`} {
		if _, err := svc.ReplaceRanges(ctx, []byte(doc)); code(err) != fault.ValidationError {
			t.Errorf("%s: %v; want VALIDATION_ERROR", name, err)
		}
	}
	if lists, _, err := db.CrawlerRanges(ctx); err != nil || len(lists) != 0 {
		t.Fatalf("kept after refusals: %v %v", lists, err)
	}
	names, err := svc.ReplaceRanges(ctx, []byte(`{"openai-gptbot":{"creationTime":"2026-11-20T08:00:00.000000","prefixes":[{"ipv4Prefix":"203.0.113.0/24"}]}}`))
	if err != nil || len(names) != 1 {
		t.Fatalf("ReplaceRanges: %v %v", names, err)
	}
	if v := svc.Catalog.Verify(gptbot, ip); v != traffic.Verified {
		t.Errorf("after: %s", v)
	}
	other := &traffic.Service{Store: db, Catalog: traffic.NewCatalog(traffic.Snapshot())}
	if err := other.LoadRanges(ctx); err != nil {
		t.Fatal(err)
	}
	if v := other.Catalog.Verify(gptbot, ip); v != traffic.Verified {
		t.Errorf("another service after LoadRanges: %s", v)
	}
	if v := other.Catalog.Verify(gptbot, netip.MustParseAddr("52.230.152.7")); v != traffic.Spoofed {
		t.Errorf("an address of the list replaced: %s", v)
	}
	if _, err := svc.ReplaceRanges(ctx, []byte(`{"openai-searchbot":{"prefixes":[{"ipv4Prefix":"198.51.100.0/24"}]}}`)); err != nil {
		t.Fatal(err)
	}
	if lists, _, _ := db.CrawlerRanges(ctx); len(lists) != 2 {
		t.Errorf("a second list replaced the first: %d lists kept", len(lists))
	}
}

// TestFetchRanges: the lists a URL serves are kept; a URL that fails
// (a status, an HTML page, a list that is none) keeps the lists kept,
// and says why without the URL.
func TestFetchRanges(t *testing.T) {
	ctx := context.Background()
	svc, _, db := service(t)
	answers := map[string]struct {
		status int
		body   string
	}{
		"/good":  {200, `{"openai-gptbot":{"creationTime":"2026-11-20T08:00:00.000000","prefixes":[{"ipv4Prefix":"203.0.113.0/24"}]}}`},
		"/gone":  {404, `not found`},
		"/html":  {200, `<!doctype html><html><body>maintenance</body></html>`},
		"/empty": {200, `{"openai-gptbot":{"prefixes":[]}}`},
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			t.Errorf("the list server got %s %s", r.Method, r.URL)
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	defer ts.Close()
	if names, err := svc.FetchRanges(ctx, ts.Client(), ts.URL+"/good?key=s3cret"); err != nil || len(names) != 1 {
		t.Fatalf("FetchRanges: %v %v", names, err)
	}
	for _, path := range []string{"/gone", "/html", "/empty"} {
		_, err := svc.FetchRanges(ctx, ts.Client(), ts.URL+path+"?key=s3cret")
		if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("%s: %v; want an error naming no URL", path, err)
		}
	}
	lists, _, err := db.CrawlerRanges(ctx)
	if err != nil || !strings.Contains(string(lists["openai-gptbot"]), "203.0.113.0/24") {
		t.Errorf("the lists kept after failed fetches: %s %v", lists, err)
	}
	ts.Close()
	if _, err := svc.FetchRanges(ctx, ts.Client(), ts.URL+"/good"); err == nil || strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("a server that is gone: %v", err)
	}
}
