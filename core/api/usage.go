package api

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/csvexport"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
)

// usageDefaultSpan is how far back GET /v1/usage reads without from.
const usageDefaultSpan = 30 * 24 * time.Hour

// usageColumns are the columns of usage as CSV, usageRow a count's row.
var usageColumns = []string{"hour", "key_id", "key_name", "key_hint", "client_id", "requests"}

func usageRow(u client.UsageCount) []string {
	return []string{csvexport.Time(u.Hour), u.KeyID, u.KeyName, u.KeyHint, csvexport.String(u.ClientID), strconv.FormatInt(u.Requests, 10)}
}

// usageHours reads the from and to of a usage query: RFC 3339 times,
// from before to; without from, usageDefaultSpan before now.
func usageHours(q url.Values, now time.Time) (from, to time.Time, err error) {
	var fields []fault.FieldError
	read := func(name string) time.Time {
		v := q.Get(name)
		if v == "" {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil || t.Year() < 2000 || t.Year() > 9999 {
			fields = append(fields, fault.FieldError{Field: name, Message: "must be an RFC 3339 time from the year 2000 on, such as 2026-11-01T00:00:00Z"})
		}
		return t.UTC()
	}
	from, to = read("from"), read("to")
	if from.IsZero() && len(fields) == 0 {
		from = now.Add(-usageDefaultSpan).Truncate(time.Hour)
	}
	if len(fields) == 0 && !to.IsZero() && !from.Before(to) {
		fields = append(fields, fault.FieldError{Field: "to", Message: "must be later than from"})
	}
	if len(fields) > 0 {
		return from, to, fault.Invalid(fields...)
	}
	return from, to, nil
}

// listUsage answers the requests made per key and hour: the account's and
// every client's keys to an account key (client_id narrows), a client
// key's client's to it.
func (s *Server) listUsage(w http.ResponseWriter, r *http.Request) {
	p, q := principal(r), r.URL.Query()
	from, to, err := usageHours(q, s.now())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	owner, all, ok := accounts.ListScope(p, q.Get("client_id"))
	var keys map[string]store.Key
	answerList(s, w, r, "usage", usageColumns, usageRow, func(cursor string, limit int) ([]client.UsageCount, string, error) {
		if !ok {
			return nil, "", nil
		}
		us, next, err := s.store.ListUsage(r.Context(), store.UsageFilter{AccountID: p.AccountID(), ClientID: owner, AllClients: all,
			KeyID: q.Get("key_id"), From: from, To: to, Cursor: cursor, Limit: limit})
		if err = accounts.CursorError(err); err != nil {
			return nil, "", err
		}
		if keys == nil && len(us) > 0 {
			ks, err := s.store.ListKeys(r.Context(), p.AccountID())
			if err != nil {
				return nil, "", err
			}
			keys = make(map[string]store.Key, len(ks))
			for _, k := range ks {
				keys[k.ID] = k
			}
		}
		out := make([]client.UsageCount, 0, len(us))
		for _, u := range us {
			k := keys[u.KeyID]
			out = append(out, client.UsageCount{Hour: u.Hour, KeyID: u.KeyID, KeyName: k.Name, KeyHint: k.Hint,
				ClientID: optional(u.ClientID), Requests: u.Count})
		}
		return out, next, nil
	})
}
