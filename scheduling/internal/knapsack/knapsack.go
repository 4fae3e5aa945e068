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

	prob   *Problem
	items  []kItem
	free   []int64
	cur    []pick
	best   []pick
	bestV  float64
	nodes  int
	budget int
	surr   []surrogate
	// caps shared by several items (anti-affinity families, hostname spread): the bounds
	// respect them, so a family of 25 groups allowed one pod per node bounds as one pod.
	caps     []int // the loaded items' shared caps, by their index in Problem.CapLimits
	itemCaps [][]int
	capLeft  []float64
	capUsed  []int64 // per cap, pods of the current partial pattern
	top      []kItem
	red      []capItem
	slot     []int // by cap index in Problem.CapLimits: its index in caps, or -1
	capSeen  []capCount
	picked   []bool
	dens     []float64 // scratch for addSurrogate
	// target: a pricing search (see search) looks only for patterns worth more; 0 in solve.
	target float64
}

type surrogate struct {
	mu    []float64 // weight per dimension
	order []int     // item indices by value per weight, best first
	w     []float64 // item weights
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
	n   int64
}

// Solve returns the most valuable set of items found within budget search nodes, its value,
// and an upper bound on the best value (equal to it when the search finished within its
// budget). With topK > 0 only the topK most promising items (best value per size, see
// selectItems) are loaded, and the bound is one on sets of those alone.
func (k *Solver) Solve(p *Problem, budget, topK int) ([]Pick, float64, float64) {
	k.target = 0
	k.prepare(p, topK)
	k.free = append(k.free[:0], p.Capacity...)
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
	k.free = append(k.free[:0], p.Capacity...)
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
	k.free = append(k.free[:0], p.Capacity...)
	k.buildSurrogates(false)
	return k.bound(0, 0)
}

// Refine returns an upper bound on the best value of p at more cost than Bound (the exact LP
// relaxation when it has at most ExactItems items, else a Lagrangian bound), and how many
// items (of value above 0) it has.
func (k *Solver) Refine(p *Problem) (float64, int) {
	k.load(p, 0)
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
	slices.SortFunc(k.items, func(a, b kItem) int { return cmp.Or(cmp.Compare(b.v, a.v), cmp.Compare(a.g, b.g)) })
	k.indexCaps()
	k.buildSurrogates(topK == 0)
}

// load loads the items (and their shared caps) without the surrogates, for the bounds.
func (k *Solver) load(p *Problem, topK int) {
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
	k.indexCaps()
}

// indexCaps numbers the shared caps of the loaded items, 0…len(k.caps)-1, and lists each
// item's.
func (k *Solver) indexCaps() {
	p := k.prob
	if len(k.slot) < len(p.CapLimits) {
		k.slot = make([]int, len(p.CapLimits))
		for i := range k.slot {
			k.slot[i] = -1
		}
	}
	k.caps = k.caps[:0]
	k.itemCaps = k.itemCaps[:0]
	for _, it := range k.items {
		var idx []int
		for _, c := range p.Items[it.src].Caps {
			i := k.slot[c]
			if i < 0 {
				i = len(k.caps)
				k.slot[c] = i
				k.caps = append(k.caps, c)
			}
			idx = append(idx, i)
		}
		k.itemCaps = append(k.itemCaps, idx)
	}
	for _, c := range k.caps {
		k.slot[c] = -1
	}
	k.capUsed = append(k.capUsed[:0], make([]int64, len(k.caps))...)
}

// selectItems keeps the topK most promising items: best value per unit of size first, but at
// most one more member of a shared cap than the cap admits on a node (25 anti-affine groups
// allowed one pod per node between them would otherwise fill the list with pods of which a
// pattern can use one), and for each cap its most valuable member as well.
func (k *Solver) selectItems(items []kItem, topK int) []kItem {
	p := k.prob
	slices.SortFunc(items, func(a, b kItem) int { return cmp.Or(cmp.Compare(b.key, a.key), cmp.Compare(a.g, b.g)) })
	k.capSeen = k.capSeen[:0]
	index := func(c int) int {
		for i := range k.capSeen {
			if k.capSeen[i].c == c {
				return i
			}
		}
		k.capSeen = append(k.capSeen, capCount{c: c, best: -1})
		return len(k.capSeen) - 1
	}
	for j, it := range items {
		for _, c := range p.Items[it.src].Caps {
			cc := &k.capSeen[index(c)]
			if cc.best < 0 || it.v > items[cc.best].v {
				cc.best = j
			}
		}
	}
	picked := append(k.picked[:0], make([]bool, len(items))...)
	top := k.top[:0]
	take := func(j int) {
		picked[j] = true
		top = append(top, items[j])
		for _, c := range p.Items[items[j].src].Caps {
			k.capSeen[index(c)].n++
		}
	}
	for i := range k.capSeen {
		if j := k.capSeen[i].best; len(top) < topK && !picked[j] {
			take(j)
		}
	}
	for j, it := range items {
		if len(top) >= topK {
			break
		}
		full := picked[j]
		for _, c := range p.Items[it.src].Caps {
			full = full || k.capSeen[index(c)].n > p.CapLimits[c]
		}
		if !full {
			take(j)
		}
	}
	k.top, k.picked = top, picked
	return append(items[:0], top...)
}

type capCount struct {
	c    int   // the cap's index in Problem.CapLimits
	n    int64 // members picked
	best int   // its most valuable member
}

// relaxedBound is a valid upper bound on the knapsack: the exact LP relaxation when the problem
// is small, else the Lagrangian dual bound.
func (k *Solver) relaxedBound() float64 {
	alloc := k.prob.Capacity
	if len(k.items) <= ExactItems {
		return k.lpBound(alloc)
	}
	return k.lagrangeBound(alloc)
}

// lagrangeBound prices every resource (and every shared cap) with multipliers μ and bounds the
// knapsack by L(μ) = Σ_j maxk_j·max(0, v_j − μ·a_j − Σ λ_c) + μ·capacity + Σ λ_c·limit_c, which is
// at least the LP optimum for any μ, λ ≥ 0 (weak duality). Coordinate descent, each coordinate
// minimised exactly (the function is convex and piecewise linear in it), makes it tight.
func (k *Solver) lagrangeBound(alloc []int64) float64 {
	l := k.newLagrangian(alloc)
	best := l.eval()
	l.descend(func() { best = min(best, l.eval()) })
	return best * (1 + 1e-9)
}

// lagrangeRounds is how many passes over the multipliers the coordinate descent makes.
const lagrangeRounds = 4

// descend runs the coordinate descent on μ: lagrangeRounds passes, each coordinate set in turn
// to the value minimising L; after (when not nil) runs after every step.
func (l *lagrangian) descend(after func()) {
	for range lagrangeRounds {
		for c := range l.mu {
			l.mu[c] = l.minimise(c)
			if after != nil {
				after()
			}
		}
	}
}

// lagrangian is L(μ) for lagrangeBound: one coordinate per resource, then one per shared cap.
type lagrangian struct {
	items   []kItem
	limit   []float64 // per coordinate: the capacity or the cap's limit
	coefs   []float64 // item j's use of coordinate c at j*len(limit)+c
	mu      []float64
	reduced []float64 // per item, its value less μ times its use, as of the last eval
	pts     []breakpoint
}

type breakpoint struct{ t, w float64 }

func (k *Solver) newLagrangian(alloc []int64) *lagrangian {
	p := k.prob
	nd := len(alloc)
	n := nd + len(k.caps)
	l := &lagrangian{items: k.items, limit: make([]float64, n), coefs: make([]float64, len(k.items)*n),
		mu: make([]float64, n), reduced: make([]float64, len(k.items))}
	for c := range l.limit {
		if c < nd {
			l.limit[c] = float64(max(alloc[c], 0))
		} else {
			l.limit[c] = float64(max(p.CapLimits[k.caps[c-nd]], 0))
		}
	}
	for j, it := range k.items {
		for d := 0; d < nd; d++ {
			l.coefs[j*n+d] = float64(p.Items[it.src].Req[d])
		}
		for _, ci := range k.itemCaps[j] {
			l.coefs[j*n+nd+ci] = 1
		}
	}
	return l
}

func (l *lagrangian) coef(j, c int) float64 { return l.coefs[j*len(l.limit)+c] }

// eval returns L(μ) and leaves each item's reduced value in l.reduced.
func (l *lagrangian) eval() float64 {
	total := 0.0
	for c := range l.mu {
		total += l.mu[c] * l.limit[c]
	}
	for j, it := range l.items {
		r := it.v
		for c := range l.mu {
			if l.mu[c] != 0 {
				r -= l.mu[c] * l.coef(j, c)
			}
		}
		l.reduced[j] = r
		if r > 0 {
			total += float64(it.maxk) * r
		}
	}
	return total
}

// minimise returns the μ_c minimising L with the other coordinates fixed:
// f(t) = t·limit + Σ maxk_j·max(0, r_j − (t−μ_c)·a_jc), with r_j the reduced values at the
// current μ, is least where the weight of the items still positive drops to the limit.
func (l *lagrangian) minimise(c int) float64 {
	l.pts = l.pts[:0]
	l.eval()
	for j, it := range l.items {
		a := l.coef(j, c)
		if a <= 0 || l.reduced[j]+l.mu[c]*a <= 0 {
			continue
		}
		l.pts = append(l.pts, breakpoint{t: (l.reduced[j] + l.mu[c]*a) / a, w: float64(it.maxk) * a})
	}
	slices.SortFunc(l.pts, func(x, y breakpoint) int { return cmp.Compare(y.t, x.t) })
	acc := 0.0
	for _, q := range l.pts {
		acc += q.w
		if acc > l.limit[c] {
			return q.t
		}
	}
	return 0
}

// lpBound is the exact fractional relaxation of the knapsack (every resource, every count cap),
// for when the search ran out of budget: on big nodes it is nearly the integer optimum.
func (k *Solver) lpBound(alloc []int64) float64 {
	n := len(k.items)
	if n == 0 || n > 64 {
		return math.Inf(1)
	}
	var a [][]float64
	var b []float64
	for d, c := range alloc {
		row := make([]float64, n)
		used := false
		for j, it := range k.items {
			row[j] = float64(k.prob.Items[it.src].Req[d])
			used = used || row[j] > 0
		}
		if used {
			// Scale rows to capacity 1 so milli-byte memory and pod counts stay comparable.
			for j := range row {
				row[j] /= float64(max(c, 1))
			}
			a = append(a, row)
			b = append(b, float64(max(c, 0))/float64(max(c, 1)))
		}
	}
	c := make([]float64, n)
	for j, it := range k.items {
		c[j] = it.v
		row := make([]float64, n)
		row[j] = 1
		a = append(a, row)
		b = append(b, float64(it.maxk))
	}
	for ci, cp := range k.caps {
		row := make([]float64, n)
		for j := range k.items {
			if slices.Contains(k.itemCaps[j], ci) {
				row[j] = 1
			}
		}
		a = append(a, row)
		b = append(b, float64(max(k.prob.CapLimits[cp], 0)))
	}
	return lpMax(c, a, b) * (1 + 1e-9)
}

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

// bound returns value plus the most items i… could still add, by the tightest surrogate.
func (k *Solver) bound(i int, value float64) float64 {
	best := math.Inf(1)
	for si := range k.surr {
		best = min(best, k.boundWith(&k.surr[si], i))
	}
	if math.IsInf(best, 1) {
		best = 0
		for _, it := range k.items[i:] {
			best += it.v * float64(it.maxk)
		}
	}
	return value + best
}

// prunes reports whether items i… cannot lift value above best: the first surrogate whose
// bound shows it settles it (the tightest at the root come first).
//
// Without shared caps each surrogate's bound is a greedy fill, which stops as soon as it
// passes best (it only grows from there): the answer is the full bound's, found sooner.
func (k *Solver) prunes(i int, value, best float64) bool {
	if len(k.surr) == 0 {
		return k.bound(i, value) <= best
	}
	if len(k.caps) == 0 {
		for si := range k.surr {
			if !k.fillPasses(&k.surr[si], i, value, best) {
				return true
			}
		}
		return false
	}
	for si := range k.surr {
		if value+k.boundWith(&k.surr[si], i) <= best {
			return true
		}
	}
	return false
}

// fillPasses reports whether value plus boundWith's greedy fill of items i… under sg passes
// best; for items without shared caps only.
func (k *Solver) fillPasses(sg *surrogate, i int, value, best float64) bool {
	room := 0.0
	for d, m := range sg.mu {
		if m > 0 {
			room += m * float64(k.free[d])
		}
	}
	left, add := room, 0.0
	for _, j := range sg.order {
		if j < i {
			continue
		}
		if value+add > best {
			return true
		}
		it := &k.items[j]
		limit := float64(it.maxk)
		if sg.w[j] <= 0 {
			add += it.v * limit
			continue
		}
		if left <= 0 {
			break
		}
		take := min(limit, left/sg.w[j])
		add += take * it.v
		left -= take * sg.w[j]
	}
	return value+add > best
}

// boundWith bounds what items i… can still add under one surrogate constraint (Σ w_j·x_j ≤ room,
// x_j ≤ maxk_j) and the shared caps (Σ_{j∈C} x_j ≤ capLeft_C).
//
// Without caps the greedy fractional fill by value per weight is the exact LP optimum. With
// caps a greedy fill is not a bound (a light, dense member can use up a cap that a heavier,
// more valuable member would have put to better use), so the greedy only finds the critical
// density λ, where the room runs out, and the bound is the Lagrangian
//
//	L(λ) = λ·room + Σ_free maxk_j·(v_j − λ·w_j)⁺ + Σ_C best capLeft_C units of (v_j − λ·w_j)⁺ in C,
//
// which is at least the LP optimum for every λ ≥ 0 (weak duality) and equals the greedy fill
// when no cap binds. An item under several caps counts against its first only: a relaxation.
func (k *Solver) boundWith(sg *surrogate, i int) float64 {
	k.capLeft = k.capLeft[:0]
	for ci, c := range k.caps {
		k.capLeft = append(k.capLeft, float64(max(k.prob.CapLimits[c]-k.capUsed[ci], 0)))
	}
	room := 0.0
	for d, m := range sg.mu {
		if m > 0 {
			room += m * float64(k.free[d])
		}
	}
	add, lambda, capped := k.greedyFill(sg, i, room)
	if !capped {
		return add
	}
	return k.cappedBound(sg, i, room, lambda)
}

// greedyFill fills room with items i… by value per surrogate weight, caps ignored: it returns
// the value added, the critical density λ where the room ran out, and whether any item
// visited has a shared cap (then the value is not a bound).
func (k *Solver) greedyFill(sg *surrogate, i int, room float64) (add, lambda float64, capped bool) {
	left := room
	for _, j := range sg.order {
		if j < i {
			continue
		}
		it := &k.items[j]
		if len(k.itemCaps[j]) > 0 {
			capped = true
		}
		limit := float64(it.maxk)
		if sg.w[j] <= 0 {
			add += it.v * limit
			continue
		}
		if left <= 0 {
			lambda = it.v / sg.w[j]
			break
		}
		take := min(limit, left/sg.w[j])
		add += take * it.v
		left -= take * sg.w[j]
		if left <= 0 {
			lambda = it.v / sg.w[j]
		}
	}
	return add, lambda, capped
}

// cappedBound is boundWith's Lagrangian at density lambda, with k.capLeft the room each
// shared cap has left.
func (k *Solver) cappedBound(sg *surrogate, i int, room, lambda float64) float64 {
	total := lambda * max(room, 0)
	// Reduced values of the capped items, gathered per (first) cap.
	k.red = k.red[:0]
	for j := i; j < len(k.items); j++ {
		it := &k.items[j]
		r := it.v - lambda*sg.w[j]
		if r <= 0 {
			continue
		}
		if len(k.itemCaps[j]) == 0 {
			total += r * float64(it.maxk)
			continue
		}
		k.red = append(k.red, capItem{c: k.itemCaps[j][0], r: r, n: float64(it.maxk)})
	}
	// Each cap takes its best units first: repeatedly the most valuable member left (caps are
	// usually one pod per node, so this is one pass).
	for {
		bi := -1
		for xi := range k.red {
			x := &k.red[xi]
			if x.n > 0 && k.capLeft[x.c] > 0 && (bi < 0 || x.r > k.red[bi].r) {
				bi = xi
			}
		}
		if bi < 0 {
			return total
		}
		x := &k.red[bi]
		take := min(x.n, k.capLeft[x.c])
		total += take * x.r
		k.capLeft[x.c] -= take
		x.n = 0
	}
}

// capItem is a capped item's reduced value r and count limit n under cap c, for boundWith.
type capItem struct {
	c    int
	r, n float64
}

// dfs explores items i… with the current value; it reports true when the node budget ran out.
func (k *Solver) dfs(i int, value float64) bool {
	k.nodes++
	if value > k.bestV+1e-15 {
		k.bestV = value
		k.best = append(k.best[:0], k.cur...)
	}
	if i == len(k.items) || k.prunes(i, value, max(k.bestV*(1+1e-12), k.target)) {
		return false
	}
	if k.nodes > k.budget {
		return true
	}
	it := k.items[i]
	req := k.prob.Items[it.src].Req
	kmax := MaxCopies(req, k.free, min(it.maxk, k.room(i)))
	if kmax > 0 && !k.canJoin(it.src) {
		kmax = 0
	}
	// The last item adds value and nothing after it needs its room: fewer copies than fit are
	// never better.
	low := int64(0)
	if i == len(k.items)-1 {
		low = kmax
	}
	for c := kmax; c >= low; c-- {
		if c > 0 {
			k.push(i, c)
		}
		out := k.dfs(i+1, value+float64(c)*it.v)
		if c > 0 {
			k.pop(i, c)
		}
		if out {
			return true
		}
	}
	return false
}

// seedGreedy starts the search from the best of the greedy fills, one per surrogate: items
// by value per surrogate weight, as many copies of each as still fit (caps and conflicts
// kept). The depth-first search takes the items most valuable first, and on big nodes with
// many copies per item its first dive can be far from the best; its budget then goes to the
// last items' counts, where little changes. A good set found first prunes from the start.
func (k *Solver) seedGreedy() {
	if !k.Tight {
		return
	}
	for si := range k.surr {
		sg := &k.surr[si]
		value := 0.0
		for _, j := range sg.order {
			it := &k.items[j]
			c := MaxCopies(k.prob.Items[it.src].Req, k.free, min(it.maxk, k.room(j)))
			if c <= 0 || !k.canJoin(it.src) {
				continue
			}
			k.push(j, c)
			value += float64(c) * it.v
		}
		if value > k.bestV+1e-15 {
			k.bestV = value
			k.best = append(k.best[:0], k.cur...)
		}
		// Back to the empty set the search starts from: the whole node free, no cap used.
		k.free = append(k.free[:0], k.prob.Capacity...)
		k.cur = k.cur[:0]
		clear(k.capUsed)
	}
	k.Work += len(k.surr) * len(k.items) * 4
}

// push adds c copies of loaded item i to the partial set: their room taken, their caps used.
func (k *Solver) push(i int, c int64) {
	it := k.items[i]
	addScaled(k.free, k.prob.Items[it.src].Req, -c)
	k.cur = append(k.cur, pick{src: it.src, n: c})
	for _, ci := range k.itemCaps[i] {
		k.capUsed[ci] += c
	}
}

// pop undoes push(i, c), which must be the last push still in the partial set.
func (k *Solver) pop(i int, c int64) {
	addScaled(k.free, k.prob.Items[k.items[i].src].Req, c)
	k.cur = k.cur[:len(k.cur)-1]
	for _, ci := range k.itemCaps[i] {
		k.capUsed[ci] -= c
	}
}

// room is how many copies of loaded item i its shared caps still admit beside the partial
// set (its own per-node cap is in its Max).
func (k *Solver) room(i int) int64 {
	r := int64(math.MaxInt64)
	for _, ci := range k.itemCaps[i] {
		r = min(r, k.prob.CapLimits[k.caps[ci]]-k.capUsed[ci])
	}
	return max(r, 0)
}

// canJoin reports whether item src may join the items of the partial set.
func (k *Solver) canJoin(src int) bool {
	if k.prob.Conflict == nil {
		return true
	}
	for _, x := range k.cur {
		if x.src != src && k.prob.Conflict(src, x.src) {
			return false
		}
	}
	return true
}

// MaxCopies returns how many copies of req fit into free (capped at limit).
func MaxCopies(req, free []int64, limit int64) int64 {
	n := limit
	for d, r := range req {
		if r <= 0 {
			if free[d] < 0 {
				return 0
			}
			continue
		}
		n = min(n, free[d]/r)
		if n <= 0 {
			return 0
		}
	}
	return n
}

// addScaled adds c copies of req to v.
func addScaled(v, req []int64, c int64) {
	for d, r := range req {
		v[d] += c * r
	}
}
