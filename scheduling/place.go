package scheduling

import (
	"cmp"
	"slices"
)

// Placing pods in room that is not a new node of their own: existing nodes and in-flight
// claims (placeOnBins, before any new node is planned), and the nodes of the group a group
// must share nodes with (placeWith, after).

// placeOnBins puts pending pods on existing nodes and in-flight claims, largest groups first,
// each into the fullest room that takes it.
func (p *problem) placeOnBins() {
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
		if p.remaining[g.id] == 0 || g.with != nil || (g.single != nil && g.single.placed) {
			continue
		}
		for _, b := range p.bins {
			if p.remaining[g.id] == 0 {
				break
			}
			if !b.admits(g) || b.conflictsWith(p, g) {
				continue
			}
			limit := min(p.remaining[g.id], g.room(b.placed, b.name))
			k := maxCopies(g.req, b.free, limit)
			if k <= 0 {
				continue
			}
			b.free.addScaled(g.req, -k)
			b.placed = addPlacement(b.placed, g.id, k)
			p.remaining[g.id] -= k
			if g.single != nil {
				g.single.placed = true
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
// hostnames to pending pods) onto the nodes planned or found for that group.
func (p *problem) placeWith() {
	// A group may follow a group that follows another: repeat while pods find room.
	for before := int64(-1); sum(p.remaining) != before; {
		before = sum(p.remaining)
		p.placeWithOnce()
	}
}

func (p *problem) placeWithOnce() {
	for _, g := range p.groups {
		h := g.with
		if h == nil || p.remaining[g.id] == 0 || g.blocked != nil {
			continue // a blocked group (the part of a split that no domain takes) stays pending
		}
		for _, b := range p.bins {
			if p.remaining[g.id] == 0 {
				break
			}
			if placedOf(b.placed, h.id) == 0 || !b.admits(g) || b.conflictsWith(p, g) {
				continue
			}
			k := maxCopies(g.req, b.free, min(p.remaining[g.id], g.room(b.placed, b.name)))
			if k > 0 {
				b.free.addScaled(g.req, -k)
				b.placed = addPlacement(b.placed, g.id, k)
				p.remaining[g.id] -= k
			}
		}
		for _, c := range p.claims {
			if p.remaining[g.id] == 0 {
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
			k := maxCopies(g.req, free, min(p.remaining[g.id], g.room(c.placed, "")))
			if k <= 0 {
				continue
			}
			c.used.addScaled(g.req, k)
			c.mask &= e.mask
			c.placed = addPlacement(slices.Clone(c.placed), g.id, k)
			c.value += float64(k) * g.value
			p.remaining[g.id] -= k
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
		if s.reqs.Compatible(alt) == nil {
			if m := offeringMask(s, alt); m != 0 {
				return fitEntry{g: g.id, mask: m, alt: ai}, true
			}
		}
	}
	return fitEntry{}, false
}

func (b *bin) conflictsWith(p *problem, g *group) bool {
	for _, x := range b.placed {
		if x.g != g.id && g.conflictsWithGroup(x.g) {
			return true
		}
	}
	return false
}
