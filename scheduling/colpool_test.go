package scheduling

import (
	"fmt"
	"math"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
)

// TestDeferredSearchesChangeNothing: a column generation that defers the pricing searches the
// families' LP relaxations rule out (colpool.go) ends exactly where one that runs every search
// does — same values, bound, basis and columns — on small LPs whose tiny work budget (low
// Effort) is spent after a round, so that deferring starts early.
func TestDeferredSearchesChangeNothing(t *testing.T) {
	deferring := 0
	rapid.Check(t, func(rt *rapid.T) {
		var ps []*corev1.Pod
		for i := range rapid.IntRange(2, 10).Draw(rt, "groups") {
			cpu := rapid.SampledFrom([]string{"250m", "500m", "1", "1500m", "3", "5"}).Draw(rt, fmt.Sprintf("cpu-%d", i))
			mem := rapid.SampledFrom([]string{"256Mi", "1Gi", "3Gi", "6Gi", "12Gi", "30Gi"}).Draw(rt, fmt.Sprintf("mem-%d", i))
			ps = append(ps, pods(fmt.Sprintf("g%d", i), rapid.IntRange(1, 80).Draw(rt, fmt.Sprintf("n-%d", i)), cpu, mem)...)
		}
		var types []nodeplan.InstanceType
		for _, n := range rapid.SliceOfNDistinct(rapid.SampledFrom([]int{2, 4, 8, 16, 32, 48, 64}), 2, 7, rapid.ID[int]).Draw(rt, "sizes") {
			it := cType(n, rapid.Float64Range(0.03, 0.07).Draw(rt, fmt.Sprintf("price-%d", n))*float64(n))
			if rapid.Bool().Draw(rt, fmt.Sprintf("memory-%d", n)) {
				// A memory-optimised type: 8 GiB per vCPU, dearer.
				it.Name += "-r"
				it.Labels[nodeplan.LabelInstanceType] = it.Name
				it.Capacity[corev1.ResourceMemory] = *resource.NewQuantity(int64(n)*8<<30, resource.BinarySI)
				it.Offerings[0].Price *= 1.3
			}
			types = append(types, it)
		}
		in := Input{Pods: ps, NodePools: []nodeplan.NodePool{{Name: "p"}},
			PoolInstanceTypes: map[string][]nodeplan.InstanceType{"p": types},
			Options:           Options{Effort: rapid.SampledFrom([]float64{1e-4, 1e-3, 0.01}).Draw(rt, "effort")}}
		p, err := newProblem(&in, preferences{})
		if err != nil {
			rt.Fatal(err)
		}
		counts := p.pendingCounts()
		run := func(deferAllowed bool) (string, bool) {
			c := p.newColGen(counts, p.shapes)
			if c == nil {
				return "", false
			}
			if !deferAllowed {
				for i := range c.refVal {
					c.refVal[i] = math.Inf(1) // above refineAgain: never checked, never deferred
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
