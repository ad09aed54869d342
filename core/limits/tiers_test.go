package limits_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
)

const dollar = 1_000_000

// TestTierTableMatchesSpec is service-spec section 8, row by row, with the
// caps on monitored domains, webhooks and connections and the scan
// interval of docs/api.md.
func TestTierTableMatchesSpec(t *testing.T) {
	want := []limits.Tier{
		{Name: "starter", Title: "Starter", PerMinute: 60, PerHour: 1_000, PerDay: 10_000,
			ActiveRequests: 5, MaxBudgetPerRequest: 1_000 * dollar, MonthlyBudget: 5_000 * dollar, MaxDomains: 5, ScanInterval: 7 * 24 * time.Hour,
			MaxWebhooks: 10, MaxConnections: 5, MaxPrompts: 10, MaxMarkets: 1},
		{Name: "professional", Title: "Professional", PerMinute: 120, PerHour: 5_000, PerDay: 50_000,
			ActiveRequests: 20, MaxBudgetPerRequest: 5_000 * dollar, MonthlyBudget: 25_000 * dollar, MaxDomains: 50, ScanInterval: 24 * time.Hour,
			MaxWebhooks: 100, MaxConnections: 25, MaxPrompts: 25, MaxMarkets: 3},
		{Name: "enterprise", Title: "Enterprise", PerMinute: 300, PerHour: 15_000, PerDay: 150_000,
			ActiveRequests: 100, MaxBudgetPerRequest: 20_000 * dollar, MonthlyBudget: 100_000 * dollar, MaxDomains: 500, ScanInterval: 6 * time.Hour,
			MaxWebhooks: 1_000, MaxConnections: 100, MaxPrompts: 100, MaxMarkets: 10},
	}
	for _, w := range want {
		t.Run(w.Name, func(t *testing.T) {
			got, ok := limits.TierByName(w.Name)
			if !ok {
				t.Fatalf("TierByName(%q) not found", w.Name)
			}
			if got != w {
				t.Errorf("tier %s:\n got  %+v\n want %+v", w.Name, got, w)
			}
			if l := got.Limits(); l != [3]int{w.PerMinute, w.PerHour, w.PerDay} {
				t.Errorf("Limits() = %v, want minute, hour, day = %d, %d, %d", l, w.PerMinute, w.PerHour, w.PerDay)
			}
		})
	}
	if got := limits.TierNames(); !slices.Equal(got, []string{"starter", "professional", "enterprise"}) {
		t.Errorf("TierNames() = %v, want cheapest first: starter professional enterprise", got)
	}
}

func TestTierByName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"starter", "starter", true},
		{"Starter", "starter", true},
		{"PROFESSIONAL", "professional", true},
		{"Enterprise", "enterprise", true},
		{"", "", false},
		{"free", "", false},
		{" starter", "", false},
		{"starter ", "", false},
		{"gold", "", false},
	} {
		got, ok := limits.TierByName(tc.in)
		if ok != tc.ok || got.Name != tc.want {
			t.Errorf("TierByName(%q) = %q, %v; want %q, %v", tc.in, got.Name, ok, tc.want, tc.ok)
		}
	}
}

func TestMonthAndMonthEnd(t *testing.T) {
	est := time.FixedZone("EST", -5*3600)
	ist := time.FixedZone("IST", 5*3600+1800)
	for _, tc := range []struct {
		at    time.Time
		month string
		end   time.Time
	}{
		{time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC), "2025-03", time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2025, 12, 31, 23, 59, 59, 999_999_999, time.UTC), "2025-12", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "2026-01", time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)},
		// Local evening of Jan 31 is already February in UTC.
		{time.Date(2025, 1, 31, 20, 0, 0, 0, est), "2025-02", time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)},
		// Local morning of Mar 1 is still February in UTC.
		{time.Date(2024, 3, 1, 3, 0, 0, 0, ist), "2024-02", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC), "2024-02", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if got := limits.Month(tc.at); got != tc.month {
			t.Errorf("Month(%v) = %q, want %q", tc.at, got, tc.month)
		}
		if got := limits.MonthEnd(tc.at); !got.Equal(tc.end) || got.Location() != time.UTC {
			t.Errorf("MonthEnd(%v) = %v, want %v (UTC)", tc.at, got, tc.end)
		}
	}
}

func wantFault(t *testing.T, err error, code fault.Code, status int) *fault.Error {
	t.Helper()
	fe, ok := fault.As(err)
	if !ok {
		t.Fatalf("error %v (%T) is not a *fault.Error; want %s", err, err, code)
	}
	if fe.Code != code {
		t.Fatalf("code %s (%s), want %s", fe.Code, fe.Message, code)
	}
	if fe.Code.Status() != status {
		t.Fatalf("%s has status %d, want %d", code, fe.Code.Status(), status)
	}
	return fe
}

func TestCheckRequestBudget(t *testing.T) {
	for _, name := range limits.TierNames() {
		tier, _ := limits.TierByName(name)
		t.Run(name, func(t *testing.T) {
			for _, ok := range []int64{1, dollar, tier.MaxBudgetPerRequest - 1, tier.MaxBudgetPerRequest} {
				if err := tier.CheckRequestBudget(ok); err != nil {
					t.Errorf("CheckRequestBudget(%d) = %v, want nil", ok, err)
				}
			}
			for _, over := range []int64{tier.MaxBudgetPerRequest + 1, tier.MaxBudgetPerRequest + dollar, tier.MonthlyBudget} {
				fe := wantFault(t, tier.CheckRequestBudget(over), fault.BudgetExceedsTierLimit, http.StatusUnprocessableEntity)
				if len(fe.Details) != 1 || fe.Details[0].Field != "budget" {
					t.Errorf("details %+v, want one about budget", fe.Details)
				}
				if !strings.Contains(fe.Message, tier.Title) {
					t.Errorf("message %q does not name the tier %s", fe.Message, tier.Title)
				}
			}
		})
	}
	starter, _ := limits.TierByName("starter")
	fe, _ := fault.As(starter.CheckRequestBudget(1_234*dollar + 500_000))
	if !strings.Contains(fe.Message, "$1,234.50") || !strings.Contains(fe.Message, "$1,000") {
		t.Errorf("message %q: want the amounts as $1,234.50 and $1,000", fe.Message)
	}
	fe, _ = fault.As(starter.CheckRequestBudget(1_000*dollar + 1))
	if !strings.Contains(fe.Message, "$1,000.000001") {
		t.Errorf("message %q: want the amount as $1,000.000001", fe.Message)
	}
}

func TestCheckNewRequest(t *testing.T) {
	starter, _ := limits.TierByName("starter")
	pro, _ := limits.TierByName("professional")
	for _, tc := range []struct {
		name      string
		tier      limits.Tier
		active    int
		committed int64
		budget    int64
		want      fault.Code // "" for allowed
	}{
		{"empty month", starter, 0, 0, 1_000 * dollar, ""},
		{"one below active limit", starter, 4, 0, dollar, ""},
		{"at active limit", starter, 5, 0, dollar, fault.ActiveRequestLimit},
		{"past active limit", starter, 9, 0, dollar, fault.ActiveRequestLimit},
		{"active limit checked first", starter, 5, 5_000 * dollar, dollar, fault.ActiveRequestLimit},
		{"exactly the monthly limit", starter, 0, 4_000 * dollar, 1_000 * dollar, ""},
		{"one micro-dollar over", starter, 0, 4_000 * dollar, 1_000*dollar + 1, fault.MonthlyBudgetExceeded},
		{"already at the limit", starter, 0, 5_000 * dollar, 1, fault.MonthlyBudgetExceeded},
		{"already past the limit", starter, 0, 6_000 * dollar, 1, fault.MonthlyBudgetExceeded},
		{"professional boundary", pro, 19, 20_000 * dollar, 5_000 * dollar, ""},
		{"professional over", pro, 0, 20_000*dollar + 1, 5_000 * dollar, fault.MonthlyBudgetExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.tier.CheckNewRequest(tc.active, tc.committed, tc.budget)
			switch tc.want {
			case "":
				if err != nil {
					t.Fatalf("CheckNewRequest = %v, want allowed", err)
				}
			case fault.ActiveRequestLimit:
				wantFault(t, err, tc.want, http.StatusTooManyRequests)
			case fault.MonthlyBudgetExceeded:
				wantFault(t, err, tc.want, http.StatusPaymentRequired)
			}
		})
	}
	fe, _ := fault.As(starter.CheckNewRequest(0, 4_500*dollar, 600*dollar))
	for _, s := range []string{"$600", "$5,000", "$4,500", "$500"} {
		if !strings.Contains(fe.Message, s) {
			t.Errorf("monthly message %q lacks %s", fe.Message, s)
		}
	}
	fe, _ = fault.As(starter.CheckNewRequest(0, 6_000*dollar, dollar))
	if !strings.Contains(fe.Message, "$0 remains") {
		t.Errorf("monthly message %q: what remains is never negative, want $0 remains", fe.Message)
	}
}

// A webhook or connection past the tier's cap is refused with 403 and a
// code of its own that names the cap.
func TestCheckNewWebhookAndConnection(t *testing.T) {
	for _, name := range limits.TierNames() {
		tier, _ := limits.TierByName(name)
		for _, tc := range []struct {
			check func(int) error
			cap   int
			code  fault.Code
			noun  string
		}{
			{tier.CheckNewWebhook, tier.MaxWebhooks, fault.WebhookLimitReached, "webhooks"},
			{tier.CheckNewConnection, tier.MaxConnections, fault.ConnectionLimitReached, "connections"},
		} {
			for _, n := range []int{0, tc.cap - 1} {
				if err := tc.check(n); err != nil {
					t.Errorf("%s with %d %s: %v", name, n, tc.noun, err)
				}
			}
			for _, n := range []int{tc.cap, tc.cap + 1} {
				fe := wantFault(t, tc.check(n), tc.code, http.StatusForbidden)
				if !strings.Contains(fe.Message, fmt.Sprintf("%s tier allows %d %s", tier.Title, tc.cap, tc.noun)) {
					t.Errorf("message %q", fe.Message)
				}
			}
		}
	}
}
