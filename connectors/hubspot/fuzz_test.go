package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/aivis/aivis/connectors/hubspot/hubspotfake"
	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/plugins/sdk"
)

// FuzzAnswers: what the connector makes of HubSpot's answers to its
// upsert of companies, which may repeat the access token
// (kittest.FuzzAnswers).
func FuzzAnswers(f *testing.F) {
	fake := hubspotfake.New()
	f.Cleanup(fake.Close)
	c := &connector{client: kittest.Client()}
	settings := settingsFor(fake, hubspotfake.Token)
	if r := c.Test(context.Background(), settings, kittest.Event("evt_t", "webhook_test", "", nil)); r.Outcome != sdk.Delivered {
		f.Fatalf("test: %+v", r)
	}
	ev := kittest.Change("evt_1", "example.com", 72, 60, "positive")
	kittest.FuzzAnswers(f, fake, []string{hubspotfake.Token}, []kittest.Call{{Name: "Deliver",
		Do: func(ctx context.Context) sdk.Result { return c.Deliver(ctx, settings, []sdk.Event{ev})[0] },
		// A 2xx that is not HubSpot's JSON is retried, one without the
		// company fails; 429 and 5xx are retried; a write refused for a
		// missing aivis property makes the properties and is sent again;
		// the rest fail (HubSpot has no 410 of its own).
		Want: func(status int, body []byte) []sdk.Outcome {
			switch {
			case status >= 200 && status < 300:
				return []sdk.Outcome{sdk.Delivered, sdk.Retry, sdk.PermanentFailure}
			case status == 408 || status == 429 || status >= 500:
				return []sdk.Outcome{sdk.Retry}
			case bytes.Contains(body, []byte("does not exist")) && bytes.Contains(body, []byte(propertyPrefix)):
				return []sdk.Outcome{sdk.PermanentFailure, sdk.Delivered}
			}
			return []sdk.Outcome{sdk.PermanentFailure}
		}}},
		kittest.Answer{Status: 401, Before: `{"status":"error","message":"Authentication credentials not found: `, After: `","category":"INVALID_AUTHENTICATION"}`, Echo: 1},
		kittest.Answer{Status: 429, Before: `{"status":"error","message":"You have reached your daily limit.","errorType":"RATE_LIMIT","policyName":"DAILY","category":"`, After: `"}`, Echo: 1},
		kittest.Answer{Status: 400, Before: `{"status":"error","message":"Property \"aivis_score\" does not exist","category":"VALIDATION_ERROR"}`},
		kittest.Answer{Status: 200, Before: `{"results":[],"errors":[{"message":"`, After: `"}]}`, Echo: 1})
}
