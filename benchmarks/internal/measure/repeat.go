package measure

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"
)

// Options say how often to repeat a run. The zero value is usable.
type Options struct {
	// Runs is the most runs to make; 0 means 5. At least one run is always made.
	Runs int
	// Budget stops the repetition once the runs so far took this much wall time; 0 means 20s.
	// A slow scenario is thus measured once or twice instead of five times.
	Budget time.Duration
}

func (o Options) runs() int {
	if o.Runs <= 0 {
		return 5
	}
	return o.Runs
}

func (o Options) budget() time.Duration {
	if o.Budget <= 0 {
		return 20 * time.Second
	}
	return o.Budget
}

// Timing is what repeated runs measured.
type Timing struct {
	// Runs is how many runs were made.
	Runs int `json:"runs"`
	// Wall and CPU are the medians over the runs of wall-clock time and of the process's user
	// plus system CPU time (all threads: parallel work counts in full).
	Wall time.Duration `json:"wallNs"`
	CPU  time.Duration `json:"cpuNs"`
	// Allocs and Bytes are the heap allocations of the first run.
	Allocs uint64 `json:"allocs"`
	Bytes  uint64 `json:"bytes"`
}

// Repeat calls f up to o.Runs times, collecting garbage before each call so one run's garbage
// is not charged to the next, and returns the medians. It stops at the first error.
func Repeat(ctx context.Context, o Options, f func(context.Context) error) (Timing, error) {
	var walls, cpus []time.Duration
	var t Timing
	var spent time.Duration
	for i := 0; i < o.runs(); i++ {
		if i > 0 && spent >= o.budget() {
			break
		}
		if err := ctx.Err(); err != nil {
			return t, fmt.Errorf("measure: %w", err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		if i == 0 {
			runtime.ReadMemStats(&before)
		}
		cpu0 := cpuTime()
		start := time.Now()
		err := f(ctx)
		wall := time.Since(start)
		cpu := cpuTime() - cpu0
		if err != nil {
			return t, err
		}
		if i == 0 {
			runtime.ReadMemStats(&after)
			t.Allocs = after.Mallocs - before.Mallocs
			t.Bytes = after.TotalAlloc - before.TotalAlloc
		}
		walls = append(walls, wall)
		cpus = append(cpus, cpu)
		spent += wall
	}
	t.Runs = len(walls)
	t.Wall = Median(walls)
	t.CPU = Median(cpus)
	return t, nil
}

// Median returns the median of ds (the mean of the middle two for an even count), or 0 for none.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
