package main

import (
	"context"
	"testing"

	"github.com/aivis/aivis/connectors/ga4/ga4fake"
	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/plugins/sdk"
)

// FuzzAnswers: what the connector makes of the answers of GA4's
// collection and validation servers, which may repeat the API secret
// (kittest.FuzzAnswers).
func FuzzAnswers(f *testing.F) {
	fake := ga4fake.New()
	f.Cleanup(fake.Close)
	c := &connector{client: kittest.Client()}
	const secret = "Ga4ApiS3cret-0123456789"
	ev := kittest.Change("evt_1", "example.com", 72, 60, "positive")
	byStatus := func(status int, _ []byte) []sdk.Outcome { return []sdk.Outcome{kittest.ByStatus(status)} }
	kittest.FuzzAnswers(f, fake, []string{secret}, []kittest.Call{
		{Name: "Deliver", Do: func(ctx context.Context) sdk.Result {
			return c.Deliver(ctx, settingsFor(fake, secret), []sdk.Event{ev})[0]
		},
			Want: byStatus},
		// Test asks the validation server first: a 2xx that is not its
		// JSON is retried, one that reports a problem fails, one without
		// is followed by the event's delivery.
		{Name: "Test", Do: func(ctx context.Context) sdk.Result { return c.Test(ctx, settingsFor(fake, secret), ev) },
			Want: func(status int, body []byte) []sdk.Outcome {
				if status >= 200 && status < 300 {
					return []sdk.Outcome{sdk.Delivered, sdk.Retry, sdk.PermanentFailure}
				}
				return byStatus(status, body)
			}},
	}, kittest.Answer{Status: 200, Before: `{"validationMessages":[{"fieldPath":"`, After: `","description":"Unknown field","validationCode":"VALUE_INVALID"}]}`, Echo: 1},
		kittest.Answer{Status: 200, Before: `{"validationMessages":[]}`})
}
