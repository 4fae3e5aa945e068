package scheduling

import (
	"cmp"
	"math"
	"slices"
)

// The column pool (colGen.last) holds the best pattern each family's last pricing search
// found, improving or not; each round first values the pool again at the new duals (pooled),
// which late in the search finds most columns without a search.
//
// A pricing search that cannot find an improving column (cannotImprove) is skipped, but what
// it would have put in the pool is still owed: the pool, and so every later round, must stay
// what it would have been. So the skipped search is deferred — its row values kept — and run
// only in a later round whose pool could use its pattern, which is rare: a pattern is used
// when it improves the LP, and the family's LP-relaxation bound at the new duals says whether
// any of its patterns can.
//
// A deferred search's work is not counted unless it runs. Where the count decides when the LP
// stops (after its guaranteed rounds, or a bound-only LP's stopping rule) or whether it skips
// the full-effort round (skipsFullRound: past its budget), an LP that defers may so run one
// more round, or a full-effort round it would have skipped; elsewhere it enters the same
// columns, in the same order, as if every search had run. Deferring only once the budget is
// spent (lpConfig.deferLate) is exact everywhere, and TestDeferredSearchesChangeNothing checks
// the owed searches that way. The solver defers from the first round: that spares many more
// searches where families' LP bounds sit below their prices round after round (LPs over
// limits, whose priced LP most of all), and costs exactness — on rare inputs the uncounted
// work lets an LP run a round it would not have, which moves its plan a little either way.

// cannotImprove reports whether family i's LP relaxation (knapsack Refine, exact for at most
// exactItems items) shows that no pattern of it is worth more than its price at vp, so that
// its search can be deferred: its cheap bound (upperBound) is 5–10× loose, and a quick search
// whose surrogate bounds cannot prune runs out of budget without proving anything: where
// most families' LP bounds sit below their price, such searches are most of the LP's work,
// and a Refine costs far less than the search it spares.
func (c *colGen) cannotImprove(i int) bool {
	f := &c.fams[i]
	if (c.cfg.deferLate && c.ks.Work < c.cfg.budget) || len(f.items) > exactItems || c.refVal[i]/f.price > c.cfg.refineAgain {
		return false
	}
	return c.refineBelowPrice(i)
}

// refineBelowPrice reports whether family i's LP-relaxation bound at vp is at most its price
// (within cgTol), and records it in refVal. Where the bound was below the price at the row
// values of its last Refine, and what any pattern can gain since (gainBound) keeps it there,
// that is the answer without a new Refine: most deferred families are checked round after
// round while the duals move a little.
func (c *colGen) refineBelowPrice(i int) bool {
	f := &c.fams[i]
	if c.refAt[i] != nil && c.refVal[i]+c.gainBound(f, c.refAt[i], c.vp) <= f.price*(1+cgTol) {
		return true
	}
	r, n := c.ks.refine(f, c.vp)
	c.refVal[i], c.refAt[i] = r, append(c.refAt[i][:0], c.vp...)
	// The dense simplex: about n pivots of (resources + n rows) × (resources + 2n columns).
	d := len(f.s.alloc)
	c.ks.Work += n * (n + d) * (2*n + d)
	return r <= f.price*(1+cgTol)
}

// gainBound is an upper bound on how much more any pattern of family f is worth at row values
// to than at from: its pods of rows whose value rose, at most each row's most per node, and at
// most each resource's capacity times the best rise per unit of it (as upperBound).
func (c *colGen) gainBound(f *colFamily, from, to []float64) float64 {
	nd := len(f.s.alloc)
	best := append(c.gain[:0], make([]float64, nd)...)
	c.gain = best
	total := 0.0
	for _, it := range f.items {
		rise := to[it.row] - from[it.row]
		if rise <= 0 {
			continue
		}
		total += rise * float64(it.maxk)
		req := c.p.groups[it.g].req
		for d := range best {
			if req[d] > 0 {
				best[d] = max(best[d], rise/float64(req[d]))
			} else {
				best[d] = math.Inf(1)
			}
		}
	}
	c.ks.Work += len(f.items) * nd
	for d, b := range best {
		if !math.IsInf(b, 1) {
			total = min(total, float64(max(f.s.alloc[d], 0))*b)
		}
	}
	return total
}

// deferSearch records that family i's quick search at vp was skipped (see above).
func (c *colGen) deferSearch(i int) {
	c.deferred[i] = true
	c.deferredAt[i] = append(c.deferredAt[i][:0], c.vp...)
}

// settleDeferred runs family i's deferred search, at the row values it was deferred at, when
// its pattern might improve the LP at vp: that is, unless the family's LP relaxation at vp
// shows none of its patterns can (then the pool's answer is the same without it).
func (c *colGen) settleDeferred(i int) {
	if !c.deferred[i] || c.refineBelowPrice(i) {
		return
	}
	f := &c.fams[i]
	pat, _, _ := c.ks.search(f, c.deferredAt[i], c.cfg.quickNodes, c.cfg.quickItems, f.price*(1+cgTol))
	c.last[i], c.deferred[i] = pat, false
}

// pooled returns the few patterns of the column pool that improve the LP at vp, best ratio
// first.
func (c *colGen) pooled() []pattern {
	type cand struct {
		i int
		r float64
	}
	var cs []cand
	for i := range c.last {
		c.settleDeferred(i)
		pat := &c.last[i]
		if pat.s == nil || c.deferred[i] {
			continue
		}
		val := c.worth(pat, c.vp)
		c.ks.Work += len(pat.placed)
		if r := val / c.fams[i].price; r > 1+cgTol {
			cs = append(cs, cand{i, r})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int { return cmp.Or(cmp.Compare(b.r, a.r), cmp.Compare(a.i, b.i)) })
	var out []pattern
	for _, x := range cs[:min(len(cs), c.cfg.pooled)] {
		out = append(out, c.last[x.i])
	}
	return out
}
