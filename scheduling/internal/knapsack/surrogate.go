package knapsack

import (
	"cmp"
	"math"
	"slices"
)

type surrogate struct {
	mu    []float64 // weight per dimension
	dims  []weight  // the dimensions of positive weight, in order: a room sums only these
	order []int     // item indices by value per weight, best first (scratch for fill)
	w     []float64 // item weights, by loaded index
	// fill is order's items with what a greedy fill reads of each, in one flat slice.
	fill []fillItem
	// levels are fill's items from i on, for each i, at levels[at[i]:at[i+1]]: a search node
	// at item i reads only the items it may still add. Built for few items only (see weigh).
	levels []fillItem
	at     []int
	// dmax and fixed scale the rounding margin of surelyPruned, per level (see layLevels).
	dmax, fixed []float64
	// negative: some item weighs less than nothing (a negative request; see settle).
	negative bool
}

// from returns the greedy fill's items from loaded item i on: a list that may still hold items
// before i, which the reader skips.
func (sg *surrogate) from(i int) []fillItem {
	if len(sg.at) == 0 {
		return sg.fill
	}
	return sg.levels[sg.at[i]:sg.at[i+1]]
}

// weight is a surrogate's weight m on dimension d.
type weight struct {
	d int
	m float64
}

// fillItem is loaded item j as a greedy fill under one surrogate sees it: its weight, value,
// count cap, what taking the whole count weighs and is worth (lim·w and lim·v, as the fill
// would multiply them), the least room it takes whole (see wholeAt), and whether it has a
// shared cap.
type fillItem struct {
	j            int
	w, v, lim    float64
	fullW, fullV float64
	whole        float64
	capped       bool
	cap          int32 // its first cap (see Solver.firstCap), when capped
}

// wholeAt returns the least float x with x ≥ lim·w exactly (w > 0): for room left ≥ it,
// left/w ≥ lim holds exactly, so the fill's take, min(lim, left/w) with a monotone rounding and
// lim a float, is lim — decided by one comparison instead of a division. lim·w rounded to
// nearest is that float or the one below; the fused multiply-add tells which, as it rounds
// once and so keeps the sign of x − lim·w (both are multiples of the least subnormal: a
// difference that is not 0 does not round to 0).
func wholeAt(lim, w float64) float64 {
	x := lim * w
	if math.FMA(-lim, w, x) < 0 {
		x = math.Nextafter(x, math.Inf(1))
	}
	return x
}

// buildSurrogates prepares the weightings: each dimension alone, and all of them together,
// each normalised by the shape's capacity (a search then keeps the tightest, keepTightest).
func (k *Solver) buildSurrogates(mixtures bool) {
	alloc := k.prob.Capacity
	k.surr = k.surr[:0]
	k.allMu = append(k.allMu[:0], make([]float64, k.nd)...)
	weighted := false
	for d, full := range k.dims {
		c := alloc[full]
		if c <= 0 || !k.weighs(d) {
			continue
		}
		sg := k.newSurrogate()
		sg.mu[d] = 1 / float64(c)
		k.weigh(sg)
		k.allMu[d], weighted = 1/float64(c), true
	}
	if weighted {
		sg := k.newSurrogate()
		copy(sg.mu, k.allMu)
		k.weigh(sg)
	}
	// Mixtures of every pair of dimensions: when two resources bind together (cpu and memory,
	// memory and pod slots), the best surrogate weighs both. Keep the few tightest at the root.
	single := len(k.surr) - 1
	if !mixtures {
		single = 0
	}
	for a := 0; a < single; a++ {
		for b := a + 1; b < single; b++ {
			for _, t := range [...]float64{0.2, 0.35, 0.5, 0.65, 0.8} {
				sg := k.newSurrogate()
				ma, mb := k.surr[a].mu, k.surr[b].mu
				for d := range sg.mu {
					sg.mu[d] = t*ma[d] + (1-t)*mb[d]
				}
				k.weigh(sg)
			}
		}
	}
	if mixtures && k.Tight {
		k.addLagrangeSurrogate(alloc)
	}
}

// weighs reports whether some loaded item requests resource d (of k.dims).
func (k *Solver) weighs(d int) bool {
	for j := range k.items {
		if k.req[j*k.nd+d] > 0 {
			return true
		}
	}
	return false
}

// newSurrogate appends a surrogate with every weight 0 and returns it. Its buffers are those
// an earlier call left past len(k.surr), so building the weightings does not allocate; the
// pointer holds until the next newSurrogate.
func (k *Solver) newSurrogate() *surrogate {
	n := len(k.surr)
	if n < cap(k.surr) {
		k.surr = k.surr[:n+1]
	} else {
		k.surr = append(k.surr, surrogate{})
	}
	sg := &k.surr[n]
	sg.mu = append(sg.mu[:0], make([]float64, k.nd)...)
	return sg
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
	// Counted per resource, k.dims' or not, and per shared cap, as before the descent skipped
	// the resources no item uses: the work, and so every budget, stays what it was.
	n := len(alloc) + len(k.caps)
	k.Work += lagrangeRounds * n * len(k.items) * n
	sg := k.newSurrogate()
	weighted := false
	for d, full := range k.dims {
		if l.mu[d] > 0 && alloc[full] > 0 {
			sg.mu[d], weighted = l.mu[d], true
		}
	}
	if !weighted {
		k.surr = k.surr[:len(k.surr)-1]
		return
	}
	k.weigh(sg)
}

// weigh sets surrogate sg's item weights under its mu, and its fill order: the items by value
// per weight, best first.
func (k *Solver) weigh(sg *surrogate) {
	sg.dims = sg.dims[:0]
	for d, m := range sg.mu {
		if m > 0 {
			sg.dims = append(sg.dims, weight{d: d, m: m})
		}
	}
	n := len(k.items)
	sg.w, sg.order = resize(sg.w, n), resize(sg.order, n)
	sg.levels, sg.at = sg.levels[:0], sg.at[:0] // until layLevels: one list for every level
	// Densities once, not per comparison: the sort is most of a bound's set-up on large LPs.
	k.dens = resize(k.dens, n)
	dens := k.dens
	sg.negative = false
	for j := range n {
		req := k.req[j*k.nd : (j+1)*k.nd]
		w := 0.0
		for _, x := range sg.dims {
			w += x.m * float64(req[x.d])
		}
		d := math.Inf(1)
		if w > 0 {
			d = k.items[j].v / w
		}
		sg.w[j], sg.order[j], dens[j] = w, j, d
		sg.negative = sg.negative || w < 0
	}
	sortByDensity(sg.order, dens)
	sg.fill = resize(sg.fill, n)
	for x, j := range sg.order {
		it, f, w := &k.items[j], &sg.fill[x], sg.w[j]
		lim := float64(it.maxk)
		f.j, f.w, f.v, f.lim, f.fullW, f.fullV = j, w, it.v, lim, lim*w, lim*it.v
		f.whole = wholeAt(lim, w)
		f.capped, f.cap = len(k.itemCaps[j]) > 0, int32(k.firstCap[j])
	}
}

// resize returns s with length n, its old contents (up to n) kept, reallocated only when
// it has room for fewer.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return append(s[:cap(s)], make([]T, n-cap(s))...)
	}
	return s[:n]
}

// sortByDensity sorts order (item indices) by dens, greatest first, ties by index: a total
// order (cmp.Compare puts a NaN last), so any sort gives the same. A few items are sorted by
// insertion, without a call per comparison.
func sortByDensity(order []int, dens []float64) {
	if len(order) > fewToSort {
		slices.SortFunc(order, func(a, b int) int { return cmp.Or(cmp.Compare(dens[b], dens[a]), cmp.Compare(a, b)) })
		return
	}
	for a := 1; a < len(order); a++ {
		x := order[a]
		b := a
		for ; b > 0; b-- {
			y := order[b-1]
			if c := cmp.Compare(dens[x], dens[y]); c < 0 || (c == 0 && x > y) {
				break
			}
			order[b] = y
		}
		order[b] = x
	}
}

// sortByBound sorts surrogate indexes by their root bounds, least first; ties keep their order
// (a stable sort's result is the only one, so a few are sorted by insertion, without a call
// per comparison).
func sortByBound(rank []int, rootB []float64) {
	if len(rank) > fewToSortStable {
		slices.SortStableFunc(rank, func(x, y int) int { return cmp.Compare(rootB[x], rootB[y]) })
		return
	}
	for a := 1; a < len(rank); a++ {
		x, b := rank[a], a
		for ; b > 0 && cmp.Compare(rootB[x], rootB[rank[b-1]]) < 0; b-- {
			rank[b] = rank[b-1]
		}
		rank[b] = x
	}
}

// fewToSort and fewToSortStable are the most elements sortByValue, sortByDensity and
// sortByBound sort by insertion, whose moves grow with the square of the count; past them the
// library's sorts do, with a call per comparison. A search sorts a few items or surrogates
// many times over, so that call was most of its sorting.
const (
	fewToSort       = 12
	fewToSortStable = 32
)

// layLevels keeps sg's fill per search level (when there are few items), and per level the
// greatest density and the whole value of the weightless items (the scale of the rounding
// margin in surelyPruned). With one list for all levels, these are over every item: no less.
func (k *Solver) layLevels(sg *surrogate) {
	n := len(k.items)
	if n > maxLevelItems || k.Shortcuts.NoLevels {
		sg.levels, sg.at = sg.levels[:0], sg.at[:0]
		dmax, fixed := fillScale(sg.fill)
		sg.dmax, sg.fixed = append(sg.dmax[:0], dmax), append(sg.fixed[:0], fixed)
		return
	}
	sg.levels, sg.at = resize(sg.levels, n*(n+1)/2), resize(sg.at, n+1)
	sg.dmax, sg.fixed = resize(sg.dmax, n), resize(sg.fixed, n)
	at := 0
	for i := range n {
		sg.at[i] = at
		for x := range sg.fill {
			if sg.fill[x].j >= i {
				sg.levels[at] = sg.fill[x]
				at++
			}
		}
		sg.dmax[i], sg.fixed[i] = fillScale(sg.levels[sg.at[i]:at])
	}
	sg.at[n] = at
}

// fillScale returns the greatest value per weight of the weighed items of fill, and the sum of
// the weightless items' whole values. The weightless come first in a fill (their density is
// infinite), then the others by density: the first of those has the greatest.
func fillScale(fill []fillItem) (dmax, fixed float64) {
	for _, f := range fill {
		if f.w > 0 {
			return f.v / f.w, fixed
		}
		fixed += math.Abs(f.fullV)
	}
	return 0, fixed
}

// scaleAt is layLevels' greatest density and weightless value for the items from i on.
func (sg *surrogate) scaleAt(i int) (dmax, fixed float64) {
	if len(sg.at) == 0 {
		return sg.dmax[0], sg.fixed[0]
	}
	return sg.dmax[i], sg.fixed[i]
}

// maxLevelItems is the most loaded items for which a surrogate keeps its fill per search level:
// n(n+1)/2 entries, paid back many times over where searches visit thousands of nodes over a
// few items, but not where they visit a hundred over seventy. Shortcuts.NoLevels keeps one
// fill whatever the number (a test checks both ways give the same answers).
const maxLevelItems = 24

// keepTightest keeps the n surrogates whose bound at the root (the problem's whole capacity
// free) is smallest. The others stay past len(k.surr), their buffers for the next problem.
func (k *Solver) keepTightest(n int) {
	k.resetFree()
	rootB, rank := k.rootB[:0], k.rank[:0]
	for i := range k.surr {
		rank = append(rank, i)
		rootB = append(rootB, k.boundWith(&k.surr[i], 0))
	}
	sortByBound(rank, rootB)
	// A permutation, so every buffer stays in exactly one surrogate.
	k.spare = append(k.spare[:0], k.surr...)
	for pos, i := range rank {
		k.surr[pos] = k.spare[i]
	}
	k.surr = k.surr[:n]
	k.rootB, k.rank = rootB, rank
}

// roomOf is the node's free room under surrogate sg.
func (k *Solver) roomOf(sg *surrogate) float64 {
	room := 0.0
	for _, x := range sg.dims {
		room += x.m * float64(k.free[x.d])
	}
	return room
}
