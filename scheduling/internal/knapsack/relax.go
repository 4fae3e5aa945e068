package knapsack

import (
	"cmp"
	"math"
	"slices"
)

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

// lagrangian is L(μ) for lagrangeBound: one coordinate per resource of k.dims, then one per
// shared cap.
type lagrangian struct {
	items   []kItem
	limit   []float64 // per coordinate: the capacity or the cap's limit
	coefs   []float64 // item j's use of coordinate c at j*len(limit)+c
	mu      []float64
	reduced []float64 // per item, its value less μ times its use, as of the last eval
	pts     []breakpoint
}

type breakpoint struct{ t, w float64 }

// newLagrangian sets up k's L(μ) at μ = 0 for the loaded items, in buffers reused across calls.
// Its resource coordinates are k.dims': on any other resource no item has a use, so μ stays 0
// there and L does not move — the descent would spend a step on it for nothing.
func (k *Solver) newLagrangian(alloc []int64) *lagrangian {
	p, l := k.prob, &k.lag
	nd := k.nd
	n := nd + len(k.caps)
	l.items = k.items
	l.limit = append(l.limit[:0], make([]float64, n)...)
	l.coefs = append(l.coefs[:0], make([]float64, len(k.items)*n)...)
	l.mu = append(l.mu[:0], make([]float64, n)...)
	l.reduced = append(l.reduced[:0], make([]float64, len(k.items))...)
	for c := range l.limit {
		if c < nd {
			l.limit[c] = float64(max(alloc[k.dims[c]], 0))
		} else {
			l.limit[c] = float64(max(p.CapLimits[k.caps[c-nd]], 0))
		}
	}
	for j := range k.items {
		req := k.reqOf(j)
		for d := 0; d < nd; d++ {
			l.coefs[j*n+d] = float64(req[d])
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

// lpScratch is lpBound's scratch: the constraint rows (flat), their right-hand sides, the
// objective, and the simplex's tableau.
type lpScratch struct {
	simplex
	a, b, c []float64
}

// lpBound is the exact fractional relaxation of the knapsack (every resource, every count cap),
// for when the search ran out of budget: on big nodes it is nearly the integer optimum.
func (k *Solver) lpBound(alloc []int64) float64 {
	n := len(k.items)
	if n == 0 || n > 64 {
		return math.Inf(1)
	}
	lp := &k.lp
	lp.a, lp.b, lp.c = lp.a[:0], lp.b[:0], lp.c[:0]
	for d, full := range k.dims {
		c := alloc[full]
		if !k.weighs(d) {
			continue
		}
		// Scale rows to capacity 1 so milli-byte memory and pod counts stay comparable.
		for j := range k.items {
			lp.a = append(lp.a, float64(k.req[j*k.nd+d])/float64(max(c, 1)))
		}
		lp.b = append(lp.b, float64(max(c, 0))/float64(max(c, 1)))
	}
	for j, it := range k.items {
		lp.c = append(lp.c, it.v)
		lp.a = append(lp.a, make([]float64, n)...)
		lp.a[len(lp.a)-n+j] = 1
		lp.b = append(lp.b, float64(it.maxk))
	}
	for ci, cp := range k.caps {
		for j := range k.items {
			lp.a = append(lp.a, 0)
			if slices.Contains(k.itemCaps[j], ci) {
				lp.a[len(lp.a)-1] = 1
			}
		}
		lp.b = append(lp.b, float64(max(k.prob.CapLimits[cp], 0)))
	}
	return lp.lpMax(lp.c, lp.a, lp.b) * (1 + 1e-9)
}
