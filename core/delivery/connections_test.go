package delivery_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/text"
	"github.com/aivis/aivis/plugins/sdk"
)

// fakeHub is an in-process connector host: the connector "fake" answers
// each event with what answer says, and records every call. Its secret
// setting is token, sent to the destination url.
type fakeHub struct {
	mu        sync.Mutex
	batch     int
	calls     [][]sdk.Event
	validated []json.RawMessage
	answer    func(ev sdk.Event, settings json.RawMessage) sdk.Result
	broken    error // every call fails in the plugin
	// undeclared: the connector names no destination settings, as one
	// built before they could be named.
	undeclared bool
}

func (h *fakeHub) Info(_ context.Context, name string) (sdk.Info, error) {
	if name != "fake" {
		return sdk.Info{}, hub.ErrUnknown
	}
	info := sdk.Info{Name: "fake", DisplayName: "Fake", SecretFields: []string{"token"}, MaxBatch: h.batch}
	if !h.undeclared {
		info.DestinationFields = []string{"url"}
	}
	return info, nil
}

func (h *fakeHub) ValidateSettings(_ context.Context, _ string, settings json.RawMessage) ([]sdk.FieldError, error) {
	h.mu.Lock()
	h.validated = append(h.validated, settings)
	h.mu.Unlock()
	var s struct {
		Token string `json:"token"`
	}
	json.Unmarshal(settings, &s)
	if s.Token == "" {
		return []sdk.FieldError{{Field: "token", Message: "is required"}}, nil
	}
	return nil, nil
}

func (h *fakeHub) Test(_ context.Context, _ string, settings json.RawMessage, ev sdk.Event) (sdk.Result, error) {
	return h.answer(ev, settings), nil
}

func (h *fakeHub) Deliver(_ context.Context, _ string, settings json.RawMessage, evs []sdk.Event) ([]sdk.Result, error) {
	h.mu.Lock()
	h.calls = append(h.calls, evs)
	broken := h.broken
	h.mu.Unlock()
	if broken != nil {
		return nil, broken
	}
	out := make([]sdk.Result, len(evs))
	for i, ev := range evs {
		out[i] = h.answer(ev, settings)
	}
	return out, nil
}

func (h *fakeHub) MaxBatch(string) int { return h.batch }

func (h *fakeHub) delivered() (events, calls, biggest int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.calls {
		events += len(c)
		biggest = max(biggest, len(c))
	}
	return events, len(h.calls), biggest
}

func connEnv(t *testing.T, h *fakeHub) *env {
	fastSchedule(t)
	e := newEnv(t, delivery.Options{Connectors: h})
	e.svc.Hub = h
	e.svc = e.svc.Connections()
	return e
}

func (e *env) connect(t *testing.T, in client.CreateConnection) store.Webhook {
	t.Helper()
	if in.Connector == "" {
		in.Connector = "fake"
	}
	if in.Settings == nil {
		in.Settings = json.RawMessage(`{"token":"s3cret","label":"x"}`)
	}
	if in.Events == nil {
		in.Events = []string{events.VisibilityChange, events.ConnectionDisabled}
	}
	c, err := e.svc.CreateConnection(ctx, e.p, in)
	if err != nil {
		t.Fatalf("create connection: %v", err)
	}
	return c
}

func TestConnectionBatchesAndDomains(t *testing.T) {
	h := &fakeHub{batch: 25, answer: func(sdk.Event, json.RawMessage) sdk.Result { return sdk.DeliveredResult() }}
	e := connEnv(t, h)
	all := e.connect(t, client.CreateConnection{})
	one := e.connect(t, client.CreateConnection{Domains: []string{"d7.example.com"}})
	if string(all.PublicSettings) != `{"label":"x"}` || !slices.Equal(all.SecretFields, []string{"token"}) {
		t.Fatalf("settings split: %s %v", all.PublicSettings, all.SecretFields)
	}
	const n = 200
	for i := range n {
		e.reading(t, "d"+string(rune('0'+i%10))+".example.com", i%100)
	}
	eventually(t, "every event delivered", func() bool {
		got, _, _ := h.delivered()
		return got == n+n/10
	})
	_, calls, biggest := h.delivered()
	if biggest < 2 || biggest > 25 || calls >= n {
		t.Errorf("%d calls for %d events, the biggest %d: not batched within 25", calls, n+n/10, biggest)
	}
	if ds := deliveries(t, e, one.ID); len(ds) != n/10 {
		t.Errorf("the one-domain connection has %d deliveries, want %d", len(ds), n/10)
	}
	eventually(t, "all recorded as succeeded", func() bool {
		ds := deliveries(t, e, all.ID)
		return len(ds) == 100 && !slices.ContainsFunc(ds, func(d store.Delivery) bool { return d.Status != store.DeliverySucceeded })
	})
	d, as, err := e.db.Delivery(ctx, all.ID, deliveries(t, e, all.ID)[0].ID)
	if err != nil || len(as) != 1 || as[0].Result != delivery.ResultDelivered || d.Attempts != 1 {
		t.Fatalf("delivery %+v attempts %+v %v", d, as, err)
	}
}

func TestConnectionOutcomes(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	h := &fakeHub{batch: 1, answer: func(ev sdk.Event, settings json.RawMessage) sdk.Result {
		var s struct{ Token string }
		json.Unmarshal(settings, &s)
		mu.Lock()
		defer mu.Unlock()
		seen[ev.ID]++
		seen[s.Token+ev.ID]++
		switch s.Token {
		case "retry-once":
			if seen[s.Token+ev.ID] == 1 {
				return sdk.RetryResult(30*time.Millisecond, "429 slow down")
			}
			return sdk.DeliveredResult()
		case "bad":
			return sdk.FailedResult("invalid_auth")
		case "gone":
			return sdk.GoneResult("channel_is_archived")
		}
		return sdk.DeliveredResult()
	}}
	e := connEnv(t, h)
	retry := e.connect(t, client.CreateConnection{Settings: json.RawMessage(`{"token":"retry-once"}`), Events: []string{events.VisibilityChange}})
	bad := e.connect(t, client.CreateConnection{Settings: json.RawMessage(`{"token":"bad"}`), Events: []string{events.VisibilityChange}})
	gone := e.connect(t, client.CreateConnection{Settings: json.RawMessage(`{"token":"gone"}`), Events: []string{events.VisibilityChange}})
	watcher := e.connect(t, client.CreateConnection{Settings: json.RawMessage(`{"token":"ok"}`), Events: []string{events.ConnectionDisabled}})
	sub, err := e.svc.Subscribe(ctx, e.p, client.ZapierSubscribe{TargetURL: "https://hooks.zapier.com/x", Event: events.VisibilityChange})
	if err == nil || !strings.Contains(err.Error(), "zapier") {
		t.Fatalf("a subscription without the zapier connector: %+v %v", sub, err)
	}
	ev := e.reading(t, "example.com", 50)

	eventually(t, "the retry delivered", func() bool {
		ds := deliveries(t, e, retry.ID)
		return len(ds) == 1 && ds[0].Status == store.DeliverySucceeded
	})
	_, as, _ := e.db.Delivery(ctx, retry.ID, deliveries(t, e, retry.ID)[0].ID)
	if len(as) != 2 || as[0].Result != delivery.ResultRetry || as[0].Error != "429 slow down" || as[1].Result != delivery.ResultDelivered {
		t.Fatalf("retry attempts: %+v", as)
	}
	eventually(t, "the permanent failure recorded", func() bool {
		ds := deliveries(t, e, bad.ID)
		return len(ds) == 1 && ds[0].Status == store.DeliveryFailed
	})
	if ds := deliveries(t, e, bad.ID); ds[0].Attempts != 1 || ds[0].LastError != "invalid_auth" {
		t.Fatalf("a permanent failure is not retried: %+v", ds[0])
	}
	eventually(t, "the gone connection disabled", func() bool {
		c, err := e.db.Webhook(ctx, e.p.AccountID(), gone.ID)
		return err == nil && !c.Enabled
	})
	c, _ := e.db.Webhook(ctx, e.p.AccountID(), gone.ID)
	if !strings.Contains(c.DisabledReason, "channel_is_archived") {
		t.Fatalf("disabled reason %q", c.DisabledReason)
	}
	eventually(t, "connection_disabled delivered to the watcher", func() bool {
		ds := deliveries(t, e, watcher.ID)
		return len(ds) == 1 && ds[0].Event == events.ConnectionDisabled && ds[0].Status == store.DeliverySucceeded
	})
	var body struct {
		Data events.ConnectionDisabledData `json:"data"`
	}
	json.Unmarshal(deliveries(t, e, watcher.ID)[0].Payload, &body)
	if body.Data.ConnectionID != gone.ID || body.Data.Connector != "fake" {
		t.Fatalf("connection_disabled data: %+v", body.Data)
	}
	mu.Lock()
	if seen[ev.ID] != 4 { // retry (2), bad, gone; the watcher does not want readings
		t.Errorf("the reading's event was attempted %d times", seen[ev.ID])
	}
	mu.Unlock()

	// A plugin that fails is retried, the result recorded as error.
	h.mu.Lock()
	h.broken = errors.New("rpc error: the plugin process exited")
	h.mu.Unlock()
	e.reading(t, "example.com", 60)
	eventually(t, "an error attempt", func() bool {
		for _, d := range deliveries(t, e, retry.ID) {
			if _, as, _ := e.db.Delivery(ctx, retry.ID, d.ID); len(as) > 0 && as[0].Result == delivery.ResultError {
				return d.Status == store.DeliveryPending || d.Attempts > 1
			}
		}
		return false
	})
	h.mu.Lock()
	h.broken = nil
	h.mu.Unlock()
	eventually(t, "delivered once the plugin works", func() bool {
		ds := deliveries(t, e, retry.ID)
		return len(ds) == 2 && ds[0].Status == store.DeliverySucceeded
	})
}

func TestConnectionValidation(t *testing.T) {
	h := &fakeHub{batch: 1, answer: func(sdk.Event, json.RawMessage) sdk.Result { return sdk.DeliveredResult() }}
	e := connEnv(t, h)
	for _, in := range []client.CreateConnection{
		{Connector: "fake", Settings: json.RawMessage(`{}`), Events: []string{events.VisibilityChange}},
		{Connector: "fake", Settings: json.RawMessage(`[1]`), Events: []string{events.VisibilityChange}},
		{Connector: "nope", Settings: json.RawMessage(`{"token":"x"}`), Events: []string{events.VisibilityChange}},
		{Connector: "fake", Settings: json.RawMessage(`{"token":"x"}`), Events: []string{"nope"}},
		{Connector: "fake", Settings: json.RawMessage(`{"token":"x"}`), Events: []string{events.VisibilityChange}, Domains: []string{"a b"}},
		{Connector: "fake", Settings: json.RawMessage(`{"token":"x"}`), Events: []string{events.VisibilityChange}, MinScoreChange: new(101)},
		{Connector: "fake", Settings: json.RawMessage(`{"token":"x"}`), Events: []string{events.CitationChange}, MinCitationChange: new(-1)},
		{Connector: "fake", Settings: json.RawMessage(`{"token":"x"}`), Events: []string{events.CrawlerErrors}, MinCrawlerErrors: new(1000001)},
	} {
		_, err := e.svc.CreateConnection(ctx, e.p, in)
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Code != fault.ValidationError {
			t.Errorf("%+v: %v", in, err)
		}
	}
	cs, _, err := e.svc.List(ctx, e.p, "", "", 10)
	if err != nil || len(cs) != 0 {
		t.Fatalf("refused connections kept: %v %v", cs, err)
	}

	// A merge patch keeps the secret, removes a null field, and is validated.
	c := e.connect(t, client.CreateConnection{})
	if c.MinScoreChange != 0 || c.MinCitationChange != delivery.DefaultMinCitationChange {
		t.Errorf("defaults: min_score_change %d, min_citation_change %d", c.MinScoreChange, c.MinCitationChange)
	}
	if _, err := e.svc.UpdateConnection(ctx, e.p, c.ID, client.UpdateConnection{MinCitationChange: new(101)}); !isField(err, "min_citation_change") {
		t.Errorf("min_citation_change 101: %v", err)
	}
	up, err := e.svc.UpdateConnection(ctx, e.p, c.ID, client.UpdateConnection{MinScoreChange: new(4)})
	if err != nil || up.MinScoreChange != 4 || up.MinCitationChange != delivery.DefaultMinCitationChange {
		t.Fatalf("min_score_change patched: %+v %v", up, err)
	}
	if up, err = e.svc.UpdateConnection(ctx, e.p, c.ID, client.UpdateConnection{MinCitationChange: new(0)}); err != nil ||
		up.MinScoreChange != 4 || up.MinCitationChange != 0 {
		t.Fatalf("min_citation_change patched: %+v %v", up, err)
	}
	if c.MinCrawlerErrors != delivery.DefaultMinCrawlerErrors || up.MinCrawlerErrors != delivery.DefaultMinCrawlerErrors {
		t.Errorf("min_crawler_errors %d, then %d: want the default throughout", c.MinCrawlerErrors, up.MinCrawlerErrors)
	}
	if _, err := e.svc.UpdateConnection(ctx, e.p, c.ID, client.UpdateConnection{MinCrawlerErrors: new(-1)}); !isField(err, "min_crawler_errors") {
		t.Errorf("min_crawler_errors -1: %v", err)
	}
	if up, err = e.svc.UpdateConnection(ctx, e.p, c.ID, client.UpdateConnection{MinCrawlerErrors: new(50)}); err != nil ||
		up.MinCrawlerErrors != 50 || up.MinCitationChange != 0 {
		t.Fatalf("min_crawler_errors patched: %+v %v", up, err)
	}
	up, err = e.svc.UpdateConnection(ctx, e.p, c.ID, client.UpdateConnection{Settings: json.RawMessage(`{"label":null,"extra":1}`)})
	if err != nil || string(up.Settings) != `{"extra":1,"token":"s3cret"}` || string(up.PublicSettings) != `{"extra":1}` {
		t.Fatalf("patched: %s %s %v", up.Settings, up.PublicSettings, err)
	}
	if _, err := e.svc.UpdateConnection(ctx, e.p, c.ID, client.UpdateConnection{Settings: json.RawMessage(`{"token":null}`)}); err == nil {
		t.Fatal("removing the token was accepted")
	}
	got, _ := e.svc.Get(ctx, e.p, c.ID)
	if string(got.Settings) != `{"extra":1,"token":"s3cret"}` {
		t.Fatalf("a refused patch changed the settings: %s", got.Settings)
	}
	// The webhook service does not see connections.
	if _, err := (&delivery.Service{Store: e.db}).Get(ctx, e.p, c.ID); err == nil {
		t.Fatal("the webhook service reads a connection")
	}
}

// A change of where a connection sends its secrets needs them given again,
// and is refused, changing nothing and showing the connector nothing,
// without them.
func TestEditedDestinationNeedsTheSecretsAgain(t *testing.T) {
	h := &fakeHub{batch: 1, answer: func(sdk.Event, json.RawMessage) sdk.Result { return sdk.DeliveredResult() }}
	e := connEnv(t, h)
	c := e.connect(t, client.CreateConnection{Settings: json.RawMessage(`{"token":"s3cret","label":"x","url":"https://a.example"}`)})
	patch := func(settings string) (store.Webhook, error) {
		t.Helper()
		return e.svc.UpdateConnection(ctx, e.p, c.ID, client.UpdateConnection{Settings: json.RawMessage(settings)})
	}
	refused := func(settings string) {
		t.Helper()
		h.mu.Lock()
		seen := len(h.validated)
		h.mu.Unlock()
		before, _ := e.svc.Get(ctx, e.p, c.ID)
		_, err := patch(settings)
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Code != fault.ValidationError || len(fe.Details) != 1 || fe.Details[0].Field != "settings.token" ||
			!strings.Contains(fe.Details[0].Message, "given again") {
			t.Fatalf("patch %s: %v, want a validation error naming settings.token", settings, err)
		}
		got, _ := e.svc.Get(ctx, e.p, c.ID)
		if string(got.Settings) != string(before.Settings) {
			t.Fatalf("a refused patch changed the settings: %s", got.Settings)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.validated) != seen {
			t.Fatalf("the connector was shown the refused settings %s", h.validated[seen:])
		}
	}
	refused(`{"url":"https://b.example"}`)
	refused(`{"url":"https://b.example","label":"y"}`)
	refused(`{"url":null}`)

	// Not a move: the same address, or another setting.
	for _, same := range []string{`{"url":"https://a.example"}`, `{"url": "https:\/\/a.example"}`, `{"label":"y"}`} {
		if up, err := patch(same); err != nil || !strings.Contains(string(up.Settings), `"token":"s3cret"`) {
			t.Fatalf("patch %s: %s %v", same, up.Settings, err)
		}
	}
	// A move with the secret given again.
	up, err := patch(`{"url":"https://b.example","token":"n3w"}`)
	if err != nil || string(up.Settings) != `{"label":"y","token":"n3w","url":"https://b.example"}` || string(up.PublicSettings) != `{"label":"y","url":"https://b.example"}` {
		t.Fatalf("a move with the secret: %s %v", up.Settings, err)
	}

	// A connector that names no destination: any change of its settings
	// may move its secrets.
	h.undeclared = true
	refused(`{"label":"z"}`)
	if up, err := patch(`{"label":"z","token":"n3w"}`); err != nil || string(up.Settings) != `{"label":"z","token":"n3w","url":"https://b.example"}` {
		t.Fatalf("undeclared destinations, with the secret: %s %v", up.Settings, err)
	}
	if _, err := e.svc.UpdateConnection(ctx, e.p, c.ID, client.UpdateConnection{Name: new("renamed")}); err != nil {
		t.Fatalf("a change of name only: %v", err)
	}
}

// isField reports whether err is a validation error naming field.
func isField(err error, field string) bool {
	var fe *fault.Error
	return errors.As(err, &fe) && fe.Code == fault.ValidationError &&
		slices.ContainsFunc(fe.Details, func(d fault.FieldError) bool { return d.Field == field })
}

// A connector's reason is the destination's words: a NUL, bytes that are
// not UTF-8 and a length past what the log keeps are cleaned before they
// are recorded, so that the outcome is written (the store refuses such
// text) and the delivery ends as failed.
func TestConnectionReasonsCleaned(t *testing.T) {
	long := strings.Repeat("é", 600) // 1,200 bytes, two a character
	h := &fakeHub{batch: 1, answer: func(ev sdk.Event, settings json.RawMessage) sdk.Result {
		if ev.Kind == events.WebhookTest {
			return sdk.DeliveredResult()
		}
		return sdk.FailedResult("hook answered 400: bad\x00request \xff\xfe " + long)
	}}
	e := connEnv(t, h)
	c := e.connect(t, client.CreateConnection{Events: []string{events.VisibilityChange}})
	e.reading(t, "example.com", 50)
	eventually(t, "the permanent failure recorded", func() bool {
		ds := deliveries(t, e, c.ID)
		return len(ds) == 1 && ds[0].Status == store.DeliveryFailed
	})
	d, as, err := e.db.Delivery(ctx, c.ID, deliveries(t, e, c.ID)[0].ID)
	if err != nil || len(as) != 1 {
		t.Fatalf("delivery %+v attempts %+v %v", d, as, err)
	}
	for _, got := range []string{d.LastError, as[0].Error} {
		if !text.Valid(got) || len(got) > 1024 || !strings.HasPrefix(got, "hook answered 400: badrequest \uFFFD éé") {
			t.Errorf("recorded reason %q (%d bytes): not the destination's words, cleaned and cut to 1,024 bytes", got, len(got))
		}
	}
}
