package probe

import "testing"

// An answer whose surface showed nothing (no AI Overview) is an answer:
// it counts in the presence's "of" and every rate's, naming and citing
// nothing; a failure counts in neither.
func TestPresence(t *testing.T) {
	s := Subject{Domain: "acme.example", Brands: []string{"Acme"}}
	answer := func(text string, absent bool) Probe {
		a := Answer{Text: text, Absent: absent}
		return Probe{Answer: a, Finding: Analyze(s, a)}
	}
	failed := Probe{}
	failed.fail(&Failure{Category: FailProvider})
	st := measure(s, []Probe{answer("Acme is the one.", false), answer("", true), answer("", true), answer("Globex.", false), failed},
		make([]float64, 5))
	if st.Probes != 5 || st.Failed != 1 || st.Presence.Hits != 2 || st.Presence.Of != 4 || st.Mention.Hits != 1 || st.Mention.Of != 4 {
		t.Errorf("presence %+v, mention %+v, probes %d, failed %d", st.Presence, st.Mention, st.Probes, st.Failed)
	}
}

// Over engines of several surfaces, each rate is the mean of the
// surfaces' (each weighing the same), its interval the mean of theirs,
// its hits and of summed; the position score too; the rest pooled. Over
// one surface, the figures are the pooled ones.
func TestOverallOfSurfaces(t *testing.T) {
	model := Stats{Mention: NewRate(1, 2), Citation: NewRate(0, 2), Presence: NewRate(2, 2), PositionScore: 1, InputTokens: 10}
	serp := Stats{Mention: NewRate(6, 8), Citation: NewRate(2, 8), Presence: NewRate(4, 8), PositionScore: 0.5, InputTokens: 0}
	pooled := Stats{Mention: NewRate(7, 10), Citation: NewRate(2, 10), Presence: NewRate(6, 10), PositionScore: 0.6, InputTokens: 10}
	if got := OverallOf(pooled, []Stats{model}); got.Mention != pooled.Mention || got.PositionScore != 0.6 {
		t.Errorf("one surface: %+v", got)
	}
	got := OverallOf(pooled, []Stats{model, serp})
	// Mention (1/2 + 6/8) / 2 = 0.625; citation (0 + 0.25) / 2 = 0.125;
	// presence (1 + 0.5) / 2 = 0.75; position (1 + 0.5) / 2 = 0.75.
	m := got.Mention
	if m.Value != 0.625 || m.Hits != 7 || m.Of != 10 ||
		m.Interval.Low != (model.Mention.Interval.Low+serp.Mention.Interval.Low)/2 || m.Interval.High != (model.Mention.Interval.High+serp.Mention.Interval.High)/2 {
		t.Errorf("mention %+v", m)
	}
	if got.Citation.Value != 0.125 || got.Presence.Value != 0.75 || got.PositionScore != 0.75 || got.InputTokens != 10 {
		t.Errorf("citation %+v, presence %+v, position %v, tokens %d", got.Citation, got.Presence, got.PositionScore, got.InputTokens)
	}
	// The mean of the bounds is no narrower than the interval of the mean
	// of independent rates: half-widths h1, h2 give (h1 + h2) / 2 ≥ √(h1² + h2²) / 2.
	if half := (m.Interval.High - m.Interval.Low) / 2; half < 0.1 {
		t.Errorf("interval %+v", m.Interval)
	}
}
