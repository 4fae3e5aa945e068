package scheduling

import (
	"cmp"
	"math"
	"slices"
)

// improve lowers the cost of the first packing with a bounded local search, pool by pool:
//
//  1. re-size: every node becomes the cheapest shape that still holds its pods (the last node
//     of a pattern is often part-empty);
//  2. merge: two nodes whose pods fit together in a shape cheaper than the pair become one (or
//     one at the same price: fewer nodes, less DaemonSet overhead);
//
// until a round changes nothing or the round budget is spent. Both moves only ever lower the
// cost, so the search cannot make a plan worse.
func (p *problem) improve(claims []*claim, rounds int) []*claim {
	for round := 0; round < rounds; round++ {
		changed := false
		for _, c := range claims {
			if p.resize(c) {
				changed = true
			}
		}
		var merged bool
		claims, merged = p.mergePass(claims)
		if !changed && !merged {
			break
		}
	}
	return claims
}

// bestShapeFor returns the cheapest shape of pool pl that holds exactly these pods, and the
// offerings they leave. ok is false when none does.
func (p *problem) bestShapeFor(c *claim, placed []placement, used vec) (best *shape, mask uint64, price float64, ok bool) {
	pl := c.shape.pool
	price = math.Inf(1)
	for _, s := range pl.shapes {
		if s.minPrice >= price || !used.fitsIn(s.alloc) {
			continue
		}
		m := fullMask(len(s.offerings))
		fits := true
		for i, x := range placed {
			e, found := p.fit(s, x.g)
			if !found {
				fits = false
				break
			}
			if !capsHold(p.groups[x.g], placed) {
				fits = false
				break
			}
			m &= e.mask
			if m == 0 || !p.canJoin(s, e, placed[:i]) {
				fits = false
				break
			}
		}
		if !fits {
			continue
		}
		// Growing past the current shape must still respect the pool's limits.
		if s != c.shape && !p.limitsAllowSwap(pl, c.shape, s) {
			continue
		}
		if pr, _ := s.priceFor(m); pr < price {
			best, mask, price, ok = s, m, pr, true
		}
	}
	return best, mask, price, ok
}

func (p *problem) limitsAllowSwap(pl *pool, from, to *shape) bool {
	for i, lim := range pl.limited {
		if lim && pl.used[i]-from.capacity[i]+to.capacity[i] > pl.limit[i] {
			return false
		}
	}
	return true
}

func (p *problem) resize(c *claim) bool {
	s, m, price, ok := p.bestShapeFor(c, c.placed, c.used)
	if !ok || price >= c.price()*(1-1e-12) {
		return false
	}
	pl := c.shape.pool
	pl.used.sub(c.shape.capacity)
	pl.used.add(s.capacity)
	c.used = c.used.clone()
	c.shape, c.mask = s, m
	return true
}

// mergeCandidates bounds the pairs a merge pass looks at: the least efficient nodes.
const mergeCandidates = 48

func (p *problem) mergePass(claims []*claim) ([]*claim, bool) {
	idx := make([]int, len(claims))
	for i := range idx {
		idx[i] = i
	}
	eff := func(c *claim) float64 { return c.value / c.price() }
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(eff(claims[a]), eff(claims[b])) })
	if len(idx) > mergeCandidates {
		idx = idx[:mergeCandidates]
	}
	slices.Sort(idx)
	removed := map[int]bool{}
	merged := false
	for ai, a := range idx {
		if removed[a] {
			continue
		}
		for _, b := range idx[ai+1:] {
			if removed[b] || removed[a] {
				continue
			}
			ca, cb := claims[a], claims[b]
			if ca.shape.pool != cb.shape.pool {
				continue
			}
			placed := slices.Clone(ca.placed)
			for _, x := range cb.placed {
				placed = addPlacement(placed, x.g, x.k)
			}
			used := ca.used.clone()
			used.add(cb.used)
			pl := ca.shape.pool
			// The merged node replaces both: free their capacity for the limit check.
			pl.used.sub(cb.shape.capacity)
			s, m, price, ok := p.bestShapeFor(ca, placed, used)
			if !ok || price > ca.price()+cb.price()+1e-12 {
				pl.used.add(cb.shape.capacity)
				continue
			}
			pl.used.sub(ca.shape.capacity)
			pl.used.add(s.capacity)
			pl.nodesUsed--
			claims[a] = &claim{shape: s, mask: m, used: used, placed: placed, value: ca.value + cb.value}
			removed[b] = true
			merged = true
		}
	}
	if !merged {
		return claims, false
	}
	out := claims[:0]
	for i, c := range claims {
		if !removed[i] {
			out = append(out, c)
		}
	}
	return out, true
}

// capsHold reports whether a placement respects g's per-node and shared caps.
func capsHold(g *group, placed []placement) bool {
	if g.perNode > 0 && placedOf(placed, g.id) > g.perNode {
		return false
	}
	for _, c := range g.caps {
		used := int64(0)
		for _, x := range placed {
			if c.ids[x.g] {
				used += x.k
			}
		}
		if used > c.limit {
			return false
		}
	}
	return true
}
