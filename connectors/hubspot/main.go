// Command hubspot is the aivis connector for HubSpot's CRM: it keeps each
// monitored domain's company up to date with aivis properties (upserted by
// domain, so a retry writes the same) and adds a note to the company on
// each alert. It is a plugin the aivis server runs.
package main

import (
	"time"

	"github.com/aivis/aivis/plugins/sdk"
)

func main() { sdk.Serve(&connector{client: sdk.HTTPClient(15 * time.Second)}) }
