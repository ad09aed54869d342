package traffic_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/traffic"
	"github.com/aivis/aivis/core/traffic/trafficfake"
)

func TestParseListShapes(t *testing.T) {
	cases := []struct {
		name    string
		data    string
		want    []string
		created time.Time
	}{
		{"timezoneless, mixed v4 and v6, a /32", trafficfake.TimezonelessList,
			[]string{"2001:4860:4801:10::/64", "66.249.64.0/27", "44.208.221.197/32"},
			time.Date(2026, 1, 14, 15, 45, 48, 0, time.UTC)},
		{"Common Crawl: extra keys, Z", trafficfake.CommonCrawlList,
			[]string{"2600:1f28:365:80b0::/60", "18.97.9.168/29", "98.85.178.216/32"},
			time.Date(2026, 8, 4, 12, 40, 20, 0, time.UTC)},
		{"microseconds kept", `{"creationTime":"2025-10-02T23:02:08.714652","prefixes":[{"ipv4Prefix":"23.98.142.176/28"}]}`,
			[]string{"23.98.142.176/28"}, time.Date(2025, 10, 2, 23, 2, 8, 714652000, time.UTC)},
		{"an offset", `{"creationTime":"2026-01-14T17:45:48+02:00","prefixes":[{"ipv4Prefix":"10.0.0.0/8"}]}`,
			[]string{"10.0.0.0/8"}, time.Date(2026, 1, 14, 15, 45, 48, 0, time.UTC)},
		{"no creationTime, a number where a string was", `{"creationTime":12,"prefixes":[{"ipv4Prefix":"10.0.0.0/8"}]}`,
			[]string{"10.0.0.0/8"}, time.Time{}},
		{"odd prefixes", "\ufeff" + ` {"prefixes":[
			{"ipv4Prefix":" 192.0.2.1 "},
			{"ipv4Prefix":"2001:db8::/32"},
			{"ipv6Prefix":"198.51.100.77/24"},
			{"cidr":"203.0.113.0/25"},
			{"ipv4Prefix":"not an address","ipv6Prefix":"2001:db8:1::1"},
			{"ipv4Prefix":"::ffff:192.0.2.0/120"},
			{"ipv4Prefix":"300.1.1.1/24"},
			{"comment":"nothing here"},
			{"ipv4Prefix":17}]}`,
			[]string{"192.0.2.1/32", "2001:db8::/32", "198.51.100.0/24", "203.0.113.0/25", "2001:db8:1::1/128", "192.0.2.0/24"},
			time.Time{}},
	}
	for _, tc := range cases {
		got, created, err := traffic.ParseList([]byte(tc.data))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var s []string
		for _, p := range got {
			s = append(s, p.String())
		}
		if strings.Join(s, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: prefixes %v, want %v", tc.name, s, tc.want)
		}
		if !created.Equal(tc.created) {
			t.Errorf("%s: created %v, want %v", tc.name, created, tc.created)
		}
	}
}

func TestParseListRefuses(t *testing.T) {
	cases := []struct {
		name string
		data string
		want error
	}{
		{"HTML page", trafficfake.HTMLErrorPage, traffic.ErrHTML},
		{"HTML after blanks", "\n  <html><body>503</body></html>", traffic.ErrHTML},
		{"empty list", trafficfake.EmptyList, traffic.ErrEmptyList},
		{"no prefixes key", `{"creationTime":"2026-01-14T15:45:48.000000"}`, traffic.ErrEmptyList},
		{"no prefix parses", `{"prefixes":[{"ipv4Prefix":"x"},{"ipv6Prefix":""}]}`, traffic.ErrEmptyList},
		{"empty body", "", nil},
		{"not JSON", "Service Unavailable", nil},
		{"truncated", `{"prefixes":[{"ipv4Prefix":"10.0.0.0/8"}`, nil},
		{"prefixes not an array", `{"prefixes":{"ipv4Prefix":"10.0.0.0/8"}}`, nil},
	}
	for _, tc := range cases {
		_, _, err := traffic.ParseList([]byte(tc.data))
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestRangesContains(t *testing.T) {
	r, err := traffic.NewRanges(map[string][]byte{
		"a": []byte(`{"prefixes":[{"ipv4Prefix":"10.0.0.0/24"},{"ipv4Prefix":"10.0.1.0/24"},{"ipv4Prefix":"10.0.0.128/25"},
			{"ipv4Prefix":"192.0.2.9/32"},{"ipv4Prefix":"255.255.255.0/24"},
			{"ipv6Prefix":"2001:db8::/127"},{"ipv6Prefix":"2600:1f28:365:80b0::/60"},{"ipv6Prefix":"ffff::/16"}]}`),
		"b": []byte(`{"prefixes":[{"ipv4Prefix":"0.0.0.0/0"}]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	in := []string{"10.0.0.0", "10.0.0.255", "10.0.1.0", "10.0.1.255", "192.0.2.9", "255.255.255.255",
		"2001:db8::", "2001:db8::1", "2600:1f28:365:80b0::", "2600:1f28:365:80bf:ffff:ffff:ffff:ffff",
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::ffff:10.0.0.7"}
	out := []string{"9.255.255.255", "10.0.2.0", "192.0.2.8", "192.0.2.10", "255.255.254.255", "2001:db8::2",
		"2600:1f28:365:80af:ffff:ffff:ffff:ffff", "2600:1f28:365:80c0::", "fffe::1", "::a00:7"}
	for _, s := range in {
		if !r.Contains("a", netip.MustParseAddr(s)) {
			t.Errorf("%s not in a", s)
		}
	}
	for _, s := range out {
		if r.Contains("a", netip.MustParseAddr(s)) {
			t.Errorf("%s in a", s)
		}
	}
	if !r.Contains("b", netip.MustParseAddr("203.0.113.1")) || r.Contains("b", netip.MustParseAddr("2001:db8::1")) {
		t.Error("0.0.0.0/0 holds every v4 address and no v6 one")
	}
	if r.Contains("c", netip.MustParseAddr("10.0.0.1")) || r.Contains("a", netip.Addr{}) {
		t.Error("a missing list or an invalid address is contained")
	}
	if got := r.Names(); strings.Join(got, ",") != "a,b" {
		t.Errorf("Names = %v", got)
	}
	if r.Len("a") != 8 {
		t.Errorf("Len(a) = %d, want 8", r.Len("a"))
	}
	if _, err := traffic.NewRanges(map[string][]byte{"good": []byte(trafficfake.OpenAIList), "broken": []byte(trafficfake.HTMLErrorPage)}); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("NewRanges with a broken list: %v", err)
	}
}

func TestMergeOverrideWinsByName(t *testing.T) {
	base, err := traffic.NewRanges(map[string][]byte{"x": []byte(trafficfake.OpenAIList), "y": []byte(trafficfake.CommonCrawlList)})
	if err != nil {
		t.Fatal(err)
	}
	over, err := traffic.NewRanges(map[string][]byte{"x": []byte(trafficfake.ReplacementList), "z": []byte(trafficfake.TimezonelessList)})
	if err != nil {
		t.Fatal(err)
	}
	m := traffic.Merge(base, over)
	check := func(list, ip string, want bool) {
		t.Helper()
		if got := m.Contains(list, netip.MustParseAddr(ip)); got != want {
			t.Errorf("merged %s holds %s: %v, want %v", list, ip, got, want)
		}
	}
	check("x", "198.51.100.1", true)
	check("x", "20.171.206.1", false)
	check("y", "98.85.178.216", true)
	check("z", "66.249.64.1", true)
	if !base.Contains("x", netip.MustParseAddr("20.171.206.1")) {
		t.Error("Merge changed base")
	}
	if got := traffic.Merge(nil, nil).Names(); len(got) != 0 {
		t.Errorf("Merge(nil, nil) = %v", got)
	}
}

func TestSnapshot(t *testing.T) {
	s := traffic.Snapshot()
	for _, name := range []string{traffic.ListOpenAIGPTBot, traffic.ListOpenAISearchBot, traffic.ListOpenAIChatGPTUser,
		traffic.ListPerplexityUser, traffic.ListGoogleGooglebot, traffic.ListGoogleSpecial, traffic.ListGoogleUserFetchersG, traffic.ListGoogleUserFetchers,
		traffic.ListAppleApplebot, traffic.ListCommonCrawlCCBot, traffic.ListDuckAssistBot, traffic.ListMistralAIUser} {
		if !s.Has(name) || s.Len(name) == 0 || s.Created(name).IsZero() {
			t.Errorf("snapshot %s: has %v, %d prefixes, created %v", name, s.Has(name), s.Len(name), s.Created(name))
		}
	}
	for _, name := range []string{traffic.ListPerplexityBot, traffic.ListAnthropicBots, traffic.ListMicrosoftBingbot, traffic.ListGoogleUserAgents} {
		if s.Has(name) {
			t.Errorf("snapshot has %s, which the mirror lacks", name)
		}
	}
	if got := s.Created(traffic.ListOpenAIGPTBot); !got.Equal(time.Date(2025, 5, 22, 11, 51, 0, 0, time.UTC)) {
		t.Errorf("gptbot created %v", got)
	}
	if s.Len(traffic.ListGoogleGooglebot) != 307 || s.Len(traffic.ListOpenAIChatGPTUser) != 139 {
		t.Errorf("googlebot %d prefixes, chatgpt-user %d", s.Len(traffic.ListGoogleGooglebot), s.Len(traffic.ListOpenAIChatGPTUser))
	}
}
