package scheduling

import (
	"fmt"
	"math"
	"slices"

	"github.com/nodeplan/nodeplan"
)

// Some topology constraints can only be checked once packing is done: a spread whose pods in
// one domain could not all be placed (a limit, a full zone) leaves the other domains too far
// ahead, and a group that must share a domain with another group's pods has no partner if none
// of those were placed there. Rather than plan pods kube-scheduler would refuse, the solver
// takes such pods back: they stay pending, with the reason.

// enforceTopology takes back pods that would break a spread, have no affinity partner, or carry
// spreads that could wait on each other forever (spreadwait.go), until no check takes any
// (taking back a spread's pods can orphan an affinity's).
func (p *problem) enforceTopology() {
	for p.enforceOnce() {
	}
}

// enforceOnce runs the checks once (spread waits only when the others took nothing back) and
// reports whether it took any pod back.
func (p *problem) enforceOnce() bool {
	before := sum(p.remaining)
	for _, g := range p.groups {
		pr := g.partner
		if pr == nil || p.placed(g) == 0 {
			continue
		}
		partners := 0
		for _, h := range p.groups {
			if h.rep == pr.group.rep && pinnedTo(h, pr.key) == pr.value {
				partners += p.placed(h)
			}
		}
		if partners == 0 {
			p.unplace(g, math.MaxInt)
			g.blocked = &blockInfo{ReasonPodAffinity, fmt.Sprintf("pod affinity on %s: the pods it selects (%s…) could not be placed in %s=%s",
				pr.key, pr.group.keys[0], pr.key, pr.value)}
		}
	}
	for _, g := range p.groups {
		// A group placed onto the nodes of the group it follows over hostnames stays only on
		// the nodes that still hold pods of that group: they may have been taken back.
		h := g.with
		if h == nil || p.placed(g) == 0 {
			continue
		}
		holds := func(placed []placement) bool {
			for _, x := range placed {
				if x.k > 0 && p.groups[x.g].rep == h.rep {
					return true
				}
			}
			return false
		}
		if p.unplaceWhere(g, func(placed []placement) bool { return !holds(placed) }) > 0 && p.placed(g) == 0 {
			g.blocked = &blockInfo{ReasonPodAffinity, fmt.Sprintf("pod affinity on %s: the pods it selects (%s…) could not be placed",
				nodeplan.LabelHostname, h.keys[0])}
		}
	}
	for _, f := range p.spreadFams {
		p.enforceSpread(f)
	}
	if sum(p.remaining) == before {
		p.enforceSpreadWaits()
	}
	return sum(p.remaining) != before
}

// placed returns how many of g's pods this solve has placed so far.
func (p *problem) placed(g *group) int {
	return len(g.pods) - int(p.remaining[g.id])
}

// pinnedTo returns the single value g's first alternative pins key to, or "".
func pinnedTo(g *group, key string) string {
	v, _ := pinnedDomain(g, key)
	return v
}

// unplace takes up to n of g's placed pods back: from new claims first (the last planned first),
// then from existing room.
func (p *problem) unplace(g *group, n int) {
	p.unplaceN(g, n, nil)
}

// unplaceWhere takes back every pod of g on the new claims and existing nodes whose
// placements where accepts, and returns how many.
func (p *problem) unplaceWhere(g *group, where func([]placement) bool) int {
	before := p.placed(g)
	p.unplaceN(g, math.MaxInt, where)
	return before - p.placed(g)
}

// unplaceN is unplace limited, when where is set, to the claims and nodes it accepts.
func (p *problem) unplaceN(g *group, n int, where func([]placement) bool) {
	for i := len(p.claims) - 1; i >= 0 && n > 0; i-- {
		c := p.claims[i]
		k := placedOf(c.placed, g.id)
		if k == 0 || (where != nil && !where(c.placed)) {
			continue
		}
		take := min(int64(n), k)
		c.placed = addPlacement(slices.Clone(c.placed), g.id, -take)
		c.placed = slices.DeleteFunc(c.placed, func(x placement) bool { return x.k == 0 })
		c.used = c.used.clone()
		c.used.addScaled(g.req, -take)
		c.value -= float64(take) * g.value
		p.remaining[g.id] += take
		n -= int(take)
		if len(c.placed) == 0 {
			pl := c.shape.pool
			pl.used.sub(c.shape.capacity)
			pl.nodesUsed--
			p.claims = slices.Delete(p.claims, i, i+1)
		}
	}
	for _, b := range p.bins {
		if n == 0 {
			break
		}
		k := placedOf(b.placed, g.id)
		if k == 0 || (where != nil && !where(b.placed)) {
			continue
		}
		take := min(int64(n), k)
		b.placed = addPlacement(b.placed, g.id, -take)
		b.placed = slices.DeleteFunc(b.placed, func(x placement) bool { return x.k == 0 })
		b.free.addScaled(g.req, take)
		p.remaining[g.id] += take
		n -= int(take)
	}
}

// splitsSingle reports whether pods that must share one node (a group with required hostname
// affinity to itself, and its co-carriers: one singleState) are placed both in a and in b.
func (p *problem) splitsSingle(a, b []placement) bool {
	for _, x := range a {
		s := p.groups[x.g].single
		if s == nil || x.k <= 0 {
			continue
		}
		for _, y := range b {
			if y.k > 0 && p.groups[y.g].single == s {
				return true
			}
		}
	}
	return false
}
