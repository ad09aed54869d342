package webhook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aivis/aivis/internal/npmtest"
	"github.com/aivis/aivis/webhook"
)

// standardwebhooksVersion pins the npm package that deliveries are checked
// against: the reference JavaScript library of Standard Webhooks.
const standardwebhooksVersion = "1.1.1"

// nodeReq is one request to testdata/verify.mjs.
type nodeReq struct {
	Op        string            `json:"op"`
	Secret    string            `json:"secret"`
	Headers   map[string]string `json:"headers,omitempty"`
	ID        string            `json:"id,omitempty"`
	Timestamp int64             `json:"timestamp,omitempty"`
	Body      string            `json:"body"`
}

type nodeRes struct {
	OK        bool   `json:"ok"`
	ID        string `json:"id"`
	Error     string `json:"error"`
	Signature string `json:"signature"`
}

// runNode answers reqs with the standardwebhooks package, in one run of node.
func runNode(t *testing.T, dir string, reqs []nodeReq) []nodeRes {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "verify.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := json.Marshal(reqs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), "STANDARDWEBHOOKS_DIR="+dir)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.Bytes())
	}
	var res struct {
		Version string    `json:"version"`
		Results []nodeRes `json:"results"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Results) != len(reqs) {
		t.Fatalf("node answered %q (%v) to %d requests", out, err, len(reqs))
	}
	if res.Version != standardwebhooksVersion {
		t.Fatalf("node loaded standardwebhooks %s, want %s", res.Version, standardwebhooksVersion)
	}
	return res.Results
}

// headerMap is h's three delivery headers, as a receiver in node has them.
func headerMap(h http.Header) map[string]string {
	return map[string]string{
		webhook.HeaderID:        h.Get(webhook.HeaderID),
		webhook.HeaderTimestamp: h.Get(webhook.HeaderTimestamp),
		webhook.HeaderSignature: h.Get(webhook.HeaderSignature),
	}
}

// TestStandardWebhooksNPM checks both directions against the reference
// JavaScript library: its verifier accepts what Signer sends (and refuses
// what it must), and Verifier accepts what its signer makes.
func TestStandardWebhooksNPM(t *testing.T) {
	dir := npmtest.Install(t, "standardwebhooks", standardwebhooksVersion)
	cur, old, other := newSecret(t), newSecret(t), newSecret(t)
	const id = "evt_2fGh7JkL0qWe4RtY9uIo"
	body := `{"id":"evt_2fGh7JkL0qWe4RtY9uIo","event":"ai_visibility_change","timestamp":"2026-11-22T10:00:00Z","data":{"domain":"example.com","visibility_score":72}}`
	unicode := `{"id":"evt_3","event":"ai_visibility_change","timestamp":"2026-11-22T10:00:00Z","data":{"domain":"bücher.example","note":"café — ✓ 日本"}}`
	now := time.Now()

	type check struct {
		name   string
		req    nodeReq
		wantOK bool
	}
	var checks []check
	deliver := func(name string, signers []string, receiver string, id string, ts time.Time, body, received string, wantOK bool) {
		s, err := webhook.NewSigner(signers...)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		s.Headers(h, id, ts, []byte(body))
		checks = append(checks, check{name, nodeReq{Op: "verify", Secret: receiver, Headers: headerMap(h), Body: received}, wantOK})
	}
	deliver("one secret", []string{cur}, cur, id, now, body, body, true)
	deliver("bare base64 secret at the receiver", []string{cur}, cur[len(webhook.SecretPrefix):], id, now, body, body, true)
	deliver("non-ASCII body", []string{cur}, cur, "evt_3", now, unicode, unicode, true)
	deliver("rotation, receiver on the new secret", []string{cur, old}, cur, id, now, body, body, true)
	deliver("rotation, receiver on the old secret", []string{cur, old}, old, id, now, body, body, true)
	deliver("rotation, receiver on neither", []string{cur, old}, other, id, now, body, body, false)
	deliver("another secret", []string{cur}, other, id, now, body, body, false)
	deliver("tampered body", []string{cur}, cur, id, now, body, body+" ", false)
	deliver("an hour old", []string{cur}, cur, id, now.Add(-time.Hour), body, body, false)
	deliver("an hour ahead", []string{cur}, cur, id, now.Add(time.Hour), body, body, false)

	// And the other way: the package signs, Verifier checks.
	reqs := []nodeReq{
		{Op: "sign", Secret: vectorSecret, ID: vectorID, Timestamp: vectorTS, Body: vectorBody},
		{Op: "sign", Secret: cur, ID: id, Timestamp: now.Unix(), Body: body},
		{Op: "sign", Secret: old, ID: id, Timestamp: now.Unix(), Body: body},
		{Op: "sign", Secret: cur, ID: "evt_3", Timestamp: now.Unix(), Body: unicode},
	}
	for _, c := range checks {
		reqs = append(reqs, c.req)
	}
	res := runNode(t, dir, reqs)
	signed, verified := res[:4], res[4:]

	for i, c := range checks {
		r := verified[i]
		if r.OK != c.wantOK {
			t.Errorf("%s: standardwebhooks says ok=%v (%s), want %v", c.name, r.OK, r.Error, c.wantOK)
		}
		if r.OK && r.ID != c.req.Headers[webhook.HeaderID] {
			t.Errorf("%s: standardwebhooks returned the body of %q", c.name, r.ID)
		}
	}

	if signed[0].Signature != vectorSig {
		t.Errorf("standardwebhooks signs the test vector %q, want %q", signed[0].Signature, vectorSig)
	}
	verify := func(name string, secrets []string, id, sig, body string, want error) {
		t.Helper()
		v, err := webhook.NewVerifier(secrets...)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set(webhook.HeaderID, id)
		h.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		h.Set(webhook.HeaderSignature, sig)
		if err := v.Verify(h, []byte(body)); !errors.Is(err, want) {
			t.Errorf("%s: Verify(%q) = %v, want %v", name, sig, err, want)
		}
	}
	curSig, oldSig, uniSig := signed[1].Signature, signed[2].Signature, signed[3].Signature
	verify("its signature", []string{cur}, id, curSig, body, nil)
	verify("its signature, non-ASCII body", []string{cur}, "evt_3", uniSig, unicode, nil)
	verify("its signature, receiver knows two secrets", []string{other, cur}, id, curSig, body, nil)
	verify("its two signatures, as in a rotation", []string{old}, id, curSig+" "+oldSig, body, nil)
	verify("its signature, another secret", []string{other}, id, curSig, body, webhook.ErrInvalidSignature)
	verify("its signature, tampered body", []string{cur}, id, curSig, body+" ", webhook.ErrInvalidSignature)
	verify("its signature, tampered id", []string{cur}, "evt_4", curSig, body, webhook.ErrInvalidSignature)
}
