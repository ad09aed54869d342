package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe/probefake"
)

// TestScanEndToEnd: a monitored domain is scanned on demand against a
// fake AI engine; the reading appears with its breakdown, and a webhook
// hears ai_visibility_change and scan_completed.
func TestScanEndToEnd(t *testing.T) {
	dir := t.TempDir()
	engine := probefake.New()
	defer engine.Close()
	engine.Answer("fake-model",
		"The best options are Acme (https://acme.invalid/skates) and Globex. Acme is excellent.",
		"I recommend Globex or Initech.")
	cfgFile := scanConfig(t, dir, engine)
	a := newAccount(t, dir, "professional", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--config", cfgFile, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets")

	rc := newHookReceiver(t)
	r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k),
		body: jsonBody(client.CreateWebhook{Domain: "acme.invalid", Events: []string{"ai_visibility_change", "scan_completed"}, URL: rc.URL})})
	if r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	// .invalid never resolves: the readiness audit finds the site
	// unreachable (score 0), and the engines carry the reading.
	r = s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: jsonBody(client.CreateDomain{Domain: "acme.invalid",
		Brands: []string{"Acme"}, Competitors: []string{"Globex", "Initech"}, Prompts: []string{"Which rocket skates should I buy?"}})})
	if r.Status != 201 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	r = s.do(t, req{method: "POST", path: "/v1/visibility/scans", header: bearer(k), body: `{"domain":"nope.invalid"}`})
	if r.Status != 404 {
		t.Fatalf("a scan of an unmonitored domain: %d %s", r.Status, r.Body)
	}
	var sc client.Scan
	r = s.do(t, req{method: "POST", path: "/v1/visibility/scans", header: bearer(k), body: `{"domain":"acme.invalid"}`})
	r.decode(t, &sc)
	if r.Status != 202 || sc.ID == "" || r.Header.Get("Location") != "/v1/visibility/scans/"+sc.ID {
		t.Fatalf("scan: %d %s", r.Status, r.Body)
	}
	waitFor(t, "the scan completed", func() bool {
		s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + sc.ID, header: bearer(k)}).decode(t, &sc)
		return sc.Status == "completed" || sc.Status == "failed"
	})
	if sc.Status != "completed" {
		t.Fatalf("scan %+v", sc)
	}
	var st client.VisibilityStatus
	r = s.do(t, req{method: "GET", path: "/v1/visibility?domain=acme.invalid", header: bearer(k)})
	r.decode(t, &st)
	if r.Status != 200 || st.LastScan == nil || st.LastScan.ID != sc.ID || st.FormulaVersion == nil || *st.FormulaVersion != 3 {
		t.Fatalf("visibility: %d %s", r.Status, r.Body)
	}
	var b struct {
		Basis      string             `json:"basis"`
		Components map[string]float64 `json:"components"`
		Readiness  struct {
			Score    int `json:"score"`
			Findings []struct {
				ID string `json:"id"`
			} `json:"findings"`
		} `json:"readiness"`
		Overall struct {
			Probes  int `json:"probes"`
			Mention struct {
				Value float64 `json:"value"`
			} `json:"mention_rate"`
		} `json:"overall"`
	}
	if err := json.Unmarshal(st.LastScan.Breakdown, &b); err != nil {
		t.Fatal(err)
	}
	// Prompts: the owner's one, then generated ones up to 20 (Acme has
	// competitors but no topics, so no discovery prompts: 1 + comparison 4
	// + branded 2 = 7), asked 3 times: 21 answers, the two canned ones in
	// turn, so the brand is named and cited in 11 of 21.
	if b.Basis != "readiness_and_engines" || b.Readiness.Score != 0 || b.Overall.Probes != 21 || engine.Requests() != 21 {
		t.Fatalf("breakdown %s (engine requests %d)", st.LastScan.Breakdown, engine.Requests())
	}
	if !strings.Contains(string(st.LastScan.Breakdown), "site_unreachable") || b.Overall.Mention.Value != 11.0/21 {
		t.Errorf("breakdown %s", st.LastScan.Breakdown)
	}
	// By hand: readiness 0; mention and citation 11/21; position 1 (Acme
	// is named first whenever named); share of voice 11 of 11 + 21 Globex
	// + 10 Initech = 11/42. 0.30×52.38 + 0.15×52.38 + 0.15×100 + 0.15×26.19
	// = 15.71 + 7.86 + 15 + 3.93 = 42.5, which rounds to 43.
	if st.VisibilityScore != 43 || b.Components["share_of_voice"] != 26.19 {
		t.Errorf("visibility %d, components %v", st.VisibilityScore, b.Components)
	}
	waitFor(t, "ai_visibility_change and scan_completed at the webhook", func() bool {
		ks := strings.Join(rc.kinds(), " ")
		return strings.Contains(ks, "ai_visibility_change") && strings.Contains(ks, "scan_completed")
	})
	for _, p := range engine.Prompts() {
		if strings.Contains(p, "sk-test") {
			t.Fatal("a key in a prompt")
		}
	}
}
