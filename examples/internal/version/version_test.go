package version

import (
	"runtime/debug"
	"testing"
)

func TestDescribe(t *testing.T) {
	for _, tt := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"release", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}}, "plan v0.3.0 (go1.26.8)"},
		{"checkout", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-11-24T06:00:00Z"},
		}}, "plan (devel) 1a2b3c4d5e6f dirty 2026-11-24T06:00:00Z (go1.26.8)"},
		{"no version", debug.BuildInfo{GoVersion: "go1.26.8"}, "plan (devel) (go1.26.8)"},
	} {
		if got := describe("plan", &tt.info); got != tt.want {
			t.Errorf("describe(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
