package probe

import (
	"time"

	"github.com/aivis/aivis/core/metrics"
)

// count counts a request to e that took d: answered (a, its cost at e's
// prices) or failed (err, by its failure's category).
func (c *Client) count(e Engine, a Answer, err error, d time.Duration) {
	if c.Metrics == nil {
		return
	}
	if err != nil {
		c.Metrics.Call(e.Label, e.kind(), FailureOf(err).Category, d, 0)
		return
	}
	c.Metrics.Call(e.Label, e.kind(), metrics.EngineOK, d, e.Cost(a))
}
