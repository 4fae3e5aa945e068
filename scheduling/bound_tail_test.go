package scheduling

import (
	"testing"

	"pgregory.net/rapid"
)

// TestStoppedBoundIsBelowTheLP: a bound-only column generation stopped by its rule (proofTail)
// reports a bound no more than the optimum of its LP — the same LP run until no column
// improves it, with a budget large enough — since every check proves Farley's bound, which
// no solution of the LP beats. Tiny work budgets (low Effort) let the rule stop after a round.
func TestStoppedBoundIsBelowTheLP(t *testing.T) {
	stopped := 0
	rapid.Check(t, func(rt *rapid.T) {
		in := drawLPInput(rt, 12, 60, false, []float64{1e-6, 1e-4, 1e-3})
		p, err := newProblem(&in, preferences{relaxTopology: true})
		if err != nil {
			rt.Fatal(err)
		}
		counts := p.pendingCounts()
		c := p.newColGen(counts, p.shapes, relaxedLP, nil)
		if c == nil {
			rt.Skip("no pod fits")
		}
		c.tail = newProofTail()
		got := c.result(c.iterate(), !c.tail.stopped).lb
		if c.tail.stopped {
			stopped++
		}

		p.in.Options.Effort = 1000
		ref := p.newColGen(counts, p.shapes, relaxedLP, nil)
		if !ref.iterate() {
			rt.Skip("the reference LP did not converge")
		}
		if opt := ref.m.objective(); got > opt*(1+1e-6)+1e-9 {
			rt.Fatalf("stopped LP's bound %v > the LP's optimum %v (stopped %v after %d rounds)", got, opt, c.tail.stopped, c.nsum)
		}
	})
	t.Logf("the rule stopped %d column generations", stopped)
	if stopped == 0 {
		t.Errorf("the rule stopped no column generation: the test shows nothing")
	}
}
