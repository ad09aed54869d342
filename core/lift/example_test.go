package lift_test

import (
	"fmt"
	"time"

	"github.com/aivis/aivis/core/lift"
)

// A domain's 12 prompts, 3 samples each on one engine in a daily scan; on
// 1 June a rewrite of the pages behind prompts p01 to p06 goes live.
// Each prompt's citations in its 21 answers of a week are set by hand,
// the same in each of the 3 weeks before the change, spread evenly over
// those answers. The window is the last week before and the first after.
func ExampleCompute() {
	change := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	cited := map[string][2]int{ // before, after, of 21
		"p01": {3, 9}, "p02": {5, 7}, "p03": {4, 11}, "p04": {2, 5}, "p05": {6, 14}, "p06": {4, 9},
		"p07": {5, 7}, "p08": {3, 2}, "p09": {6, 6}, "p10": {4, 6}, "p11": {2, 4}, "p12": {4, 5},
	}
	var answers []lift.Answer
	for day := -21; day < 7; day++ {
		side, i0 := 0, (day+21)%7*3
		if day >= 0 {
			side, i0 = 1, day*3
		}
		for p, k := range cited {
			for s := range 3 {
				i := i0 + s // the answer's place among the prompt's 21 on its side
				answers = append(answers, lift.Answer{
					Scan: fmt.Sprint("scan ", day), At: change.AddDate(0, 0, day).Add(6 * time.Hour),
					Engine: "chatgpt", Prompt: p, Targeted: p <= "p06",
					Cited: (i+1)*k[side]/21 > i*k[side]/21,
				})
			}
		}
	}
	rep, err := lift.Compute(lift.Request{Answers: answers, Change: change, Scans: 7})
	if err != nil {
		panic(err)
	}
	c := rep.Overall.Metrics[1]
	fmt.Printf("%s, targeted: %.3f → %.3f (%d answers a side, design effect %.2f and %.2f)\n",
		c.Metric, c.Before.Value, c.After.Value, c.Before.Units, c.Before.DesignEffect, c.After.DesignEffect)
	fmt.Printf("difference %+.3f [%+.3f, %+.3f] (%s)\n", c.Difference.Estimate, c.Difference.Interval.Low, c.Difference.Interval.High, c.Difference.Method)
	fmt.Printf("untargeted: %.3f → %.3f, difference %+.3f [%+.3f, %+.3f]\n", c.Control.Before.Value, c.Control.After.Value,
		c.Control.Difference.Estimate, c.Control.Difference.Interval.Low, c.Control.Difference.Interval.High)
	fmt.Printf("DiD %+.3f [%+.3f, %+.3f] (%s)\n", c.DiD.Estimate, c.DiD.Interval.Low, c.DiD.Interval.High, c.DiD.Method)
	fmt.Printf("window to detect 10 points: difference %d scans (%d to come), DiD %d\n", c.Difference.ScansNeeded, c.Difference.MoreScans, c.DiD.ScansNeeded)
	p := rep.Overall.Metrics[4]
	fmt.Printf("%s: %s: %s\n", p.Metric, p.Difference.Status, p.Difference.Reason)
	// Output:
	// citation_rate, targeted: 0.190 → 0.437 (126 answers a side, design effect 1.00 and 1.86)
	// difference +0.246 [+0.110, +0.378] (newcombe_clustered)
	// untargeted: 0.190 → 0.238, difference +0.048 [-0.054, +0.148]
	// DiD +0.198 [+0.077, +0.320] (cluster_robust_t)
	// window to detect 10 points: difference 25 scans (18 to come), DiD 66
	// average_position: insufficient_data: too few prompts with answers that count before the change: 0 of at least 5
}
