package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/aivis/aivis/core/store"
)

// TestAnotherAccountsIDsAnswer404: every page and action that takes an id
// in its path answers 404 to a user of another account, and changes
// nothing.
func TestAnotherAccountsIDsAnswer404(t *testing.T) {
	e := newEnv(t)
	a, ua := e.owner("a@example.com", true)
	b, ub := e.owner("b@example.com", true)
	ctx := context.Background()
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer recv.Close()
	tok := csrf(t, e.get(a, "/webhooks"))
	if p := e.post(a, "/webhooks", url.Values{"csrf": {tok}, "domain": {"a-only.example"}, "url": {recv.URL}, "events": {"ai_visibility_change"}}); p.status != http.StatusCreated {
		t.Fatalf("A creates a webhook: %d\n%s", p.status, p.body)
	}
	ws, _, _ := e.db.ListWebhooks(ctx, store.WebhookFilter{AccountID: ua.AccountID})
	if len(ws) != 1 {
		t.Fatalf("A's webhooks: %d", len(ws))
	}
	wh := ws[0]
	ds, _, _ := e.db.ListDeliveries(ctx, store.DeliveryFilter{WebhookID: wh.ID, Limit: 10})
	if len(ds) != 1 {
		t.Fatalf("A's deliveries: %d", len(ds))
	}
	_, du := e.member(ua.AccountID, "dev@example.com", store.RoleDeveloper)

	for _, path := range []string{"/webhooks/" + wh.ID, "/connections/" + wh.ID} {
		if p := e.get(b, path); p.status != http.StatusNotFound || strings.Contains(p.body, "a-only.example") {
			t.Errorf("B GET %s: %d, want 404 without A's data", path, p.status)
		}
	}
	btok := csrf(t, e.get(b, "/webhooks"))
	posts := map[string]url.Values{
		"/webhooks/" + wh.ID + "/enabled":                               {"enabled": {"false"}},
		"/webhooks/" + wh.ID + "/rotate":                                {"grace": {"1h"}},
		"/webhooks/" + wh.ID + "/test":                                  {},
		"/webhooks/" + wh.ID + "/replay":                                {"since": {"2000-01-01T00:00"}, "until": {"2099-01-01T00:00"}},
		"/webhooks/" + wh.ID + "/deliveries/" + ds[0].ID + "/redeliver": {},
		"/webhooks/" + wh.ID + "/delete":                                {},
		"/connections/" + wh.ID:                                         {"name": {"taken"}},
		"/connections/" + wh.ID + "/test":                               {},
		"/connections/" + wh.ID + "/enabled":                            {"enabled": {"false"}},
		"/connections/" + wh.ID + "/delete":                             {},
		"/members/" + du.ID + "/role":                                   {"role": {"viewer"}},
		"/members/" + du.ID + "/remove":                                 {},
	}
	for path, form := range posts {
		form.Set("csrf", btok)
		if p := e.post(b, path, form); p.status != http.StatusNotFound {
			t.Errorf("B POST %s: %d, want 404", path, p.status)
		}
	}
	// Nor through a webhook of B's own: A's delivery under B's webhook.
	if p := e.post(b, "/webhooks", url.Values{"csrf": {btok}, "domain": {"b-only.example"}, "url": {recv.URL}, "events": {"ai_visibility_change"}}); p.status != http.StatusCreated {
		t.Fatalf("B creates a webhook: %d\n%s", p.status, p.body)
	}
	bws, _, _ := e.db.ListWebhooks(ctx, store.WebhookFilter{AccountID: ub.AccountID})
	if len(bws) != 1 {
		t.Fatalf("B's webhooks: %d", len(bws))
	}
	if p := e.post(b, "/webhooks/"+bws[0].ID+"/deliveries/"+ds[0].ID+"/redeliver", url.Values{"csrf": {btok}}); p.status != http.StatusNotFound {
		t.Errorf("B redelivers A's delivery under B's webhook: %d, want 404", p.status)
	}
	after, err := e.db.Webhook(ctx, ua.AccountID, wh.ID)
	if err != nil {
		t.Fatalf("A's webhook after B's attempts: %v", err)
	}
	if !after.Enabled || after.Secret != wh.Secret || after.Name != wh.Name {
		t.Errorf("B changed A's webhook: %+v", after)
	}
	if n, _, _ := e.db.ListDeliveries(ctx, store.DeliveryFilter{WebhookID: wh.ID, Limit: 10}); len(n) != 1 || n[0].Status != ds[0].Status {
		t.Errorf("A's webhook's deliveries after B's attempts: %+v, want one, %s", n, ds[0].Status)
	}
	if u, err := e.db.User(ctx, du.ID); err != nil || u.Role != store.RoleDeveloper {
		t.Errorf("A's developer after B's attempts: %+v %v", u, err)
	}
}
