package scheduling

import (
	"math"
	"slices"
)

// lowerBound returns a $/h no plan placing counts[g] pods of every group can beat, the pod
// values behind it, and the column-generation result it came from (see colgen.go for the
// configuration LP and why its bound is valid at every iteration).
//
// Existing room is free but finite: a bin can hold at most the value of the pods that may go
// there, and at most its free capacity times the best value per unit of each resource that
// every such pod needs; the smaller of the two is subtracted.
func (p *problem) lowerBound(counts []int64) (float64, cgResult) {
	if p.in.Options.SkipLowerBound || p.noProof {
		return 0, p.columnGeneration(counts, p.shapes, nil, valuesLP, nil)
	}
	// limitedBound follows wherever the LP's final solution exceeds a limit limitPrices prices
	// (below): the LP is told so (repricedLP). The relaxed problem's LPs have their own role.
	role := repricedLP
	if p.prefs.relaxTopology {
		role = relaxedLP
	}
	cg := p.columnGeneration(counts, p.shapes, nil, role, nil)
	total := max(newPricer(p).minusBins(cg.lb, cg.values, counts), 0)
	if w := p.limitPrices(limitUse(p.pools, cg), counts); w != nil {
		lb, cols := p.limitedBound(counts, w, cg.columns)
		total = max(total, lb)
		// The priced LP's columns seed the pools' LPs too (packNewNodes): where a limit binds,
		// the unpriced LP buys the limited pool's nodes for nearly every pod and few of the
		// pool that takes the overflow; the priced one buys both. cols repeat what the priced
		// LP started from (its seeds from cg.columns, its single-group patterns); the repeats
		// stay: a share LP's warm start enters a copy again once later seeds have moved its
		// duals so that the copy improves it. They cost the warm start a pass over a few
		// columns more, and dropping them would change which columns the share LPs start
		// from, and so their plans.
		cg.columns = append(slices.Clip(cg.columns), cols...)
	}
	return total, cg
}

// minusBins subtracts from total, bin by bin, a bound on the value (at values) of the pods of
// counts each existing node's free room can take.
func (k *pricer) minusBins(total float64, values []float64, counts []int64) float64 {
	p := k.p
	for _, b := range p.bins {
		podValue, capValue := 0.0, math.Inf(1)
		var admitted []*group
		for _, g := range p.groups {
			if counts[g.id] > 0 && values[g.id] > 0 && b.mayHold(g) && g.req.fitsIn(b.free0) {
				admitted = append(admitted, g)
				podValue += float64(counts[g.id]) * values[g.id]
			}
		}
		if len(admitted) == 0 {
			continue
		}
		if len(p.bins) <= exactBins {
			// Few bins: bound what each can hold by the knapsack over its free room.
			total -= min(podValue, k.binBound(b, admitted, values, counts))
			continue
		}
		for d, free := range b.free0 {
			best, valid := 0.0, true
			for _, g := range admitted {
				if g.req[d] <= 0 {
					valid = false
					break
				}
				best = max(best, values[g.id]/float64(g.req[d]))
			}
			if valid {
				capValue = min(capValue, float64(max(free, 0))*best)
			}
		}
		total -= min(podValue, capValue)
	}
	return total
}

// pureValues prices one pod of each group at the cheapest cost per pod of a node holding that
// group alone: a quick stand-in for the LP's values when no bound is wanted.
func (p *problem) pureValues() []float64 {
	values := make([]float64, len(p.groups))
	for _, s := range p.shapes {
		for _, f := range p.byShape[s.idx] {
			g := p.groups[f.g]
			k := maxCopies(g.req, s.alloc, g.room(nil, ""))
			if k <= 0 {
				continue
			}
			price, _ := s.priceFor(f.mask)
			if v := price / float64(k); values[f.g] == 0 || v < values[f.g] {
				values[f.g] = v
			}
		}
	}
	return values
}

// binSearchNodes is the search budget of binBound's knapsack: a quick pricing search's.
const binSearchNodes = 1000

// exactBins is the most existing nodes whose room the bound measures with a knapsack each;
// beyond it a per-resource bound is used (valid, looser, linear time).
const exactBins = 200

// binBound is an upper bound on the value of pods that fit in an existing node's free room.
func (k *pricer) binBound(b *bin, admitted []*group, values []float64, counts []int64) float64 {
	s := &shape{shapeFacts: &shapeFacts{alloc: b.free0.clone().nonNegative()}}
	f := &colFamily{s: s, price: 1}
	v := make([]float64, len(admitted))
	for i, g := range admitted {
		if it, ok := k.famItem(s, i, g.id, fitEntry{g: int32(g.id)}, counts); ok {
			f.items = append(f.items, it)
		}
		v[i] = values[g.id]
	}
	_, _, upper := k.solve(f, v, binSearchNodes, 0)
	return upper
}

// A pool's limits are left out of the configuration LP: its patterns are whole nodes, and a
// limit is a constraint across nodes. Where the LP's solution exceeds a limit (a cheap spot
// pool capped at 200 cpu beside on-demand), its bound is far below any plan that keeps the
// limit. Lagrangian relaxation puts the limits back: for any prices w ≥ 0 on the limited
// resources, a plan λ within the limits (B·λ ≤ L) costs
//
//	c·λ = (c + w·B)·λ − w·B·λ ≥ (c + w·B)·λ − w·L,
//
// so the bound of the LP with every node's price raised by w times its capacity, less w·L, is
// a bound too. limitPrices picks w, limitedBound proves it.

// limitPrices returns a price per unit of each limited resource of each pool (by pool idx)
// whose limit an LP solution exceeds (use: its limitUse): what the pods the pool could take cost more, per
// unit of the resource, on their cheapest node elsewhere (where the overflow must go) than
// on their cheapest node in the pool — averaged over those pods, shared among the pool's
// limited resources. It returns nil when no limit binds or nothing elsewhere is dearer.
func (p *problem) limitPrices(use [][]float64, counts []int64) [][]float64 {
	if !overLimit(p.pools, use) {
		// Most solutions (and every one without limits): no pod's cost per pool is needed.
		return nil
	}
	perPod := p.perPodCosts()
	w := make([][]float64, len(p.pools))
	any := false
	for _, pl := range p.pools {
		w[pl.idx] = make([]float64, len(pl.limited))
		n := 0
		for _, lim := range pl.limited {
			if lim {
				n++
			}
		}
		for d := range pl.limited {
			if !pl.exceeds(use[pl.idx], d) {
				continue
			}
			gap, amount := 0.0, 0.0
			for _, g := range p.groups {
				here := perPod[g.id][pl.idx]
				if counts[g.id] == 0 || g.req[d] <= 0 || math.IsInf(here, 1) {
					continue
				}
				elsewhere := math.Inf(1)
				for _, q := range p.pools {
					if q != pl && !q.limited[d] {
						elsewhere = min(elsewhere, perPod[g.id][q.idx])
					}
				}
				if !math.IsInf(elsewhere, 1) && elsewhere > here {
					gap += float64(counts[g.id]) * (elsewhere - here)
					amount += float64(counts[g.id]) * float64(g.req[d])
				}
			}
			if gap > 0 && amount > 0 {
				w[pl.idx][d] = gap / amount / float64(n)
				any = true
			}
		}
	}
	if !any {
		return nil
	}
	return w
}

// perPodCosts returns, by group id and pool idx, the least cost per pod of the group on a node
// of the pool holding it alone (+Inf where none does).
func (p *problem) perPodCosts() [][]float64 {
	perPod := make([][]float64, len(p.groups))
	for _, g := range p.groups {
		perPod[g.id] = make([]float64, len(p.pools))
		for i := range perPod[g.id] {
			perPod[g.id][i] = math.Inf(1)
		}
	}
	for _, s := range p.shapes {
		for _, f := range p.byShape[s.idx] {
			g := p.groups[f.g]
			if k := maxCopies(g.req, s.alloc, g.room(nil, "")); k > 0 {
				price, _ := s.priceFor(f.mask)
				perPod[g.id][s.pool.idx] = min(perPod[g.id][s.pool.idx], price/float64(k))
			}
		}
	}
	return perPod
}

// limitUse returns how much of each limited resource of each pool (by pool idx) the LP
// solution cg uses.
func limitUse(pools []*pool, cg cgResult) [][]float64 {
	use := make([][]float64, len(pools))
	for _, pl := range pools {
		use[pl.idx] = make([]float64, len(pl.limited))
	}
	for i, pat := range cg.basis {
		pl := pat.s.pool
		for d, lim := range pl.limited {
			if lim {
				use[pl.idx][d] += cg.lambda[i] * float64(pat.s.capacity[d])
			}
		}
	}
	return use
}

// room is how much of limited resource d new nodes of the pool may take.
func (pl *pool) room(d int) float64 { return float64(max(pl.limit[d]-pl.used0[d], 0)) }

// exceeds reports whether use (the pool's row of limitUse) takes more of resource d than the
// pool has room for, when d is limited (beyond a relative 1e-9: the LP's rounding).
func (pl *pool) exceeds(use []float64, d int) bool {
	return pl.limited[d] && use[d] > pl.room(d)*(1+1e-9)
}

// limitedBound proves the bound with the limits priced at w (see above), starting from the
// columns of the unpriced LP (seeds); it returns the bound and its LP's columns.
func (p *problem) limitedBound(counts []int64, w [][]float64, seeds []pattern) (float64, []pattern) {
	adj := make(lpPrices, len(p.shapes))
	for _, s := range p.shapes {
		for d, x := range w[s.pool.idx] {
			adj[s.idx] += x * float64(s.capacity[d])
		}
	}
	role := limitLP
	if p.prefs.relaxTopology {
		role = relaxedLP
	}
	cg := p.columnGeneration(counts, p.shapes, seeds, role, adj)
	total := cg.lb
	for _, pl := range p.pools {
		for d, x := range w[pl.idx] {
			total -= x * pl.room(d)
		}
	}
	return max(newPricer(p).minusBins(total, cg.values, counts), 0), cg.columns
}

// relaxedCapMax is the least per-node cap of a zone spread the relaxed problem leaves out
// (relaxedSpreadCap). A small cap (a few pods of a family per node) acts like anti-affinity and
// the bound needs it; a large one rarely binds where many groups share nodes, yet every cap keeps
// its groups from merging into one LP row with the groups they are interchangeable with
// (lpclass.go), and the LP with them is larger, slower to converge and proves less within its
// work. Leaving out the large caps buys a smaller LP that converges within its budget and so
// a higher bound (a web mix of deployments spread over zones: a third of the rows, converged);
// it costs only what those caps would add to the bound, which is little where they seldom
// bind.
const relaxedCapMax = 8

// A bound-only column generation — every LP of the relaxed problem (topologyFreeBound), whose
// pod values nothing else reads — stops once its bound stops rising (its tailRule, set in
// lpPolicy): a pricing round costs as much as ever, but the bound Farley's ratio proves
// (colgen.go) at the duals of late rounds barely moves on degenerate LPs. After a round, the
// bound is proved at the average duals (and, on a small LP, at the current ones too) and the
// best kept; past the rule's share of the budget, the LP stops when the best has stalled or
// is near the master's objective (no bound of this LP can exceed that by more than the
// rounding of its perturbed demands). A check is made only when the rounds since the last one
// did at least its work, and it first asks the family that set θ at the last full check,
// whose bound alone usually shows the check cannot gain. Every check is a count of work, not
// a clock: the same input gives the same bound anywhere.

// proofTail is the stopping rule's state (colGen.tail; nil: the LP runs its rounds).
type proofTail struct {
	best   float64   // the best bound proved so far (0: none)
	values []float64 // by row, the pod values that proved it (v/θ)
	stalls int       // checks in a row that gained less than the rule's gain
	// stopped says the rule stopped the LP (its last check proved the bound at its last duals).
	stopped bool
	// next is the Work count at which the next check is due.
	next int
	// witness is the family whose bound set θ at the last check worked out in full (-1:
	// none): checked first, it usually shows alone that a bound cannot gain.
	witness int
}

func newProofTail() *proofTail { return &proofTail{witness: -1} }

// tailStop checks the bound after a pricing round (see proofTail) and reports whether the LP
// may stop.
func (c *colGen) tailStop() bool {
	t := c.tail
	if c.ks.Work < t.next {
		return false
	}
	start := c.ks.Work
	before := t.best
	cur := slices.Clone(c.vp)
	if avg := c.avgDuals(); avg != nil {
		c.tailOffer(avg)
	}
	if len(c.rows) <= c.cfg.tail.currentRows {
		c.tailOffer(cur)
	}
	copy(c.vp, cur) // theta overwrote them
	t.next = c.ks.Work + (c.ks.Work - start)
	if t.best > before*(1+c.cfg.tail.gain) || before == 0 {
		t.stalls = 0
	} else {
		t.stalls++
	}
	r := c.cfg.tail
	t.stopped = c.ks.Work >= c.cfg.budget/r.after && (t.stalls >= r.stalls || t.best >= (1-r.gap)*c.m.objective())
	return t.stopped
}

// famBound is the least of the bounds theta may work out for family i at row values w, over
// its price: θ is at least that, whatever the other families.
func (c *colGen) famBound(i int, w []float64) float64 {
	f := &c.fams[i]
	c.ks.Work += len(f.items)
	upper := f.upperBound(w, c.unitValues(c.ratio, w), &c.ks.ub)
	upper = min(upper, c.ks.bound(f, w))
	refined, items := c.ks.refine(f, w)
	upper = min(upper, refined)
	if items <= exactItems {
		_, _, exact := c.ks.solve(f, w, c.cfg.fullNodes, 0)
		upper = min(upper, exact)
	}
	return upper / f.price
}

// tailOffer proves the bound at row values w and keeps it if it gains more than the rule's gain on
// the best so far: θ is worked out only as far as that needs.
func (c *colGen) tailOffer(w []float64) {
	limit := math.Inf(1)
	if c.tail.best > 0 {
		limit = c.boundAt(w, 1) / (c.tail.best * (1 + c.cfg.tail.gain))
		if c.tail.witness >= 0 && c.famBound(c.tail.witness, w) > limit {
			return
		}
	}
	th := c.thetaUpTo(w, limit)
	c.tail.witness = c.thetaFam
	if lb := c.boundAt(w, th); th <= limit && lb > c.tail.best {
		c.tail.best = lb
		c.tail.values = c.tail.values[:0]
		for _, x := range w {
			c.tail.values = append(c.tail.values, x/th)
		}
	}
}
