package scheduling

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// defaultImprovementRounds bounds the local search: each round re-sizes every node and tries
// merges among the least efficient ones; in practice it converges in two or three.
const defaultImprovementRounds = 8

// Solve places the pending pods of in: onto existing nodes and in-flight claims where they fit,
// then onto new NodeClaims chosen for cost, and explains every pod it cannot place.
//
// It returns an error only for invalid input (see [Input.Validate]) or when ctx is cancelled
// (ctx.Err(), wrapped); an unplaceable pod is a result, not an error. Solve is safe for
// concurrent use: it shares nothing between calls and does not modify in.
func Solve(ctx context.Context, in Input) (Result, error) {
	if err := in.Validate(); err != nil {
		return Result{}, err
	}
	return solveWithPreferences(ctx, &in)
}

// solveOnce runs one solve with the given preferences treated as requirements.
func solveOnce(ctx context.Context, in *Input, prefs preferences) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("scheduling: %w", err)
	}
	p, err := newProblem(in, prefs)
	if err != nil {
		return Result{}, err
	}
	counts := make([]int64, len(p.groups))
	for _, g := range p.groups {
		counts[g.id] = int64(len(g.pods))
	}
	// Where groups were split or pinned for topology, the bound is proved on the relaxed
	// problem (topologyFreeBound); this one needs only its values. That proof needs only the pods
	// and which of them the plan places; usually it places all, so it starts now, on the other
	// core, and is redone only if the plan leaves pods out. The two problems share nothing
	// they write.
	p.noProof = p.relaxable
	var early chan boundResult
	if p.relaxable && !in.Options.SkipLowerBound {
		early = make(chan boundResult, 1)
		base := p.base
		go func() {
			lb, err := topologyFreeBound(in, prefs, base, nil)
			early <- boundResult{lb, err}
		}()
		// Every return waits for it: Solve leaves no goroutine behind.
		defer func() {
			if early != nil {
				<-early
			}
		}()
	}
	var lb float64
	var global cgResult
	if in.Options.SkipLowerBound {
		// No proof wanted: value pods cheaply for filling existing room, and run the column
		// generation only for what is left for new nodes (in disruption simulations, usually
		// nothing).
		global = cgResult{values: p.pureValues()}
	} else {
		lb, global = p.lowerBound(counts)
	}
	p.setValues(global.values)
	p.placeOnBins()
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("scheduling: %w", err)
	}
	rounds := in.Options.ImprovementRounds
	if rounds == 0 {
		rounds = defaultImprovementRounds
	}
	rem := make([]int64, len(p.groups))
	for _, pl := range p.pools {
		any := false
		same := len(p.pools) == 1 && !in.Options.SkipLowerBound
		for _, g := range p.groups {
			rem[g.id] = 0
			if p.poolOK[g.id][pl.idx] && p.remaining[g.id] > 0 {
				rem[g.id] = p.remaining[g.id]
				any = true
			}
			same = same && rem[g.id] == counts[g.id]
		}
		if !any {
			continue
		}
		cg := global
		if !same {
			// Pods went to existing room or to other pools: price this pool's part alone.
			cg = p.columnGeneration(rem, pl.shapes)
			p.setValues(cg.values)
		}
		for _, g := range p.groups {
			if g.single != nil && g.single.placed {
				p.drop(rem, g.id)
			}
		}
		plain := p.plainPool(pl, rem)
		before, usedBefore, nodesBefore := slices.Clone(rem), pl.used.clone(), pl.nodesUsed
		claims := p.roundPatterns(pl, cg, rem)
		claims = append(claims, p.packPool(pl, rem)...)
		if rounds > 0 {
			claims = p.improve(claims, rounds)
		}
		if plain {
			// Small plain pools: also pack first-fit-decreasing and keep the cheaper plan
			// (placing at least as many pods), so the solver never loses to the baseline.
			lpRem, lpUsed, lpNodes := slices.Clone(rem), pl.used.clone(), pl.nodesUsed
			copy(rem, before)
			pl.used, pl.nodesUsed = usedBefore.clone(), nodesBefore
			alt := p.packFFD(pl, rem)
			if rounds > 0 {
				alt = p.improve(alt, rounds)
			}
			if sum(rem) > sum(lpRem) || claimsCost(alt) >= claimsCost(claims)-1e-12 {
				copy(rem, lpRem)
				pl.used, pl.nodesUsed = lpUsed, lpNodes
			} else {
				claims = alt
			}
		}
		p.claims = append(p.claims, claims...)
		for _, g := range p.groups {
			if p.poolOK[g.id][pl.idx] && p.remaining[g.id] > 0 {
				p.remaining[g.id] = rem[g.id]
				if rem[g.id] > 0 {
					if p.limitHit[g.id] == nil {
						p.limitHit[g.id] = map[int]bool{}
					}
					p.limitHit[g.id][pl.idx] = true
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("scheduling: %w", err)
		}
	}
	p.placeWith()
	for g, n := range p.dropped {
		p.remaining[g] += n
	}
	p.enforceTopology()
	res := p.result()
	// The bound covers the pods the plan places; when some could not be placed, find the
	// bound for the placed ones alone.
	unplaced := false
	for _, g := range p.groups {
		if p.remaining[g.id] > 0 {
			unplaced = true
			counts[g.id] -= p.remaining[g.id]
		}
	}
	switch {
	case in.Options.SkipLowerBound:
	case p.relaxable:
		r := <-early
		early = nil
		lb, err = r.lb, r.err
		if err == nil && len(res.Unschedulable) > 0 {
			lb, err = topologyFreeBound(in, prefs, p.base, res.Unschedulable)
		}
		if err != nil {
			return Result{}, err
		}
	case unplaced:
		lb, _ = p.lowerBound(counts)
	}
	res.LowerBound = lb
	return res, nil
}

// topologyFreeBound proves the lower bound for the pods not in unplaced on the problem without the
// constraints the solver meets by splitting groups over zones, pinning them to domains or
// capping them per node by a hostname spread. Proved on the split problem, the bound would
// hold only for plans that spread the pods the same way (three pods with maxSkew 2 over three
// zones need two zones, not three), and it would report a plan optimal that is not. Left out,
// those constraints can only lower the bound: it is valid for every plan.
func topologyFreeBound(in *Input, prefs preferences, base []*group, unplaced []Unschedulable) (float64, error) {
	prefs.relaxTopology = true
	rp, err := newProblemGrouped(in, prefs, base)
	if err != nil {
		return 0, err
	}
	out := make(map[string]bool, len(unplaced))
	for _, u := range unplaced {
		out[u.Pod] = true
	}
	counts := make([]int64, len(rp.groups))
	for _, g := range rp.groups {
		for _, k := range g.keys {
			if !out[k] {
				counts[g.id]++
			}
		}
	}
	lb, _ := rp.lowerBound(counts)
	return lb, nil
}

type boundResult struct {
	lb  float64
	err error
}

func sum(xs []int64) int64 {
	t := int64(0)
	for _, x := range xs {
		t += x
	}
	return t
}

// drop takes a group's remaining pods out of this pool's packing for good: they stay pending
// (a group that must share one node already has its node).
func (p *problem) drop(rem []int64, g int) {
	if p.dropped == nil {
		p.dropped = map[int]int64{}
	}
	p.dropped[g] += rem[g]
	rem[g] = 0
}

// singles caps a pattern's copies at one when it holds a group that must share one node, and
// marks such groups placed.
func (p *problem) singles(k int64, placed []placement) int64 {
	for _, x := range placed {
		if p.groups[x.g].single != nil {
			return min(k, 1)
		}
	}
	return k
}

func (p *problem) afterPlace(rem []int64, placed []placement) {
	for _, x := range placed {
		if g := p.groups[x.g]; g.single != nil {
			g.single.placed = true
			for _, h := range p.groups {
				if h.single == g.single {
					p.drop(rem, h.id)
				}
			}
		}
	}
}

// setValues gives every group its pod value (a tiny one by size when the bound gives none, so
// the greedy still orders it sensibly) and re-sorts the fit lists by it.
func (p *problem) setValues(values []float64) {
	for _, g := range p.groups {
		g.value = values[g.id]
		if g.value <= 0 {
			g.value = 1e-12 * float64(g.req[dimCPU]+g.req[dimMemory]/(1<<20)+1)
		}
	}
	p.orderFits()
}

// roundPatterns turns the LP solution into nodes: ⌊λ⌋ copies of every pattern, as the remaining
// pods and the pool's limits allow. rem is decremented.
func (p *problem) roundPatterns(pl *pool, cg cgResult, rem []int64) []*claim {
	var out []*claim
	for i, pat := range cg.basis {
		if pat.s.pool != pl {
			continue
		}
		k := int64(cg.lambda[i] + 1e-9)
		for _, x := range pat.placed {
			k = min(k, rem[x.g]/x.k)
		}
		if k <= 0 || !p.withinLimits(pl, pat.s, 1) {
			continue
		}
		k = p.singles(p.limitCopies(pl, pat.s, k), pat.placed)
		mask := fullMask(len(pat.s.offerings))
		used := make(vec, len(p.dims.names))
		value := 0.0
		for _, x := range pat.placed {
			e, _ := p.fit(pat.s, x.g)
			mask &= e.mask
			used.addScaled(p.groups[x.g].req, x.k)
			value += float64(x.k) * p.groups[x.g].value
		}
		for range k {
			out = append(out, &claim{shape: pat.s, mask: mask, used: used.clone(), placed: slices.Clone(pat.placed), value: value})
		}
		for _, x := range pat.placed {
			rem[x.g] -= x.k * k
		}
		p.afterPlace(rem, pat.placed)
		pl.used.addScaled(pat.s.capacity, k)
		pl.nodesUsed += k
	}
	return out
}

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
	for _, g := range p.groups {
		h := g.with
		if h == nil || p.remaining[g.id] == 0 {
			continue
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
		if x.g != g.id {
			for _, c := range g.conflicts {
				if c == x.g {
					return true
				}
			}
		}
	}
	return false
}
