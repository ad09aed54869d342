package api

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aivis/aivis/client"
)

// The key-and-secret interface takes a bearer key alone only from a
// request marked InProcess: over the network, a bearer key (with any
// header a client could add to pass for an in-process call) is
// MISSING_CREDENTIALS, while the same request made in process with the
// mark answers the key's budget status, counted in its rate limits.
func TestInProcessBearerOnKeyAndSecretInterface(t *testing.T) {
	ts := newAppServer(t)
	hs := httptest.NewTLSServer(ts.handler)
	defer hs.Close()
	hc := hs.Client()
	hc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true}

	for _, extra := range []map[string]string{
		nil,
		{"X-In-Process": "true", "X-Aivis-In-Process": "1", "InProcess": "true"},
		{"X-API-Key": fuzzKey}, // the key, without its secret
	} {
		r, _ := http.NewRequest(http.MethodGet, hs.URL+"/api/v1/ai/budget-status", nil)
		r.Header.Set("Authorization", "Bearer "+fuzzKey)
		for k, v := range extra {
			r.Header.Set(k, v)
		}
		resp, err := hc.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		var env client.ErrorEnvelope
		json.NewDecoder(resp.Body).Decode(&env)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || env.Error.Code != "MISSING_CREDENTIALS" {
			t.Errorf("over the network with %v: %d %s; want 401 MISSING_CREDENTIALS", extra, resp.StatusCode, env.Error.Code)
		}
	}

	serve := func(ctx context.Context, key string) *httptest.ResponseRecorder {
		r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/v1/ai/budget-status", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		return ts.serve(r)
	}
	w := serve(InProcess(context.Background()), fuzzKey)
	var bs client.Envelope[client.BudgetStatus]
	if err := json.Unmarshal(w.Body.Bytes(), &bs); w.Code != http.StatusOK || err != nil {
		t.Fatalf("in process: %d %s", w.Code, w.Body)
	}
	if bs.Data.AccountID != "acct_fuzz" || bs.Data.Usage.RequestsThisMinute < 1 {
		t.Errorf("in process: %+v; want acct_fuzz's status, this request counted", bs.Data)
	}
	// Without the mark, in process too, the interface wants the secret.
	if w := serve(context.Background(), fuzzKey); w.Code != http.StatusUnauthorized {
		t.Errorf("in process without the mark: %d; want 401", w.Code)
	}
	// The mark stands for no credential: a wrong key is refused.
	if w := serve(InProcess(context.Background()), fixedKey("NotAKeyOfAnyone")); w.Code != http.StatusUnauthorized {
		t.Errorf("in process with an unknown key: %d; want 401", w.Code)
	}
}
