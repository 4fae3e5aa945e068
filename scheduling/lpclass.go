package scheduling

import (
	"slices"
	"strconv"
	"strings"
)

// The configuration LP has one row per pod group, but groups are split for reasons the LP never
// sees: pods with the same requests and the same node selection fall into different groups
// because their labels differ (another pod's spread or affinity may select one and not the
// other), or their owners do. Two such groups are interchangeable for the LP — every pattern
// holding k pods of one is a pattern holding k pods of the other, at the same price — so their
// rows are merged into one with the summed demand. The LP's value is unchanged (a solution of
// the merged LP splits into one of the original, and back), so its bound stays a true lower
// bound, and the merged row's dual is every member's pod value. On Karpenter's drawn mix that
// takes the LP from about one row per six pods to a few dozen.
//
// Interchangeable means: the same requests, the same shapes with the same offerings and node
// alternative on each (so the same domains: a spread's parts pinned to one zone may merge, their
// pods land in that zone whichever group they come from), the same conflicts both ways, and
// nothing else that tells them apart on a node: no per-node cap, host port, existing-node pin,
// one-node group or partner, and no other group's node or cap that names them. The rounding then hands each node's pods of a class to
// the class's groups in order (roundPatterns).

// lpClasses returns, per group id, the group id that stands for its class in the LP (the
// lowest id of the class; a group alone stands for itself). It is computed once per problem.
func (p *problem) lpClasses() []int {
	if p.lpClass != nil && len(p.lpClass) == len(p.groups) {
		return p.lpClass
	}
	p.lpMembers = nil
	cls := make([]int, len(p.groups))
	for i := range cls {
		cls[i] = i
	}
	p.lpClass = cls
	// A group another group's constraint names by itself (a node to share, a partner, a shared
	// per-node cap) is never merged. Conflicts may be: groups with the same conflicts that the
	// same groups conflict with are interchangeable (the key holds both lists), and a merged
	// row's conflicts are then its groups' conflicts.
	named := make([]bool, len(p.groups))
	by := make([][]int, len(p.groups))
	for _, g := range p.groups {
		for _, h := range g.conflicts {
			by[h] = append(by[h], g.id)
		}
		if g.with != nil {
			named[g.with.id] = true
		}
		if g.partner != nil && g.partner.group != nil {
			named[g.partner.group.id] = true
		}
		for _, c := range g.caps {
			for _, m := range c.members {
				named[m.id] = true
			}
		}
	}
	// A group's signature: its requests and, per shape, how it fits.
	sigs := make([]strings.Builder, len(p.groups))
	for s, entries := range p.byShape {
		for _, e := range entries {
			b := &sigs[e.g]
			b.WriteString(strconv.Itoa(s))
			b.WriteByte(':')
			b.WriteString(strconv.FormatUint(e.mask, 16))
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.alt))
			if len(p.shapes[s].narrowKeys) > 0 {
				// Whether groups may share such a node depends on the labels their own
				// alternatives pin (canJoin): keep each group apart there.
				b.WriteString(":g" + strconv.Itoa(e.g))
			}
			b.WriteByte(';')
		}
	}
	first := map[string]int{}
	for _, g := range p.groups {
		if named[g.id] || !g.lpFree() || slices.Contains(g.conflicts, g.id) {
			continue
		}
		var b strings.Builder
		for _, r := range g.req {
			b.WriteString(strconv.FormatInt(r, 10))
			b.WriteByte(',')
		}
		b.WriteByte('|')
		b.WriteString(sigs[g.id].String())
		ids := func(tag string, xs []int) {
			b.WriteString(tag)
			for _, x := range slices.Sorted(slices.Values(xs)) {
				b.WriteString(strconv.Itoa(x))
				b.WriteByte(',')
			}
		}
		ids("|c", g.conflicts)
		ids("|b", by[g.id])
		for i, ok := range p.poolOK[g.id] {
			if ok {
				b.WriteString("p" + strconv.Itoa(i))
			}
		}
		key := b.String()
		if r, ok := first[key]; ok {
			cls[g.id] = r
		} else {
			first[key] = g.id
		}
	}
	for g, r := range cls {
		if r != g {
			if p.lpMembers == nil {
				p.lpMembers = map[int][]int{}
			}
			if p.lpMembers[r] == nil {
				p.lpMembers[r] = []int{r}
			}
			p.lpMembers[r] = append(p.lpMembers[r], g)
		}
	}
	return cls
}

// lpFree says the group carries nothing that makes it differ from a group of the same requests
// and fits on a node or in a domain.
func (g *group) lpFree() bool {
	return g.perNode == 0 && len(g.ports) == 0 &&
		len(g.avoid) == 0 && len(g.onlyOn) == 0 && len(g.caps) == 0 && !g.noNew &&
		g.single == nil && g.with == nil && g.partner == nil && g.blocked == nil
}

// classCounts sums counts into each class's standing group; merged is false when no two
// groups with pods share a class (the LP is then the original one).
func classCounts(cls []int, counts []int64) (out []int64, merged bool) {
	out = make([]int64, len(counts))
	for g, n := range counts {
		if n <= 0 {
			continue
		}
		if cls[g] != g {
			merged = true
		}
		out[cls[g]] += n
	}
	return out, merged
}

// toClasses rewrites patterns' placements onto the classes' standing groups (merging a class's
// placements on one node into one).
func toClasses(cls []int, pats []pattern) []pattern {
	out := make([]pattern, 0, len(pats))
	for _, pat := range pats {
		change := false
		for _, x := range pat.placed {
			change = change || cls[x.g] != x.g
		}
		if !change {
			out = append(out, pat)
			continue
		}
		var placed []placement
		for _, x := range pat.placed {
			g := cls[x.g]
			if i := slices.IndexFunc(placed, func(y placement) bool { return y.g == g }); i >= 0 {
				placed[i].k += x.k
			} else {
				placed = append(placed, placement{g: g, k: x.k})
			}
		}
		pat.placed = placed
		out = append(out, pat)
	}
	return out
}
