package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"
)

// Series is one line (or stack of bars) of a chart.
type Series struct {
	Name   string
	Values []float64
	Class  string // the CSS class that colours it: s0..s5
}

// Chart is a chart drawn as inline SVG on the server: bars (stacked) or
// lines over the same labels. It is an image with a title for screen
// readers, and the page shows its numbers in a table beside it.
type Chart struct {
	Title  string
	Labels []string
	Series []Series
	Lines  bool
	// Min and Max fix the value axis (both zero: from 0 to the data's
	// highest value).
	Min, Max float64
	// Marks are the moments marked on the chart (the domain's changes),
	// each a vertical line with its title.
	Marks []Mark
}

// Mark is a moment marked on a chart: a change that went live.
type Mark struct {
	Title string
	At    time.Time
	// Link is the change's page.
	Link string
	// Pos is where it falls along the labels, in labels from the left
	// edge of the first (0.5 is the middle of the first).
	Pos float64
}

// Name is the mark as its legend and the chart's description say it.
func (m Mark) Name() string { return m.Title + " (" + m.At.UTC().Format("2006-01-02 15:04 UTC") + ")" }

// pointMarks places the marks on a chart whose points are at times
// (oldest first): between the two points around each, in proportion to
// its time; a mark before the first point or after the last is left
// out.
func pointMarks(times []time.Time, marks []Mark) []Mark {
	var out []Mark
	for _, m := range marks {
		for i := range times {
			switch {
			case m.At.Equal(times[i]):
				m.Pos = float64(i) + 0.5
			case i+1 < len(times) && m.At.After(times[i]) && m.At.Before(times[i+1]):
				m.Pos = float64(i) + 0.5 + float64(m.At.Sub(times[i]))/float64(times[i+1].Sub(times[i]))
			default:
				continue
			}
			out = append(out, m)
			break
		}
	}
	return out
}

// dayMarks places the marks on a chart of a bar a day from `from` to
// `to` (exclusive): within its day, by the time of day; a mark outside
// the days is left out.
func dayMarks(from, to time.Time, marks []Mark) []Mark {
	var out []Mark
	for _, m := range marks {
		if m.At.Before(from) || !m.At.Before(to) {
			continue
		}
		m.Pos = float64(m.At.Sub(from)) / float64(24*time.Hour)
		out = append(out, m)
	}
	return out
}

const (
	chartW, chartH = 640, 240
	padL, padR     = 44, 8
	padT, padB     = 10, 28
)

// SVG draws the chart.
func (c Chart) SVG() template.HTML {
	var b strings.Builder
	n := len(c.Labels)
	lo, hi := c.Min, c.Max
	intervals := 4
	if lo == 0 && hi == 0 {
		for i := range n {
			sum := 0.0
			for _, s := range c.Series {
				if i < len(s.Values) {
					if c.Lines {
						hi = math.Max(hi, s.Values[i])
					} else {
						sum += s.Values[i]
					}
				}
			}
			hi = math.Max(hi, sum)
		}
		hi, intervals = niceCeil(max(hi, 4)) // at least 4: whole numbers on the axis
	}
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	y := func(v float64) float64 { return padT + plotH - (v-lo)/(hi-lo)*plotH }
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="%s" aria-describedby="%s-desc" preserveAspectRatio="xMidYMid meet">`,
		chartW, chartH, id(c.Title), id(c.Title))
	fmt.Fprintf(&b, `<title id="%s">%s</title>`, id(c.Title), template.HTMLEscapeString(c.Title))
	fmt.Fprintf(&b, `<desc id="%s-desc">%s</desc>`, id(c.Title), template.HTMLEscapeString(c.Summary()))
	for i := 0; i <= intervals; i++ {
		v := lo + (hi-lo)*float64(i)/float64(intervals)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padL, chartW-padR, y(v), y(v))
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-4, y(v)+4, short(v))
	}
	if n > 0 {
		step := plotW / float64(n)
		every := max(1, n/8)
		for i, l := range c.Labels {
			if i%every == 0 {
				fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%d" text-anchor="middle">%s</text>`, padL+step*(float64(i)+0.5), chartH-8, template.HTMLEscapeString(l))
			}
		}
		if c.Lines {
			for _, s := range c.Series {
				var pts []string
				for i, v := range s.Values {
					if math.IsNaN(v) {
						continue
					}
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", padL+step*(float64(i)+0.5), y(v)))
				}
				fmt.Fprintf(&b, `<polyline class="line %s" points="%s"/>`, s.Class, strings.Join(pts, " "))
				for _, p := range pts {
					xy := strings.Split(p, ",")
					fmt.Fprintf(&b, `<circle class="dot %s" cx="%s" cy="%s" r="3"/>`, s.Class, xy[0], xy[1])
				}
			}
		} else {
			bw := math.Max(step*0.8, 1)
			for i := range n {
				base := lo
				for _, s := range c.Series {
					if i >= len(s.Values) || s.Values[i] == 0 {
						continue
					}
					top := base + s.Values[i]
					fmt.Fprintf(&b, `<rect class="bar %s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s %s: %s</title></rect>`,
						s.Class, padL+step*float64(i)+(step-bw)/2, y(top), bw, y(base)-y(top),
						template.HTMLEscapeString(s.Name), template.HTMLEscapeString(c.Labels[i]), short(s.Values[i]))
					base = top
				}
			}
		}
	}
	c.drawMarks(&b, plotW, plotH)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// drawMarks draws each mark as a vertical line over the plot, numbered
// at its top as the legend under the chart numbers it, its title shown
// on hover (the legend's link to the change takes the focus: a link in
// the chart, an image, would be hidden from screen readers).
func (c Chart) drawMarks(b *strings.Builder, plotW, plotH float64) {
	n := len(c.Labels)
	if n == 0 {
		return
	}
	step := plotW / float64(n)
	for i, m := range c.Marks {
		x := padL + step*m.Pos
		fmt.Fprintf(b, `<g class="mark"><title>%s</title>`, template.HTMLEscapeString("Change "+fmt.Sprint(i+1)+": "+m.Name()))
		fmt.Fprintf(b, `<line class="mark" x1="%.1f" x2="%.1f" y1="%d" y2="%.1f"/>`, x, x, padT, padT+plotH)
		fmt.Fprintf(b, `<rect class="mark-hit" x="%.1f" y="%d" width="12" height="%.1f"/>`, x-6, padT, plotH)
		fmt.Fprintf(b, `<text class="mark-label" x="%.1f" y="%d" text-anchor="start">%d</text></g>`, x+3, padT+10, i+1)
	}
}

func id(title string) string {
	var b strings.Builder
	b.WriteString("chart-")
	for _, r := range strings.ToLower(title) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// niceCeil is the round number at or above v that the value axis ends at,
// and how many intervals divide it into round steps.
func niceCeil(v float64) (float64, int) {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 4, 5, 10} {
		if m*p >= v {
			if m == 2 || m == 4 {
				return m * p, 4
			}
			return m * p, 5
		}
	}
	return 10 * p, 5
}

func short(v float64) string {
	switch {
	case math.Abs(v) >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case math.Abs(v) >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// Latest is the last value of a series.
func (s Series) Latest() float64 {
	if len(s.Values) == 0 {
		return 0
	}
	return s.Values[len(s.Values)-1]
}

// Summary says in words what the chart shows, for those who cannot see
// it: per series, its first and latest value and its range (lines), or
// its total and its highest bar (bars).
func (c Chart) Summary() string {
	if len(c.Labels) == 0 || len(c.Series) == 0 {
		return "No data in this period."
	}
	parts := []string{fmt.Sprintf("%d points from %s to %s.", len(c.Labels), c.Labels[0], c.Labels[len(c.Labels)-1])}
	for _, s := range c.Series {
		var vals []float64
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		lo, hi := vals[0], vals[0]
		at := 0
		for i, v := range s.Values {
			if math.IsNaN(v) {
				continue
			}
			lo = math.Min(lo, v)
			if v > hi {
				hi, at = v, i
			}
		}
		if c.Lines {
			parts = append(parts, fmt.Sprintf("%s: first %s, latest %s, lowest %s, highest %s.", s.Name,
				short(vals[0]), short(vals[len(vals)-1]), short(lo), short(hi)))
		} else {
			parts = append(parts, fmt.Sprintf("%s: %s in all, most %s at %s.", s.Name, short(s.Total()), short(hi), c.Labels[min(at, len(c.Labels)-1)]))
		}
	}
	for i, m := range c.Marks {
		parts = append(parts, fmt.Sprintf("Change %d marked: %s.", i+1, m.Name()))
	}
	return strings.Join(parts, " ")
}
