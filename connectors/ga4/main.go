// Command ga4 is the aivis connector for Google Analytics 4: it sends
// aivis events through the Measurement Protocol, validated before they are
// sent since GA4 drops bad events silently. It is a plugin the aivis
// server runs.
package main

import (
	"time"

	"github.com/aivis/aivis/plugins/sdk"
)

func main() { sdk.Serve(&connector{client: sdk.HTTPClient(15 * time.Second)}) }
