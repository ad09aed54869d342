// Command slack is the aivis connector for Slack: it posts each event as a
// Block Kit message, with a bot token to a channel (chat.postMessage) or
// to an incoming-webhook URL. It is a plugin the aivis server runs.
package main

import (
	"time"

	"github.com/aivis/aivis/plugins/sdk"
)

func main() { sdk.Serve(newConnector(sdk.HTTPClient(10 * time.Second))) }
