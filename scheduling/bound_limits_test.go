package scheduling

import (
	"context"
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
)

// TestLimitedBoundIsValid: with a cheap pool capped by a cpu limit beside a dearer unlimited
// one, the lower bound (which prices the limit in, see limitedBound) never exceeds the optimum
// found by trying every partition of the pods into nodes and every pool for each node.
func TestLimitedBoundIsValid(t *testing.T) {
	tightened := 0
	rapid.Check(t, func(rt *rapid.T) {
		sizes := []int{2, 4, 8}
		var cheap, dear []nodeplan.InstanceType
		for _, n := range sizes {
			base := rapid.Float64Range(0.05, 0.2).Draw(rt, fmt.Sprintf("price-%d", n)) * float64(n)
			cheap = append(cheap, cType(n, math.Round(base*1000)/1000))
			dear = append(dear, cType(n, math.Round(base*rapid.Float64Range(1.5, 4).Draw(rt, fmt.Sprintf("markup-%d", n))*1000)/1000))
		}
		limit := rapid.IntRange(0, 16).Draw(rt, "limit")
		pools := []nodeplan.NodePool{
			{Name: "cheap", Weight: 50, Limits: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(limit), resource.DecimalSI)}},
			{Name: "dear", Weight: 10},
		}
		npods := rapid.IntRange(1, 6).Draw(rt, "pods")
		var ps []*corev1.Pod
		for i := range npods {
			cpu := rapid.SampledFrom([]string{"500m", "1", "1500m", "3", "5"}).Draw(rt, fmt.Sprintf("cpu-%d", i))
			ps = append(ps, pod(fmt.Sprintf("p%d", i), cpu, ""))
		}
		in := Input{Pods: ps, NodePools: pools, PoolInstanceTypes: map[string][]nodeplan.InstanceType{"cheap": cheap, "dear": dear}}
		res, err := Solve(context.Background(), in)
		if err != nil {
			rt.Fatal(err)
		}
		if len(res.Unschedulable) > 0 {
			rt.Skip("some pods fit nowhere")
		}
		opt := limitedOptimum(rt, in)
		if res.LowerBound > opt+1e-9 {
			rt.Fatalf("LowerBound %v > optimum %v (cost %v)", res.LowerBound, opt, res.Cost)
		}
		if res.Cost < opt-1e-9 {
			rt.Fatalf("Cost %v < optimum %v: the oracle is wrong", res.Cost, opt)
		}
		p, err := newProblem(&in, preferences{})
		if err != nil {
			rt.Fatal(err)
		}
		if lb, _ := p.lowerBound(p.pendingCounts()); lb > 0 {
			if plain, _ := p.columnGeneration(p.pendingCounts(), p.shapes, nil, repricedLP, nil), 0; lb > plain.lb+1e-9 {
				tightened++
			}
		}
	})
	t.Logf("the limit tightened the bound in %d cases", tightened)
}

// limitedOptimum is the cheapest plan for in's pods, by brute force over every partition of the
// pods into nodes and every pool for each node, within the pools' cpu limits.
func limitedOptimum(rt *rapid.T, in Input) float64 {
	p, err := newProblem(&in, preferences{})
	if err != nil {
		rt.Fatal(err)
	}
	var reqs []vec
	for _, g := range p.groups {
		for range g.pods {
			reqs = append(reqs, g.req)
		}
	}
	cpu := p.dims.index[corev1.ResourceCPU]
	best := math.Inf(1)
	// place tries every shape of every pool for blocks[b:], with used cpu per pool so far.
	var blocks [][]int
	var place func(b int, total float64, used []int64)
	place = func(b int, total float64, used []int64) {
		if b == len(blocks) {
			best = min(best, total)
			return
		}
		sum := make(vec, len(p.dims.names))
		for _, j := range blocks[b] {
			sum.add(reqs[j])
		}
		for _, s := range p.shapes {
			pl := s.pool
			if !sum.fitsIn(s.alloc) || (pl.limited[cpu] && used[pl.idx]+s.capacity[cpu] > pl.limit[cpu]) {
				continue
			}
			used[pl.idx] += s.capacity[cpu]
			place(b+1, total+s.offerings[0].Price, used)
			used[pl.idx] -= s.capacity[cpu]
		}
	}
	var rec func(i int)
	rec = func(i int) {
		if i == len(reqs) {
			place(0, 0, make([]int64, len(p.pools)))
			return
		}
		for bi := range blocks {
			blocks[bi] = append(blocks[bi], i)
			rec(i + 1)
			blocks[bi] = blocks[bi][:len(blocks[bi])-1]
		}
		blocks = append(blocks, []int{i})
		rec(i + 1)
		blocks = blocks[:len(blocks)-1]
	}
	rec(0)
	return best
}
