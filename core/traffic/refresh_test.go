package traffic_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/traffic"
	"github.com/aivis/aivis/core/traffic/trafficfake"
)

func TestRefreshKeepsLastGoodList(t *testing.T) {
	fake := trafficfake.New(map[string][]trafficfake.Response{
		"/gptbot.json":          {trafficfake.List(trafficfake.ReplacementList)},
		"/searchbot.json":       {trafficfake.Status(http.StatusNotFound)},
		"/chatgpt-user.json":    {trafficfake.Status(http.StatusInternalServerError)},
		"/perplexity-user.json": {trafficfake.HTML(http.StatusServiceUnavailable)},
		"/duckassistbot.json":   {trafficfake.HTMLAsJSON()},
		"/mistralai.json":       {trafficfake.List(trafficfake.EmptyList)},
		"/ccbot.json":           {trafficfake.List(`{"prefixes":[{"ipv4Prefix":"18.97.9.168/29"}`)},
		"/googlebot.json":       {trafficfake.List(trafficfake.TimezonelessList)},
		"/new.json":             {trafficfake.List(trafficfake.CommonCrawlList)},
	})
	defer fake.Close()
	urls := map[string]string{
		traffic.ListOpenAIGPTBot:      fake.ListURL("/gptbot.json"),
		traffic.ListOpenAISearchBot:   fake.ListURL("/searchbot.json") + "?token=s3cr3t",
		traffic.ListOpenAIChatGPTUser: fake.ListURL("/chatgpt-user.json"),
		traffic.ListPerplexityUser:    fake.ListURL("/perplexity-user.json"),
		traffic.ListDuckAssistBot:     fake.ListURL("/duckassistbot.json"),
		traffic.ListMistralAIUser:     fake.ListURL("/mistralai.json"),
		traffic.ListCommonCrawlCCBot:  fake.ListURL("/ccbot.json"),
		traffic.ListGoogleGooglebot:   fake.ListURL("/googlebot.json"),
		"brand-new":                   fake.ListURL("/new.json"),
	}
	last := traffic.Snapshot()
	got, errs := traffic.Refresh(context.Background(), fake.Client(), urls, last)

	// The failures, each naming its list and status, none the URL.
	want := map[string]string{
		traffic.ListOpenAISearchBot:   "status 404",
		traffic.ListOpenAIChatGPTUser: "status 500",
		traffic.ListPerplexityUser:    "status 503",
		traffic.ListDuckAssistBot:     "HTML",
		traffic.ListMistralAIUser:     "no prefixes",
		traffic.ListCommonCrawlCCBot:  "not a JSON IP list",
	}
	if len(errs) != len(want) {
		t.Errorf("%d errors, want %d: %v", len(errs), len(want), errs)
	}
	for _, err := range errs {
		var le *traffic.ListError
		if !errors.As(err, &le) {
			t.Errorf("%v is not a *ListError", err)
			continue
		}
		if w, ok := want[le.List]; !ok || !strings.Contains(err.Error(), w) || !strings.Contains(err.Error(), le.List) {
			t.Errorf("list %s: %q, want it to say %q", le.List, err, w)
		}
		if msg := err.Error(); strings.Contains(msg, "s3cr3t") || strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "http") {
			t.Errorf("error names the URL: %q", msg)
		}
	}

	contains := func(r *traffic.Ranges, list, ip string) bool { return r.Contains(list, netip.MustParseAddr(ip)) }
	// Replaced: GPTBot's fresh list; Googlebot's (v6 in it); a new list.
	if !contains(got, traffic.ListOpenAIGPTBot, "198.51.100.9") || contains(got, traffic.ListOpenAIGPTBot, "20.171.206.7") {
		t.Error("gptbot not replaced by the fresh list")
	}
	if !contains(got, traffic.ListGoogleGooglebot, "2001:4860:4801:10::1") || contains(got, traffic.ListGoogleGooglebot, "66.249.79.1") {
		t.Error("googlebot not replaced")
	}
	if !got.Has("brand-new") {
		t.Error("a list new in the configuration is missing")
	}
	// Kept: every failed list as it was; lists not configured.
	for list, ip := range map[string]string{
		traffic.ListOpenAISearchBot:   "74.7.228.200",
		traffic.ListOpenAIChatGPTUser: "23.98.142.177",
		traffic.ListPerplexityUser:    "44.208.221.197",
		traffic.ListDuckAssistBot:     "20.191.44.22",
		traffic.ListMistralAIUser:     "51.12.243.114",
		traffic.ListCommonCrawlCCBot:  "98.85.178.216",
		traffic.ListAppleApplebot:     "17.241.75.1",
	} {
		if !contains(got, list, ip) {
			t.Errorf("%s lost its last good copy", list)
		}
	}
	if !contains(last, traffic.ListOpenAIGPTBot, "20.171.206.7") {
		t.Error("Refresh changed last")
	}
	if v := fake.Violations(); len(v) != 0 {
		t.Errorf("the fake saw bad requests: %v", v)
	}
}

// TestRefreshRecovers: a list failing, then good, is kept, then replaced;
// with no last copy a failure leaves the list out.
func TestRefreshRecovers(t *testing.T) {
	fake := trafficfake.New(map[string][]trafficfake.Response{
		"/gptbot.json": {trafficfake.Status(http.StatusBadGateway), trafficfake.List(trafficfake.ReplacementList)},
	})
	defer fake.Close()
	urls := map[string]string{traffic.ListOpenAIGPTBot: fake.ListURL("/gptbot.json")}

	empty, errs := traffic.Refresh(context.Background(), fake.Client(), urls, nil)
	if len(errs) != 1 || empty == nil || empty.Has(traffic.ListOpenAIGPTBot) {
		t.Fatalf("no last copy, failing: %v, has %v", errs, empty.Has(traffic.ListOpenAIGPTBot))
	}
	fake.Script("/gptbot.json", trafficfake.Status(http.StatusBadGateway), trafficfake.List(trafficfake.ReplacementList))
	first, errs := traffic.Refresh(context.Background(), fake.Client(), urls, traffic.Snapshot())
	if len(errs) != 1 || !first.Contains(traffic.ListOpenAIGPTBot, netip.MustParseAddr("20.171.206.7")) {
		t.Fatalf("first refresh: %v", errs)
	}
	second, errs := traffic.Refresh(context.Background(), fake.Client(), urls, first)
	if len(errs) != 0 || !second.Contains(traffic.ListOpenAIGPTBot, netip.MustParseAddr("198.51.100.1")) {
		t.Fatalf("second refresh: %v", errs)
	}
	if n := fake.Requests("/gptbot.json"); n != 2 { // since Script restarted the count
		t.Errorf("%d requests, want 2", n)
	}
}

// TestRefreshUnreachable: no server, a timeout, a bad URL: each an error
// naming the list, no address, the last copy kept.
func TestRefreshUnreachable(t *testing.T) {
	closed, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/gptbot.json?key=s3cr3t"
	closed.Close()
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }))
	defer slow.Close()
	defer close(hang) // before Close, which waits for the handler

	urls := map[string]string{
		traffic.ListOpenAIGPTBot:    closedURL,
		traffic.ListOpenAISearchBot: slow.URL + "/searchbot.json",
		traffic.ListPerplexityUser:  "http://user:s3cr3t@[::1/x",
	}
	client := &http.Client{Timeout: 300 * time.Millisecond}
	got, errs := traffic.Refresh(context.Background(), client, urls, traffic.Snapshot())
	if len(errs) != 3 {
		t.Fatalf("%d errors, want 3: %v", len(errs), errs)
	}
	for _, err := range errs {
		msg := err.Error()
		if strings.Contains(msg, "s3cr3t") || strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "::1") {
			t.Errorf("error names the URL or an address: %q", msg)
		}
		if !strings.Contains(msg, "traffic: list ") {
			t.Errorf("error does not name its list: %q", msg)
		}
	}
	if !got.Contains(traffic.ListOpenAIGPTBot, netip.MustParseAddr("20.171.206.7")) ||
		!got.Contains(traffic.ListOpenAISearchBot, netip.MustParseAddr("74.7.228.200")) {
		t.Error("a failed list lost its last copy")
	}
}

// TestFakeChecksItsRequests: the fake's rules catch a bad client.
func TestFakeChecksItsRequests(t *testing.T) {
	fake := trafficfake.New(map[string][]trafficfake.Response{"/l.json": {trafficfake.List(trafficfake.OpenAIList)}})
	defer fake.Close()
	req, _ := http.NewRequest(http.MethodPost, fake.ListURL("/l.json"), strings.NewReader("x"))
	req.Header.Set("Authorization", "Bearer t")
	req.Header.Set("Accept", "text/html")
	resp, err := fake.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = fake.Client().Get(fake.ListURL("/other.json"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unscripted path: %d", resp.StatusCode)
	}
	v := strings.Join(fake.Violations(), "\n")
	for _, want := range []string{"method POST", "a request body", "credentials sent (Authorization)", "does not take JSON", "/other.json: not a list"} {
		if !strings.Contains(v, want) {
			t.Errorf("violations lack %q:\n%s", want, v)
		}
	}
}
