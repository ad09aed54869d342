package main

import (
	"context"
	"testing"

	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/connectors/zapier/zapierfake"
	"github.com/aivis/aivis/plugins/sdk"
)

// FuzzAnswers: what the connector makes of Zapier's answers, which may
// repeat the hook's URL, the connection's secret (kittest.FuzzAnswers).
func FuzzAnswers(f *testing.F) {
	fake := zapierfake.New()
	f.Cleanup(fake.Close)
	c := &connector{client: kittest.Client()}
	hook := fake.Hook("catch", "1/abcSecretHook")
	ev := kittest.Change("evt_1", "example.com", 72, 60, "positive")
	kittest.FuzzAnswers(f, fake, []string{hook}, []kittest.Call{{Name: "Deliver",
		Do:   func(ctx context.Context) sdk.Result { return c.Deliver(ctx, target(hook), []sdk.Event{ev})[0] },
		Want: func(status int, _ []byte) []sdk.Outcome { return []sdk.Outcome{kittest.ByStatus(status)} }}})
}
