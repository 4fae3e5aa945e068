package knapsack

import "math"

// Counting pruned counts instead of visiting them.
//
// Below a search node at item i, the counts c = kmax, kmax−1, … of item i are tried in turn,
// and most children are pruned at once: their bound, under some surrogate s, does not pass the
// best value. Each such child costs a visit, and the node budget counts it, so it cannot be
// left out — but it can be counted without the visit when it is sure to be pruned.
//
// Take the bound in exact arithmetic on the same numbers (the stored weights and values, the
// integer rooms): G(c) = value + c·v_i + fill(R(c)), where R(c), the room under s left by c
// copies, falls linearly in c, and fill, the fractional knapsack of the items after i, is
// concave in the room. So G is concave in c, and a line through two of its points bounds it
// from above beyond them: having seen G at counts c1 > c2, for every c < c2
//
//	G(c) ≤ G(c2) + (c2 − c)·(G(c2) − G(c1))/(c1 − c2).
//
// The search computes G in floating point, off by at most a few units in the last place of
// the values, rooms and densities involved; surelyPruned allows m = 1e-9 of their scale for
// each of the three bounds it relies on (at c1, at c2 and at c) — orders of magnitude more than
// any rounding — and counts the children whose bound is then still at most the best value:
// the search, computing it, would prune each. Nothing else changes while they are passed
// over: their values fall with c, so none is a new best (a visit sets the best value to at
// least the child's value, less 1e-15), and a pruned child never checks the budget.
//
// One point is enough, too. Fewer copies of item i leave more room, which the fill spends at
// no more than its stop density λ, the value per weight of the first item it did not take
// whole (0 when it took them all): fill(R(c) + Δ) ≤ fill(R(c)) + Δ·λ. So
//
//	G(c') ≤ G(c) + (c − c')·(w_i·λ − v_i)   for every c' < c:
//
// the tangent at c, never above the line through an earlier count (G is concave), and known
// at the first pruned count. Where item i is at least as dense as λ (or weightless) no fewer
// copies beat G(c). In floating point the fill may take whole an item the exact one takes a
// rounding short of whole, and stop one item later: at most that rounding short of room is
// spent at a greater density, which the margin covers as well (surelyPruned allows a third
// m for the tangent).
//
// It holds without shared caps (the capped bound is not a fractional knapsack), for counts,
// requests, rooms and values that are not negative (see mayCount).
// Shortcuts.NoCountPruned turns the counting off (a test checks that it changes nothing).

// marginScale is the rounding margin relative to the scale of the bounds (see above).
const marginScale = 1e-9

// surelyPruned returns how many of the counts c−1, c−2, … 0 surrogate s
// surely prunes below item i, from its whole fill's value at at count c, where it stopped at
// density stop, and at1 at count c1 > c (c1 < 0: none seen). Item i has c copies in the
// partial set.
func (k *Solver) surelyPruned(i int, c int64, s int, c1 int64, at1, at, stop float64) int64 {
	sg := &k.surr[s]
	best := max(k.bestV*(1+1e-12), k.target)
	// The room is greatest with no copy of item i: the rounding scale of every count's bound.
	req := k.reqOf(i)
	room := 0.0
	for _, x := range sg.dims {
		room += x.m * float64(k.free[x.d]+c*req[x.d])
	}
	dmax, fixed := sg.scaleAt(i + 1)
	m := marginScale * (math.Abs(best) + math.Abs(at) + room*dmax + fixed)
	head := best - at - 2*m
	if !(head > 0) {
		return 0
	}
	// One point: each count fewer adds at most w_i·stop − v_i (the product's rounding is far
	// below the margin too); where that is not above 0, G rises with c.
	n := 0.0
	if tan := sg.w[i]*stop - k.items[i].v; tan <= 0 {
		if head >= m {
			return c
		}
	} else if tan > 0 {
		n = (head - m) / tan
	}
	if c1 >= 0 {
		if slope := (at - at1 + 2*m) / float64(c1-c); slope <= 0 {
			return c
		} else if slope > 0 {
			n = max(n, head/slope)
		}
	}
	// (1 − 1e-12): a quotient rounded up to a whole number does not count one too many.
	n *= 1 - 1e-12
	if n >= float64(c) {
		return c
	}
	return int64(max(n, 0))
}

// mayCount reports whether surelyPruned's reasoning holds for the loaded problem: no shared
// caps, surrogates to bound with, and nothing negative (a negative count or request would
// make the fill's steps shrink it, or the room grow with the count), few enough items that
// the rounding stays far below the margin.
func (k *Solver) mayCount() bool {
	if k.Shortcuts.NoCountPruned || len(k.caps) > 0 || len(k.surr) == 0 || len(k.items) > maxCountItems {
		return false
	}
	for _, c := range k.prob.Capacity {
		if c < 0 {
			return false
		}
	}
	for _, r := range k.req {
		if r < 0 {
			return false
		}
	}
	for _, it := range k.items {
		if it.maxk < 0 || math.IsInf(it.v, 0) {
			return false
		}
	}
	return true
}

// maxCountItems bounds the items over which surelyPruned reasons: each step of a fill adds a
// few roundings, and a thousand of them are still far below the margin.
const maxCountItems = 1000
