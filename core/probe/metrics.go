package probe

import (
	"time"

	"github.com/aivis/aivis/core/metrics"
)

// count counts a request to e that took d: answered (a, its cost at e's
// prices) or failed (err, by its failure's category, at what the
// provider billed for it).
func (c *Client) count(e Engine, a Answer, err error, d time.Duration) {
	if c.Metrics == nil {
		return
	}
	if err != nil {
		f := FailureOf(err)
		c.Metrics.Call(e.Label, e.kind(), f.Category, d, f.CostUSD)
		return
	}
	c.Metrics.Call(e.Label, e.kind(), metrics.EngineOK, d, e.Cost(a))
}
