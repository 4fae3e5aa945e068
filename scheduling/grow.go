package scheduling

import "slices"

// forFollower (growForFollower) gives the pods of g that no node of the group it follows had room for
// (placeWith) a larger node: it changes one of h's new claims, in claim order, to the cheapest
// type of its pool that holds its pods and as many more of g's as it can — every pod already
// there keeps its node, so every pod that follows one of them keeps its partner. Only the
// claim's type changes: its possible zones never widen (its pods' zone pins and partners stay
// true), and the pool's limits hold. Existing nodes cannot grow.
//
// kube-scheduler binds a pod with hostname affinity onto any node holding a pod it selects;
// without this, a follower whose partner's node the packer filled was refused, and with it
// every pod that in turn follows it (the chains of Karpenter's benchmark mix).
func (gr grower) forFollower(g, h *group) {
	st := gr.st
	for _, c := range st.claims {
		if st.remaining[g.id] == 0 {
			return
		}
		if placedOf(c.placed, h.id) == 0 {
			continue
		}
		best := gr.best(c, g)
		if best.s == nil {
			continue
		}
		pl := c.shape.pool
		st.usage[pl.idx].used.sub(c.shape.capacity)
		st.usage[pl.idx].used.add(best.s.capacity)
		c.shape, c.mask = best.s, best.mask
		c.used.addScaled(g.req, best.k)
		c.placed = addPlacement(slices.Clone(c.placed), g.id, best.k)
		c.value += float64(best.k) * g.value
		st.remaining[g.id] -= best.k
	}
}

// grower grows the new claims of one packing (growForFollower's steps).
type grower struct {
	p  *problem
	st *packState
}

// growth is a type claim c could grow to: the shape, its offerings left, and how many of the
// follower's pods it then holds.
type growth struct {
	s     *shape
	mask  uint64
	k     int64
	price float64
}

// best is the cheapest shape of c's pool that holds c's pods and the most of g's pods up
// to all it has left, with an offering in a zone c could already be in; s is nil when none
// holds one more.
func (gr grower) best(c *claim, g *group) growth {
	st := gr.st
	pl := c.shape.pool
	zones := map[string]bool{}
	for i, o := range c.shape.offerings {
		if c.mask&(1<<i) != 0 {
			zones[o.Zone] = true
		}
	}
	var best growth
	for _, s := range pl.shapes {
		if s == c.shape || !c.used.fitsIn(s.alloc) {
			continue
		}
		mask, ok := gr.maskOnShape(s, c.placed, g)
		if !ok {
			continue
		}
		for i, o := range s.offerings {
			if !zones[o.Zone] {
				mask &^= 1 << i
			}
		}
		if mask == 0 {
			continue
		}
		grow := s.capacity.clone()
		grow.sub(c.shape.capacity)
		if !withinGrowthLimits(pl, &st.usage[pl.idx], grow) {
			continue
		}
		free := s.alloc.clone()
		free.sub(c.used)
		k := maxCopies(g.req, free, min(st.remaining[g.id], g.room(c.placed, "")))
		if k <= 0 {
			continue
		}
		price, _ := s.priceFor(mask)
		if best.s == nil || k > best.k || k == best.k && price < best.price {
			best = growth{s: s, mask: mask, k: k, price: price}
		}
	}
	return best
}

// maskOnShape is the offerings of s on which every group of placed and g may go together (the
// checks packing makes when a group joins a node), and whether there are any.
func (gr grower) maskOnShape(s *shape, placed []placement, g *group) (uint64, bool) {
	p := gr.p
	mask := ^uint64(0)
	all := append(slices.Clone(placed), placement{g: g.id})
	for i, x := range all {
		e, ok := p.fitOnShape(p.groups[x.g], s)
		if !ok || !p.canJoin(s, e, slices.Delete(slices.Clone(all), i, i+1)) {
			return 0, false
		}
		mask &= e.mask
	}
	return mask, mask != 0
}

// withinGrowthLimits reports whether a node of pool pl growing by grow keeps it within its
// limits at usage u.
func withinGrowthLimits(pl *pool, u *poolUsage, grow vec) bool {
	for i, lim := range pl.limited {
		if lim && u.used[i]+grow[i] > pl.limit[i] {
			return false
		}
	}
	return true
}
