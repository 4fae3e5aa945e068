package schedulingtest

import (
	"cmp"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan/scheduling"
)

// FirstFitDecreasing returns the cost of a plain Karpenter-like plan for in, and the pods it
// leaves out (by key). Pods go in order of cpu, then memory, descending (then by key); each goes
// onto the first existing node (by name) that takes it, else into the first open new node of its
// pool where it still fits some type, else onto a new node of its pool. A node grows while any
// type and offering still holds its pods; it is then costed at the cheapest that does.
//
// It models what [Optimal] models, with the same assumptions (pods pinned to their
// highest-weight pool, DaemonSet overhead per node, existing nodes free), and ignores the rest:
// limits, spread, affinity, host ports and volumes. It is a baseline to beat, not a solver.
func FirstFitDecreasing(in scheduling.Input) (cost float64, unplaced []string) {
	m := newModel(&in)
	cpu, mem := slices.Index(m.names, corev1.ResourceCPU), slices.Index(m.names, corev1.ResourceMemory)
	get := func(v vec, i int) int64 {
		if i < 0 {
			return 0
		}
		return v[i]
	}
	order := make([]*mpod, len(m.pods))
	for i := range m.pods {
		order[i] = &m.pods[i]
	}
	slices.SortStableFunc(order, func(a, b *mpod) int {
		if c := cmp.Compare(get(b.req, cpu), get(a.req, cpu)); c != 0 {
			return c
		}
		if c := cmp.Compare(get(b.req, mem), get(a.req, mem)); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})

	type node struct {
		pool     int
		sum      vec
		variants []int
	}
	var nodes []*node
	rooms := make([]vec, len(m.bins))
	for i := range m.bins {
		rooms[i] = m.bins[i].room
	}
	fitting := func(p *mpod, sum vec, among []int) []int {
		var out []int
		total := sum.plus(p.req)
		for _, vi := range among {
			if p.ok[vi] && total.fits(m.pools[p.pool].variants[vi].room) {
				out = append(out, vi)
			}
		}
		return out
	}
pods:
	for _, p := range order {
		for i := range m.bins {
			if m.bins[i].admits(p) && p.req.fits(rooms[i]) {
				rooms[i] = rooms[i].minus(p.req)
				continue pods
			}
		}
		if p.pool < 0 {
			unplaced = append(unplaced, p.key)
			continue
		}
		for _, n := range nodes {
			if n.pool != p.pool {
				continue
			}
			if vs := fitting(p, n.sum, n.variants); len(vs) > 0 {
				n.sum, n.variants = n.sum.plus(p.req), vs
				continue pods
			}
		}
		all := make([]int, len(m.pools[p.pool].variants))
		for i := range all {
			all[i] = i
		}
		nodes = append(nodes, &node{pool: p.pool, sum: p.req, variants: fitting(p, make(vec, len(m.names)), all)})
	}
	for _, n := range nodes {
		best := math.Inf(1)
		for _, vi := range n.variants {
			best = math.Min(best, m.pools[n.pool].variants[vi].off.Price)
		}
		cost += best
	}
	slices.Sort(unplaced)
	return cost, unplaced
}
