// Command workflow is the aivis connector for no-code workflow builders:
// it starts a Make scenario or an n8n workflow with each event through
// their webhook triggers. It is a plugin the aivis server runs.
package main

import (
	"time"

	"github.com/aivis/aivis/plugins/sdk"
)

func main() { sdk.Serve(&connector{client: sdk.HTTPClient(30 * time.Second)}) }
