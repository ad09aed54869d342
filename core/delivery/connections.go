package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/domains"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/plugins/sdk"
)

// ConnectorHub is what connections need of the connector host (core/hub).
type ConnectorHub interface {
	Info(ctx context.Context, name string) (sdk.Info, error)
	ValidateSettings(ctx context.Context, name string, settings json.RawMessage) ([]sdk.FieldError, error)
	Test(ctx context.Context, name string, settings json.RawMessage, ev sdk.Event) (sdk.Result, error)
}

// Limits of a connection.
const (
	MaxConnectionDomains = 100
	MaxNameLength        = 100
	MaxSettingsBytes     = 16 << 10
)

// ZapierConnector is the connector a Zapier REST Hook subscription
// delivers through.
const ZapierConnector = "zapier"

func (s *Service) hubError(name string, err error) error {
	switch {
	case errors.Is(err, hub.ErrUnknown):
		return fault.Invalid(fault.FieldError{Field: "connector", Message: fmt.Sprintf("no connector %q is installed (GET /v1/connectors lists them)", name)})
	case errors.Is(err, hub.ErrUnavailable):
		return fault.New(fault.ConnectorUnavailable, "the %s connector is not running: %v", name, err)
	}
	return fault.New(fault.ConnectorUnavailable, "the %s connector failed: %v", name, err)
}

// connectorInfo is how a connector describes itself.
func (s *Service) connectorInfo(ctx context.Context, connector string) (sdk.Info, error) {
	if s.Hub == nil {
		return sdk.Info{}, fault.New(fault.ConnectorUnavailable, "this server runs no connectors")
	}
	info, err := s.Hub.Info(ctx, connector)
	if err != nil {
		return info, s.hubError(connector, err)
	}
	return info, nil
}

// checkSettings validates settings with their connector: its field errors
// come back as settings.<field>.
func (s *Service) checkSettings(ctx context.Context, connector string, settings json.RawMessage) error {
	fes, err := s.Hub.ValidateSettings(ctx, connector, settings)
	if err != nil {
		return s.hubError(connector, err)
	}
	var f fault.Fields
	for _, fe := range fes {
		field := "settings"
		if fe.Field != "" {
			field += "." + fe.Field
		}
		f.Add(field, "%s", fe.Message)
	}
	return f.Err()
}

// checkSecretsFollow refuses a change of settings that changes where the
// saved secrets are sent (a destination setting the connector declares,
// or any setting of one that declares none) unless it gives every saved
// secret again: a token typed for one host is never sent to another.
// saved and merged are the settings before and after patch.
func checkSecretsFollow(f *fault.Fields, info sdk.Info, secret []string, saved, merged, patch map[string]json.RawMessage) {
	dests := info.DestinationFields
	if len(dests) == 0 {
		dests = slices.Concat(slices.Collect(maps.Keys(saved)), slices.Collect(maps.Keys(patch)))
	}
	var moved []string
	for _, d := range dests {
		if !sameJSON(saved[d], merged[d]) && !slices.Contains(moved, "settings."+d) {
			moved = append(moved, "settings."+d)
		}
	}
	if len(moved) == 0 {
		return
	}
	slices.Sort(moved)
	names := slices.Concat(info.SecretFields, secret)
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		_, kept := saved[name]
		_, given := patch[name]
		if kept && !given {
			f.Add("settings."+name, "must be given again: this change moves where it is sent (%s), and a saved secret never follows its destination",
				strings.Join(moved, ", "))
		}
	}
}

// sameJSON says whether two JSON values (nil: absent) are the same.
func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// settingsObject checks that raw is a JSON object of bounded size.
func settingsObject(f *fault.Fields, raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	switch {
	case len(raw) == 0:
		f.Add("settings", "is required (a JSON object; GET /v1/connectors shows each connector's schema)")
	case len(raw) > MaxSettingsBytes:
		f.Add("settings", "must be at most %d bytes", MaxSettingsBytes)
	case json.Unmarshal(raw, &m) != nil || m == nil:
		f.Add("settings", "must be a JSON object")
	default:
		return m
	}
	return nil
}

func checkDomains(f *fault.Fields, in []string) []string {
	if len(in) > MaxConnectionDomains {
		f.Add("domains", "must list at most %d domains", MaxConnectionDomains)
		return nil
	}
	var out []string
	for i, d := range in {
		n, err := domains.Normalize(d)
		if err != nil {
			f.Add(fmt.Sprintf("domains[%d]", i), "%s", err.Error())
			continue
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func checkName(f *fault.Fields, name string) string {
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > MaxNameLength || !utf8.ValidString(name) {
		f.Add("name", "must be at most %d characters of valid UTF-8", MaxNameLength)
	}
	return name
}

// split keeps settings whole, and without the connector's secret fields
// for display.
func split(settings map[string]json.RawMessage, secret []string) (full, public json.RawMessage, err error) {
	if full, err = json.Marshal(settings); err != nil {
		return nil, nil, err
	}
	pub := make(map[string]json.RawMessage, len(settings))
	for k, v := range settings {
		if !slices.Contains(secret, k) {
			pub[k] = v
		}
	}
	public, err = json.Marshal(pub)
	return full, public, err
}

// CreateConnection validates a connection, its settings by its connector,
// and keeps it if the tier's cap allows one more. Nothing is kept when
// anything is wrong.
func (s *Service) CreateConnection(ctx context.Context, p auth.Principal, in client.CreateConnection) (store.Webhook, error) {
	var f fault.Fields
	if in.Connector == "" {
		f.Add("connector", "is required (GET /v1/connectors lists them)")
	}
	name := checkName(&f, in.Name)
	kinds := s.checkEvents(&f, in.Events)
	doms := checkDomains(&f, in.Domains)
	minScore := checkMinChange(&f, "min_score_change", in.MinScoreChange, 0)
	minCitation := checkMinChange(&f, "min_citation_change", in.MinCitationChange, DefaultMinCitationChange)
	minErrors := checkMinErrors(&f, in.MinCrawlerErrors, DefaultMinCrawlerErrors)
	settings := settingsObject(&f, in.Settings)
	clientID, err := accounts.Owner(ctx, s.Store, p, in.ClientID)
	if err != nil {
		return store.Webhook{}, err
	}
	if err := f.Err(); err != nil {
		return store.Webhook{}, err
	}
	return s.insertConnection(ctx, p, clientID, in.Connector, name, settings, kinds, doms, thresholds{minScore, minCitation, minErrors}, false)
}

// thresholds are a new connection's min_score_change, min_citation_change
// and min_crawler_errors.
type thresholds struct{ score, citation, errors int }

// insertConnection checks a new connection's settings with its connector
// and keeps it; a subscription (its destination made it: any URL) is
// verified first, as a webhook is.
func (s *Service) insertConnection(ctx context.Context, p auth.Principal, clientID, connector, name string,
	settings map[string]json.RawMessage, kinds, doms []string, min thresholds, subscription bool) (store.Webhook, error) {
	if err := s.room(ctx, p, true); err != nil {
		return store.Webhook{}, err
	}
	info, err := s.connectorInfo(ctx, connector)
	if err != nil {
		return store.Webhook{}, err
	}
	full, public, err := split(settings, info.SecretFields)
	if err != nil {
		return store.Webhook{}, err
	}
	if err := s.checkSettings(ctx, connector, full); err != nil {
		return store.Webhook{}, err
	}
	if name == "" {
		name = info.DisplayName
	}
	now := s.now()
	w := store.Webhook{ID: randid.New("con"), AccountID: p.AccountID(), ClientID: clientID, Events: kinds,
		MinScoreChange: min.score, MinCitationChange: min.citation, MinCrawlerErrors: min.errors, Enabled: true, CreatedAt: now, UpdatedAt: now,
		Connection: store.Connection{Connector: connector, Name: name, Settings: full, PublicSettings: public,
			SecretFields: info.SecretFields, Domains: doms, Subscription: subscription}}
	if !subscription {
		return w, s.keep(ctx, p, w, nil)
	}
	v, err := s.verify(ctx, w, "aivis is verifying this subscription; accept it (2xx) to keep it")
	if err != nil {
		return store.Webhook{}, err
	}
	return w, s.keep(ctx, p, w, &v)
}

// UpdateConnection changes a connection: settings are merged into the
// saved ones (a JSON merge patch: a field left out keeps its value, null
// removes it) and validated again by the connector.
func (s *Service) UpdateConnection(ctx context.Context, p auth.Principal, id string, in client.UpdateConnection) (store.Webhook, error) {
	cur, err := s.live(ctx, p, id)
	if err != nil {
		return cur, err
	}
	var f fault.Fields
	var name string
	if in.Name != nil {
		name = checkName(&f, *in.Name)
	}
	var kinds, doms []string
	if in.Events != nil {
		kinds = s.checkEvents(&f, in.Events)
	}
	if in.Domains != nil {
		doms = checkDomains(&f, *in.Domains)
	}
	minScore := checkMinChange(&f, "min_score_change", in.MinScoreChange, cur.MinScoreChange)
	minCitation := checkMinChange(&f, "min_citation_change", in.MinCitationChange, cur.MinCitationChange)
	minErrors := checkMinErrors(&f, in.MinCrawlerErrors, cur.MinCrawlerErrors)
	var patch map[string]json.RawMessage
	if in.Settings != nil {
		patch = settingsObject(&f, in.Settings)
	}
	if err := f.Err(); err != nil {
		return cur, err
	}
	var full, public json.RawMessage
	var secret []string
	if patch != nil {
		saved := map[string]json.RawMessage{}
		if err := json.Unmarshal(cur.Settings, &saved); err != nil {
			return cur, err
		}
		merged := maps.Clone(saved)
		for k, v := range patch {
			if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
				delete(merged, k)
			} else {
				merged[k] = v
			}
		}
		info, err := s.connectorInfo(ctx, cur.Connector)
		if err != nil {
			return cur, err
		}
		// Before the connector sees the settings: its validation might
		// call the new destination with the saved secrets.
		checkSecretsFollow(&f, info, cur.SecretFields, saved, merged, patch)
		if err := f.Err(); err != nil {
			return cur, err
		}
		secret = info.SecretFields
		if full, public, err = split(merged, secret); err != nil {
			return cur, err
		}
		if err := s.checkSettings(ctx, cur.Connector, full); err != nil {
			return cur, err
		}
	}
	now := s.now()
	w, err := s.change(ctx, p, id, func(w *store.Webhook) error {
		if !w.UpdatedAt.Equal(cur.UpdatedAt) {
			return fault.New(fault.InvalidState, "connection %s changed meanwhile: read it again and retry", id)
		}
		if in.Name != nil {
			w.Name = name
		}
		if in.Events != nil {
			w.Events = kinds
		}
		if in.Domains != nil {
			w.Domains = doms
		}
		w.MinScoreChange, w.MinCitationChange, w.MinCrawlerErrors = minScore, minCitation, minErrors
		if patch != nil {
			w.Settings, w.PublicSettings, w.SecretFields = full, public, secret
		}
		setEnabled(w, in.Enabled, now)
		w.UpdatedAt = now
		return nil
	})
	if err == nil && w.Enabled && s.Wake != nil {
		s.Wake()
	}
	return w, err
}

// TestConnection has the connector deliver a real webhook_test event with
// the connection's settings, and says what became of it.
func (s *Service) TestConnection(ctx context.Context, p auth.Principal, id string) (client.ConnectionTestResult, error) {
	var out client.ConnectionTestResult
	w, err := s.live(ctx, p, id)
	if err != nil {
		return out, err
	}
	if s.Hub == nil {
		return out, fault.New(fault.ConnectorUnavailable, "this server runs no connectors")
	}
	ev, err := testEvent(w, s.now(), "a test event from aivis: this connection works")
	if err != nil {
		return out, err
	}
	m, err := ev.Message()
	if err != nil {
		return out, err
	}
	sev := SDKEvent(store.Delivery{EventID: ev.ID, Event: ev.Event, Payload: m.Payload, AccountID: w.AccountID}, w.ClientID)
	// The test writes nothing: a request that holds an Idempotency-Key
	// marks it acted before it sends, so that a retry after this server
	// stopped sends no second test (at most one, rather than at least).
	if store.HoldsKey(ctx) {
		if err := s.Store.Update(ctx, func(tx store.Tx) error { return store.MarkActed(ctx, tx) }); err != nil {
			return out, err
		}
	}
	start := time.Now()
	res, err := s.Hub.Test(ctx, w.Connector, w.Settings, sev)
	if err != nil {
		return out, s.hubError(w.Connector, err)
	}
	out = client.ConnectionTestResult{EventID: ev.ID, LatencyMS: float64(time.Since(start).Microseconds()) / 1000,
		Reason: optionalString(reason(res.Reason))}
	var v verdict
	v, _, out.Result = connectorVerdict(res)
	switch {
	case v == delivered:
		out.Reason = nil
	case v == retry && res.RetryAfter > 0:
		secs := res.RetryAfter.Seconds() // as the connector said it, not capped
		out.RetryAfterSeconds = &secs
	}
	return out, nil
}

func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Subscribe makes a Zapier REST Hook subscription: a connection of the
// zapier connector that delivers one event kind (of one domain, or all)
// to target_url, deleted when Zapier unsubscribes or answers 410. It is
// kept only if target_url accepts a webhook_test event first.
func (s *Service) Subscribe(ctx context.Context, p auth.Principal, in client.ZapierSubscribe) (store.Webhook, error) {
	var f fault.Fields
	switch {
	case in.Event == "":
		f.Add("event", "is required (kinds: %s)", strings.Join(events.Kinds, ", "))
	case !events.Known(in.Event):
		f.Add("event", "unknown event kind %q (kinds: %s)", in.Event, strings.Join(events.Kinds, ", "))
	}
	if in.TargetURL == "" {
		f.Add("target_url", "is required")
	} else if len(in.TargetURL) > MaxURLLength {
		f.Add("target_url", "must be at most %d characters", MaxURLLength)
	} else if err := s.CheckURL(in.TargetURL, s.AllowHTTP); err != nil {
		f.Add("target_url", "%s", err.Error())
	}
	var doms []string
	if in.Domain != "" {
		doms = checkDomains(&f, []string{in.Domain})
	}
	clientID, err := accounts.Owner(ctx, s.Store, p, in.ClientID)
	if err != nil {
		return store.Webhook{}, err
	}
	if err := f.Err(); err != nil {
		return store.Webhook{}, err
	}
	target, _ := json.Marshal(in.TargetURL)
	return s.insertConnection(ctx, p, clientID, ZapierConnector, "Zapier: "+in.Event,
		map[string]json.RawMessage{"target_url": target}, []string{in.Event}, doms,
		thresholds{0, DefaultMinCitationChange, DefaultMinCrawlerErrors}, true)
}

// MaxRecentEvents bounds a page of recent events.
const MaxRecentEvents = 100

// RecentEvents lists the newest events of the principal's owner (an
// account's own, or one client's), of one kind or all.
func (s *Service) RecentEvents(ctx context.Context, p auth.Principal, kind, clientID string, limit int) ([]store.LoggedEvent, error) {
	evs, _, err := s.Events(ctx, p, kind, clientID, "", limit)
	return evs, err
}

// Events returns a page of the events of the principal's owner, of one
// kind or all, newest first, and the next page's cursor ("" on the
// last): every event the log keeps, page by page.
func (s *Service) Events(ctx context.Context, p auth.Principal, kind, clientID, cursor string, limit int) ([]store.LoggedEvent, string, error) {
	if kind != "" && !events.Known(kind) {
		return nil, "", fault.Invalid(fault.FieldError{Field: "event",
			Message: fmt.Sprintf("unknown event kind %q (kinds: %s)", kind, strings.Join(events.Kinds, ", "))})
	}
	owner, all, ok := accounts.ListScope(p, clientID)
	if !ok {
		return nil, "", nil
	}
	evs, next, err := s.Store.RecentEvents(ctx, store.EventFilter{AccountID: p.AccountID(), ClientID: owner, AllClients: all, Event: kind,
		Cursor: cursor, Limit: min(max(limit, 1), MaxRecentEvents)})
	return evs, next, accounts.CursorError(err)
}
