package scheduling

import (
	"cmp"
	"slices"
)

// packFFD is the plain first-fit-decreasing packing Karpenter does: pods largest first (cpu,
// then memory), each onto the first open node that can still become some instance type holding
// it, else onto a new node; each node then becomes the cheapest type that holds its pods. The LP
// packing beats it almost always, but on a few small inputs its rounding loses a node; so for
// small, plain pools the solver computes both and keeps the cheaper. It returns the claims,
// decrements rem and counts the claims in u (plain pools have no limits to check).
func (p *problem) packFFD(pl *pool, u *poolUsage, rem []int64) []*claim {
	var order []*group
	for _, g := range p.groups {
		if rem[g.id] > 0 {
			order = append(order, g)
		}
	}
	slices.SortStableFunc(order, func(a, b *group) int {
		return cmp.Or(cmp.Compare(b.req[dimCPU], a.req[dimCPU]), cmp.Compare(b.req[dimMemory], a.req[dimMemory]), cmp.Compare(a.id, b.id))
	})
	var open []*ffdNode
	for _, g := range order {
		for rem[g.id] > 0 {
			placed := false
			for _, n := range open {
				if g.room(n.placed, "") <= 0 {
					continue
				}
				if cs := p.ffdNarrow(n, g); len(cs) > 0 {
					n.take(g, cs)
					placed = true
					break
				}
			}
			if !placed {
				n := &ffdNode{used: make(vec, len(p.dims.names))}
				for _, s := range pl.shapes {
					if !s.dominated {
						n.cands = append(n.cands, ffdCand{s, fullMask(len(s.offerings))})
					}
				}
				cs := p.ffdNarrow(n, g)
				if len(cs) == 0 {
					break // fits no shape: leave the rest of the group to the other packers
				}
				n.take(g, cs)
				open = append(open, n)
			}
			rem[g.id]--
		}
	}
	out := make([]*claim, 0, len(open))
	for _, n := range open {
		out = append(out, p.ffdClaim(u, n))
	}
	return out
}

// ffdNode is a node first-fit-decreasing has opened: its pods and the shapes (with the
// offerings) that still take them all.
type ffdNode struct {
	placed []placement
	used   vec
	cands  []ffdCand
}

type ffdCand struct {
	s    *shape
	mask uint64
}

// take puts one pod of g on the node, which cs (from ffdNarrow) still fit.
func (n *ffdNode) take(g *group, cs []ffdCand) {
	n.cands = cs
	n.used.add(g.req)
	n.placed = addPlacement(n.placed, g.id, 1)
}

// ffdNarrow returns the node's candidate shapes that would still fit with one more pod of g.
func (p *problem) ffdNarrow(n *ffdNode, g *group) []ffdCand {
	used := n.used.clone()
	used.add(g.req)
	var out []ffdCand
	for _, c := range n.cands {
		e, ok := p.fit(c.s, g.id)
		if !ok || !used.fitsIn(c.s.alloc) || c.mask&e.mask == 0 || !p.canJoin(c.s, e, n.placed) {
			continue
		}
		out = append(out, ffdCand{c.s, c.mask & e.mask})
	}
	return out
}

// ffdClaim is the claim for an open node: its cheapest candidate, counted in the pool's usage u.
func (p *problem) ffdClaim(u *poolUsage, n *ffdNode) *claim {
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
	u.used.add(best.s.capacity)
	u.nodes++
	return &claim{shape: best.s, mask: best.mask, used: n.used, placed: n.placed, value: value}
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
