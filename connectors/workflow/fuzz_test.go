package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/connectors/workflow/workflowfake"
	"github.com/aivis/aivis/plugins/sdk"
)

// FuzzAnswers: what the connector makes of a Make or n8n trigger's
// answers, which may repeat the hook's URL or the credentials sent with it
// (kittest.FuzzAnswers).
func FuzzAnswers(f *testing.F) {
	fake := workflowfake.New()
	f.Cleanup(fake.Close)
	c := &connector{client: kittest.Client()}
	const password, token = "n8n-Pa55word-secret", "eyJhbGciOiJIUzI1NiJ9.e30.S3cretSignature"
	basic := fake.N8nWebhook("aivis-basic", workflowfake.Auth{User: "aivis", Password: password})
	bearer := fake.N8nWebhook("aivis-jwt", workflowfake.Auth{Token: token})
	ev := kittest.Change("evt_1", "example.com", 72, 60, "positive")
	deliver := func(settings map[string]string) func(context.Context) sdk.Result {
		return func(ctx context.Context) sdk.Result { return c.Deliver(ctx, set(settings), []sdk.Event{ev})[0] }
	}
	// Beyond the usual: n8n's 404 "not registered", 401 and 403 for
	// refused credentials, 413 for an event too large fail.
	want := func(status int, body []byte) []sdk.Outcome {
		switch {
		case status == 404 && bytes.Contains(body, []byte("not registered")), status == 401, status == 403, status == 413:
			return []sdk.Outcome{sdk.PermanentFailure}
		}
		return []sdk.Outcome{kittest.ByStatus(status)}
	}
	kittest.FuzzAnswers(f, fake, []string{basic, bearer, password, token}, []kittest.Call{
		{Name: "n8n basic", Do: deliver(map[string]string{"platform": "n8n", "webhook_url": basic, "auth": "basic", "username": "aivis", "password": password}), Want: want},
		{Name: "n8n bearer", Do: deliver(map[string]string{"platform": "n8n", "webhook_url": bearer, "auth": "bearer", "token": token}), Want: want},
	}, kittest.Answer{Status: 404, Before: `{"code":404,"message":"The requested webhook \"POST `, After: `\" is not registered."}`, Echo: 1})
}
