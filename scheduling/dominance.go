package scheduling

import "math/bits"

// A catalog holds many types of one size at different prices (c5, c6i, c7i, c7a…), and the
// packers try every shape at every step. A shape is dominated when another shape of the same
// pool is at least as large in every resource, offers every zone and capacity type it offers at
// no higher price, and takes every group it takes through those offerings: any node of the
// first can be bought as the second for no more. The packers skip dominated shapes, which
// changes no plan's cost for the worse and, on a real catalog, drops most of them.
//
// Shapes whose pods may pin narrow keys (their own label values matter) and pools with limits
// or minValues (a smaller type may be what fits under the limit, a dearer one what keeps the
// type choice diverse) are never dominated.

// markDominated sets shape.dominated for every dominated shape.
func (p *problem) markDominated() {
	p.buildFitIndex()
	for _, pl := range p.pools {
		if pl.nodeLimit >= 0 || len(pl.minValues) > 0 || anyTrue(pl.limited) {
			continue
		}
		for _, s := range pl.shapes {
			for _, t := range pl.shapes {
				if t.minPrice > s.minPrice {
					break // the pool's shapes are cheapest first, and no dearer shape dominates s
				}
				if s != t && !t.dominated && p.dominates(t, s) {
					s.dominated = true
					break
				}
			}
		}
	}
}

// dominates reports whether shape t dominates shape s (ties go to the earlier shape, so of
// two equal shapes exactly one survives).
func (p *problem) dominates(t, s *shape) bool {
	if len(t.narrowKeys) > 0 || len(s.narrowKeys) > 0 || !s.alloc.fitsIn(t.alloc) {
		return false
	}
	// Map every offering of s to one of t in the same zone and capacity type, no dearer.
	var to [maxOfferings]int
	equal := t.alloc.fitsIn(s.alloc) && len(t.offerings) == len(s.offerings)
	for i, o := range s.offerings {
		to[i] = -1
		for j, q := range t.offerings {
			if q.Zone == o.Zone && q.CapacityType == o.CapacityType && q.Price <= o.Price {
				to[i] = j
				equal = equal && q.Price == o.Price
				break
			}
		}
		if to[i] < 0 {
			return false
		}
	}
	if equal && t.idx > s.idx {
		return false
	}
	for _, e := range p.byShape[s.idx] {
		f, ok := p.fit(t, int(e.g))
		if !ok {
			return false
		}
		for m := e.mask; m != 0; m &= m - 1 {
			if f.mask&(1<<uint(to[bits.TrailingZeros64(m)])) == 0 {
				return false
			}
		}
	}
	return true
}

func anyTrue(xs []bool) bool {
	for _, x := range xs {
		if x {
			return true
		}
	}
	return false
}
