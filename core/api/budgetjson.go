package api

import (
	"strconv"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/internal/jsonstr"
)

// appendBudgetStatus appends budget-status's answer, the envelope
// included, byte for byte as encoding/json writes it
// (TestBudgetStatusJSONIsEncodingJSONs): the API's most frequent answer,
// written without reflection and without a compaction of each amount.
func appendBudgetStatus(b []byte, bs client.BudgetStatus) []byte {
	num := func(b []byte, name string, n int64) []byte {
		b = append(b, name...)
		return strconv.AppendInt(b, n, 10)
	}
	usd := func(b []byte, name string, u client.USD) []byte {
		return u.Append(append(b, name...))
	}
	b = append(b, `{"success":true,"data":{"quota_tier":`...)
	b = jsonstr.Append(b, bs.QuotaTier)
	l, u, r, rs := bs.RateLimits, bs.Usage, bs.Remaining, bs.Resets
	b = num(b, `,"rate_limits":{"per_minute":`, int64(l.PerMinute))
	b = num(b, `,"per_hour":`, int64(l.PerHour))
	b = num(b, `,"per_day":`, int64(l.PerDay))
	b = num(b, `},"usage":{"requests_today":`, int64(u.RequestsToday))
	b = num(b, `,"requests_this_hour":`, int64(u.RequestsThisHour))
	b = num(b, `,"requests_this_minute":`, int64(u.RequestsThisMinute))
	b = num(b, `},"remaining":{"today":`, int64(r.Today))
	b = num(b, `,"this_hour":`, int64(r.ThisHour))
	b = num(b, `,"this_minute":`, int64(r.ThisMinute))
	b = num(b, `},"resets":{"minute":`, rs.Minute)
	b = num(b, `,"hour":`, rs.Hour)
	b = num(b, `,"day":`, rs.Day)
	bu := bs.Budget
	b = jsonstr.Append(append(b, `},"budget":{"currency":`...), bu.Currency)
	b = jsonstr.Append(append(b, `,"month":`...), bu.Month)
	b = usd(b, `,"monthly_limit":`, bu.MonthlyLimit)
	b = usd(b, `,"spent":`, bu.Spent)
	b = usd(b, `,"reserved":`, bu.Reserved)
	b = usd(b, `,"committed":`, bu.Committed)
	b = usd(b, `,"remaining":`, bu.Remaining)
	b = usd(b, `,"max_per_request":`, bu.MaxPerRequest)
	b = append(bu.ResetsAt.AppendFormat(append(b, `,"resets_at":"`...), time.RFC3339Nano), '"')
	b = num(b, `},"active_requests":{"limit":`, int64(bs.ActiveRequests.Limit))
	b = num(b, `,"current":`, int64(bs.ActiveRequests.Current))
	b = jsonstr.Append(append(b, `},"account_id":`...), bs.AccountID)
	b = append(b, `,"client_id":`...)
	if bs.ClientID == nil {
		b = append(b, "null"...)
	} else {
		b = jsonstr.Append(b, *bs.ClientID)
	}
	return append(b, "}}"...)
}
