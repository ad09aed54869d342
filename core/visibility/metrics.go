package visibility

import (
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/store"
)

// ended is what a scan's attempt came to in the metrics, by the status
// its end recorded: completed, failed for good, or queued again.
func ended(status string) string {
	switch status {
	case store.ScanCompleted:
		return metrics.ScanCompleted
	case store.ScanFailed:
		return metrics.ScanFailed
	}
	return metrics.ScanRetried
}
