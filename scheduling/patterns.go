package scheduling

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

// This file is the heart of the packer: the configuration LP (Gilmore–Gomory) solved by column
// generation, whose columns are whole-node patterns — "3 web pods and 2 cache pods on an
// m7g.xlarge in us-east-1a, spot" — and whose solution is rounded into nodes.
//
//	minimise   Σ_c price_c·λ_c
//	subject to Σ_c count_cg·λ_c ≥ n_g   for every group g
//
// Its dual values v_g price one pod of each group. Pricing asks, for every shape and offering,
// for the most valuable whole pattern at those values (an integer knapsack over cpu, memory, pods
// and every other resource, solved exactly by branch and bound); a pattern worth more than its
// node's price enters the basis. The LP optimum is a lower bound on every plan, and at any
// iteration Σ n_g·v_g/θ is one too, where θ ≥ 1 is the largest worth/price ratio pricing found
// (Farley): so the bound stays valid when the iteration budget stops the search early.
//
// The LP solution buys λ_c nodes of pattern c; ⌊λ_c⌋ of each are real nodes, and the few pods
// left over are packed greedily at the same pod values. Because the optimum of the
// configuration LP is known to be within about one node of the integer optimum for
// bin-packing-like problems, the rounded plan is close to optimal, and it is found in time that
// depends on the number of distinct pod shapes, not on the number of pods.

// pattern is a whole node: a shape bought through one offering, and the pods on it.
type pattern struct {
	s      *shape
	o      int // offering index
	placed []placement
	value  float64
}

// lpShapeRef is a column family of the LP: a shape and an offering, with the rows (groups) that
// accept that offering on that shape.
type colFamily struct {
	s     *shape
	o     int
	price float64
	items []famItem
	all   []famItem // while building: every item of the shape, whatever the offering
}

type famItem struct {
	row  int
	g    int
	e    fitEntry
	maxk int64   // most pods of the group one node of the family holds (resources and caps)
	size float64 // the pod's size: Σ request/capacity over the shape's resources
}

// newFamItem describes group g on shape s for a pricing problem with these counts; ok is false
// when not one pod fits.
func (p *problem) newFamItem(s *shape, row, g int, e fitEntry, counts []int64) (famItem, bool) {
	gr := p.groups[g]
	mk := maxCopies(gr.req, s.alloc, perNodeCap(gr, counts[g]))
	if mk <= 0 {
		return famItem{}, false
	}
	size := 0.0
	for d, c := range s.alloc {
		if c > 0 {
			size += float64(gr.req[d]) / float64(c)
		}
	}
	return famItem{row: row, g: g, e: e, maxk: mk, size: max(size, 1e-12)}, true
}

// cgResult is what column generation returns.
type cgResult struct {
	lb     float64
	values []float64 // per group id, v_g/θ
	// basis holds the LP solution: patterns and how many nodes of each.
	basis  []pattern
	lambda []float64
}

// The work of one column generation is bounded by a budget (after cgMinIterations rounds) in units of roughly one item looked
// at by a bound or a search (a few nanoseconds each): cgWorkPerPod per pod at stake, between
// cgWorkMin and cgWorkMax, times Options.Effort. The budget only limits how tight the bound and
// how good the pod values get, never the bound's validity; it is a count, not a clock, so the
// same input gives the same plan on any machine.
//
// Where every group may share a node with every other, the LP converges long before the budget
// runs out. Where per-node caps abound (hostname spread and anti-affinity, one pod per node),
// the LP is highly degenerate and converges slowly; the budget then decides, and the local
// search makes up much of the difference.
const (
	cgWorkPerPod = 1000
	cgWorkMin    = 3_000_000
	cgWorkMax    = 20_000_000
	cgIterations = 5000 // a safety net; the work budget binds first
	// cgMinIterations pricing rounds run whatever the budget: a small LP whose pricing is
	// costly (few groups, large nodes) converges in about this many.
	cgMinIterations = 25
	knapsackNode    = 4000
	knapsackQuick   = 1000
	// bothBounds is the most rows for which an unconverged LP's bound is proved at both the
	// final and the average duals.
	bothBounds = 100
	// cgColumns is how many improving columns a pricing round enters at most.
	cgColumns = 4
	// pricingItems is how many groups a pricing search considers per family; exactItems the
	// most a family may have for the final bound to search it exactly (else the Lagrangian
	// bound stands).
	pricingItems = 16
	exactItems   = 24
)

// cgBudget is the work budget for placing pods pods (see above).
func (p *problem) cgBudget(pods int64) int {
	effort := p.in.Options.Effort
	if effort <= 0 {
		effort = 1
	}
	w := min(max(float64(pods)*cgWorkPerPod, cgWorkMin), cgWorkMax)
	return int(w * effort)
}

// columnGeneration solves the configuration LP for the groups with counts > 0 over the given
// shapes. When integer is false, pricing is fractional (a weaker bound that treats pods as
// divisible), used where patterns are not needed.
func (p *problem) columnGeneration(counts []int64, shapes []*shape) cgResult {
	proveBound := !p.in.Options.SkipLowerBound && !p.noProof
	res := cgResult{values: make([]float64, len(p.groups))}
	rowOf := make([]int, len(p.groups))
	var rows []int
	for _, g := range p.groups {
		rowOf[g.id] = -1
	}
	var fams []colFamily
	for _, s := range shapes {
		if s.dominated {
			continue // another shape's families dominate its families
		}
		// One family per offering some group accepts: a node mixing groups must be bought
		// through an offering all of them accept, which need not be any one's cheapest.
		var seen uint64
		var items []famItem
		for _, f := range p.byShape[s.idx] {
			if counts[f.g] <= 0 {
				continue
			}
			if rowOf[f.g] < 0 {
				rowOf[f.g] = len(rows)
				rows = append(rows, f.g)
			}
			if it, ok := p.newFamItem(s, rowOf[f.g], f.g, f, counts); ok {
				items = append(items, it)
				seen |= f.mask
			}
		}
		for m := seen; m != 0; m &= m - 1 {
			o := bits.TrailingZeros64(m)
			fams = append(fams, colFamily{s: s, o: o, price: s.offerings[o].Price, all: items})
		}
	}
	n := len(rows)
	if n == 0 {
		return res
	}
	// Most families are dominated: drop them before building their item lists.
	fams = dropDominated(fams, n)
	for i := range fams {
		f := &fams[i]
		bit := uint64(1) << uint(f.o)
		k := 0
		for _, it := range f.all {
			if it.e.mask&bit != 0 {
				k++
			}
		}
		f.items = make([]famItem, 0, k)
		for _, it := range f.all {
			if it.e.mask&bit != 0 {
				f.items = append(f.items, it)
			}
		}
		f.all = nil
	}
	need := make([]float64, n)
	for r, g := range rows {
		need[r] = float64(counts[g])
	}
	// Pure patterns: each group alone, as many as fit, on the family where that is cheapest
	// per pod.
	pure := make([][]float64, n)
	pureCost := make([]float64, n)
	purePat := make([]pattern, n)
	for _, f := range fams {
		for _, it := range f.items {
			k := it.maxk
			if pure[it.row] == nil || f.price/float64(k) < pureCost[it.row]/pure[it.row][it.row]-1e-15 {
				col := make([]float64, n)
				col[it.row] = float64(k)
				pure[it.row], pureCost[it.row] = col, f.price
				purePat[it.row] = pattern{s: f.s, o: f.o, placed: []placement{{g: it.g, k: k}}}
			}
		}
	}
	// The master's right-hand side is perturbed a little, differently per row: with whole pod
	// counts many basic variables sit at zero together, and degenerate pivots can cycle
	// without end (seen on a 10-row problem with per-node caps). The bound below uses the true
	// counts.
	perturbed := make([]float64, n)
	for r := range need {
		perturbed[r] = need[r] + 1e-6*float64(r+1)/float64(n)
	}
	m := newMaster(perturbed, pure, pureCost)
	pats := slices.Clone(purePat)
	v := make([]float64, n)
	vp := make([]float64, n)
	ks := &intKnapsack{p: p}
	order := make([]int, len(fams))
	bound := make([]float64, len(fams))
	const tol = 1e-7
	var ratio []float64
	quickOrder := func() {
		ratio = p.unitValues(ratio, rows, vp)
		for i := range fams {
			order[i] = i
			bound[i] = ks.upperBound(&fams[i], vp, ratio) / fams[i].price
			ks.work += len(fams[i].items)
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Or(cmp.Compare(bound[b], bound[a]), cmp.Compare(a, b)) })
	}
	duals := func() int {
		m.duals(v)
		neg := -1
		for i, x := range v {
			vp[i] = max(x, 0)
			if x < -1e-9 && neg < 0 {
				neg = i
			}
		}
		return neg
	}
	last := make([]pattern, len(fams))
	vsum, nsum := make([]float64, n), 0
	pooled := func(last []pattern, vp []float64) []pattern {
		type cand struct {
			i int
			r float64
		}
		var cs []cand
		for i := range last {
			pat := &last[i]
			if pat.s == nil {
				continue
			}
			val := 0.0
			for _, x := range pat.placed {
				val += vp[rowOf[x.g]] * float64(x.k)
			}
			ks.work += len(pat.placed)
			if r := val / fams[i].price; r > 1+tol {
				cs = append(cs, cand{i, r})
			}
		}
		slices.SortFunc(cs, func(a, b cand) int { return cmp.Or(cmp.Compare(b.r, a.r), cmp.Compare(a.i, b.i)) })
		var out []pattern
		for _, c := range cs[:min(len(cs), cgColumns)] {
			out = append(out, last[c.i])
		}
		return out
	}
	budget := p.cgBudget(int64(sum(counts)))
	converged := false
	surplus := 0
	for iter := 0; iter < cgIterations && (iter < cgMinIterations || ks.work < budget); iter++ {
		if neg := duals(); neg >= 0 {
			col := make([]float64, n)
			col[neg] = -1
			ks.work += n * n / 4
			// A surplus pivot is not a pricing round: it does not count as one, but its work
			// counts, and there are at most as many as the iteration cap (no cycling).
			if surplus < cgIterations && m.enter(col, 0, true, -1) {
				surplus++
				iter--
				continue
			}
		}
		// The column pool first: the best pattern each family's last search found, valued
		// again at the new duals. Cheap, and late in the search it finds most columns.
		found := pooled(last, vp)
		if len(found) > 0 {
			goto enter
		}
		// Then price with a small search budget, most promising families first, and take a
		// few improving columns at once; the final bound below is computed with full effort.
		quickOrder()
		for _, i := range order {
			if bound[i] <= 1+tol || len(found) >= cgColumns {
				break
			}
			f := &fams[i]
			pat, val, _ := ks.solve(f, vp, counts, knapsackQuick, pricingItems)
			last[i] = pat
			if val/f.price > 1+tol {
				found = append(found, pat)
			}
		}
		if len(found) == 0 && n <= bothBounds {
			// Nothing at the quick effort: before calling the LP solved, a small one gets a
			// round at full effort (every item, the larger search budget).
			for _, i := range order {
				if bound[i] <= 1+tol || len(found) >= cgColumns {
					break
				}
				f := &fams[i]
				pat, val, _ := ks.solve(f, vp, counts, knapsackNode, 0)
				if val/f.price > 1+tol {
					last[i] = pat
					found = append(found, pat)
				}
			}
		}
	enter:
		for i, x := range vp {
			vsum[i] += x
		}
		nsum++
		entered := false
		for _, pat := range found {
			col := make([]float64, n)
			reduced := pat.s.offerings[pat.o].Price
			for _, x := range pat.placed {
				col[rowOf[x.g]] = float64(x.k)
				reduced -= v[rowOf[x.g]] * float64(x.k)
			}
			if reduced >= -tol*pat.s.offerings[pat.o].Price {
				continue // an earlier column this round already made it unattractive
			}
			ks.work += n * n / 4
			if m.enter(col, pat.s.offerings[pat.o].Price, false, len(pats)) {
				pats = append(pats, pat)
				entered = true
				duals()
			}
		}
		if !entered {
			converged = true
			break
		}
	}
	// The bound: θ is the largest worth/price ratio any whole pattern can reach at the final
	// values. The cheap bound rules out most families; the fractional LP bounds the rest, and an
	// exact search settles the ones whose LP bound still exceeds the price.
	duals()
	// θ at duals w: the largest worth/price ratio any whole pattern can reach.
	thetaAt := func(w []float64) float64 {
		copy(vp, w)
		quickOrder()
		// Start from the best ratio a known pattern reaches at w (θ is at least that): every
		// family whose bound does not exceed it is settled without a search.
		theta := 1.0
		for i := range last {
			if pat := &last[i]; pat.s != nil {
				val := 0.0
				for _, x := range pat.placed {
					val += w[rowOf[x.g]] * float64(x.k)
				}
				theta = max(theta, val/fams[i].price)
			}
		}
		for _, i := range order {
			if bound[i] <= theta {
				break
			}
			f := &fams[i]
			ks.load(f, vp, counts, 0)
			// The surrogate fills first (cheap, valid), the Lagrangian or LP bound if they do
			// not settle it, an exact search if that does not either.
			ks.free = append(ks.free[:0], f.s.alloc...)
			ks.buildSurrogates(f.s.alloc, false)
			upper := min(bound[i]*f.price, ks.bound(0, 0))
			if upper/f.price <= theta {
				continue
			}
			upper = min(upper, ks.relaxedBound(f.s.alloc))
			if upper/f.price > theta && len(ks.items) <= exactItems {
				_, _, exact := ks.solve(f, vp, counts, knapsackNode, 0)
				upper = min(upper, exact)
			}
			theta = max(theta, upper/f.price)
		}
		if theta < 1+1e-9 {
			theta = 1 // converged: rounding noise must not rescale the values
		}
		return theta
	}
	lbAt := func(w []float64, theta float64) float64 {
		t := 0.0
		for i := range w {
			t += need[i] * w[i]
		}
		return t / theta
	}
	duals()
	final := slices.Clone(vp)
	bestV, bestTheta := final, 1.0
	// Converged, the final duals are optimal. Stopped by the budget, they are not, and in a
	// degenerate LP they swing from one iteration to the next: their average over the
	// iterations prove a much better bound (on Karpenter's benchmark mix, two to five times
	// the final duals' bound), and value the pods more evenly.
	var avg []float64
	if !converged && nsum > 0 {
		avg = make([]float64, n)
		for i := range avg {
			avg[i] = vsum[i] / float64(nsum)
		}
	}
	switch {
	case proveBound && avg != nil && n <= bothBounds:
		// Few rows: proving the bound twice is cheap; keep whichever duals prove more.
		bestTheta = thetaAt(bestV)
		lb := lbAt(bestV, bestTheta)
		if th := thetaAt(avg); lbAt(avg, th) > lb {
			bestV, bestTheta, lb = avg, th, lbAt(avg, th)
		}
		res.lb = max(lb, 0)
	case proveBound:
		if avg != nil {
			bestV = avg
		}
		bestTheta = thetaAt(bestV)
		res.lb = max(lbAt(bestV, bestTheta), 0)
	case avg != nil:
		bestV = avg
	}
	for r, g := range rows {
		res.values[g] = bestV[r] / bestTheta
	}
	// The basis: which patterns, how many of each.
	for i := range m.cols {
		if m.surp[i] || m.xb[i] <= 1e-9 {
			continue
		}
		pat, ok := m.pattern(i, pats)
		if !ok {
			continue
		}
		res.basis = append(res.basis, pat)
		res.lambda = append(res.lambda, m.xb[i])
	}
	return res
}

// intKnapsack finds the most valuable whole pattern for a column family: an integer knapsack
// over every resource, with per-node caps and conflicts, by depth-first branch and bound.
//
// Its bound at a search node is a surrogate relaxation: the resource constraints are combined
// into one (with weights 1/capacity on one dimension, or on all of them), and the fractional
// one-dimensional knapsack on that constraint, filled greedily by value per weight with each
// item's count cap, bounds what the node's subtree can still add. Any non-negative weights give
// a valid bound; the smallest over a few weightings is used.
type intKnapsack struct {
	p      *problem
	items  []kItem
	free   vec
	cur    []placement
	best   []placement
	bestV  float64
	nodes  int
	budget int
	surr   []surrogate
	// caps shared by several items (anti-affinity families, hostname spread): the bounds
	// respect them, so a family of 25 groups allowed one pod per node bounds as one pod.
	work     int // search nodes spent, across calls
	caps     []*nodeCap
	itemCaps [][]int
	capLeft  []float64
	capUsed  []int64 // per cap, pods of the current partial pattern
	best0    []float64
	top      []kItem
	red      []capItem
	slot     []int // by nodeCap.idx: its index in caps, or -1
	capSeen  []capCount
	picked   []bool
}

type surrogate struct {
	mu    []float64 // weight per dimension
	order []int     // item indices by value per weight, best first
	w     []float64 // item weights
}

type kItem struct {
	g    int
	e    fitEntry
	v    float64
	maxk int64
	key  float64 // value per unit of size, to keep the most promising items
}

// upperBound is a cheap bound on the family's best pattern value: per resource, the capacity
// times the best value per unit (ratio, from unitValues); and the sum of everything that could
// fit. It runs for every family at every iteration, so it reads only precomputed numbers.
func (k *intKnapsack) upperBound(f *colFamily, v, ratio []float64) float64 {
	nd := len(f.s.alloc)
	best := k.scratch(nd)
	total := 0.0
	for _, it := range f.items {
		if v[it.row] <= 0 {
			continue
		}
		total += v[it.row] * float64(it.maxk)
		r := ratio[it.row*nd : it.row*nd+nd]
		for d, x := range r {
			best[d] = max(best[d], x)
		}
	}
	ub := total
	for d, b := range best {
		if !math.IsInf(b, 1) {
			ub = min(ub, float64(f.s.alloc[d])*b)
		}
	}
	return ub
}

func (k *intKnapsack) scratch(n int) []float64 {
	k.best0 = append(k.best0[:0], make([]float64, n)...)
	return k.best0
}

// unitValues fills ratio with every row's value per unit of each resource (+Inf where the pod
// needs none of it: that resource then bounds nothing), for upperBound.
func (p *problem) unitValues(ratio []float64, rows []int, v []float64) []float64 {
	nd := len(p.dims.names)
	ratio = append(ratio[:0], make([]float64, len(rows)*nd)...)
	for r, g := range rows {
		if v[r] <= 0 {
			continue
		}
		req := p.groups[g].req
		for d := 0; d < nd; d++ {
			if req[d] > 0 {
				ratio[r*nd+d] = v[r] / float64(req[d])
			} else {
				ratio[r*nd+d] = math.Inf(1)
			}
		}
	}
	return ratio
}

// solve returns the best pattern found, its value, and an upper bound on the best value (equal
// to it when the search finished within its budget).
func (k *intKnapsack) solve(f *colFamily, v []float64, counts []int64, budget, topK int) (pattern, float64, float64) {
	k.prepare(f, v, counts, topK)
	k.free = append(k.free[:0], f.s.alloc...)
	k.cur, k.best, k.bestV, k.nodes, k.budget = k.cur[:0], k.best[:0], 0, 0, budget
	root := k.bound(0, 0)
	exhausted := k.dfs(f.s, 0, 0)
	pat := pattern{s: f.s, o: f.o, placed: slices.Clone(k.best), value: k.bestV}
	upper := k.bestV
	k.work += k.nodes*max(1, len(k.items)*len(k.surr)) + len(f.items)*8 + len(k.surr)*len(k.items)*4
	if exhausted || topK > 0 {
		upper = max(upper, min(root, k.relaxedBound(f.s.alloc)))
	}
	return pat, k.bestV, upper
}

// prepare loads a family's items at values v, and the surrogate weightings for its bounds.
// With topK > 0 only the topK items of best value per unit of (normalised) size are loaded:
// a pattern rarely mixes more than a handful of groups, and pricing only needs a good column,
// not the best one.
func (k *intKnapsack) prepare(f *colFamily, v []float64, counts []int64, topK int) {
	k.load(f, v, counts, topK)
	// The search takes the items most valuable first.
	// (Every comparison here breaks ties by group, a total order: pdqsort is then as
	// deterministic as a stable sort, and faster.)
	slices.SortFunc(k.items, func(a, b kItem) int { return cmp.Or(cmp.Compare(b.v, a.v), cmp.Compare(a.g, b.g)) })
	k.indexCaps()
	k.buildSurrogates(f.s.alloc, topK == 0)
}

// load loads the items (and their shared caps) without the surrogates, for the LP bounds.
func (k *intKnapsack) load(f *colFamily, v []float64, counts []int64, topK int) {
	k.items = k.items[:0]
	for _, it := range f.items {
		if v[it.row] <= 0 {
			continue
		}
		k.items = append(k.items, kItem{g: it.g, e: it.e, v: v[it.row], maxk: it.maxk, key: v[it.row] / it.size})
	}
	if topK > 0 && len(k.items) > topK {
		k.items = k.selectItems(k.items, topK)
	}
	k.indexCaps()
}

// indexCaps numbers the shared caps of the loaded items, 0…len(k.caps)-1, and lists each
// item's.
func (k *intKnapsack) indexCaps() {
	p := k.p
	if len(k.slot) < p.ncaps {
		k.slot = make([]int, p.ncaps)
		for i := range k.slot {
			k.slot[i] = -1
		}
	}
	k.caps = k.caps[:0]
	k.itemCaps = k.itemCaps[:0]
	for _, it := range k.items {
		var idx []int
		for _, c := range p.groups[it.g].caps {
			i := k.slot[c.idx]
			if i < 0 {
				i = len(k.caps)
				k.slot[c.idx] = i
				k.caps = append(k.caps, c)
			}
			idx = append(idx, i)
		}
		k.itemCaps = append(k.itemCaps, idx)
	}
	for _, c := range k.caps {
		k.slot[c.idx] = -1
	}
	k.capUsed = append(k.capUsed[:0], make([]int64, len(k.caps))...)
}

// selectItems keeps the topK most promising items: best value per unit of size first, but at
// most one more member of a shared cap than the cap admits on a node (25 anti-affine groups
// allowed one pod per node between them would otherwise fill the list with pods of which a
// pattern can use one), and for each cap its most valuable member as well.
func (k *intKnapsack) selectItems(items []kItem, topK int) []kItem {
	p := k.p
	slices.SortFunc(items, func(a, b kItem) int { return cmp.Or(cmp.Compare(b.key, a.key), cmp.Compare(a.g, b.g)) })
	k.capSeen = k.capSeen[:0]
	index := func(c *nodeCap) int {
		for i := range k.capSeen {
			if k.capSeen[i].c == c {
				return i
			}
		}
		k.capSeen = append(k.capSeen, capCount{c: c, best: -1})
		return len(k.capSeen) - 1
	}
	for j, it := range items {
		for _, c := range p.groups[it.g].caps {
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
		for _, c := range p.groups[items[j].g].caps {
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
		for _, c := range p.groups[it.g].caps {
			full = full || k.capSeen[index(c)].n > c.limit
		}
		if !full {
			take(j)
		}
	}
	k.top, k.picked = top, picked
	return append(items[:0], top...)
}

type capCount struct {
	c    *nodeCap
	n    int64 // members picked
	best int   // its most valuable member
}

// relaxedBound is a valid upper bound on the knapsack: the exact LP relaxation when the problem
// is small, else the Lagrangian dual bound.
func (k *intKnapsack) relaxedBound(alloc vec) float64 {
	if len(k.items) <= exactItems {
		return k.lpBound(alloc)
	}
	return k.lagrangeBound(alloc)
}

// lagrangeBound prices every resource (and every shared cap) with multipliers μ and bounds the
// knapsack by L(μ) = Σ_j maxk_j·max(0, v_j − μ·a_j − Σ λ_c) + μ·capacity + Σ λ_c·limit_c, which is
// at least the LP optimum for any μ, λ ≥ 0 (weak duality). Coordinate descent, each coordinate
// minimised exactly (the function is convex and piecewise linear in it), makes it tight.
func (k *intKnapsack) lagrangeBound(alloc vec) float64 {
	p := k.p
	nd := len(alloc)
	nc := len(k.caps)
	mu := make([]float64, nd+nc)
	capOf := func(c int) float64 {
		if c < nd {
			return float64(max(alloc[c], 0))
		}
		return float64(max(k.caps[c-nd].limit, 0))
	}
	ncoef := nd + nc
	coefs := make([]float64, len(k.items)*ncoef)
	for j, it := range k.items {
		for d := 0; d < nd; d++ {
			coefs[j*ncoef+d] = float64(p.groups[it.g].req[d])
		}
		for _, ci := range k.itemCaps[j] {
			coefs[j*ncoef+nd+ci] = 1
		}
	}
	coef := func(j, c int) float64 { return coefs[j*ncoef+c] }
	reduced := make([]float64, len(k.items))
	eval := func() float64 {
		total := 0.0
		for c := range mu {
			total += mu[c] * capOf(c)
		}
		for j, it := range k.items {
			r := it.v
			for c := range mu {
				if mu[c] != 0 {
					r -= mu[c] * coef(j, c)
				}
			}
			reduced[j] = r
			if r > 0 {
				total += float64(it.maxk) * r
			}
		}
		return total
	}
	type bp struct{ t, w float64 }
	var pts []bp
	best := eval()
	for round := 0; round < 4; round++ {
		for c := range mu {
			// f(t) = t·cap + Σ maxk_j·max(0, r_j − (t−μ_c)·a_jc) with r_j the reduced values at
			// the current μ: minimised where the weight of items still positive drops to cap.
			pts = pts[:0]
			base := reduced
			eval()
			for j, it := range k.items {
				a := coef(j, c)
				if a <= 0 || base[j]+mu[c]*a <= 0 {
					continue
				}
				pts = append(pts, bp{t: (base[j] + mu[c]*a) / a, w: float64(it.maxk) * a})
			}
			slices.SortFunc(pts, func(x, y bp) int { return cmp.Compare(y.t, x.t) })
			capc := capOf(c)
			acc := 0.0
			t := 0.0
			for _, q := range pts {
				acc += q.w
				if acc > capc {
					t = q.t
					break
				}
			}
			mu[c] = t
			best = min(best, eval())
		}
	}
	return best * (1 + 1e-9)
}

// lpBound is the exact fractional relaxation of the knapsack (every resource, every count cap),
// for when the search ran out of budget: on big nodes it is nearly the integer optimum.
func (k *intKnapsack) lpBound(alloc vec) float64 {
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
			row[j] = float64(k.p.groups[it.g].req[d])
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
		b = append(b, float64(max(cp.limit, 0)))
	}
	return lpMax(c, a, b) * (1 + 1e-9)
}

// buildSurrogates prepares the weightings: each dimension alone, and all of them together,
// each normalised by the shape's capacity.
func (k *intKnapsack) buildSurrogates(alloc vec, mixtures bool) {
	p := k.p
	k.surr = k.surr[:0]
	var all []float64
	add := func(mu []float64) {
		sg := surrogate{mu: mu, w: make([]float64, len(k.items)), order: make([]int, len(k.items))}
		for j, it := range k.items {
			req := p.groups[it.g].req
			for d, m := range mu {
				if m > 0 {
					sg.w[j] += m * float64(req[d])
				}
			}
			sg.order[j] = j
		}
		dens := func(j int) float64 {
			if sg.w[j] <= 0 {
				return math.Inf(1)
			}
			return k.items[j].v / sg.w[j]
		}
		slices.SortFunc(sg.order, func(a, b int) int { return cmp.Or(cmp.Compare(dens(b), dens(a)), cmp.Compare(a, b)) })
		k.surr = append(k.surr, sg)
	}
	for d, c := range alloc {
		if c <= 0 {
			continue
		}
		used := false
		for _, it := range k.items {
			if p.groups[it.g].req[d] > 0 {
				used = true
				break
			}
		}
		if !used {
			continue
		}
		mu := make([]float64, len(alloc))
		mu[d] = 1 / float64(c)
		add(mu)
		if all == nil {
			all = make([]float64, len(alloc))
		}
		all[d] = 1 / float64(c)
	}
	if all != nil {
		add(all)
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
				add(mu)
			}
		}
	}
	if len(k.surr) > 4 {
		k.free = append(k.free[:0], alloc...)
		rootB := make([]float64, len(k.surr))
		idx := make([]int, len(k.surr))
		for i := range k.surr {
			idx[i] = i
			rootB[i] = k.boundWith(&k.surr[i], 0)
		}
		slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(rootB[x], rootB[y]) })
		kept := make([]surrogate, 0, 4)
		for _, i := range idx[:4] {
			kept = append(kept, k.surr[i])
		}
		k.surr = append(k.surr[:0], kept...)
	}
}

// bound returns value plus the most items i… could still add, by the tightest surrogate.
func (k *intKnapsack) bound(i int, value float64) float64 {
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
func (k *intKnapsack) prunes(i int, value, best float64) bool {
	if len(k.surr) == 0 {
		return k.bound(i, value) <= best
	}
	for si := range k.surr {
		if value+k.boundWith(&k.surr[si], i) <= best {
			return true
		}
	}
	return false
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
func (k *intKnapsack) boundWith(sg *surrogate, i int) float64 {
	k.capLeft = k.capLeft[:0]
	for ci, c := range k.caps {
		k.capLeft = append(k.capLeft, float64(max(c.limit-k.capUsed[ci], 0)))
	}
	room := 0.0
	for d, m := range sg.mu {
		if m > 0 {
			room += m * float64(k.free[d])
		}
	}
	// The greedy fill, caps ignored: its value when no cap can bind, else its critical density.
	add, left, lambda := 0.0, room, 0.0
	capped := false
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
	if !capped {
		return add
	}
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
func (k *intKnapsack) dfs(s *shape, i int, value float64) bool {
	k.nodes++
	if value > k.bestV+1e-15 {
		k.bestV = value
		k.best = append(k.best[:0], k.cur...)
	}
	if i == len(k.items) || k.prunes(i, value, k.bestV*(1+1e-12)) {
		return false
	}
	if k.nodes > k.budget {
		return true
	}
	it := k.items[i]
	g := k.p.groups[it.g]
	kmax := maxCopies(g.req, k.free, min(it.maxk, g.room(k.cur, "")))
	if kmax > 0 && !k.p.canJoin(s, it.e, k.cur) {
		kmax = 0
	}
	for c := kmax; c >= 0; c-- {
		if c > 0 {
			k.free.addScaled(g.req, -c)
			k.cur = append(k.cur, placement{g: it.g, k: c})
			for _, ci := range k.itemCaps[i] {
				k.capUsed[ci] += c
			}
		}
		out := k.dfs(s, i+1, value+float64(c)*it.v)
		if c > 0 {
			k.free.addScaled(g.req, c)
			k.cur = k.cur[:len(k.cur)-1]
			for _, ci := range k.itemCaps[i] {
				k.capUsed[ci] -= c
			}
		}
		if out {
			return true
		}
	}
	return false
}

// pattern returns the pattern behind basic column i of the master.
func (m *master) pattern(i int, pats []pattern) (pattern, bool) {
	if m.tag == nil || m.tag[i] < 0 || m.tag[i] >= len(pats) || pats[m.tag[i]].s == nil {
		return pattern{}, false
	}
	return pats[m.tag[i]], true
}

// dropDominated removes a family when another is no dearer, has at least its room in every
// resource, and accepts every group it accepts: any pattern of the first is a pattern of the
// second at no more cost, so the LP (and its bound) is unchanged. Across shapes this needs the
// same pool and no narrow keys (where pods pin labels, the shapes' own values matter). A
// catalog has many types of one size at different prices (c5, c6i, c7i…), and each has
// on-demand and spot offerings: most families go, and every pricing round gets cheaper.
func dropDominated(fams []colFamily, rows int) []colFamily {
	words := (rows + 63) / 64
	sets := make([]uint64, len(fams)*words)
	for i := range fams {
		bit := uint64(1) << uint(fams[i].o)
		for _, it := range fams[i].all {
			if it.e.mask&bit != 0 {
				sets[i*words+it.row/64] |= 1 << uint(it.row%64)
			}
		}
	}
	covers := func(j, i int) bool {
		for w := 0; w < words; w++ {
			if sets[i*words+w]&^sets[j*words+w] != 0 {
				return false
			}
		}
		return true
	}
	dominates := func(j, i int) bool {
		a, b := &fams[j], &fams[i]
		if a.price > b.price || (a.price == b.price && j > i) {
			return false // of equal ones keep the first
		}
		if a.s != b.s {
			if a.s.pool != b.s.pool || len(a.s.narrowKeys) > 0 || len(b.s.narrowKeys) > 0 || !b.s.alloc.fitsIn(a.s.alloc) {
				return false
			}
		}
		return covers(j, i)
	}
	keep := make([]bool, len(fams))
	for i := range fams {
		keep[i] = true
		for j := range fams {
			if i != j && dominates(j, i) {
				keep[i] = false
				break
			}
		}
	}
	out := fams[:0]
	for i := range fams {
		if keep[i] {
			out = append(out, fams[i])
		}
	}
	return out
}
