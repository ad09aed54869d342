// Command segment is the aivis connector for Segment's HTTP Tracking API
// and the Segment-compatible RudderStack: each event becomes a track call,
// sent in batches, with the event's id as messageId so that a retry is
// de-duplicated. It is a plugin the aivis server runs.
package main

import (
	"time"

	"github.com/aivis/aivis/plugins/sdk"
)

func main() { sdk.Serve(&connector{client: sdk.HTTPClient(15 * time.Second)}) }
