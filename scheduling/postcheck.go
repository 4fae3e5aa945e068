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
// (taking back a spread's pods can orphan an affinity's). It reads where st placed pods and takes
// pods back out of st.claims and st.bins into st.remaining, dropping claims left empty (and
// their pool's st.usage); each group it takes pods back from gets the reason in g.blocked.
func (p *problem) enforceTopology(st *packState) {
	for p.enforceOnce(st) {
	}
}

// enforceOnce runs the checks once (spread waits only when the others took nothing back) and
// reports whether it took any pod back.
func (p *problem) enforceOnce(st *packState) bool {
	before := sum(st.remaining)
	for _, g := range p.groups {
		pr := g.partner
		if pr == nil || st.placed(g) == 0 {
			continue
		}
		partners := 0
		for _, h := range p.groups {
			if h.rep == pr.group.rep && pinnedTo(h, pr.key) == pr.value {
				partners += st.placed(h)
			}
		}
		if partners == 0 {
			p.unplace(st, g, math.MaxInt)
			g.blocked = &blockInfo{ReasonPodAffinity, fmt.Sprintf("pod affinity on %s: the pods it selects (%s…) could not be placed in %s=%s",
				pr.key, pr.group.keys[0], pr.key, pr.value)}
		}
	}
	for _, g := range p.groups {
		// A group placed onto the nodes of the group it follows over hostnames stays only on
		// the nodes that still hold pods of that group: they may have been taken back.
		h := g.with
		if h == nil || st.placed(g) == 0 {
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
		if p.unplaceWhere(st, g, func(placed []placement) bool { return !holds(placed) }) > 0 && st.placed(g) == 0 {
			g.blocked = &blockInfo{ReasonPodAffinity, fmt.Sprintf("pod affinity on %s: the pods it selects (%s…) could not be placed",
				nodeplan.LabelHostname, h.keys[0])}
		}
	}
	for _, f := range p.spreadFams {
		p.enforceSpread(st, f)
	}
	if sum(st.remaining) == before {
		p.enforceSpreadWaits(st)
	}
	return sum(st.remaining) != before
}

// pinnedTo returns the single value g's first alternative pins key to, or "".
func pinnedTo(g *group, key string) string {
	v, _ := pinnedDomain(g, key)
	return v
}

// unplace takes up to n of g's placed pods back into st.remaining: from new claims first (the
// last planned first), then from existing room. A claim left empty is dropped, and its pool's
// st.usage with it.
func (p *problem) unplace(st *packState, g *group, n int) {
	p.unplaceN(st, g, n, nil)
}

// unplaceWhere takes back every pod of g on the new claims and existing nodes whose
// placements where accepts, and returns how many.
func (p *problem) unplaceWhere(st *packState, g *group, where func([]placement) bool) int {
	before := st.placed(g)
	p.unplaceN(st, g, math.MaxInt, where)
	return before - st.placed(g)
}

// unplaceN is unplace limited, when where is set, to the claims and nodes it accepts.
func (p *problem) unplaceN(st *packState, g *group, n int, where func([]placement) bool) {
	for i := len(st.claims) - 1; i >= 0 && n > 0; i-- {
		c := st.claims[i]
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
		st.remaining[g.id] += take
		n -= int(take)
		if len(c.placed) == 0 {
			u := &st.usage[c.shape.pool.idx]
			u.used.sub(c.shape.capacity)
			u.nodes--
			st.claims = slices.Delete(st.claims, i, i+1)
		}
	}
	for i := range st.bins {
		if n == 0 {
			break
		}
		bs := &st.bins[i]
		k := placedOf(bs.placed, g.id)
		if k == 0 || (where != nil && !where(bs.placed)) {
			continue
		}
		take := min(int64(n), k)
		bs.placed = addPlacement(bs.placed, g.id, -take)
		bs.placed = slices.DeleteFunc(bs.placed, func(x placement) bool { return x.k == 0 })
		bs.free.addScaled(g.req, take)
		st.remaining[g.id] += take
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
