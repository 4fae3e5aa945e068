package scheduling_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// A cancelled Solve returns the context's error and leaves nothing running: the lower-bound
// proof it starts beside the plan (topology makes the input relaxable) is cancelled with it
// and waited for.
func TestSolveHonoursCancellation(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	in := karpenterMixInput(1)
	in.Pods = schedulingtest.KarpenterMix(rng, 3000, "cancel")
	before := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := scheduling.Solve(ctx, in); !errors.Is(err, context.Canceled) {
		t.Errorf("Solve(cancelled context) error = %v, want context.Canceled", err)
	}
	for _, d := range []time.Duration{time.Millisecond, 20 * time.Millisecond, 200 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		_, err := scheduling.Solve(ctx, in)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Solve(deadline %v) error = %v, want nil or context.DeadlineExceeded", d, err)
		}
	}
	// Goroutines of the runtime and the testing package come and go; give them a moment.
	var now int
	for range 50 {
		if now = runtime.NumGoroutine(); now <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("goroutines before = %d, after = %d: Solve left work running", before, now)
}
