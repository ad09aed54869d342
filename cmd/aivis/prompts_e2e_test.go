package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe/probefake"
)

// TestPromptsEndToEnd: an agency client's own prompts through the API:
// set with their intents, shown beside the generated ones and in the
// domain's prompts list, refused whole when bad or past the tier's cap,
// out of another client's sight; a scan asks them and keeps the prompt
// set under the id the API gave.
func TestPromptsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	engine := probefake.New()
	defer engine.Close()
	engine.Answer("fake-model", "Acme makes fine rocket skates.")
	cfg := scanConfig(t, dir, engine)
	a := newAccount(t, dir, "professional", true) // 25 prompts a domain
	var cl, other struct {
		ID string `json:"id"`
	}
	cli(t, dir, &cl, "client", "create", "--account", a.ID, "--name", "Client")
	cli(t, dir, &other, "client", "create", "--account", a.ID, "--name", "Other client")
	ck, ok, ak := newKey(t, dir, a.ID, "--client", cl.ID), newKey(t, dir, a.ID, "--client", other.ID), newKey(t, dir, a.ID)
	s := start(t, dir, "--config", cfg, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets")

	var d client.MonitoredDomain
	r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(ck), body: `{"domain":"acme.invalid","brands":["Acme"],
		"competitors":["Globex"],"prompts":["Old question?"]}`})
	r.decode(t, &d)
	if r.Status != 201 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	path := "/v1/domains/" + d.ID + "/prompts"
	get := func(k key) (client.DomainPrompts, resp) {
		t.Helper()
		var ps client.DomainPrompts
		r := s.do(t, req{method: "GET", path: path, header: bearer(k)})
		if r.Status == 200 {
			r.decode(t, &ps)
		}
		return ps, r
	}
	ps, r := get(ck)
	if r.Status != 200 || !slices.Equal(ps.Prompts, []client.Prompt{{Text: "Old question?", Intent: "custom"}}) || ps.MaxPrompts != 25 ||
		len(ps.Generated) != 4 {
		t.Fatalf("prompts of the new domain: %d %s", r.Status, r.Body)
	}

	r = s.do(t, req{method: "PUT", path: path, header: bearer(ck),
		body: `{"prompts":[{"text":"Which rocket skates last longest?","intent":"discovery"},{"text":" Are Acme skates safe? "}]}`})
	r.decode(t, &ps)
	want := []client.Prompt{{Text: "Which rocket skates last longest?", Intent: "discovery"}, {Text: "Are Acme skates safe?", Intent: "custom"}}
	if r.Status != 200 || !slices.Equal(ps.Prompts, want) || len(ps.Generated) != 4 {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	s.do(t, req{method: "GET", path: "/v1/domains/" + d.ID, header: bearer(ck)}).decode(t, &d)
	if !slices.Equal(d.Prompts, []string{"Which rocket skates last longest?", "Are Acme skates safe?"}) {
		t.Errorf("the domain's prompts list: %v", d.Prompts)
	}

	// Bad sets are refused whole, each in the envelope.
	many := make([]string, 26)
	for i := range many {
		many[i] = fmt.Sprintf(`{"text":"Question %d?"}`, i)
	}
	for _, tc := range []struct{ body, code, field string }{
		{`{"prompts":[{"text":"ok?"},{"text":"   "}]}`, "VALIDATION_ERROR", "prompts[1].text"},
		{`{"prompts":[{"text":"Best skates?"},{"text":"best SKATES?"}]}`, "VALIDATION_ERROR", "prompts[1].text"},
		{`{"prompts":[{"text":"Best skates?","intent":"sales"}]}`, "VALIDATION_ERROR", "prompts[0].intent"},
		{`{"prompts":[{"text":"` + strings.Repeat("x", 1001) + `"}]}`, "VALIDATION_ERROR", "prompts[0].text"},
		{`{}`, "VALIDATION_ERROR", "prompts"},
		{`{"prompts":[{"text":"Best skates?","weight":2}]}`, "VALIDATION_ERROR", ""},
		{`[{"text":"Best skates?"}]`, "INVALID_JSON", ""},
		{`{"prompts":[` + strings.Join(many, ",") + `]}`, "PROMPT_LIMIT_REACHED", ""},
	} {
		r := s.do(t, req{method: "PUT", path: path, header: bearer(ck), body: tc.body})
		var e client.ErrorEnvelope
		r.decode(t, &e)
		if r.errorCode(t) != tc.code || (tc.field != "" && (len(e.Error.Details) != 1 || e.Error.Details[0].Field != tc.field)) {
			t.Errorf("PUT %.60s: %d %s", tc.body, r.Status, r.Body)
		}
	}
	// The domain's prompts list is the same data, under the same cap.
	texts := make([]string, 26)
	for i := range texts {
		texts[i] = fmt.Sprintf("Question %d?", i)
	}
	list, _ := json.Marshal(map[string][]string{"prompts": texts})
	if r := s.do(t, req{method: "PATCH", path: "/v1/domains/" + d.ID, header: bearer(ck), body: string(list)}); r.errorCode(t) != "PROMPT_LIMIT_REACHED" {
		t.Errorf("26 prompts through the domain's list: %d %s", r.Status, r.Body)
	}
	if got, _ := get(ck); !slices.Equal(got.Prompts, want) || got.PromptSetID != ps.PromptSetID {
		t.Errorf("after refused sets: %+v", got)
	}

	// Another client's key finds nothing; the account's key sees it.
	for _, m := range []string{"GET", "PUT"} {
		r := s.do(t, req{method: m, path: path, header: bearer(ok), body: map[string]string{"GET": "", "PUT": `{"prompts":[]}`}[m]})
		if r.Status != 404 || r.errorCode(t) != "NOT_FOUND" {
			t.Errorf("%s by another client's key: %d %s", m, r.Status, r.Body)
		}
	}
	if got, r := get(ak); r.Status != 200 || got.PromptSetID != ps.PromptSetID {
		t.Errorf("the account's key: %d %s", r.Status, r.Body)
	}

	// The scan asks the owner's prompts and keeps the set it asked under
	// the id announced.
	sc := completedScan(t, s, ck, "acme.invalid")
	var res struct {
		PromptSet struct {
			ID      string          `json:"id"`
			Prompts []client.Prompt `json:"prompts"`
		} `json:"prompt_set"`
	}
	if err := json.Unmarshal(sc.Result, &res); err != nil {
		t.Fatalf("scan %+v: %v", sc, err)
	}
	if res.PromptSet.ID != ps.PromptSetID || !slices.Equal(res.PromptSet.Prompts, append(want, ps.Generated...)) {
		t.Errorf("the scan's prompt set %+v, want %s: %+v then %+v", res.PromptSet, ps.PromptSetID, want, ps.Generated)
	}
	asked := engine.Prompts()
	for _, p := range want {
		if !slices.Contains(asked, p.Text) {
			t.Errorf("the engine was not asked %q: %q", p.Text, asked)
		}
	}
}

// completedScan requests a scan of a monitored domain and waits for it to
// complete.
func completedScan(t *testing.T, s *server, k key, domain string) client.Scan {
	t.Helper()
	var sc client.Scan
	s.do(t, req{method: "POST", path: "/v1/visibility/scans", header: bearer(k), body: `{"domain":"` + domain + `"}`}).decode(t, &sc)
	waitFor(t, "the scan completed", func() bool {
		s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + sc.ID, header: bearer(k)}).decode(t, &sc)
		return sc.Status == "completed" || sc.Status == "failed"
	})
	if sc.Status != "completed" {
		t.Fatalf("scan %+v", sc)
	}
	return sc
}
