package scheduling

import (
	"slices"
)

// Packing new nodes, pool by pool. The packers (roundPatterns and packPool, packFFD, the local
// search in improve.go) write three things: the claims they return, the remaining pod counts
// they are handed, and the pool's usage against its limits. A packing is those three as a
// value, so two packers can each start from the same one and the cheaper result be kept; only
// commitPacking writes the chosen one into the packState.

// poolUsage is what a pool's nodes — existing, in flight and planned — take against its limits:
// resources (by dimension) and nodes. The pool's own usage is packState.usage[pool idx]; a
// packer writes a copy.
type poolUsage struct {
	used  vec
	nodes int64
}

// clone returns a copy of u.
func (u poolUsage) clone() poolUsage { return poolUsage{used: u.used.clone(), nodes: u.nodes} }

// packing is one packer's plan for a pool: its claims, the pods it left (per group id), and
// the pool's usage with its claims.
type packing struct {
	claims []*claim
	rem    []int64
	usage  poolUsage
}

// runPacker runs pack from the packing from (which has no claims yet), on copies of its pods
// left and its usage.
func runPacker(from packing, pack func(rem []int64, u *poolUsage) []*claim) packing {
	rem, u := slices.Clone(from.rem), from.usage.clone()
	claims := pack(rem, &u)
	return packing{claims: claims, rem: rem, usage: u}
}

// packNewNodes plans new nodes in pool pl for the pods left that the pool may take (it reads
// st.remaining, st.singlePlaced and the pool's st.usage), and commits the plan (commitPacking):
// st.claims, st.remaining, st.dropped, st.singlePlaced and the pool's st.usage. global is the column
// generation over every group (reused when this pool has all of them), counts each group's
// pending pods. Where the pool's LP is its own, it re-values the groups (setValues).
func (p *problem) packNewNodes(st *packState, pl *pool, global cgResult, counts []int64) {
	rem, same := p.poolShare(st.remaining, pl, counts)
	if rem == nil {
		return
	}
	share := slices.Clone(rem)
	cg := global
	if same && len(p.pools) > 1 {
		// An earlier pool's own LP may have set the values: this pool's are the global LP's.
		p.setValues(global.values)
	}
	if !same {
		// Pods went to existing room or to other pools: price this pool's part alone.
		cg = p.columnGeneration(rem, pl.shapes, global.columns, shareLP, nil)
		p.setValues(cg.values)
	}
	for _, g := range p.groups {
		if g.single != nil && st.singlePlaced[g.single] {
			p.drop(rem, g.id)
		}
	}
	rounds := p.in.Options.ImprovementRounds
	if rounds == 0 {
		rounds = defaultImprovementRounds
	}
	plain := p.plainPool(pl, rem)
	start := packing{rem: rem, usage: st.usage[pl.idx]}
	best := runPacker(start, func(rem []int64, u *poolUsage) []*claim {
		claims := p.roundPatterns(pl, u, cg, rem)
		claims = append(claims, p.packPool(pl, u, rem)...)
		if rounds > 0 {
			claims = p.improve(u, claims, rounds)
		}
		return claims
	})
	if plain {
		// Small plain pools: also pack first-fit-decreasing and keep the cheaper plan
		// (placing at least as many pods), so the solver never loses to the baseline.
		alt := runPacker(start, func(rem []int64, u *poolUsage) []*claim {
			claims := p.packFFD(pl, u, rem)
			if rounds > 0 {
				claims = p.improve(u, claims, rounds)
			}
			return claims
		})
		if sum(alt.rem) <= sum(best.rem) && claimsCost(alt.claims) < claimsCost(best.claims)-1e-12 {
			best = alt
		}
	}
	p.commitPacking(st, pl, share, best)
}

// poolShare returns the remaining pods of the groups pool pl may take (nil when there are
// none), and whether the column generation over every pending pod (the global one) holds for
// this pool as it is: every pod of every group the pool may take is still to place, and no
// other pool may take any of them. The global LP then falls apart into this pool's LP and the
// other pools' (no column mixes their groups, no group has columns in both), and its solution
// on this pool's shapes solves this pool's LP (a GPU pool beside a general one).
func (p *problem) poolShare(remaining []int64, pl *pool, counts []int64) (rem []int64, same bool) {
	rem = make([]int64, len(p.groups))
	any := false
	same = !p.in.Options.SkipLowerBound
	for _, g := range p.groups {
		if !p.poolOK[g.id][pl.idx] {
			same = same && (len(p.pools) > 1 || counts[g.id] == 0)
			continue
		}
		if remaining[g.id] > 0 {
			rem[g.id] = remaining[g.id]
			any = true
		}
		same = same && rem[g.id] == counts[g.id]
		for _, q := range p.pools {
			same = same && (q == pl || counts[g.id] == 0 || !p.poolOK[g.id][q.idx])
		}
	}
	if !any {
		return nil, false
	}
	return rem, same
}

// commitPacking makes pk, packed from the pool's share of the pods (share, per group), the
// pool's plan: its claims join st.claims, its pods left become the groups' remaining, the pods
// it neither placed nor left were dropped (see drop), and the one-node groups it placed have
// their node; its usage becomes the pool's.
func (p *problem) commitPacking(st *packState, pl *pool, share []int64, pk packing) {
	st.usage[pl.idx] = pk.usage
	st.claims = append(st.claims, pk.claims...)
	placed := make([]int64, len(p.groups))
	for _, c := range pk.claims {
		for _, x := range c.placed {
			placed[x.g] += x.k
			if s := p.groups[x.g].single; s != nil {
				st.singlePlaced[s] = true
			}
		}
	}
	for _, g := range p.groups {
		if p.poolOK[g.id][pl.idx] && st.remaining[g.id] > 0 {
			if n := share[g.id] - placed[g.id] - pk.rem[g.id]; n > 0 {
				st.dropped[g.id] += n
			}
			st.remaining[g.id] = pk.rem[g.id]
		}
	}
}

// roundPatterns turns the LP solution into nodes: ⌊λ⌋ copies of every pattern, as the remaining
// pods and the pool's limits (at usage u) allow. rem is decremented, and u counts the nodes. A
// pattern's pods of a class of interchangeable groups (lpclass.go) go to the class's groups in
// order.
func (p *problem) roundPatterns(pl *pool, u *poolUsage, cg cgResult, rem []int64) []*claim {
	p.lpClasses()
	var out []*claim
	for i, pat := range cg.basis {
		if pat.s.pool != pl {
			continue
		}
		k := int64(cg.lambda[i] + 1e-9)
		for _, x := range pat.placed {
			k = min(k, p.classRem(rem, x.g)/x.k)
		}
		if k <= 0 || !withinLimits(pl, u, pat.s, 1) {
			continue
		}
		k = p.singles(limitCopies(pl, u, pat.s, k), pat.placed)
		mask := fullMask(len(pat.s.offerings))
		for _, x := range pat.placed {
			e, _ := p.fit(pat.s, x.g)
			mask &= e.mask
		}
		for range k {
			placed := p.drawClasses(rem, pat.placed)
			used := make(vec, len(p.dims.names))
			value := 0.0
			for _, x := range placed {
				used.addScaled(p.groups[x.g].req, x.k)
				value += float64(x.k) * p.groups[x.g].value
				rem[x.g] -= x.k
			}
			out = append(out, &claim{shape: pat.s, mask: mask, used: used, placed: placed, value: value})
			p.afterPlace(rem, placed)
		}
		u.used.addScaled(pat.s.capacity, k)
		u.nodes += k
	}
	return out
}

// classRem is how many pods the class group g stands for has left in rem.
func (p *problem) classRem(rem []int64, g int) int64 {
	ms := p.lpMembers[g]
	if ms == nil {
		return rem[g]
	}
	n := int64(0)
	for _, m := range ms {
		n += rem[m]
	}
	return n
}

// drawClasses is one node's placements for pattern placements on classes: each class's pods
// taken from its groups in order (rem is not changed; the caller takes them).
func (p *problem) drawClasses(rem []int64, placed []placement) []placement {
	out := make([]placement, 0, len(placed))
	for _, x := range placed {
		ms := p.lpMembers[x.g]
		if ms == nil {
			out = append(out, x)
			continue
		}
		need := x.k
		for _, m := range ms {
			if need == 0 {
				break
			}
			if t := min(rem[m], need); t > 0 {
				out = append(out, placement{g: m, k: t})
				need -= t
			}
		}
	}
	return out
}

// drop takes a group's remaining pods out of this pool's packing for good (a group that must
// share one node already has its node): they stay pending, counted by commitPacking into
// packState.dropped as the pods of the pool's share the packing neither placed nor left.
func (p *problem) drop(rem []int64, g int) {
	rem[g] = 0
}

// singles caps a pattern's copies at one when it holds a group that must share one node.
func (p *problem) singles(k int64, placed []placement) int64 {
	for _, x := range placed {
		if p.groups[x.g].single != nil {
			return min(k, 1)
		}
	}
	return k
}

// afterPlace drops, once a node holds pods of a group that must share one node, the rest of
// that group and its co-carriers from rem: they can go nowhere else.
func (p *problem) afterPlace(rem []int64, placed []placement) {
	for _, x := range placed {
		if g := p.groups[x.g]; g.single != nil {
			for _, h := range p.groups {
				if h.single == g.single {
					p.drop(rem, h.id)
				}
			}
		}
	}
}
