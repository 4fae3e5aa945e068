package scheduling

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/nodeplan/nodeplan"
)

// firstFitCost plans in the way Karpenter does — first-fit decreasing onto growing nodes, each
// then the cheapest type that holds its pods — with the same topology handling as Solve (the
// same zone split, caps and conflicts), so that the two differ only in how they pack.
func firstFitCost(t *testing.T, in Input) (float64, int) {
	t.Helper()
	p, err := newProblem(&in, preferences{})
	if err != nil {
		t.Fatal(err)
	}
	p.setValues(p.pureValues())
	st := p.newPackState()
	p.placeOnBins(st)
	rem := slices.Clone(st.remaining)
	var claims []*claim
	for _, pl := range p.pools {
		claims = append(claims, p.packFFD(pl, &st.usage[pl.idx], rem)...)
	}
	st.claims = claims
	copy(st.remaining, rem)
	p.enforceTopology(st)
	res := p.result(st, p.rejectMinValues(st))
	return res.Cost, len(res.Unschedulable)
}

// TestKarpenterMixBeatsFirstFit: on Karpenter's benchmark mix Solve costs no more than
// first-fit decreasing and places as many pods.
func TestKarpenterMixBeatsFirstFit(t *testing.T) {
	catalog := loadCatalog(t)
	sizes := []int{1000, 5000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		t.Run(fmt.Sprintf("pods=%d", n), func(t *testing.T) {
			in := Input{Pods: karpenterMix(n), NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: catalog, DaemonSets: testDaemonSets()}
			res, err := Solve(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			ffd, ffdOut := firstFitCost(t, in)
			if len(res.Unschedulable) > ffdOut {
				t.Errorf("Solve leaves %d pods out, first-fit %d", len(res.Unschedulable), ffdOut)
			}
			if res.Cost > ffd+1e-9 {
				t.Errorf("Solve costs $%.2f/h, first-fit $%.2f/h", res.Cost, ffd)
			}
			t.Logf("Solve $%.2f/h, first-fit $%.2f/h (%.0f%% less), bound $%.2f/h", res.Cost, ffd, 100*(1-res.Cost/ffd), res.LowerBound)
		})
	}
}
