package knapsack

import (
	"cmp"
	"math"
	"slices"
)

// buildSurrogates prepares the weightings: each dimension alone, and all of them together,
// each normalised by the shape's capacity.
func (k *Solver) buildSurrogates(mixtures bool) {
	p, alloc := k.prob, k.prob.Capacity
	k.surr = k.surr[:0]
	var all []float64
	for d, c := range alloc {
		if c <= 0 {
			continue
		}
		used := false
		for _, it := range k.items {
			if p.Items[it.src].Req[d] > 0 {
				used = true
				break
			}
		}
		if !used {
			continue
		}
		mu := make([]float64, len(alloc))
		mu[d] = 1 / float64(c)
		k.addSurrogate(mu)
		if all == nil {
			all = make([]float64, len(alloc))
		}
		all[d] = 1 / float64(c)
	}
	if all != nil {
		k.addSurrogate(all)
	}
	// Mixtures of every pair of dimensions: when two resources bind together (cpu and memory,
	// memory and pod slots), the best surrogate weighs both. Keep the few tightest at the root.
	single := len(k.surr) - 1
	if !mixtures {
		single = 0
	}
	for a := 0; a < single; a++ {
		for b := a + 1; b < single; b++ {
			for _, t := range []float64{0.2, 0.35, 0.5, 0.65, 0.8} {
				mu := make([]float64, len(alloc))
				for d := range mu {
					mu[d] = t*k.surr[a].mu[d] + (1-t)*k.surr[b].mu[d]
				}
				k.addSurrogate(mu)
			}
		}
	}
	if mixtures && k.Tight {
		k.addLagrangeSurrogate(alloc)
	}
	if len(k.surr) > 4 {
		k.keepTightest(alloc, 4)
	}
}

// addLagrangeSurrogate adds the weighting by the resources' Lagrangian multipliers at the root
// (lagrangeBound's coordinate descent): weighted by what each resource is worth where items
// compete for it, the one constraint bounds about as tightly as the LP relaxation, where a
// weighting by capacity alone lets an item light on the weighted resources fill the node
// (1.87 against the LP's 1.11 times a family's price, seen on deployments-100000).
func (k *Solver) addLagrangeSurrogate(alloc []int64) {
	if len(k.items) == 0 {
		return
	}
	l := k.newLagrangian(alloc)
	l.descend(nil)
	k.Work += lagrangeRounds * len(l.mu) * len(k.items) * len(l.limit)
	mu := make([]float64, len(alloc))
	weighted := false
	for d := range alloc {
		if l.mu[d] > 0 && alloc[d] > 0 {
			mu[d], weighted = l.mu[d], true
		}
	}
	if weighted {
		k.addSurrogate(mu)
	}
}

// addSurrogate adds the weighting mu: each item's weight under it, and the items by value per
// weight, best first.
func (k *Solver) addSurrogate(mu []float64) {
	sg := surrogate{mu: mu, w: make([]float64, len(k.items)), order: make([]int, len(k.items))}
	for j, it := range k.items {
		req := k.prob.Items[it.src].Req
		for d, m := range mu {
			if m > 0 {
				sg.w[j] += m * float64(req[d])
			}
		}
		sg.order[j] = j
	}
	// Densities once, not per comparison: the sort is most of a bound's set-up on large LPs.
	dens := k.dens[:0]
	for j := range k.items {
		d := math.Inf(1)
		if sg.w[j] > 0 {
			d = k.items[j].v / sg.w[j]
		}
		dens = append(dens, d)
	}
	k.dens = dens
	slices.SortFunc(sg.order, func(a, b int) int { return cmp.Or(cmp.Compare(dens[b], dens[a]), cmp.Compare(a, b)) })
	k.surr = append(k.surr, sg)
}

// keepTightest keeps the n surrogates whose bound at the root (an empty node of capacity
// alloc) is smallest.
func (k *Solver) keepTightest(alloc []int64, n int) {
	k.free = append(k.free[:0], alloc...)
	rootB := make([]float64, len(k.surr))
	idx := make([]int, len(k.surr))
	for i := range k.surr {
		idx[i] = i
		rootB[i] = k.boundWith(&k.surr[i], 0)
	}
	slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(rootB[x], rootB[y]) })
	kept := make([]surrogate, 0, n)
	for _, i := range idx[:n] {
		kept = append(kept, k.surr[i])
	}
	k.surr = append(k.surr[:0], kept...)
}
