package traffic

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// BenchmarkStoragePerMillionLines: what a day of 1,000,000 log lines
// adds to a SQLite store, imported as ten batches of 100,000 combined
// lines of one day: 5,000 pages requested by a Zipf law, a third of the
// requests by AI agents (the example user agents of the catalog, half of
// them from their operators' ranges), 2% of the visits referred by an
// assistant. It reports the bytes the database file grew by, the
// aggregate rows kept, and the bytes a row; it runs once whatever b.N.
func BenchmarkStoragePerMillionLines(b *testing.B) {
	const lines, batches, pages = 1_000_000, 10, 5_000
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "aivis.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	if err := db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "A", Tier: "enterprise", Type: store.AccountStandard, CreatedAt: now}); err != nil {
		b.Fatal(err)
	}
	d := store.MonitoredDomain{ID: "dom_1", AccountID: "acct_1", Domain: "acme.invalid", CreatedAt: now, UpdatedAt: now}
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.InsertDomain(d) }); err != nil {
		b.Fatal(err)
	}
	db.Close()
	before := fileSize(b, path)
	db, err = sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	svc := &Service{Store: db, Catalog: NewCatalog(Snapshot())}
	uas := []string{
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"CCBot/2.0 (https://commoncrawl.org/faq/)",
		"meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)",
	}
	own := []string{"52.230.152.", "20.171.206.", "", "", "66.249.64.", "", ""}
	browser := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 1, pages-1)
	b.ResetTimer()
	var kept int64
	for i := range batches {
		var buf bytes.Buffer
		for range lines / batches {
			at := now.Add(time.Duration(r.Int64N(int64(24 * time.Hour)))).Format("02/Jan/2006:15:04:05 -0700")
			page := fmt.Sprintf("/p/%d", zipf.Uint64())
			ip, ua, ref := fmt.Sprintf("198.51.100.%d", r.IntN(250)), browser, "-"
			if r.IntN(3) == 0 {
				k := r.IntN(len(uas))
				ua = uas[k]
				if own[k] != "" && r.IntN(2) == 0 {
					ip = own[k] + fmt.Sprint(r.IntN(15)+1)
				}
			} else if r.IntN(50) == 0 {
				ref = []string{"https://chatgpt.com/", "https://www.perplexity.ai/", "https://gemini.google.com/"}[r.IntN(3)]
			}
			status := []int{200, 200, 200, 304, 404, 503}[r.IntN(6)]
			fmt.Fprintf(&buf, "%s - - [%s] \"GET %s HTTP/1.1\" %d %d %q %q\n", ip, at, page, status, r.IntN(50000), ref, ua)
		}
		res, err := svc.Import(ctx, d, &buf)
		if err != nil || res.Duplicate {
			b.Fatalf("batch %d: %+v %v", i, res, err)
		}
		kept += int64(res.Hits + res.Referrals)
	}
	b.StopTimer()
	f := store.TrafficFilter{AccountID: d.AccountID, DomainID: d.ID, From: now, To: now.AddDate(0, 0, 1)}
	hits, err := db.ListCrawlerHits(ctx, f)
	if err != nil {
		b.Fatal(err)
	}
	refs, err := db.ListReferralVisits(ctx, f)
	if err != nil {
		b.Fatal(err)
	}
	db.Close()
	grown := fileSize(b, path) - before
	rows := int64(len(hits) + len(refs))
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(grown)/1e6, "MB/1M-lines")
	b.ReportMetric(float64(rows), "rows")
	b.ReportMetric(float64(grown)/float64(rows), "B/row")
	b.ReportMetric(float64(kept), "aggregates-written")
}

func fileSize(b *testing.B, path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}
