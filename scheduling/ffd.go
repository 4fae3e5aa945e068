package scheduling

import (
	"cmp"
	"slices"
)

// packFFD is the plain first-fit-decreasing packing Karpenter does: pods largest first (cpu,
// then memory), each onto the first open node that can still become some instance type holding
// it, else onto a new node; each node then becomes the cheapest type that holds its pods. The LP
// packing beats it almost always, but on a few small inputs its rounding loses a node; so for
// small, plain pools the solver computes both and keeps the cheaper. It returns the claims and
// decrements rem.
func (p *problem) packFFD(pl *pool, rem []int64) []*claim {
	type cand struct {
		s    *shape
		mask uint64
	}
	type node struct {
		placed []placement
		used   vec
		cands  []cand
	}
	var order []*group
	for _, g := range p.groups {
		if rem[g.id] > 0 {
			order = append(order, g)
		}
	}
	slices.SortStableFunc(order, func(a, b *group) int {
		return cmp.Or(cmp.Compare(b.req[dimCPU], a.req[dimCPU]), cmp.Compare(b.req[dimMemory], a.req[dimMemory]), cmp.Compare(a.id, b.id))
	})
	var open []*node
	narrow := func(n *node, g *group) []cand {
		used := n.used.clone()
		used.add(g.req)
		var out []cand
		for _, c := range n.cands {
			e, ok := p.fit(c.s, g.id)
			if !ok || !used.fitsIn(c.s.alloc) || c.mask&e.mask == 0 || !p.canJoin(c.s, e, n.placed) {
				continue
			}
			out = append(out, cand{c.s, c.mask & e.mask})
		}
		return out
	}
	for _, g := range order {
		for rem[g.id] > 0 {
			placed := false
			for _, n := range open {
				if g.room(n.placed, "") <= 0 {
					continue
				}
				if cs := narrow(n, g); len(cs) > 0 {
					n.cands, placed = cs, true
					n.used.add(g.req)
					n.placed = addPlacement(n.placed, g.id, 1)
					break
				}
			}
			if !placed {
				n := &node{used: make(vec, len(p.dims.names))}
				for _, s := range pl.shapes {
					if s.dominated {
						continue
					}
					n.cands = append(n.cands, cand{s, fullMask(len(s.offerings))})
				}
				cs := narrow(n, g)
				if len(cs) == 0 {
					break // fits no shape: leave the rest of the group to the other packers
				}
				n.cands = cs
				n.used.add(g.req)
				n.placed = addPlacement(n.placed, g.id, 1)
				open = append(open, n)
			}
			rem[g.id]--
		}
	}
	var out []*claim
	for _, n := range open {
		best := n.cands[0]
		bestPrice, _ := best.s.priceFor(best.mask)
		for _, c := range n.cands[1:] {
			if pr, _ := c.s.priceFor(c.mask); pr < bestPrice {
				best, bestPrice = c, pr
			}
		}
		value := 0.0
		for _, x := range n.placed {
			value += float64(x.k) * p.groups[x.g].value
		}
		out = append(out, &claim{shape: best.s, mask: best.mask, used: n.used, placed: n.placed, value: value})
		pl.used.add(best.s.capacity)
		pl.nodesUsed++
	}
	return out
}

// ffdAlternativeLimit is the most pods for which the first-fit-decreasing alternative is tried.
const ffdAlternativeLimit = 400

// plainPool reports whether the groups packed in a pool carry no constraint that the
// first-fit-decreasing alternative does not model (limits, shared caps, single-node groups,
// partners).
func (p *problem) plainPool(pl *pool, rem []int64) bool {
	if pl.nodeLimit >= 0 || slices.Contains(pl.limited, true) {
		return false
	}
	total := int64(0)
	for _, g := range p.groups {
		if rem[g.id] == 0 {
			continue
		}
		total += rem[g.id]
		if len(g.caps) > 0 || g.single != nil || g.partner != nil {
			return false
		}
	}
	return total <= ffdAlternativeLimit
}

func claimsCost(cs []*claim) float64 {
	total := 0.0
	for _, c := range cs {
		total += c.price()
	}
	return total
}
