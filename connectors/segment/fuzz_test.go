package main

import (
	"context"
	"testing"

	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/connectors/segment/segmentfake"
	"github.com/aivis/aivis/plugins/sdk"
)

// FuzzAnswers: what the connector makes of Segment's answers, which may
// repeat the write key (kittest.FuzzAnswers).
func FuzzAnswers(f *testing.F) {
	fake := segmentfake.New()
	f.Cleanup(fake.Close)
	c := &connector{client: kittest.Client()}
	const key = "wk_S3cretWriteKey0123456789"
	kittest.FuzzAnswers(f, fake, []string{key}, []kittest.Call{{Name: "Deliver",
		Do: func(ctx context.Context) sdk.Result { return c.Deliver(ctx, settingsFor(fake, key), events(3))[0] },
		// A refused write key (401, 403) fails; the rest as usual.
		Want: func(status int, _ []byte) []sdk.Outcome {
			if status == 401 || status == 403 {
				return []sdk.Outcome{sdk.PermanentFailure}
			}
			return []sdk.Outcome{kittest.ByStatus(status)}
		}}},
		kittest.Answer{Status: 400, Before: `{"success":false,"message":"invalid write key `, After: `"}`, Echo: 2})
}
