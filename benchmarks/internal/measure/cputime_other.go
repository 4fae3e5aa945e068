//go:build !unix

package measure

import "time"

// cpuTime is not measured on this platform; CPU columns read 0.
func cpuTime() time.Duration { return 0 }
