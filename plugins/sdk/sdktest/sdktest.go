// Package sdktest is the conformance kit for connector plugins: a partner
// builds the plugin, points Run at the binary with settings of their own,
// and gets the checks the aivis server relies on, run against the real
// plugin process exactly as the server runs it.
package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/aivis/aivis/plugins/host"
	"github.com/aivis/aivis/plugins/sdk"
)

// Suite describes the plugin under test.
type Suite struct {
	// Binary is the built plugin.
	Binary string
	// Valid are settings the plugin must accept; Invalid, settings it must
	// refuse with at least one field error.
	Valid   []json.RawMessage
	Invalid []json.RawMessage
	// Deliverable are settings under which Deliver reaches a destination
	// the test controls (a local fake); with none, Deliver is not called.
	Deliverable json.RawMessage
	// Env is passed to the plugin (e.g. sdk.EnvAllowedTargets for a fake
	// on loopback).
	Env []string
	// Deadline bounds each call (default 10 s).
	Deadline time.Duration
}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Kinds a connector may declare.
var Kinds = []string{"chat", "automation", "crm", "analytics", "cdp", "workflow", "other"}

// Run starts the plugin and checks it; each check is a subtest.
func Run(t *testing.T, s Suite) {
	t.Helper()
	if s.Deadline == 0 {
		s.Deadline = 10 * time.Second
	}
	p, err := host.Start(host.Options{Path: s.Binary, Env: s.Env})
	if err != nil {
		t.Fatalf("the plugin does not start as the server starts it: %v", err)
	}
	t.Cleanup(p.Kill)
	c := p.Connector()
	ctx := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), s.Deadline)
		t.Cleanup(cancel)
		return c
	}
	var info sdk.Info
	t.Run("info", func(t *testing.T) {
		if info, err = c.Info(ctx()); err != nil {
			t.Fatal(err)
		}
		if !namePattern.MatchString(info.Name) {
			t.Errorf("Name %q: want [a-z0-9-], at most 63 characters", info.Name)
		}
		if !slices.Contains(Kinds, info.Kind) {
			t.Errorf("Kind %q: want one of %v", info.Kind, Kinds)
		}
		if info.Version == "" || info.DisplayName == "" {
			t.Errorf("Version %q, DisplayName %q: both are needed", info.Version, info.DisplayName)
		}
		var schema map[string]any
		if err := json.Unmarshal(info.SettingsSchema, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("SettingsSchema must be a JSON Schema of an object: %s", info.SettingsSchema)
		}
		props, _ := schema["properties"].(map[string]any)
		for _, f := range info.SecretFields {
			if _, ok := props[f]; !ok {
				t.Errorf("secret field %q is not in the schema's properties", f)
			}
		}
		for _, f := range info.DestinationFields {
			if _, ok := props[f]; !ok {
				t.Errorf("destination field %q is not in the schema's properties", f)
			}
		}
		if len(info.SecretFields) > 0 && len(info.DestinationFields) == 0 {
			t.Logf("no DestinationFields: the server asks for the secret fields again on every change of the settings")
		}
		if info.MaxBatch < 1 {
			t.Errorf("MaxBatch %d", info.MaxBatch)
		}
	})
	t.Run("valid settings", func(t *testing.T) {
		for _, v := range s.Valid {
			if fes, err := c.ValidateSettings(ctx(), v); err != nil || len(fes) != 0 {
				t.Errorf("%s refused: %+v %v", v, fes, err)
			}
		}
	})
	t.Run("invalid settings", func(t *testing.T) {
		for _, v := range append(slices.Clone(s.Invalid), json.RawMessage(`not json`), json.RawMessage(`[]`)) {
			fes, err := c.ValidateSettings(ctx(), v)
			if err != nil || len(fes) == 0 {
				t.Errorf("%s accepted: %v", v, err)
			}
			for _, fe := range fes {
				if fe.Message == "" {
					t.Errorf("%s: a field error without a message: %+v", v, fe)
				}
			}
		}
	})
	if s.Deliverable == nil {
		return
	}
	t.Run("deliver", func(t *testing.T) {
		n := max(info.MaxBatch, 1)
		evs := make([]sdk.Event, n)
		for i := range evs {
			id := fmt.Sprintf("evt_sdktest%d", i)
			evs[i] = sdk.Event{ID: id, Kind: "ai_visibility_change", Timestamp: time.Now().UTC(), AccountID: "acct_sdktest",
				Domain: "example.com", Body: []byte(fmt.Sprintf(`{"id":%q,"event":"ai_visibility_change","timestamp":%q,`+
					`"data":{"domain":"example.com","visibility_score":72,"sentiment":"positive","previous_visibility_score":60}}`,
					id, time.Now().UTC().Format(time.RFC3339Nano)))}
		}
		rs, err := c.Deliver(ctx(), s.Deliverable, evs)
		if err != nil {
			t.Fatalf("Deliver of %d events: %v", n, err)
		}
		for i, r := range rs {
			if r.Outcome != sdk.Delivered && r.Reason == "" {
				t.Errorf("result %d: %v without a reason", i, r.Outcome)
			}
		}
		if r, err := c.Test(ctx(), s.Deliverable, evs[0]); err != nil || (r.Outcome != sdk.Delivered && r.Reason == "") {
			t.Errorf("Test: %+v %v", r, err)
		}
	})
}
