package randid

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSortedFollowsTime(t *testing.T) {
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 1000 {
		ids = append(ids, Sorted("dlv", base.Add(time.Duration(i*i)*time.Microsecond)))
	}
	if !slices.IsSorted(ids) {
		t.Error("ids of increasing times do not sort in that order")
	}
	for _, id := range ids[:3] {
		rest, ok := strings.CutPrefix(id, "dlv_")
		if !ok || len(rest) != 20 || strings.Trim(rest, sortable) != "" {
			t.Errorf("id %q: want dlv_ and 20 characters of [0-9A-Za-z]", id)
		}
	}
	if a, b := Sorted("x", base), Sorted("x", base); a == b {
		t.Errorf("two ids of one microsecond are equal: %s", a)
	}
	if late := Sorted("x", time.Date(2398, 1, 1, 0, 0, 0, 0, time.UTC)); late < Sorted("x", base) {
		t.Errorf("an id of 2398 sorts before one of 2026: %s", late)
	}
}

func TestSortedFloorBoundsTime(t *testing.T) {
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	floor := SortedFloor("evt", base)
	for i := -50; i < 50; i++ {
		at := base.Add(time.Duration(i) * time.Microsecond)
		for range 20 {
			if id := Sorted("evt", at); (id >= floor) != (i >= 0) {
				t.Fatalf("id %s of %+d µs against the floor %s of the base time", id, i, floor)
			}
		}
	}
}

// SortedTime reads back the time of an id Sorted made, to the
// microsecond, whatever its prefix; a string of another shape is refused.
func TestSortedTime(t *testing.T) {
	for _, at := range []time.Time{time.Date(2026, 11, 23, 10, 0, 0, 123456789, time.UTC), time.UnixMicro(0), time.Date(2398, 1, 1, 0, 0, 0, 0, time.UTC)} {
		for _, prefix := range []string{"evt", "dlv"} {
			if got, ok := SortedTime(Sorted(prefix, at)); !ok || !got.Equal(at.Truncate(time.Microsecond)) {
				t.Errorf("SortedTime(Sorted(%q, %v)) = %v, %v", prefix, at, got, ok)
			}
		}
	}
	for _, id := range []string{"", "evt", "evt_short", New("evt")[:10], "evt_" + strings.Repeat("-", 20)} {
		if got, ok := SortedTime(id); ok {
			t.Errorf("SortedTime(%q) = %v, true; want false", id, got)
		}
	}
}
