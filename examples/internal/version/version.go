// Package version says which build of nodeplan's programs is running, for their -version flags.
//
// It reads what the Go toolchain records in every binary: the module version when the program
// was installed with `go install …@vX.Y.Z`, and the VCS revision and time when it was built from
// a checkout. Nothing is stamped at build time, so no linker flags or release tooling are needed.
//
// # Usage
//
//	if *showVersion {
//		fmt.Println(version.String("plan"))
//		return
//	}
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// String describes the running binary, e.g. "plan v0.3.0 (go1.26.8)" for an installed release
// or "plan (devel) 1a2b3c4d5e6f dirty 2026-11-24T06:00:00Z (go1.26.8)" for a build from a checkout.
func String(program string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return program + " (no build information)"
	}
	return describe(program, info)
}

func describe(program string, info *debug.BuildInfo) string {
	parts := []string{program, info.Main.Version}
	if info.Main.Version == "" {
		parts[1] = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		parts = append(parts, rev[:min(12, len(rev))])
		if settings["vcs.modified"] == "true" {
			parts = append(parts, "dirty")
		}
		if at := settings["vcs.time"]; at != "" {
			parts = append(parts, at)
		}
	}
	return fmt.Sprintf("%s (%s)", strings.Join(parts, " "), info.GoVersion)
}
