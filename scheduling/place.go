package scheduling

import (
	"cmp"
	"slices"
)

// Placing pods in room that is not a new node of their own: existing nodes and in-flight
// claims (placeOnBins, before any new node is planned), and the nodes of the group a group
// must share nodes with (placeWith, after).

// placeOnBins puts pending pods on existing nodes and in-flight claims, largest groups first,
// each into the fullest room that takes it. It reads and writes st.remaining and st.bins, and
// marks in st.singlePlaced the one-node groups it places; it plans no claim.
func (p *problem) placeOnBins(st *packState) {
	// Pods that can only use existing room go first, so pods that could have a new node do not
	// take the room they need; then the most valuable.
	order := p.groupsByValue()
	if p.prefs.largestFirst {
		slices.SortStableFunc(order, func(a, b *group) int {
			return cmp.Or(cmp.Compare(b.req[dimCPU], a.req[dimCPU]), cmp.Compare(b.req[dimMemory], a.req[dimMemory]))
		})
	}
	slices.SortStableFunc(order, func(a, b *group) int {
		return cmp.Compare(boolInt(p.canUseNew(a)), boolInt(p.canUseNew(b)))
	})
	for _, g := range order {
		if st.remaining[g.id] == 0 || g.with != nil || (g.single != nil && st.singlePlaced[g.single]) {
			continue
		}
		for i, b := range p.bins {
			if st.remaining[g.id] == 0 {
				break
			}
			bs := &st.bins[i]
			if !b.admits(g, bs.placed) || conflictsWith(bs.placed, g) {
				continue
			}
			limit := min(st.remaining[g.id], g.room(bs.placed, b.name))
			k := maxCopies(g.req, bs.free, limit)
			if k <= 0 {
				continue
			}
			bs.free.addScaled(g.req, -k)
			bs.placed = addPlacement(bs.placed, g.id, k)
			st.remaining[g.id] -= k
			if g.single != nil {
				st.singlePlaced[g.single] = true
				break
			}
		}
	}
}

func (p *problem) canUseNew(g *group) bool { return slices.Contains(p.poolOK[g.id], true) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// placeWith places groups that must share nodes with another group (required pod affinity over
// hostnames to pending pods) onto the nodes planned or found for that group, growing one of its
// new nodes to a larger type where none has room (growForFollower). It reads and writes
// st.remaining, st.bins, st.usage and st.claims' pods and types; it plans no claim.
func (p *problem) placeWith(st *packState) {
	// A group may follow a group that follows another: repeat while pods find room.
	for before := int64(-1); sum(st.remaining) != before; {
		before = sum(st.remaining)
		p.placeWithOnce(st)
	}
}

func (p *problem) placeWithOnce(st *packState) {
	for _, g := range p.groups {
		h := g.with
		if h == nil || st.remaining[g.id] == 0 || g.blocked != nil {
			continue // a blocked group (the part of a split that no domain takes) stays pending
		}
		for i, b := range p.bins {
			if st.remaining[g.id] == 0 {
				break
			}
			bs := &st.bins[i]
			if placedOf(bs.placed, h.id) == 0 || !b.admits(g, bs.placed) || conflictsWith(bs.placed, g) {
				continue
			}
			k := maxCopies(g.req, bs.free, min(st.remaining[g.id], g.room(bs.placed, b.name)))
			if k > 0 {
				bs.free.addScaled(g.req, -k)
				bs.placed = addPlacement(bs.placed, g.id, k)
				st.remaining[g.id] -= k
			}
		}
		for _, c := range st.claims {
			if st.remaining[g.id] == 0 {
				break
			}
			if placedOf(c.placed, h.id) == 0 {
				continue
			}
			e, ok := p.fitOnShape(g, c.shape)
			if !ok || c.mask&e.mask == 0 || !p.canJoin(c.shape, e, c.placed) {
				continue
			}
			free := c.shape.alloc.clone()
			free.sub(c.used)
			k := maxCopies(g.req, free, min(st.remaining[g.id], g.room(c.placed, "")))
			if k <= 0 {
				continue
			}
			c.used.addScaled(g.req, k)
			c.mask &= e.mask
			c.placed = addPlacement(slices.Clone(c.placed), g.id, k)
			c.value += float64(k) * g.value
			st.remaining[g.id] -= k
		}
		if st.remaining[g.id] > 0 {
			grower{p, st}.forFollower(g, h)
		}
	}
}

// fitOnShape checks, outside the precomputed fits, whether group g may go on shape s.
func (p *problem) fitOnShape(g *group, s *shape) (fitEntry, bool) {
	if _, blocked := p.untolerated(g.tolerations, s.pool.np.Template.Taints); blocked || !g.req.fitsIn(s.alloc) {
		return fitEntry{}, false
	}
	if _, clash := portsConflict(g.ports, s.dsPorts); clash {
		return fitEntry{}, false
	}
	for ai, alt := range g.alts {
		if s.reqs.compatible(alt) {
			if m := offeringMask(s, alt); m != 0 {
				return fitEntry{g: int32(g.id), mask: m, alt: int32(ai)}, true
			}
		}
	}
	return fitEntry{}, false
}

// conflictsWith reports whether a pod of g may not join the pods placed on a node.
func conflictsWith(placed []placement, g *group) bool {
	for _, x := range placed {
		if x.g != g.id && g.conflictsWithGroup(x.g) {
			return true
		}
	}
	return false
}
