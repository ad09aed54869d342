package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestEventsPaged: GET /v1/events pages with a cursor over every event
// kept: page by page it lists each event once, newest first, has_more
// true until the last page; with a kind it pages that kind's; a cursor it
// did not return is 400 on cursor.
func TestEventsPaged(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir)

	var made []string // the events, oldest first
	for i := range 7 {
		r := s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(k),
			body: fmt.Sprintf(`{"domain":"example.com","visibility_score":%d,"sentiment":"neutral"}`, 10+i)})
		var rd struct {
			EventID string `json:"event_id"`
		}
		r.decode(t, &rd)
		if r.Status != 201 || rd.EventID == "" {
			t.Fatalf("reading %d: %d %s", i, r.Status, r.Body)
		}
		made = append(made, rd.EventID)
	}
	slices.Reverse(made)

	type page struct {
		Items []struct {
			ID string `json:"id"`
		}
		HasMore    bool    `json:"has_more"`
		NextCursor *string `json:"next_cursor"`
	}
	walk := func(query string, limit int) []string {
		t.Helper()
		var ids []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > len(made) {
				t.Fatalf("%s: more than %d pages", query, len(made))
			}
			path := fmt.Sprintf("/v1/events?%slimit=%d", query, limit)
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			var p page
			r := s.do(t, req{method: "GET", path: path, header: bearer(k)})
			r.decode(t, &p)
			if r.Status != 200 || p.HasMore != (p.NextCursor != nil) || len(p.Items) > limit {
				t.Fatalf("%s: %d %s", path, r.Status, r.Body)
			}
			for _, it := range p.Items {
				ids = append(ids, it.ID)
			}
			if !p.HasMore {
				return ids
			}
			if len(p.Items) != limit {
				t.Fatalf("%s: has_more with %d items of %d", path, len(p.Items), limit)
			}
			cursor = *p.NextCursor
		}
	}
	// The fan-out logs an event after the reading's commit: the walks
	// start once it has logged the last.
	waitFor(t, "the events logged", func() bool {
		var p page
		s.do(t, req{method: "GET", path: "/v1/events?limit=100", header: bearer(k)}).decode(t, &p)
		return len(p.Items) == len(made)
	})
	for _, limit := range []int{1, 3, 7, 100} {
		if got := walk("", limit); !slices.Equal(got, made) {
			t.Errorf("by %d: %v\nwant %v", limit, got, made)
		}
	}
	if got := walk("event=ai_visibility_change&", 2); !slices.Equal(got, made) {
		t.Errorf("ai_visibility_change by 2: %v\nwant %v", got, made)
	}
	if got := walk("event=scan_completed&", 2); len(got) != 0 {
		t.Errorf("scan_completed: %v", got)
	}

	for _, bad := range []string{"x", "AAAA", "%FF"} {
		r := s.do(t, req{method: "GET", path: "/v1/events?cursor=" + bad, header: bearer(k)})
		if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" || !strings.Contains(string(r.Body), `"field":"cursor"`) {
			t.Errorf("cursor %q: %d %s", bad, r.Status, r.Body)
		}
	}
}
