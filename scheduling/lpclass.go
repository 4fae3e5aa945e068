package scheduling

import (
	"slices"
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
//
// Groups are bucketed by a hash of what the class key holds, and a group joins the first
// group of its bucket it is exactly interchangeable with (lpClassing.same): the hash only
// narrows the search, so a collision can cost time but never merge two groups that differ.
func (p *problem) lpClasses() []int {
	if p.lpClass != nil && len(p.lpClass) == len(p.groups) {
		return p.lpClass
	}
	cls := make([]int, len(p.groups))
	for i := range cls {
		cls[i] = i
	}
	p.lpClass = cls
	k := newLPClassing(p)
	buckets := map[uint64][]int{}
	for _, g := range p.groups {
		if k.named[g.id] || !g.lpFree() || slices.Contains(g.conflicts, g.id) {
			continue
		}
		k.conf[g.id] = sortedInts(g.conflicts)
		h := k.hash(g)
		i := slices.IndexFunc(buckets[h], func(r int) bool { return k.same(g.id, r) })
		if i >= 0 {
			cls[g.id] = buckets[h][i]
		} else {
			buckets[h] = append(buckets[h], g.id)
		}
	}
	p.lpMembers = classMembers(cls)
	return cls
}

// lpClassing is what lpClasses works out once to compare groups: which groups another
// group's constraint names by itself (a node to share, a partner, a shared per-node cap:
// never merged), per group the groups whose conflicts name it (in id order), its sorted
// conflicts (filled as lpClasses meets the groups) and a hash of how it fits each shape.
// Conflicts do not stop a merge: groups with the same conflicts that the same groups
// conflict with are interchangeable, and a merged row's conflicts are then its groups'
// conflicts.
type lpClassing struct {
	p       *problem
	named   []bool
	by      [][]int
	conf    [][]int
	fitHash []uint64
}

func newLPClassing(p *problem) *lpClassing {
	k := &lpClassing{p: p, named: make([]bool, len(p.groups)), by: conflictedBy(p.groups), conf: make([][]int, len(p.groups))}
	for _, g := range p.groups {
		if g.with != nil {
			k.named[g.with.id] = true
		}
		if g.partner != nil && g.partner.group != nil {
			k.named[g.partner.group.id] = true
		}
		for _, c := range g.caps {
			for _, m := range c.members {
				k.named[m.id] = true
			}
		}
	}
	k.fitHash = lpFitHashes(p.shapes, p.byShape, len(p.groups))
	return k
}

// conflictedBy returns, per group, the groups whose conflicts name it, in id order. Topology
// records conflicts both ways, so that is usually the group's own (sorted) conflicts: checked,
// and built only where it is not.
//
// The check is one pass in id order: the groups naming h, met in increasing id, must be h's
// own sorted conflicts in turn (next[h] is how far they are met), and all of them.
func conflictedBy(groups []*group) [][]int {
	by := make([][]int, len(groups))
	next := make([]int, len(groups))
	symmetric := true
	for _, g := range groups {
		for _, h := range g.conflicts {
			hc := groups[h].conflicts
			if next[h] >= len(hc) || hc[next[h]] != g.id {
				symmetric = false
				break
			}
			next[h]++
		}
		by[g.id] = g.conflicts
	}
	for _, g := range groups {
		symmetric = symmetric && next[g.id] == len(g.conflicts)
	}
	if symmetric {
		return by
	}
	clear(by)
	for _, g := range groups {
		for _, h := range g.conflicts {
			by[h] = append(by[h], g.id)
		}
	}
	return by
}

// lpFitHashes hashes, per group (of n), how it fits each shape (offerings and node
// alternative; byShape is problem.byShape). A shape whose pods may pin narrow keys mixes in
// the group itself: whether groups may share such a node depends on the labels their own
// alternatives pin (canJoin), so lpClassing.same keeps them apart and the hash need not
// bucket them together.
func lpFitHashes(shapes []*shape, byShape [][]fitEntry, n int) []uint64 {
	hs := make([]uint64, n)
	for s, entries := range byShape {
		narrow := len(shapes[s].narrowKeys) > 0
		for _, e := range entries {
			h := mix(mix(mix(hs[e.g], uint64(s)), e.mask), uint64(e.alt))
			if narrow {
				h = mix(h, uint64(e.g))
			}
			hs[e.g] = h
		}
	}
	return hs
}

// hash hashes group g's class key: requests, fits, conflicts both ways, pools.
func (k *lpClassing) hash(g *group) uint64 {
	conf, by := k.conf[g.id], k.by[g.id]
	h := mix(k.fitHash[g.id], uint64(len(g.req)))
	for _, r := range g.req {
		h = mix(h, uint64(r))
	}
	h = mix(h, uint64(len(conf)))
	for _, x := range conf {
		h = mix(h, uint64(x))
	}
	h = mix(h, uint64(len(by)))
	for _, x := range by {
		h = mix(h, uint64(x))
	}
	for i, ok := range k.p.poolOK[g.id] {
		if ok {
			h = mix(h, uint64(i)+1)
		}
	}
	return h
}

// same reports whether groups a and b (both free of what lpFree excludes, their conflicts
// sorted in conf) are interchangeable in the LP: the same requests, pools, conflicts both
// ways, and the same offerings and alternative on every shape, none of which pins narrow
// keys.
func (k *lpClassing) same(a, b int) bool {
	p := k.p
	ga, gb := p.groups[a], p.groups[b]
	if !slices.Equal(ga.req, gb.req) || !slices.Equal(p.poolOK[a], p.poolOK[b]) ||
		!slices.Equal(k.conf[a], k.conf[b]) || !slices.Equal(k.by[a], k.by[b]) {
		return false
	}
	for _, s := range p.shapes {
		ea, oka := p.fit(s, a)
		eb, okb := p.fit(s, b)
		if oka != okb || (oka && (ea.mask != eb.mask || ea.alt != eb.alt || len(s.narrowKeys) > 0)) {
			return false
		}
	}
	return true
}

// classMembers lists, for every group standing for a class of more than one, the class's
// groups in id order (nil when no class has more than one).
func classMembers(cls []int) map[int][]int {
	var members map[int][]int
	for g, r := range cls {
		if r == g {
			continue
		}
		if members == nil {
			members = map[int][]int{}
		}
		if members[r] == nil {
			members[r] = []int{r}
		}
		members[r] = append(members[r], g)
	}
	return members
}

// sortedInts returns xs sorted, copying only when it is not already.
func sortedInts(xs []int) []int {
	if slices.IsSorted(xs) {
		return xs
	}
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}

// mix folds x into hash h (a multiply-xorshift step: deterministic, no seed).
func mix(h, x uint64) uint64 {
	h ^= x + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
	h *= 0xff51afd7ed558ccd
	return h ^ (h >> 33)
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
