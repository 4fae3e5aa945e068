package knapsack

import (
	"cmp"
	"math"
	"slices"
)

// Solver finds the most valuable set of items for one node: an integer knapsack over every
// resource, with per-item counts, shared caps and conflicts, by depth-first branch and bound.
// Its zero value is ready; it keeps scratch space between calls, so one Solver serves one
// goroutine.
//
// Its bound at a search node is a surrogate relaxation: the resource constraints are combined
// into one (with weights 1/capacity on one dimension, or on all of them), and the fractional
// one-dimensional knapsack on that constraint, filled greedily by value per weight with each
// item's count cap, bounds what the node's subtree can still add. Any non-negative weights give
// a valid bound; the smallest over a few weightings is used.
type Solver struct {
	// Work counts what the calls spent (search nodes times the items each bound looks at,
	// and their set-up), across calls: a budget in units of work, not time.
	Work int
	// Tight starts every search from greedy fills (seedGreedy) and gives the searches over
	// every item a surrogate weighted by the resources' Lagrangian multipliers
	// (addLagrangeSurrogate): more work per search, fewer searches that run out of budget
	// on big nodes with many copies per item. The caller sets it for small pricing problems.
	Tight bool
	// Shortcuts turns off the search's exact shortcuts, each of which leaves every answer and
	// the work count as they are (the tests check so by turning them off); the zero value
	// keeps them all on, as the solver runs.
	Shortcuts Shortcuts

	// loaded is the problem as the search reads it, and the room its partial set leaves.
	loaded
	cur    []pick
	best   []pick
	bestV  float64
	nodes  int
	budget int
	surr   []surrogate
	// wholeV is per search level i the whole value of items i…, Σ maxk·v (see settle).
	wholeV []float64
	taken  []capItem // scratch for cappedBound
	red    []capItem
	dens   []float64 // scratch for weigh
	allMu  []float64 // scratch for buildSurrogates
	rootB  []float64 // scratch for keepTightest
	rank   []int
	spare  []surrogate
	lag    lagrangian // scratch for the Lagrangian bounds
	lp     lpScratch  // scratch for lpBound
	// target: a pricing search (see search) looks only for patterns worth more; 0 in solve.
	target float64
	// skips: the search may count children it surely prunes instead of visiting them
	// (surelyPruned). prunedBy, prunedAt and prunedStop: the surrogate that pruned the last
	// search node visited, its bound there and its fill's stop density, or prunedBy -1.
	skips      bool
	prunedBy   int
	prunedAt   float64
	prunedStop float64
}

// loaded is a problem as the search reads it (load, index): the items loaded, in order,
// their requests on the resources they use, their shared caps and the conflicts asked so
// far; and the room and cap room the partial set leaves (free, capUsed, capLeft), which
// push, pop and give keep in step. Its methods load, lay out and select items and count caps;
// they know nothing of bounds or of the search.
type loaded struct {
	prob  *Problem
	items []kItem
	// dims are the resources the search counts (see index), by their index in
	// Problem.Capacity, and nd how many; req holds loaded item j's request on them at j*nd…
	// in the loaded order, so the search reads one flat slice instead of chasing
	// Problem.Items, and free is the room left on them.
	dims []int
	nd   int
	req  []int64
	free []int64
	// caps shared by several items (anti-affinity families, hostname spread): the bounds
	// respect them, so a family of 25 groups allowed one pod per node bounds as one pod.
	caps     []int   // the loaded items' shared caps, by their index in Problem.CapLimits
	itemCaps [][]int // per loaded item, its caps' indices in caps (slices of capFlat)
	capFlat  []int
	firstCap []int // per loaded item, its first cap (the one cappedBound counts it against), or -1
	// capFrom is per search level i and cap c, at i*len(caps)+c, the copies of items i… that
	// count against c first (see settle).
	capFrom []float64
	capUsed []int64 // per cap, pods of the current partial pattern
	// capLeft is per cap the room the partial set leaves it, max(limit − used, 0) as a float,
	// kept in step with capUsed (useCaps) rather than worked out at every bound.
	capLeft []float64
	// conf remembers Problem.Conflict between loaded items a and b at a*len(items)+b (0 not
	// asked yet, 1 may join, 2 conflicts): the search asks about the same pairs at every node.
	conf    []int8
	top     []kItem // scratch for selectItems
	slot    []int   // by cap index in Problem.CapLimits: its index in caps, or -1
	capSeen []capCount
	picked  []bool
}

// Shortcuts are the search's exact shortcuts a caller may turn off. Each only spares work
// that cannot change the outcome: a Solver with any of them off returns the same picks,
// values, bounds and proofs, and counts the same Work.
type Shortcuts struct {
	// NoCountPruned visits the children surelyPruned shows pruned instead of counting them
	// (skip.go).
	NoCountPruned bool
	// NoSettle computes every capped bound in full instead of settling it from the greedy
	// fill when that is far from the best value either way (settle.go).
	NoSettle bool
	// NoLevels keeps one fill per surrogate instead of one per search level, whatever the
	// number of items (layLevels keeps levels for at most maxLevelItems items).
	NoLevels bool
}

type kItem struct {
	g    int // Item.ID
	src  int // its index in Problem.Items
	v    float64
	maxk int64
	key  float64 // value per unit of size, to keep the most promising items
}

// ExactItems is the most items for which the bounds (Solve's when its search runs out of
// budget, Refine's) solve the LP relaxation exactly; above it they use a Lagrangian bound.
const ExactItems = 24

// Problem is one knapsack: a node's room and the items that may go on it.
type Problem struct {
	// Capacity is the node's room, per resource.
	Capacity []int64
	// Items are what may go on the node. An item of value 0 or less is left out.
	Items []Item
	// CapLimits are the shared caps' limits: at most CapLimits[c] pods of the items that name
	// c in Caps on one node.
	CapLimits []int64
	// Conflict reports whether item a may not join a node that holds item b (indices into
	// Items); nil when any items may share the node.
	Conflict func(a, b int) bool
}

// Item is a kind of pod: its copies are interchangeable.
type Item struct {
	// ID is the caller's name for the item; ties between items break by it, so it must be
	// unique within a Problem.
	ID int
	// Value is what one copy is worth.
	Value float64
	// Req is what one copy takes, per resource (Problem.Capacity's).
	Req []int64
	// Max is the most copies one node may take (its own per-node cap and how many there are;
	// the room is checked apart).
	Max int64
	// Size is one copy's size (Σ Req/Capacity over the resources, say): the items of best
	// value per size are the ones kept when a search loads only a few.
	Size float64
	// Caps are the shared caps the item counts against (indices into Problem.CapLimits).
	Caps []int
}

// Pick is part of a solution: N copies of the item with this ID.
type Pick struct {
	ID int
	N  int64
}

type pick struct {
	src int // index in Problem.Items
	j   int // index in the loaded items
	n   int64
}

// Solve returns the most valuable set of items found within budget search nodes, its value,
// and an upper bound on the best value (equal to it when the search finished within its
// budget). With topK > 0 only the topK most promising items (best value per size, see
// selectItems) are loaded, and the bound is one on sets of those alone.
func (k *Solver) Solve(p *Problem, budget, topK int) ([]Pick, float64, float64) {
	k.target = 0
	k.prepare(p, topK)
	k.resetFree()
	k.cur, k.best, k.bestV, k.nodes, k.budget = k.cur[:0], k.best[:0], 0, 0, budget
	k.seedGreedy()
	root := k.bound(0, 0)
	exhausted := k.dfs(0, 0)
	upper := k.bestV
	k.Work += k.nodes*max(1, len(k.items)*len(k.surr)) + len(p.Items)*8 + len(k.surr)*len(k.items)*4
	if exhausted || topK > 0 {
		upper = max(upper, min(root, k.relaxedBound()))
	}
	return k.picks(), k.bestV, upper
}

// Search is Solve for pricing, where only a set worth more than target matters: a subtree
// whose bound does not exceed target is not searched either, so a problem no set of which
// reaches target is settled at the root's bound instead of by a search that runs out of
// budget. It returns the best set found (worth target or less when none is worth more) and
// whether the search proved it best (finished within budget, every item loaded): then no set
// is worth more than max(its value, target).
func (k *Solver) Search(p *Problem, budget, topK int, target float64) ([]Pick, float64, bool) {
	k.target = target
	k.prepare(p, topK)
	loaded := len(k.items)
	k.resetFree()
	k.cur, k.best, k.bestV, k.nodes, k.budget = k.cur[:0], k.best[:0], 0, 0, budget
	k.seedGreedy()
	exhausted := k.dfs(0, 0)
	k.target = 0
	k.Work += k.nodes*max(1, len(k.items)*len(k.surr)) + len(p.Items)*8
	all := 0
	for _, it := range p.Items {
		if it.Value > 0 {
			all++
		}
	}
	return k.picks(), k.bestV, !exhausted && loaded == all
}

// Bound returns an upper bound on the best value of p without a search: the tightest of a
// few surrogate relaxations (one resource, or all together). Refine's is tighter.
func (k *Solver) Bound(p *Problem) float64 {
	k.load(p, 0)
	k.index()
	k.resetFree()
	// Every weighting, not the tightest four a search keeps: the least of their bounds is the
	// same, each computed once.
	k.buildSurrogates(false)
	return k.bound(0, 0)
}

// Refine returns an upper bound on the best value of p at more cost than Bound (the exact LP
// relaxation when it has at most ExactItems items, else a Lagrangian bound), and how many
// items (of value above 0) it has.
func (k *Solver) Refine(p *Problem) (float64, int) {
	k.load(p, 0)
	k.index()
	return k.relaxedBound(), len(k.items)
}

func (k *Solver) picks() []Pick {
	out := make([]Pick, len(k.best))
	for i, x := range k.best {
		out[i] = Pick{ID: k.prob.Items[x.src].ID, N: x.n}
	}
	return out
}

// prepare loads the problem's items, and the surrogate weightings for its bounds.
// With topK > 0 only the topK items of best value per unit of size are loaded: a node rarely
// mixes more than a handful of kinds, and pricing only needs a good set, not the best one.
func (k *Solver) prepare(p *Problem, topK int) {
	k.load(p, topK)
	// The search takes the items most valuable first.
	// (Every comparison here breaks ties by ID, a total order: pdqsort is then as
	// deterministic as a stable sort, and faster.)
	sortByValue(k.items)
	k.index()
	k.resetConflicts()
	k.buildSurrogates(topK == 0)
	if len(k.surr) > 4 {
		k.keepTightest(4)
	}
	for si := range k.surr {
		k.layLevels(&k.surr[si])
	}
	k.wholeV = append(k.wholeV[:0], make([]float64, len(k.items)+1)...)
	for j := len(k.items) - 1; j >= 0; j-- {
		k.wholeV[j] = k.wholeV[j+1] + math.Abs(float64(k.items[j].maxk)*k.items[j].v)
	}
	k.skips = k.mayCount()
}

// sortByValue sorts items by value, greatest first, ties by ID (a total order, cmp.Compare
// putting a NaN last); a few by insertion, without a call per comparison.
func sortByValue(items []kItem) {
	if len(items) > fewToSort {
		slices.SortFunc(items, func(a, b kItem) int { return cmp.Or(cmp.Compare(b.v, a.v), cmp.Compare(a.g, b.g)) })
		return
	}
	for a := 1; a < len(items); a++ {
		x := items[a]
		b := a
		for ; b > 0; b-- {
			if c := cmp.Compare(x.v, items[b-1].v); c < 0 || (c == 0 && x.g > items[b-1].g) {
				break
			}
			items[b] = items[b-1]
		}
		items[b] = x
	}
}

// load loads the items without the surrogates; index must follow, once they are in order.
func (k *loaded) load(p *Problem, topK int) {
	k.prob = p
	k.items = k.items[:0]
	for j, it := range p.Items {
		if it.Value <= 0 {
			continue
		}
		k.items = append(k.items, kItem{g: it.ID, src: j, v: it.Value, maxk: it.Max, key: it.Value / it.Size})
	}
	if topK > 0 && len(k.items) > topK {
		k.items = k.selectItems(k.items, topK)
	}
}

// index lays out the loaded items' requests flat, in their order, and numbers their shared
// caps 0…len(k.caps)-1 in order of first use.
//
// The requests are laid out on the resources some loaded item requests, or whose capacity is
// negative, only: on any other the room never changes and is never short, so neither the
// copies that fit (MaxCopies) nor any surrogate (whose weights are 0 there) reads it.
func (k *loaded) index() {
	p := k.prob
	k.dims = k.dims[:0]
	for d, c := range p.Capacity {
		used := c < 0
		for j := 0; j < len(k.items) && !used; j++ {
			used = p.Items[k.items[j].src].Req[d] != 0
		}
		if used {
			k.dims = append(k.dims, d)
		}
	}
	k.nd = len(k.dims)
	k.req = k.req[:0]
	for _, it := range k.items {
		req := p.Items[it.src].Req
		for _, d := range k.dims {
			k.req = append(k.req, req[d])
		}
	}
	k.indexCaps()
}

// resetFree sets the room left to the whole capacity, on the resources index lays out.
func (k *loaded) resetFree() {
	k.free = k.free[:0]
	for _, d := range k.dims {
		k.free = append(k.free, k.prob.Capacity[d])
	}
}

// indexCaps numbers the shared caps of the loaded items, 0…len(k.caps)-1, and lists each
// item's.
func (k *loaded) indexCaps() {
	p := k.prob
	if len(k.slot) < len(p.CapLimits) {
		k.slot = make([]int, len(p.CapLimits))
		for i := range k.slot {
			k.slot[i] = -1
		}
	}
	k.caps, k.capFlat, k.firstCap = k.caps[:0], k.capFlat[:0], k.firstCap[:0]
	for _, it := range k.items {
		first := -1
		for _, c := range p.Items[it.src].Caps {
			i := k.slot[c]
			if i < 0 {
				i = len(k.caps)
				k.slot[c] = i
				k.caps = append(k.caps, c)
			}
			k.capFlat = append(k.capFlat, i)
			if first < 0 {
				first = i
			}
		}
		k.firstCap = append(k.firstCap, first)
	}
	// Slice capFlat only now that it no longer grows.
	k.itemCaps = k.itemCaps[:0]
	at := 0
	for _, it := range k.items {
		n := len(p.Items[it.src].Caps)
		k.itemCaps = append(k.itemCaps, k.capFlat[at:at+n:at+n])
		at += n
	}
	for _, c := range k.caps {
		k.slot[c] = -1
	}
	k.capUsed = append(k.capUsed[:0], make([]int64, len(k.caps))...)
	k.resetCapLeft()
	nc := len(k.caps)
	k.capFrom = append(k.capFrom[:0], make([]float64, (len(k.items)+1)*nc)...)
	for j := len(k.items) - 1; j >= 0; j-- {
		copy(k.capFrom[j*nc:(j+1)*nc], k.capFrom[(j+1)*nc:(j+2)*nc])
		if c := k.firstCap[j]; c >= 0 {
			k.capFrom[j*nc+c] += float64(k.items[j].maxk)
		}
	}
}

// resetCapLeft sets capLeft for an empty partial set (capUsed all 0).
func (k *loaded) resetCapLeft() {
	k.capLeft = k.capLeft[:0]
	for _, c := range k.caps {
		k.capLeft = append(k.capLeft, float64(max(k.prob.CapLimits[c], 0)))
	}
}

// resetConflicts forgets the conflicts asked of the last problem (see conf). Past a few
// hundred items the table would cost more to clear than the questions it saves.
func (k *loaded) resetConflicts() {
	n := len(k.items)
	if k.prob.Conflict == nil || n > maxConflictMemo {
		k.conf = k.conf[:0]
		return
	}
	if cap(k.conf) < n*n {
		k.conf = make([]int8, n*n)
		return
	}
	k.conf = k.conf[:n*n]
	clear(k.conf)
}

// maxConflictMemo is the most loaded items for which conf remembers conflicts.
const maxConflictMemo = 256

// selectItems keeps the topK most promising items: best value per unit of size first, but at
// most one more member of a shared cap than the cap admits on a node (25 anti-affine groups
// allowed one pod per node between them would otherwise fill the list with pods of which a
// pattern can use one), and for each cap its most valuable member as well.
//
// "First" is in byKey's order, a total one. The caps are taken in the order the sorted items
// name them first, their most valuable member the first of equal value; then the items in
// order until topK are kept. Only that last pass needs the items sorted, and it usually stops
// within a few more than topK: only the first ones are sorted until it reads further.
func (k *loaded) selectItems(items []kItem, topK int) []kItem {
	p := k.prob
	k.noteCaps(items)
	// Picked is kept by the items' index in Problem.Items: sorting below moves them.
	picked := append(k.picked[:0], make([]bool, len(p.Items))...)
	top := k.top[:0]
	take := func(it kItem) {
		picked[it.src] = true
		top = append(top, it)
		for _, c := range p.Items[it.src].Caps {
			k.capSeen[k.capIndex(c)].n++
		}
	}
	for i := range k.capSeen {
		if it := items[k.capSeen[i].best]; len(top) < topK && !picked[it.src] {
			take(it)
		}
	}
	sorted := min(len(items), 2*topK+8)
	selectFirst(items, sorted)
	slices.SortFunc(items[:sorted], byKey)
	for j := range items {
		if len(top) >= topK {
			break
		}
		if j == sorted {
			slices.SortFunc(items[sorted:], byKey)
		}
		it := items[j]
		full := picked[it.src]
		for _, c := range p.Items[it.src].Caps {
			full = full || k.capSeen[k.capIndex(c)].n > p.CapLimits[c]
		}
		if !full {
			take(it)
		}
	}
	k.top, k.picked = top, picked
	return append(items[:0], top...)
}

// noteCaps records in k.capSeen, for each cap the items name, its first item in sorted order
// and its most valuable item, and orders the caps as the sorted items name them first (an
// item's own caps in its own order).
func (k *loaded) noteCaps(items []kItem) {
	p := k.prob
	k.capSeen = k.capSeen[:0]
	for j := range items {
		it := &items[j]
		for at, c := range p.Items[it.src].Caps {
			cc := &k.capSeen[k.capIndex(c)]
			if cc.first < 0 || byKey(*it, items[cc.first]) < 0 {
				cc.first, cc.at = j, at
			}
			if b := cc.best; b < 0 || it.v > items[b].v || (it.v == items[b].v && byKey(*it, items[b]) < 0) {
				cc.best = j
			}
		}
	}
	slices.SortFunc(k.capSeen, func(x, y capCount) int {
		if x.first == y.first {
			return cmp.Compare(x.at, y.at)
		}
		return byKey(items[x.first], items[y.first])
	})
}

// capIndex returns cap c's entry in k.capSeen, adding an empty one the first time c is seen
// (a linear scan: an item names one or two caps, a problem a handful).
func (k *loaded) capIndex(c int) int {
	for i := range k.capSeen {
		if k.capSeen[i].c == c {
			return i
		}
	}
	k.capSeen = append(k.capSeen, capCount{c: c, best: -1, first: -1})
	return len(k.capSeen) - 1
}

// byKey orders items by value per size, greatest first, ties by ID: a total order.
func byKey(a, b kItem) int { return cmp.Or(cmp.Compare(b.key, a.key), cmp.Compare(a.g, b.g)) }

// selectFirst moves the first m items in byKey's order to items[:m], in some order: a
// quickselect, the pivot the median of three.
func selectFirst(items []kItem, m int) {
	lo, hi := 0, len(items)
	for m > lo && m < hi && hi-lo > 1 {
		mid, last := lo+(hi-lo)/2, hi-1
		if byKey(items[mid], items[lo]) < 0 {
			items[mid], items[lo] = items[lo], items[mid]
		}
		if byKey(items[last], items[lo]) < 0 {
			items[last], items[lo] = items[lo], items[last]
		}
		if byKey(items[last], items[mid]) < 0 {
			items[last], items[mid] = items[mid], items[last]
		}
		// The median is at mid: it goes last while the rest are split around it.
		items[mid], items[last] = items[last], items[mid]
		pivot, at := items[last], lo
		for j := lo; j < last; j++ {
			if byKey(items[j], pivot) < 0 {
				items[at], items[j] = items[j], items[at]
				at++
			}
		}
		items[at], items[last] = items[last], items[at]
		// items[lo:at] come before the pivot, now at at, and items[at+1:hi] after it.
		switch {
		case at == m || at+1 == m:
			return
		case at < m:
			lo = at + 1
		default:
			hi = at
		}
	}
}

type capCount struct {
	c     int   // the cap's index in Problem.CapLimits
	n     int64 // members picked
	best  int   // its most valuable member
	first int   // its first member in byKey's order
	at    int   // the cap's place in that member's Caps
}
