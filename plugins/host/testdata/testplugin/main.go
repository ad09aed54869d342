// A connector that misbehaves on request, for the host's tests: the
// settings' "mode" is ok, hang, garbage (wrong result count) or crash.
package main

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/aivis/aivis/plugins/sdk"
)

type bad struct{}

func (bad) Info() sdk.Info {
	return sdk.Info{Name: "test", Kind: "other", Version: "0", SettingsSchema: json.RawMessage(`{"type":"object"}`), MaxBatch: 10}
}

func (bad) ValidateSettings(context.Context, json.RawMessage) []sdk.FieldError { return nil }

func (bad) Deliver(ctx context.Context, raw json.RawMessage, events []sdk.Event) []sdk.Result {
	var s struct{ Mode string }
	json.Unmarshal(raw, &s)
	switch s.Mode {
	case "hang":
		time.Sleep(time.Hour)
	case "garbage":
		return []sdk.Result{}
	case "crash":
		os.Exit(3)
	}
	out := make([]sdk.Result, len(events))
	for i := range out {
		out[i] = sdk.DeliveredResult()
	}
	return out
}

func main() { sdk.Serve(bad{}) }
