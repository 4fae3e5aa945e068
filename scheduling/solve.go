package scheduling

import (
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
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("scheduling: %w", err)
	}
	p, err := newProblem(&in)
	if err != nil {
		return Result{}, err
	}
	counts := make([]int64, len(p.groups))
	for _, g := range p.groups {
		counts[g.id] = int64(len(g.pods))
	}
	lb, global := p.lowerBound(counts)
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
		same := len(p.pools) == 1
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
		claims := p.roundPatterns(pl, cg, rem)
		claims = append(claims, p.packPool(pl, rem)...)
		if rounds > 0 {
			claims = p.improve(claims, rounds)
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
	if unplaced {
		lb, _ = p.lowerBound(counts)
	}
	res.LowerBound = lb
	return res, nil
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
		k = p.limitCopies(pl, pat.s, k)
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
		pl.used.addScaled(pat.s.capacity, k)
		pl.nodesUsed += k
	}
	return out
}

// placeOnBins puts pending pods on existing nodes and in-flight claims, largest groups first,
// each into the fullest room that takes it.
func (p *problem) placeOnBins() {
	for _, g := range p.groupsByValue() {
		if p.remaining[g.id] == 0 {
			continue
		}
		for _, b := range p.bins {
			if p.remaining[g.id] == 0 {
				break
			}
			if !b.admits(g) || b.conflictsWith(p, g) {
				continue
			}
			limit := p.remaining[g.id]
			if g.perNode > 0 {
				limit = min(limit, g.perNode-placedOf(b.placed, g.id))
			}
			k := maxCopies(g.req, b.free, limit)
			if k <= 0 {
				continue
			}
			b.free.addScaled(g.req, -k)
			b.placed = addPlacement(b.placed, g.id, k)
			p.remaining[g.id] -= k
		}
	}
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
