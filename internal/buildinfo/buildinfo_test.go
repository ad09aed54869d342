package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

func TestInfo(t *testing.T) {
	i := Get()
	if i.Version == "" || i.GoVersion != runtime.Version() {
		t.Fatalf("%+v", i)
	}
	s := Info{Version: "v1.2.3", Commit: "abc123", Date: "2026-11-27T12:00:00Z", GoVersion: "go1.26.8"}.String()
	if s != "aivis v1.2.3 (commit abc123, 2026-11-27T12:00:00Z) go1.26.8" {
		t.Errorf("%q", s)
	}
	if s := (Info{Version: "(devel)", GoVersion: "go1.26.8"}).String(); !strings.HasPrefix(s, "aivis (devel) go1.26.8") {
		t.Errorf("%q", s)
	}
}
