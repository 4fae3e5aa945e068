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
	f := &ffd{m: m, rooms: make([]vec, len(m.bins))}
	for i := range m.bins {
		f.rooms[i] = m.bins[i].room
	}
	for _, p := range ffdOrder(m) {
		if !f.place(p) {
			unplaced = append(unplaced, p.key)
		}
	}
	slices.Sort(unplaced)
	return f.cost(), unplaced
}

// ffdOrder returns the pods largest first: by cpu, then memory, descending, then by key.
func ffdOrder(m *model) []*mpod {
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
	return order
}

// ffd is first-fit decreasing's plan so far: the room left on the existing nodes, and the new
// nodes opened, in order.
type ffd struct {
	m     *model
	rooms []vec
	nodes []*ffdNode
}

// ffdNode is a new node of a pool: the sum of its pods' requests, and the variants of the pool
// (type and offering) that still hold them all.
type ffdNode struct {
	pool     int
	sum      vec
	variants []int
}

// place puts p onto the first existing node that takes it, else into the first open new node of
// its pool where it still fits some variant, else onto a new node of its pool. It reports false
// when p has no pool and no existing node takes it.
func (f *ffd) place(p *mpod) bool {
	for i := range f.m.bins {
		if f.m.bins[i].admits(p) && p.req.fits(f.rooms[i]) {
			f.rooms[i] = f.rooms[i].minus(p.req)
			return true
		}
	}
	if p.pool < 0 {
		return false
	}
	for _, n := range f.nodes {
		if n.pool != p.pool {
			continue
		}
		if vs := f.fitting(p, n.sum, n.variants); len(vs) > 0 {
			n.sum, n.variants = n.sum.plus(p.req), vs
			return true
		}
	}
	all := make([]int, len(f.m.pools[p.pool].variants))
	for i := range all {
		all[i] = i
	}
	f.nodes = append(f.nodes, &ffdNode{pool: p.pool, sum: p.req, variants: f.fitting(p, make(vec, len(f.m.names)), all)})
	return true
}

// fitting returns the variants among those given that p may use and that hold sum plus p.
func (f *ffd) fitting(p *mpod, sum vec, among []int) []int {
	var out []int
	total := sum.plus(p.req)
	for _, vi := range among {
		if p.ok[vi] && total.fits(f.m.pools[p.pool].variants[vi].room) {
			out = append(out, vi)
		}
	}
	return out
}

// cost is the new nodes' price, each at the cheapest variant that holds its pods.
func (f *ffd) cost() float64 {
	cost := 0.0
	for _, n := range f.nodes {
		best := math.Inf(1)
		for _, vi := range n.variants {
			best = math.Min(best, f.m.pools[n.pool].variants[vi].off.Price)
		}
		cost += best
	}
	return cost
}
