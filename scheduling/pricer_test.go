package scheduling

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
)

// TestKnapsackSearchFindsWhatBeatsTarget: on a column family, the pricing search (pruned at its target) finds a
// pattern worth more than the target exactly when the exact search's best is, and then the
// same value; it proves its answer when it finishes.
func TestKnapsackSearchFindsWhatBeatsTarget(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var ps []*corev1.Pod
		ngroups := rapid.IntRange(1, 6).Draw(rt, "groups")
		for i := range ngroups {
			cpu := rapid.SampledFrom([]string{"250m", "500m", "1", "1500m", "3"}).Draw(rt, fmt.Sprintf("cpu-%d", i))
			mem := rapid.SampledFrom([]string{"256Mi", "1Gi", "3Gi", "6Gi"}).Draw(rt, fmt.Sprintf("mem-%d", i))
			ps = append(ps, pods(fmt.Sprintf("g%d", i), rapid.IntRange(1, 30).Draw(rt, fmt.Sprintf("n-%d", i)), cpu, mem)...)
		}
		in := Input{Pods: ps, NodePools: []nodeplan.NodePool{{Name: "p"}},
			PoolInstanceTypes: map[string][]nodeplan.InstanceType{"p": {cType(rapid.SampledFrom([]int{2, 4, 8, 16}).Draw(rt, "size"), 1)}}}
		p, err := newProblem(&in, preferences{})
		if err != nil {
			rt.Fatal(err)
		}
		counts := p.pendingCounts()
		c := &colGen{p: p, counts: counts}
		c.buildFamilies(p.shapes)
		rows, fams := c.rows, c.fams
		if len(fams) == 0 {
			rt.Skip("nothing fits")
		}
		v := make([]float64, len(rows))
		for r := range v {
			v[r] = rapid.Float64Range(0, 1).Draw(rt, fmt.Sprintf("v-%d", r))
		}
		f := &fams[0]
		ks := newPricer(p)
		_, best, upper := ks.solve(f, v, math.MaxInt32, 0)
		if upper > best*(1+1e-9)+1e-12 {
			rt.Fatalf("exact solve not finished: best %v, upper %v", best, upper)
		}
		target := best * rapid.Float64Range(0.5, 1.5).Draw(rt, "target")
		pat, val, proved := ks.search(f, v, math.MaxInt32, 0, target)
		if !proved {
			rt.Fatalf("search with an unlimited budget did not prove its answer")
		}
		worth := 0.0
		used := make(vec, len(p.dims.names))
		for _, x := range pat.placed {
			worth += v[indexOf(rows, x.g)] * float64(x.k)
			used.addScaled(p.groups[x.g].req, x.k)
		}
		if math.Abs(worth-val) > 1e-9 || !used.fitsIn(f.s.alloc) {
			rt.Fatalf("pattern %v worth %v uses %v, reported %v, room %v", pat.placed, worth, used, val, f.s.alloc)
		}
		switch {
		case best > target*(1+1e-9) && math.Abs(val-best) > 1e-9*best:
			rt.Fatalf("best %v beats target %v, search found %v", best, target, val)
		case val > best*(1+1e-9):
			rt.Fatalf("search found %v, above the exact best %v", val, best)
		}
	})
}

func indexOf(rows []int, g int) int {
	for r, x := range rows {
		if x == g {
			return r
		}
	}
	return -1
}
