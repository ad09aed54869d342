// Command zapier is the aivis connector for Zapier: it delivers each
// event to a Zapier REST Hook subscription's target URL (made through
// aivis's /v1/zapier/hooks by the aivis Zapier app) or to a "Catch Hook"
// URL. It is a plugin the aivis server runs.
package main

import (
	"time"

	"github.com/aivis/aivis/plugins/sdk"
)

func main() { sdk.Serve(&connector{client: sdk.HTTPClient(15 * time.Second)}) }
