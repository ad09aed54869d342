package main

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
)

// TestUsageEndToEnd: GET /v1/usage lists the requests each key made per
// hour, as the limits counted them, through the real binary: an account
// key sees every key of the account and its clients (client_id and key_id
// narrow), a client key its client's; the hours between from and to; in
// pages or as CSV; another account's key sees none of it, a key without
// budget:read is refused, and bad times and cursors are the envelope.
func TestUsageEndToEnd(t *testing.T) {
	dir := t.TempDir()
	ag := newAccount(t, dir, "enterprise", true)
	c1, c2 := newClients(t, dir, ag.ID)
	reader := newKey(t, dir, ag.ID)
	kA := newKey(t, dir, ag.ID)
	k1 := newKey(t, dir, ag.ID, "--client", c1.ID)
	k2 := newKey(t, dir, ag.ID, "--client", c2.ID)
	narrow := newKey(t, dir, ag.ID, "--scopes", "visibility:read")
	stranger := newKey(t, dir, newAccount(t, dir, "enterprise", false).ID)
	s := start(t, dir, queueOnly...)

	// Each key makes a known number of requests, on either interface.
	made := map[string]int{kA.ID: 3, k1.ID: 5, k2.ID: 2}
	for _, k := range []key{kA, k1, k2} {
		for i := range made[k.ID] {
			if i%2 == 0 {
				budgetStatus(t, s, k)
			} else if r := s.do(t, req{method: "GET", path: "/v1/domains", header: bearer(k)}); r.Status != 200 {
				t.Fatalf("domains: %d %s", r.Status, r.Body)
			}
		}
	}
	counts := func(rows []client.UsageCount) map[string]int {
		out := map[string]int{}
		for _, u := range rows {
			out[u.KeyID] += int(u.Requests)
		}
		return out
	}
	var all []client.UsageCount
	waitLong(t, 15*time.Second, "the counts reach the store", func() bool {
		all = walk[client.UsageCount](t, s, reader, "/v1/usage?")
		c := counts(all)
		return c[kA.ID] == 3 && c[k1.ID] == 5 && c[k2.ID] == 2
	})
	hour := time.Now().UTC().Truncate(time.Hour)
	for _, u := range all {
		if u.Hour.After(hour) || u.Hour.Before(hour.Add(-time.Hour)) || u.Hour.Minute() != 0 || u.Requests < 1 {
			t.Errorf("a count of another hour, or of none: %+v", u)
		}
		if u.KeyHint == "" || u.KeyName != "test key" {
			t.Errorf("a count without its key's name and hint: %+v", u)
		}
		want := map[string]string{k1.ID: c1.ID, k2.ID: c2.ID}[u.KeyID]
		if (want == "") != (u.ClientID == nil) || (u.ClientID != nil && *u.ClientID != want) {
			t.Errorf("%s counted for the client %v, want %q", u.KeyID, u.ClientID, want)
		}
	}
	if c := counts(all); c[reader.ID] < 1 || c[narrow.ID] != 0 || len(c) != 4 {
		t.Errorf("the account key sees %v; want its own reads too and no more keys", c)
	}
	if !slices.IsSortedFunc(all, func(a, b client.UsageCount) int {
		if c := a.Hour.Compare(b.Hour); c != 0 {
			return c
		}
		return strings.Compare(a.KeyID, b.KeyID)
	}) {
		t.Errorf("not oldest hour first, by key within an hour: %+v", all)
	}

	// Narrowed by client, by key, by the hours.
	for _, tc := range []struct {
		query string
		want  map[string]int
	}{
		{"client_id=" + c1.ID, map[string]int{k1.ID: 5}},
		{"key_id=" + kA.ID, map[string]int{kA.ID: 3}},
		{"client_id=" + c2.ID + "&key_id=" + k1.ID, map[string]int{}},
		{"from=" + url.QueryEscape(hour.Add(time.Hour).Format(time.RFC3339)), map[string]int{}},
		{"from=" + url.QueryEscape(hour.Add(-48*time.Hour).Format(time.RFC3339)) + "&to=" + url.QueryEscape(hour.Add(-time.Hour).Format(time.RFC3339)), map[string]int{}},
	} {
		c := counts(walk[client.UsageCount](t, s, reader, "/v1/usage?"+tc.query))
		delete(c, reader.ID)
		if !maps.Equal(c, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, c, tc.want)
		}
	}

	// In pages of one, the same rows; as CSV, the same again.
	var paged []client.UsageCount
	cursor := ""
	for range len(all) + 5 {
		var page client.List[client.UsageCount]
		p := "/v1/usage?limit=1&client_id=" + c1.ID
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		s.do(t, req{method: "GET", path: p, header: bearer(reader)}).decode(t, &page)
		paged = append(paged, page.Items...)
		if !page.HasMore {
			break
		}
		cursor = *page.NextCursor
	}
	if c := counts(paged); !maps.Equal(c, map[string]int{k1.ID: 5}) {
		t.Errorf("client 1 in pages of one: %v", c)
	}
	header, rows := readCSV(t, s.do(t, req{method: "GET", path: "/v1/usage?format=csv&key_id=" + k1.ID, header: bearer(reader)}))
	if !slices.Equal(header, []string{"hour", "key_id", "key_name", "key_hint", "client_id", "requests"}) {
		t.Errorf("usage header %v", header)
	}
	total := 0
	for _, row := range rows {
		n, _ := strconv.Atoi(row[5])
		total += n
		if row[1] != k1.ID || row[4] != c1.ID || row[2] != "test key" {
			t.Errorf("CSV row %q", row)
		}
		if _, err := time.Parse(time.RFC3339, row[0]); err != nil {
			t.Errorf("hour %q: %v", row[0], err)
		}
	}
	if total != 5 {
		t.Errorf("client 1's key in the CSV: %d requests, want 5", total)
	}

	// A client key sees its client's keys only; another account's key
	// none; a key without budget:read is refused.
	if c := counts(walk[client.UsageCount](t, s, k2, "/v1/usage?")); c[k2.ID] < 2 || len(c) != 1 {
		t.Errorf("client 2's key sees %v", c)
	}
	if c := counts(walk[client.UsageCount](t, s, k2, "/v1/usage?client_id="+c1.ID)); len(c) != 0 {
		t.Errorf("client 2's key naming client 1 sees %v", c)
	}
	if c := counts(walk[client.UsageCount](t, s, stranger, "/v1/usage?key_id="+kA.ID)); len(c) != 0 {
		t.Errorf("another account's key sees %v", c)
	}
	if r := s.do(t, req{method: "GET", path: "/v1/usage", header: bearer(narrow)}); r.Status != 403 || r.errorCode(t) != "INSUFFICIENT_SCOPE" {
		t.Errorf("a key without budget:read: %d %s", r.Status, r.Body)
	}
	for _, tc := range []struct{ query, field string }{
		{"from=yesterday", "from"},
		{"to=2026-13-01T00:00:00Z", "to"},
		{"from=1999-12-31T00:00:00Z", "from"},
		{"from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z", "to"},
		{"cursor=bm90IGEgY3Vyc29y", "cursor"},
		{"format=csv&cursor=bm90IGEgY3Vyc29y", "cursor"},
		{"limit=101", "limit"},
	} {
		r := s.do(t, req{method: "GET", path: "/v1/usage?" + tc.query, header: bearer(reader)})
		var e client.ErrorEnvelope
		r.decode(t, &e)
		if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" || len(e.Error.Details) != 1 || e.Error.Details[0].Field != tc.field {
			t.Errorf("%s: %d %s", tc.query, r.Status, r.Body)
		}
	}
}
