package traffic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/core/traffic"
)

// crawlerErrorEvents are the crawler_errors in the bus's table, the
// outbox the transaction of a batch writes to, with their routing facts.
func crawlerErrorEvents(t *testing.T, db *sqlite.DB) (out []events.Event) {
	t.Helper()
	_, r := db.Pools()
	rows, err := r.Query(`SELECT metadata, payload FROM bus_messages ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var meta string
		var payload []byte
		if err := rows.Scan(&meta, &payload); err != nil {
			t.Fatal(err)
		}
		var md map[string]string
		var body events.Body
		if json.Unmarshal([]byte(meta), &md) != nil || json.Unmarshal(payload, &body) != nil {
			t.Fatalf("event %s %s", meta, payload)
		}
		if body.Event != events.CrawlerErrors {
			continue
		}
		ev := events.Event{Body: body, AccountID: md["account_id"], ClientID: md["client_id"], Domain: md["domain"]}
		fmt.Sscan(md["crawler_errors"], &ev.CrawlerErrors)
		out = append(out, ev)
	}
	return out
}

// completedScan keeps a completed scan of d whose engines cite pages
// (engine label -> URLs and answers).
func completedScan(t *testing.T, db *sqlite.DB, d store.MonitoredDomain, id string, at time.Time, cites string) {
	t.Helper()
	sc := store.Scan{ID: id, AccountID: d.AccountID, ClientID: d.ClientID, DomainID: d.ID, Domain: d.Domain,
		Trigger: store.ScanManual, Status: store.ScanCompleted, CreatedAt: at, FinishedAt: at,
		Result: []byte(`{"breakdown":{"engines":[` + cites + `]}}`)}
	if err := db.Update(context.Background(), func(tx store.Tx) error { return tx.InsertScan(sc) }); err != nil {
		t.Fatal(err)
	}
}

// TestCrawlerErrors: a batch in which AI agents answered errors on pages
// the latest scan cites publishes one crawler_errors with the batch, for
// the domain's owner: the cited pages only, verified and unverified
// agents by status class, never a spoofed one; the same batch again, a
// batch of errors on uncited pages only, and a batch before any scan
// publish none.
func TestCrawlerErrors(t *testing.T) {
	ctx := context.Background()
	svc, d, db := service(t)
	svc.Sites = db
	d1 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	d2 := d1.AddDate(0, 0, 1)

	early := combined(d1, "52.230.152.7", "/pricing", 404, 100, "-", uaGPTBot)
	if res, err := svc.Import(ctx, d, strings.NewReader(early)); err != nil || res.Duplicate {
		t.Fatalf("import before a scan: %+v %v", res, err)
	}
	if evs := crawlerErrorEvents(t, db); len(evs) != 0 {
		t.Fatalf("a batch before any scan fired %d crawler_errors", len(evs))
	}

	completedScan(t, db, d, "scan_1", d1, `{"label":"ChatGPT","cited_pages":[{"url":"https://acme.invalid/pricing","count":3},
		{"url":"https://www.acme.invalid/docs?a=1","count":1},{"url":"https://other.invalid/uncited","count":9}]},
		{"label":"Perplexity","cited_pages":[{"url":"https://acme.invalid/pricing","count":5}]}`)
	log := combined(d1, "52.230.152.7", "/pricing", 404, 100, "-", uaGPTBot) +
		combined(d2, "52.230.152.8", "/pricing?x=1", 404, 100, "-", uaGPTBot) +
		combined(d2, "52.230.152.8", "/pricing", 200, 100, "-", uaGPTBot) +
		combined(d2, "52.230.152.8", "/uncited", 503, 0, "-", uaGPTBot) +
		combined(d2, "203.0.113.9", "/pricing", 500, 10, "-", uaGPTBot) + // spoofed
		combined(d2, "198.51.100.4", "/docs", 503, 0, "-", uaClaudeBot) +
		combined(d2, "198.51.100.4", "/docs", 502, 0, "-", uaClaudeBot) +
		combined(d2, "192.0.2.1", "/pricing", 404, 10, "-", uaBrowser)
	res, err := svc.Import(ctx, d, strings.NewReader(log))
	if err != nil || res.Duplicate || res.Batch.Then != nil {
		t.Fatalf("import: %+v %v", res, err)
	}
	evs := crawlerErrorEvents(t, db)
	if len(evs) != 1 {
		t.Fatalf("%d crawler_errors, want 1", len(evs))
	}
	ev := evs[0]
	if ev.AccountID != "acct_1" || ev.ClientID != "" || ev.Domain != "acme.invalid" || ev.CrawlerErrors != 4 {
		t.Errorf("routing: %+v", ev)
	}
	var got events.CrawlerErrorsData
	if err := json.Unmarshal(ev.Data, &got); err != nil {
		t.Fatal(err)
	}
	want := events.CrawlerErrorsData{Domain: "acme.invalid", Days: []string{"2026-11-26", "2026-11-27"}, ScanID: "scan_1", Errors: 4,
		PagesWithErrors: 2, Pages: []events.CrawlerErrorsPage{
			{Path: "/docs", Errors: 2, Agents: []events.CrawlerErrorsAgent{{Agent: "ClaudeBot", Verification: "unverified", Status5xx: 2}},
				CitedBy: []events.CrawlerErrorsEngine{{Engine: "ChatGPT", Answers: 1}}},
			{Path: "/pricing", Errors: 2, Agents: []events.CrawlerErrorsAgent{{Agent: "GPTBot", Verification: "verified", Status4xx: 2}},
				CitedBy: []events.CrawlerErrorsEngine{{Engine: "Perplexity", Answers: 5}, {Engine: "ChatGPT", Answers: 3}}},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("data\n got  %+v\n want %+v", got, want)
	}
	if !ev.Timestamp.Equal(res.Batch.ReceivedAt) {
		t.Errorf("timestamp %v, want the batch's %v", ev.Timestamp, res.Batch.ReceivedAt)
	}

	if res, err := svc.Import(ctx, d, strings.NewReader(log)); err != nil || !res.Duplicate {
		t.Fatalf("the same batch again: %+v %v", res, err)
	}
	uncited := combined(d2, "52.230.152.8", "/uncited", 503, 0, "-", uaGPTBot) + combined(d2, "203.0.113.9", "/pricing", 500, 0, "-", uaGPTBot)
	if res, err := svc.Import(ctx, d, strings.NewReader(uncited)); err != nil || res.Duplicate {
		t.Fatalf("import of uncited errors: %+v %v", res, err)
	}
	if evs := crawlerErrorEvents(t, db); len(evs) != 1 {
		t.Errorf("%d crawler_errors after a duplicate and a batch of uncited errors, want the first alone", len(evs))
	}
}

// TestCrawlerErrorsPages: at most MaxCrawlerErrorPages pages, the most
// errors first, while errors and pages_with_errors count every one.
func TestCrawlerErrorsPages(t *testing.T) {
	d := store.MonitoredDomain{Domain: "acme.invalid", ClientID: "cli_1"}
	var cites []string
	var hits []store.CrawlerHits
	day := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	for i := range events.MaxCrawlerErrorPages + 5 {
		page := fmt.Sprintf("/p%02d", i)
		cites = append(cites, fmt.Sprintf(`{"url":"https://acme.invalid%s","count":1}`, page))
		hits = append(hits, store.CrawlerHits{Day: day, Page: page, Agent: "GPTBot", Verification: "verified", Hits: int64(i + 1),
			Status: [5]int64{0, 0, int64(i + 1), 0, 0}})
	}
	sc := store.Scan{ID: "scan_1", Status: store.ScanCompleted,
		Result: []byte(`{"breakdown":{"engines":[{"label":"ChatGPT","cited_pages":[` + strings.Join(cites, ",") + `]}]}}`)}
	data, total := traffic.CrawlerErrors(d, sc, hits)
	n := events.MaxCrawlerErrorPages + 5
	if total != int64(n*(n+1)/2) || data.Errors != total || data.PagesWithErrors != n || len(data.Pages) != events.MaxCrawlerErrorPages {
		t.Fatalf("total %d, data %+v", total, data)
	}
	if data.Pages[0].Path != fmt.Sprintf("/p%02d", n-1) || data.Pages[len(data.Pages)-1].Errors != 6 {
		t.Errorf("pages %+v: want the most errors first", data.Pages)
	}
	if data.ClientID == nil || *data.ClientID != "cli_1" {
		t.Errorf("client_id %v", data.ClientID)
	}
}
