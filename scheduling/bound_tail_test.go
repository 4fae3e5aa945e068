package scheduling

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
)

// TestStoppedBoundIsBelowTheLP: a bound-only column generation stopped by its rule (proofTail)
// reports a bound no more than the optimum of its LP — the same LP run until no column
// improves it, with a budget large enough — since every check proves Farley's bound, which
// no solution of the LP beats. Tiny work budgets (low Effort) let the rule stop after a round.
func TestStoppedBoundIsBelowTheLP(t *testing.T) {
	stopped := 0
	rapid.Check(t, func(rt *rapid.T) {
		var ps []*corev1.Pod
		for i := range rapid.IntRange(2, 12).Draw(rt, "groups") {
			cpu := rapid.SampledFrom([]string{"250m", "500m", "1", "1500m", "3", "5"}).Draw(rt, fmt.Sprintf("cpu-%d", i))
			mem := rapid.SampledFrom([]string{"256Mi", "1Gi", "3Gi", "6Gi", "12Gi", "30Gi"}).Draw(rt, fmt.Sprintf("mem-%d", i))
			ps = append(ps, pods(fmt.Sprintf("g%d", i), rapid.IntRange(1, 60).Draw(rt, fmt.Sprintf("n-%d", i)), cpu, mem)...)
		}
		var types []nodeplan.InstanceType
		for _, n := range rapid.SliceOfNDistinct(rapid.SampledFrom([]int{2, 4, 8, 16, 32, 48, 64}), 2, 7, rapid.ID[int]).Draw(rt, "sizes") {
			types = append(types, cType(n, rapid.Float64Range(0.03, 0.07).Draw(rt, fmt.Sprintf("price-%d", n))*float64(n)))
		}
		in := Input{Pods: ps, NodePools: []nodeplan.NodePool{{Name: "p"}},
			PoolInstanceTypes: map[string][]nodeplan.InstanceType{"p": types},
			Options:           Options{Effort: rapid.SampledFrom([]float64{1e-6, 1e-4, 1e-3}).Draw(rt, "effort")}}
		p, err := newProblem(&in, preferences{relaxTopology: true})
		if err != nil {
			rt.Fatal(err)
		}
		counts := p.pendingCounts()
		c := p.newColGen(counts, p.shapes)
		if c == nil {
			rt.Skip("no pod fits")
		}
		c.tail = newProofTail()
		got := c.result(c.iterate(), !c.tail.stopped).lb
		if c.tail.stopped {
			stopped++
		}

		p.in.Options.Effort = 1000
		ref := p.newColGen(counts, p.shapes)
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
