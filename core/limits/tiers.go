// Package limits holds every quota rule of aivis: the tiers, the three
// fixed rate-limit windows, the active-request limit and the budgets.
package limits

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aivis/aivis/core/fault"
)

// Tier is a quota tier (service spec section 8). Amounts are micro-dollars.
type Tier struct {
	Name                string // as stored and given to the CLI: "starter"
	Title               string // as the API shows it: "Starter"
	PerMinute           int
	PerHour             int
	PerDay              int
	ActiveRequests      int
	MaxBudgetPerRequest int64
	MonthlyBudget       int64
	MaxDomains          int           // monitored domains, the account's and its clients'
	ScanInterval        time.Duration // between scheduled scans of a monitored domain
	// MaxWebhooks and MaxConnections cap the webhooks and the connections
	// (Zapier subscriptions included) of an account, its clients' too:
	// each event is sent to each of them.
	MaxWebhooks    int
	MaxConnections int
	// MaxPrompts caps the owner's own prompts of each monitored domain:
	// each is asked of every engine, several times, at every scan.
	MaxPrompts int
	// MaxMarkets caps the markets of each monitored domain: every prompt
	// is asked in each.
	MaxMarkets int
}

const dollar = 1_000_000

var tiers = map[string]Tier{
	"starter":      {"starter", "Starter", 60, 1_000, 10_000, 5, 1_000 * dollar, 5_000 * dollar, 5, 7 * 24 * time.Hour, 10, 5, 10, 1},
	"professional": {"professional", "Professional", 120, 5_000, 50_000, 20, 5_000 * dollar, 25_000 * dollar, 50, 24 * time.Hour, 100, 25, 25, 3},
	"enterprise":   {"enterprise", "Enterprise", 300, 15_000, 150_000, 100, 20_000 * dollar, 100_000 * dollar, 500, 6 * time.Hour, 1_000, 100, 100, 10},
}

// TierByName finds a tier by its stored name, case-insensitively.
func TierByName(name string) (Tier, bool) {
	t, ok := tiers[strings.ToLower(name)]
	return t, ok
}

// TierNames lists the tiers' names, cheapest first.
func TierNames() []string {
	names := make([]string, 0, len(tiers))
	for n := range tiers {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return tiers[names[i]].PerMinute < tiers[names[j]].PerMinute })
	return names
}

// Limits are the tier's per-window request limits, in Window order.
func (t Tier) Limits() [3]int { return [3]int{t.PerMinute, t.PerHour, t.PerDay} }

// BudgetRemaining is what the monthly budget has left once committed
// (spent and reserved) micro-dollars are taken from it; never below zero.
func (t Tier) BudgetRemaining(committed int64) int64 { return max(t.MonthlyBudget-committed, 0) }

// Month is the UTC calendar month a budget is committed to, as YYYY-MM.
func Month(t time.Time) string { return t.UTC().Format("2006-01") }

// MonthEnd is when the month of t ends.
func MonthEnd(t time.Time) time.Time {
	y, m, _ := t.UTC().Date()
	return time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
}

// CheckRequestBudget refuses a budget above the tier's maximum per request.
func (t Tier) CheckRequestBudget(budget int64) error {
	if budget > t.MaxBudgetPerRequest {
		return &fault.Error{Code: fault.BudgetExceedsTierLimit,
			Message: fmt.Sprintf("budget %s exceeds the %s tier's maximum of %s per request", usd(budget), t.Title, usd(t.MaxBudgetPerRequest)),
			Details: []fault.FieldError{{Field: "budget", Message: "must be at most " + usd(t.MaxBudgetPerRequest)}}}
	}
	return nil
}

// ActiveRequestRetry is the wait, in seconds, a refusal for the
// active-request limit asks for. No request's end can be foreseen (an
// analysis takes seconds, an optimization by an engine up to minutes), so
// it is an interval at which to try again, not a promise: a request that
// ends or is cancelled frees its place at once.
const ActiveRequestRetry = 30

// CheckNewRequest decides whether a new content request with this budget may
// start, given the account's active requests and the month's committed
// amount (spent + reserved). Call it in the transaction that creates it.
func (t Tier) CheckNewRequest(active int, committed, budget int64) error {
	if active >= t.ActiveRequests {
		return fault.Wait(fault.ActiveRequestLimit, ActiveRequestRetry,
			"the %s tier allows %d active content requests and %d are queued or processing; wait for one to end or cancel one",
			t.Title, t.ActiveRequests, active)
	}
	if committed+budget > t.MonthlyBudget {
		return fault.New(fault.MonthlyBudgetExceeded,
			"budget %s would pass the %s tier's monthly budget limit of %s: %s is already committed this month and %s remains",
			usd(budget), t.Title, usd(t.MonthlyBudget), usd(committed), usd(t.BudgetRemaining(committed)))
	}
	return nil
}

// CheckNewWebhook refuses one more webhook to an account that has n (its
// clients' included). Call it in the transaction that creates it.
func (t Tier) CheckNewWebhook(n int) error {
	if n >= t.MaxWebhooks {
		return fault.New(fault.WebhookLimitReached, "the %s tier allows %d webhooks (the account's and its clients'); delete one or change the tier",
			t.Title, t.MaxWebhooks)
	}
	return nil
}

// CheckNewConnection refuses one more connection (a Zapier subscription
// is one) to an account that has n (its clients' included). Call it in the
// transaction that creates it.
func (t Tier) CheckNewConnection(n int) error {
	if n >= t.MaxConnections {
		return fault.New(fault.ConnectionLimitReached,
			"the %s tier allows %d connections, Zapier subscriptions included (the account's and its clients'); delete one or change the tier",
			t.Title, t.MaxConnections)
	}
	return nil
}

// CheckPrompts refuses n of an owner's own prompts for one monitored
// domain past the tier's cap.
func (t Tier) CheckPrompts(n int) error {
	if n > t.MaxPrompts {
		return fault.New(fault.PromptLimitReached, "the %s tier allows %d prompts of your own per monitored domain, not %d; remove some or change the tier",
			t.Title, t.MaxPrompts, n)
	}
	return nil
}

// CheckMarkets refuses n markets for one monitored domain past the
// tier's cap.
func (t Tier) CheckMarkets(n int) error {
	if n > t.MaxMarkets {
		return fault.New(fault.MarketLimitReached, "the %s tier scans a monitored domain in at most %d markets, not %d; remove some or change the tier",
			t.Title, t.MaxMarkets, n)
	}
	return nil
}

// usd formats micro-dollars as "$1,234.56" (cents shown when not whole).
func usd(micros int64) string {
	whole := micros / dollar
	frac := micros % dollar
	s := fmt.Sprint(whole)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if frac != 0 {
		f := strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
		if len(f) < 2 {
			f += "0"
		}
		s += "." + f
	}
	return "$" + s
}
