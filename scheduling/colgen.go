package scheduling

import (
	"cmp"
	"math"
	"slices"

	"github.com/nodeplan/nodeplan/scheduling/internal/knapsack"
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

// cgResult is what column generation returns.
type cgResult struct {
	lb     float64
	values []float64 // per group id, v_g/θ
	// basis holds the LP solution: patterns and how many nodes of each.
	basis  []pattern
	lambda []float64
	// columns are every pattern the LP entered, to seed a related LP.
	columns []pattern
}

// How many rounds an LP runs, how hard it searches and what it proves is its policy (lpConfig),
// decided in lppolicy.go from the LP's role and size.

// exactItems is the most items a family may have for the final bound to search it exactly
// (else the Lagrangian bound stands).
const exactItems = knapsack.ExactItems

// cgTol is how far a column's worth must exceed its price to improve the LP.
const cgTol = 1e-7

// colGen is one column generation: the LP's rows and families, the master, the knapsack that
// prices columns, and what the search has learnt so far. It lives for one call of
// columnGeneration and is read only by its methods.
type colGen struct {
	p      *problem
	counts []int64
	adj    lpPrices // what the LP adds to node prices (nil: nothing)
	rowOf  []int    // group id → row, -1 for none
	rows   []int    // row → group id
	fams   []colFamily
	need   []float64 // row → pods to cover
	m      *master
	pats   []pattern // the columns entered, by the master's tag
	// v are the master's duals, vp the same clipped at zero (what pricing values pods at).
	v, vp []float64
	ks    *pricer
	// order lists the families by bound (their cheap bound over price), best first.
	order []int
	bound []float64
	ratio []float64
	// last is the best pattern each family's last search found: the column pool.
	last []pattern
	// vsum/nsum accumulate the duals of every round, for their average.
	vsum []float64
	nsum int
	// cfg is the LP's policy (lpPolicy).
	cfg lpConfig
	// settled marks, in a pricing round, the families whose search proved no column of theirs
	// improves the LP.
	settled []bool
	// deferred marks the families whose last search was skipped at row values deferredAt
	// (see colpool.go).
	deferred   []bool
	deferredAt [][]float64
	// refVal and refAt are each family's last Refine bound (0 before one) and the row values
	// it was at; gain is scratch for gainBound.
	refVal []float64
	refAt  [][]float64
	gain   []float64
	// tail, when set, stops a bound-only LP once its bound stops rising (see proofTail in
	// bound.go).
	tail *proofTail
	// thetaFam is the family whose bound (or pattern) set the last theta's θ (-1: none).
	thetaFam int
	// groupCounts are the caller's counts, per group where the LP's rows are classes (what
	// lowerBound prices the limits on).
	groupCounts []int64
	// quickOnly is set when a round whose quick searches found nothing ended the LP without
	// the full-effort round (skipsFullRound: a share LP past its budget or over a pool's limit,
	// a repriced plan LP past its budget over a limit limitPrices prices): the LP stopped
	// unconverged.
	quickOnly bool
}

// columnGeneration solves the configuration LP for the groups with counts > 0 over the given
// shapes: the patterns and node counts of its (fractional) solution, the pod values it
// settles on, and, unless no proof is wanted, the lower bound they prove.
//
// seeds are columns of an earlier column generation on the same problem (cgResult.columns):
// those on these shapes whose pods are all still to place enter first, so an LP that differs a
// little from one already solved (one pool's share of the pods, prices raised by a limit's
// price) starts near its optimum instead of from single-group patterns.
//
// role says what the LP is for, and so its policy (lpPolicy): its rounds, its searches, whether
// it proves a bound and when it stops.
func (p *problem) columnGeneration(counts []int64, shapes []*shape, seeds []pattern, role lpRole, adj lpPrices) cgResult {
	cls := p.lpClasses()
	lpCounts, merged := classCounts(cls, counts)
	if !merged {
		lpCounts = counts
	} else {
		seeds = toClasses(cls, seeds)
	}
	c := p.newColGen(lpCounts, shapes, role, adj)
	if c == nil {
		return cgResult{values: make([]float64, len(p.groups))}
	}
	c.groupCounts = counts
	// An LP that proves nothing reads its values off its duals, unscaled by θ.
	prove := c.cfg.prove
	if prove && c.cfg.tail.after > 0 {
		c.tail = newProofTail()
	}
	c.warm(shapes, seeds)
	converged := c.iterate()
	// A bound-only LP stopped by its rule has just proved its bound (see proofTail).
	res := c.result(converged, prove && (c.tail == nil || !c.tail.stopped))
	if merged {
		// Every group of a class is worth its class's pod value; the basis and columns stay
		// on the classes (roundPatterns hands their pods to the groups).
		vals := slices.Clone(res.values)
		for g, n := range counts {
			res.values[g] = 0
			if n > 0 {
				res.values[g] = vals[cls[g]]
			}
		}
	}
	return res
}

// newColGen sets up the LP of role at prices adj with one pure pattern per row (each group
// alone, as many as fit, on the family where that is cheapest per pod); nil when no shape
// takes any pod.
func (p *problem) newColGen(counts []int64, shapes []*shape, role lpRole, adj lpPrices) *colGen {
	c := &colGen{p: p, counts: counts, adj: adj}
	c.buildFamilies(shapes)
	n := len(c.rows)
	if n == 0 {
		return nil
	}
	c.ks = newPricer(p)
	rows, fams := c.rows, c.fams
	c.need = make([]float64, n)
	for r, g := range rows {
		c.need[r] = float64(counts[g])
	}
	pure := make([]float64, n) // pods in the row's pure column (0: none yet)
	pureCost := make([]float64, n)
	purePat := make([]pattern, n)
	for _, f := range fams {
		for _, it := range f.items {
			k := it.maxk
			if pure[it.row] == 0 || f.price/float64(k) < pureCost[it.row]/pure[it.row]-1e-15 {
				pure[it.row], pureCost[it.row] = float64(k), f.price
				purePat[it.row] = pattern{s: f.s, o: f.o, placed: []placement{{g: it.g, k: k}}}
			}
		}
	}
	// The master's right-hand side is perturbed a little, differently per row: with whole pod
	// counts many basic variables sit at zero together, and degenerate pivots can cycle
	// without end (seen on a 10-row problem with per-node caps). The bound uses the true
	// counts (need).
	perturbed := make([]float64, n)
	for r := range c.need {
		perturbed[r] = c.need[r] + 1e-6*float64(r+1)/float64(n)
	}
	c.m = newMaster(perturbed, pure, pureCost)
	c.pats = slices.Clone(purePat)
	c.v = make([]float64, n)
	c.vp = make([]float64, n)
	c.order = make([]int, len(fams))
	c.bound = make([]float64, len(fams))
	c.last = make([]pattern, len(fams))
	c.vsum = make([]float64, n)
	c.deferred = make([]bool, len(fams))
	c.deferredAt = make([][]float64, len(fams))
	c.refVal = make([]float64, len(fams))
	c.refAt = make([][]float64, len(fams))
	c.cfg = lpPolicy(role, n, sum(counts), p.in.Options.Effort, p.noProof)
	c.ks.Tight = c.cfg.tight
	return c
}

// warm enters the seeds that suit this LP and improve it (see columnGeneration).
func (c *colGen) warm(shapes []*shape, seeds []pattern) {
	if len(seeds) == 0 {
		return
	}
	on := make(map[*shape]bool, len(shapes))
	for _, s := range shapes {
		on[s] = true
	}
	var use []pattern
	for _, pat := range seeds {
		ok := on[pat.s] && len(pat.placed) > 0
		for _, x := range pat.placed {
			ok = ok && c.rowOf[x.g] >= 0 && x.k <= c.counts[x.g]
		}
		if ok {
			use = append(use, pat)
		}
	}
	c.duals()
	c.enter(use)
}

// iterate runs pricing rounds until no column improves the LP (it reports true: converged)
// or the work budget is spent.
func (c *colGen) iterate() bool {
	n := len(c.rows)
	surplus := 0
	for iter := 0; iter < c.cfg.maxRounds && (iter < c.cfg.minRounds || c.ks.Work < c.cfg.budget); iter++ {
		if neg := c.duals(); neg >= 0 {
			col := make([]float64, n)
			col[neg] = -1
			c.ks.Work += n * n / 4
			// A surplus pivot is not a pricing round: it does not count as one, but its work
			// counts, and there are at most as many as the iteration cap (no cycling).
			if surplus < c.cfg.maxRounds && c.m.enter(col, 0, true, -1) {
				surplus++
				iter--
				continue
			}
		}
		// The column pool first: the best pattern each family's last search found, valued
		// again at the new duals. Cheap, and late in the search it finds most columns.
		found := c.pooled()
		if len(found) == 0 {
			found = c.price()
		}
		for i, x := range c.vp {
			c.vsum[i] += x
		}
		c.nsum++
		if !c.enter(found) {
			return !c.quickOnly
		}
		if c.tail != nil && c.tailStop() {
			return false
		}
	}
	return false
}

// duals reads the master's duals into v and vp; it returns the first row whose dual is
// negative (its surplus should enter), or -1.
func (c *colGen) duals() int {
	c.m.duals(c.v)
	neg := -1
	for i, x := range c.v {
		c.vp[i] = max(x, 0)
		if x < -1e-9 && neg < 0 {
			neg = i
		}
	}
	return neg
}

// sortFamilies orders the families by their cheap bound at vp, best first.
func (c *colGen) sortFamilies() {
	c.ratio = c.unitValues(c.ratio, c.vp)
	for i := range c.fams {
		c.order[i] = i
		c.bound[i] = c.fams[i].upperBound(c.vp, c.ratio, &c.ks.ub) / c.fams[i].price
		c.ks.Work += len(c.fams[i].items)
	}
	slices.SortFunc(c.order, func(a, b int) int { return cmp.Or(cmp.Compare(c.bound[b], c.bound[a]), cmp.Compare(a, b)) })
}

// worth is what pattern pat is worth at row values w.
func (c *colGen) worth(pat *pattern, w []float64) float64 {
	val := 0.0
	for _, x := range pat.placed {
		val += w[c.rowOf[x.g]] * float64(x.k)
	}
	return val
}

// price searches the families, most promising first, with a small search budget and the few
// most promising items each, for up to cfg.columns improving columns. When that finds none, a
// small LP (cfg.fullRound) gets a round at full effort (every item, the larger budget) before it is called
// solved, on the families the first searches did not settle (not always: see
// skipsFullRound); the final bound is computed at full effort anyway. The searches look only
// for columns that improve the LP (worth more than their node's price): one that cannot is
// pruned at its bound, not searched to its budget.
func (c *colGen) price() []pattern {
	c.sortFamilies()
	var found []pattern
	c.settled = append(c.settled[:0], make([]bool, len(c.fams))...)
	for n, i := range c.order {
		if c.bound[i] <= 1+cgTol || len(found) >= c.cfg.columns || (len(found) > 0 && c.cfg.searches > 0 && n >= c.cfg.searches) {
			break
		}
		if c.cannotImprove(i) {
			c.deferSearch(i)
			c.settled[i] = true
			continue
		}
		f := &c.fams[i]
		pat, val, proved := c.ks.search(f, c.vp, c.cfg.quickNodes, c.cfg.quickItems, f.price*(1+cgTol))
		c.last[i], c.deferred[i] = pat, false
		c.settled[i] = proved
		if val/f.price > 1+cgTol {
			found = append(found, pat)
		}
	}
	if len(found) > 0 || !c.cfg.fullRound {
		return found
	}
	if c.skipsFullRound() {
		c.quickOnly = true
		return found
	}
	for _, i := range c.order {
		if c.bound[i] <= 1+cgTol || len(found) >= c.cfg.columns {
			break
		}
		if c.settled[i] {
			continue // searched to the end above, with every item: nothing improves there
		}
		if len(c.fams[i].items) <= exactItems && c.refineBelowPrice(i) {
			// Its LP relaxation shows no pattern of it improves: the search would find none,
			// and a full search that finds none leaves the pool as it is. (Asked afresh,
			// whatever cfg.refineAgain says: a full search costs as much as four quick ones.)
			continue
		}
		f := &c.fams[i]
		pat, val, _ := c.ks.search(f, c.vp, c.cfg.fullNodes, 0, f.price*(1+cgTol))
		if val/f.price > 1+cgTol {
			c.last[i], c.deferred[i] = pat, false
			found = append(found, pat)
		}
	}
	return found
}

// enter pivots the found columns that still improve the LP into the master; it reports
// whether any entered.
func (c *colGen) enter(found []pattern) bool {
	n := len(c.rows)
	entered := false
	for _, pat := range found {
		col := make([]float64, n)
		price := c.adj.of(pat.s, pat.o)
		reduced := price
		for _, x := range pat.placed {
			col[c.rowOf[x.g]] = float64(x.k)
			reduced -= c.v[c.rowOf[x.g]] * float64(x.k)
		}
		if reduced >= -cgTol*price {
			continue // an earlier column this round already made it unattractive
		}
		c.ks.Work += n * n / 4
		if c.m.enter(col, price, false, len(c.pats)) {
			c.pats = append(c.pats, pat)
			entered = true
			c.duals()
		}
	}
	return entered
}

// theta is the largest worth/price ratio any whole pattern can reach at row values w (at least
// 1). The cheap bound rules out most families; the surrogate and then the fractional bounds
// most of the rest, and an exact search settles the ones still above. It overwrites vp.
//
// The fractional (Lagrangian or LP) bound is most of the cost, and it is needed only for a
// family whose surrogate bound exceeds θ so far: so every family's surrogate bound comes first,
// and the fractional ones follow in the order of those bounds, highest first, which raises θ
// early and leaves most families settled by their surrogate bound alone. θ is the largest of
// the families' tightest bounds whatever the order (a family is skipped only when a bound of
// its own is already at most θ), so the order changes the work, not θ.
func (c *colGen) theta(w []float64) float64 { return c.thetaUpTo(w, math.Inf(1)) }

// thetaUpTo is theta, except that once θ is known to exceed limit it stops and returns a ratio
// above limit (a bound-only LP's stopping rule asks only whether a bound beats its best).
func (c *colGen) thetaUpTo(w []float64, limit float64) float64 {
	copy(c.vp, w)
	c.sortFamilies()
	// Start from the best ratio a known pattern reaches at w (θ is at least that): every
	// family whose bound does not exceed it is settled without a search.
	theta := 1.0
	c.thetaFam = -1
	for i := range c.last {
		if pat := &c.last[i]; pat.s != nil {
			if r := c.worth(pat, w) / c.fams[i].price; r > theta {
				theta, c.thetaFam = r, i
			}
		}
	}
	if theta > limit {
		return theta
	}
	for _, x := range c.surrogateUppers(theta) {
		f := &c.fams[x.fam]
		if x.upper/f.price <= theta {
			break
		}
		refined, items := c.ks.refine(f, c.vp)
		upper := min(x.upper, refined)
		if upper/f.price > theta && items <= exactItems {
			_, _, exact := c.ks.solve(f, c.vp, c.cfg.fullNodes, 0)
			upper = min(upper, exact)
		}
		if upper/f.price > theta {
			theta, c.thetaFam = upper/f.price, x.fam
		}
		if theta > limit {
			return theta
		}
	}
	if theta < 1+1e-9 {
		theta = 1 // converged: rounding noise must not rescale the values
	}
	return theta
}

// famUpper is an upper bound on the worth of any pattern of family fam.
type famUpper struct {
	fam   int
	upper float64
}

// surrogateUppers returns, for every family whose cheap bound (sortFamilies, at vp) exceeds
// theta, the smaller of that and its surrogate bound, where that still exceeds theta: highest
// ratio to the family's price first (ties by family).
func (c *colGen) surrogateUppers(theta float64) []famUpper {
	ks := c.ks
	var out []famUpper
	for _, i := range c.order {
		if c.bound[i] <= theta {
			break
		}
		f := &c.fams[i]
		if upper := min(c.bound[i]*f.price, ks.bound(f, c.vp)); upper/f.price > theta {
			out = append(out, famUpper{i, upper})
		}
	}
	slices.SortFunc(out, func(a, b famUpper) int {
		return cmp.Or(cmp.Compare(b.upper/c.fams[b.fam].price, a.upper/c.fams[a.fam].price), cmp.Compare(a.fam, b.fam))
	})
	return out
}

// boundAt is Farley's bound at row values w with ratio theta: Σ n·w/θ.
func (c *colGen) boundAt(w []float64, theta float64) float64 {
	t := 0.0
	for i := range w {
		t += c.need[i] * w[i]
	}
	return t / theta
}

// result settles the pod values (and, with prove, the bound they prove) and reads the basis.
//
// Converged, the final duals are optimal. Stopped by the budget, they are not, and in a
// degenerate LP they swing from one iteration to the next: their average over the iterations
// proves a much better bound (on Karpenter's benchmark mix, two to five times the final duals'
// bound), and values the pods more evenly. With few rows both are proved and the better kept.
func (c *colGen) result(converged, prove bool) cgResult {
	res := cgResult{values: make([]float64, len(c.p.groups))}
	c.duals()
	bestV, bestTheta := slices.Clone(c.vp), 1.0
	var avg []float64
	if !converged {
		avg = c.avgDuals()
	}
	switch {
	case prove && avg != nil && c.cfg.bothDuals:
		bestTheta = c.theta(bestV)
		lb := c.boundAt(bestV, bestTheta)
		if th := c.theta(avg); c.boundAt(avg, th) > lb {
			bestV, bestTheta, lb = avg, th, c.boundAt(avg, th)
		}
		res.lb = max(lb, 0)
	case prove:
		if avg != nil {
			bestV = avg
		}
		bestTheta = c.theta(bestV)
		res.lb = max(c.boundAt(bestV, bestTheta), 0)
	case avg != nil:
		bestV = avg
	}
	for r, g := range c.rows {
		res.values[g] = bestV[r] / bestTheta
	}
	// A bound-only LP's stopping rule may have proved a better bound at other duals (see
	// proofTail): it stands when the rule stopped the LP, or when it gains more than the rule's gain
	// (at other values, the existing nodes' room may take more of a bound a little higher).
	if c.tail != nil && (c.tail.stopped || c.tail.best > res.lb*(1+c.cfg.tail.gain)) && c.tail.best > res.lb {
		res.lb = c.tail.best
		for r, g := range c.rows {
			res.values[g] = c.tail.values[r]
		}
	}
	for _, pat := range c.pats {
		if pat.s != nil {
			res.columns = append(res.columns, pat)
		}
	}
	res.basis, res.lambda = c.solution()
	return res
}

// solution returns the patterns of the master's solution and how many nodes of each.
func (c *colGen) solution() (basis []pattern, lambda []float64) {
	for i := range c.m.xb {
		if c.m.surp[i] || c.m.xb[i] <= 1e-9 {
			continue
		}
		if pat, ok := c.m.pattern(i, c.pats); ok {
			basis = append(basis, pat)
			lambda = append(lambda, c.m.xb[i])
		}
	}
	return basis, lambda
}

// skipsFullRound reports whether a round whose quick searches found nothing ends the LP,
// unconverged, without a full-effort round, by the LP's skip rule (lpPolicy): a share LP's
// past its budget or over a pool's limit; the repriced plan LP's past its budget when its
// bound is to be proved again with the limits priced (limitPrices prices a limit its solution
// exceeds: the rule lowerBound applies to its final solution).
func (c *colGen) skipsFullRound() bool {
	switch c.cfg.skip {
	case skipPastBudgetOrOverLimit:
		return c.ks.Work >= c.cfg.budget || overLimit(c.p.pools, c.limitUse())
	case skipPastBudgetIfRepriced:
		return c.ks.Work >= c.cfg.budget && c.p.limitPrices(c.limitUse(), c.groupCounts) != nil
	}
	return false
}

// limitUse is limitUse of the master's solution.
func (c *colGen) limitUse() [][]float64 {
	basis, lambda := c.solution()
	return limitUse(c.p.pools, cgResult{basis: basis, lambda: lambda})
}

// overLimit reports whether use (limitUse) takes more of a limited resource of a pool than the
// pool has room for. A share LP's packers then take only the part of its solution the limit
// allows, and its full-effort rounds would buy precision the limit throws away (see
// skipsFullRound).
func overLimit(pools []*pool, use [][]float64) bool {
	for _, pl := range pools {
		for d := range pl.limited {
			if pl.exceeds(use[pl.idx], d) {
				return true
			}
		}
	}
	return false
}

// unitValues fills ratio with every row's value per unit of each resource at row values v
// (+Inf where the pod needs none of it: that resource then bounds nothing), for upperBound.
func (c *colGen) unitValues(ratio []float64, v []float64) []float64 {
	p := c.p
	nd := len(p.dims.names)
	ratio = append(ratio[:0], make([]float64, len(c.rows)*nd)...)
	for r, g := range c.rows {
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

// pattern returns the pattern behind basic column i of the master.
func (m *master) pattern(i int, pats []pattern) (pattern, bool) {
	if m.tag == nil || m.tag[i] < 0 || m.tag[i] >= len(pats) || pats[m.tag[i]].s == nil {
		return pattern{}, false
	}
	return pats[m.tag[i]], true
}

// avgDuals returns the rounds' average row values (a fresh slice), or nil before any round.
func (c *colGen) avgDuals() []float64 {
	if c.nsum == 0 {
		return nil
	}
	avg := make([]float64, len(c.rows))
	for i := range avg {
		avg[i] = c.vsum[i] / float64(c.nsum)
	}
	return avg
}
