package api

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
)

// budget-status's hand-written answer is what encoding/json writes of the
// same value, for any value: strings that need escaping, amounts of every
// shape, times in any zone, a client or none.
func TestBudgetStatusJSONIsEncodingJSONs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	texts := []string{"", "Enterprise", `a "quoted" \\ one`, "<script>&", "tab\there", "naïve ✓", "\u2028\x00", "acct_9f8e7d"}
	text := func() string { return texts[rng.IntN(len(texts))] }
	n := func() int {
		return []int{0, 1, -1, 300, math.MaxInt32, math.MinInt64, math.MaxInt64, rng.Int()}[rng.IntN(8)]
	}
	usd := func() client.USD {
		return client.USD([]int64{0, 1, 10, 12_500_000, -2_500_000, int64(client.MaxUSD), math.MinInt64, rng.Int64() - rng.Int64()}[rng.IntN(8)])
	}
	zones := []*time.Location{time.UTC, time.FixedZone("UTC+05:45", 5*3600+45*60), time.FixedZone("", -3600)}
	for i := range 2000 {
		at := time.Unix(rng.Int64N(250_000_000_000)-62_000_000_000, rng.Int64N(1e9)*int64(rng.IntN(2))).In(zones[rng.IntN(len(zones))])
		bs := client.BudgetStatus{
			QuotaTier:      text(),
			RateLimits:     client.RateLimits{PerMinute: n(), PerHour: n(), PerDay: n()},
			Usage:          client.RequestUsage{RequestsToday: n(), RequestsThisHour: n(), RequestsThisMinute: n()},
			Remaining:      client.Remaining{Today: n(), ThisHour: n(), ThisMinute: n()},
			Resets:         client.Resets{Minute: int64(n()), Hour: int64(n()), Day: int64(n())},
			Budget:         client.Budget{Currency: text(), Month: text(), MonthlyLimit: usd(), Spent: usd(), Reserved: usd(), Committed: usd(), Remaining: usd(), MaxPerRequest: usd(), ResetsAt: at},
			ActiveRequests: client.ActiveRequests{Limit: n(), Current: n()},
			AccountID:      text(),
		}
		if i%2 == 1 {
			bs.ClientID = optional(text())
		}
		want, err := json.Marshal(envelope(bs))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendBudgetStatus(nil, bs); string(got) != string(want) {
			t.Fatalf("budget-status %+v\n wrote %s\n want  %s", bs, got, want)
		}
	}
}
