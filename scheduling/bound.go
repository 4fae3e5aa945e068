package scheduling

import (
	"math"
)

// vec64 is a price per milli-unit of every resource dimension.
type vec64 []float64

// The lower bound is the value of a feasible solution to the dual of the fluid relaxation, in
// which pods may be split across nodes and nodes bought fractionally:
//
//	maximise   Σ_g n_g·v_g − Σ_b u_b
//	subject to v_g ≤ a_g·y_s        for every shape s group g may use
//	           cap_s·y_s ≤ price_s  (a new node of shape s costs at least what it holds)
//	           u_b ≥ Σ_{g on b} …    (existing room is free but finite)
//
// We pick one global price vector y ≥ 0 and scale it down per shape until the shape's
// allocatable is worth no more than its price: y_s = y·min(1, price_s/(alloc_s·y)). Then
// v_g = (a_g·y)·ρ_g with ρ_g = min over the group's shapes of min(1, price_s/(alloc_s·y)), which
// is cheap to evaluate, so y can be searched. Any y gives a valid bound; the search only makes
// it tighter.
//
// Existing room: a bin b can hold at most free_b·y of value (y is unscaled, so every pod's
// value is at most a_g·y) and at most the total value of the pods that may go there.

// boundState caches what the search needs.
type boundState struct {
	p *problem
	// groupShapes[g] are (shape, cheapest price for g) pairs.
	groupShapes [][]shapePrice
	counts      []float64 // pods per group counted in the bound
	bins        []*bin
	binGroups   [][]int
}

type shapePrice struct {
	s     *shape
	price float64
}

// prepareBound collects, for the groups whose pods are counted, the shapes they may use.
func (p *problem) prepareBound(counts []float64) *boundState {
	st := &boundState{p: p, counts: counts, groupShapes: make([][]shapePrice, len(p.groups))}
	for _, s := range p.shapes {
		for _, f := range p.byShape[s.idx] {
			price, _ := s.priceFor(f.mask)
			st.groupShapes[f.g] = append(st.groupShapes[f.g], shapePrice{s: s, price: price})
		}
	}
	for _, b := range p.bins {
		var gs []int
		for _, g := range p.groups {
			if counts[g.id] > 0 && b.admits(g) {
				gs = append(gs, g.id)
			}
		}
		if len(gs) > 0 {
			st.bins = append(st.bins, b)
			st.binGroups = append(st.binGroups, gs)
		}
	}
	return st
}

// eval returns the bound for prices y and each group's per-pod value.
func (st *boundState) eval(y vec64, values []float64) float64 {
	p := st.p
	scale := make([]float64, len(p.shapes))
	for _, s := range p.shapes {
		w := dot(s.alloc, y)
		scale[s.idx] = w // alloc·y; the shape's scale is min(1, price/w)
	}
	total := 0.0
	for _, g := range p.groups {
		values[g.id] = 0
		if len(st.groupShapes[g.id]) == 0 {
			continue
		}
		rho := 1.0
		for _, sp := range st.groupShapes[g.id] {
			if w := scale[sp.s.idx]; w > 0 {
				rho = min(rho, sp.price/w)
			}
		}
		v := dot(g.req, y) * rho
		values[g.id] = v
		total += st.counts[g.id] * v
	}
	for i, b := range st.bins {
		capValue := dot(b.free.clone().nonNegative(), y)
		podValue := 0.0
		for _, g := range st.binGroups[i] {
			podValue += st.counts[g] * values[g]
		}
		total -= min(capValue, podValue)
	}
	return max(total, 0)
}

func dot(a vec, y vec64) float64 {
	s := 0.0
	for i, x := range a {
		if x > 0 {
			s += float64(x) * y[i]
		}
	}
	return s
}

// searchBound finds resource prices that make the bound tight: it starts from the best
// single-resource bound and the cpu/memory mixes between them, then improves one coordinate at a
// time with shrinking multiplicative steps. It returns the bound, the prices, and per-group values.
func (st *boundState) search() (float64, vec64, []float64) {
	p := st.p
	R := len(p.dims.names)
	values := make([]float64, len(p.groups))
	// Per-dimension price scale: the cheapest price per milli-unit among shapes, so that the
	// candidate vectors start in the right range.
	base := make(vec64, R)
	for r := 0; r < R; r++ {
		best := math.Inf(1)
		for _, s := range p.shapes {
			if s.alloc[r] > 0 {
				best = min(best, s.minPrice/float64(s.alloc[r]))
			}
		}
		if !math.IsInf(best, 1) {
			base[r] = best
		}
	}
	bestY := make(vec64, R)
	bestLB := -1.0
	try := func(y vec64) {
		lb := st.eval(y, values)
		if lb > bestLB+1e-12 {
			bestLB = lb
			copy(bestY, y)
		}
	}
	for r := 0; r < R; r++ {
		y := make(vec64, R)
		y[r] = base[r]
		try(y)
	}
	// Mixes of cpu and memory (and of every other dimension with the best so far).
	for _, f := range []float64{0.1, 0.25, 0.5, 1, 2, 4, 10} {
		y := make(vec64, R)
		y[dimCPU] = base[dimCPU]
		y[dimMemory] = base[dimMemory] * f
		try(y)
	}
	y := make(vec64, R)
	for _, step := range []float64{2, 1.5, 1.2, 1.1, 1.05, 1.02} {
		for improved, rounds := true, 0; improved && rounds < 8; rounds++ {
			improved = false
			for r := 0; r < R; r++ {
				for _, f := range []float64{step, 1 / step} {
					copy(y, bestY)
					if y[r] == 0 {
						if f < 1 {
							continue
						}
						y[r] = base[r] * 0.05
					} else {
						y[r] *= f
					}
					before := bestLB
					try(y)
					if bestLB > before {
						improved = true
					}
				}
			}
		}
	}
	if bestLB < 0 {
		bestLB = 0
	}
	st.eval(bestY, values)
	return bestLB, bestY, values
}
