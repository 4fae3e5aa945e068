package scheduling

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestDeferredSearchesChangeNothing: a column generation that defers the pricing searches the
// families' LP relaxations rule out (colpool.go) ends exactly where one that runs every search
// does — same values, bound, basis and columns — when it defers only once the budget is
// spent (deferLate; from the first round the uncounted work may decide when it stops), on
// small LPs whose tiny work budget (low Effort) is spent after a round, so that deferring
// starts early.
func TestDeferredSearchesChangeNothing(t *testing.T) {
	deferring := 0
	rapid.Check(t, func(rt *rapid.T) {
		in := drawLPInput(rt, 10, 80, true, []float64{1e-4, 1e-3, 0.01})
		p, err := newProblem(&in, preferences{})
		if err != nil {
			rt.Fatal(err)
		}
		counts := p.pendingCounts()
		run := func(deferAllowed bool) (string, bool) {
			c := p.newColGen(counts, p.shapes, valuesLP, nil)
			if c == nil {
				return "", false
			}
			c.cfg.deferLate = true
			if !deferAllowed {
				for i := range c.refVal {
					c.refVal[i] = math.Inf(1) // above cfg.refineAgain: never checked, never deferred
				}
			}
			converged := c.iterate()
			return summarizeCG(c.result(converged, true)), slices.Contains(c.deferred, true)
		}
		want, _ := run(false)
		got, deferred := run(true)
		if deferred {
			deferring++
		}
		if got != want {
			rt.Fatalf("with deferred searches:\n%s\nwith every search:\n%s", got, want)
		}
	})
	if deferring == 0 {
		t.Errorf("no column generation deferred a search: the test shows nothing")
	}
}

// summarizeCG writes a column generation's result out exactly (floats in full).
func summarizeCG(res cgResult) string {
	s := fmt.Sprintf("lb %v\nvalues %v\n", res.lb, res.values)
	pat := func(x pattern) string { return fmt.Sprintf("%d/%d %v", x.s.idx, x.o, x.placed) }
	for i, x := range res.basis {
		s += fmt.Sprintf("basis %s × %v\n", pat(x), res.lambda[i])
	}
	for _, x := range res.columns {
		s += "column " + pat(x) + "\n"
	}
	return s
}
