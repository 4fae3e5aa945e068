package knapsack

import "math"

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
			if pass, at, stop := k.fillPasses(&k.surr[si], i, value, best); !pass {
				k.prunedBy, k.prunedAt, k.prunedStop = si, at, stop
				return true
			}
		}
		return false
	}
	for si := range k.surr {
		sg := &k.surr[si]
		room := k.roomOf(sg)
		add, lambda, capped, feasible, rest := k.greedyFill(sg, i, room)
		if capped {
			if feasible && !k.Shortcuts.NoSettle && !sg.negative {
				// Settled without cappedBound when the fill's estimate of it is far from best
				// (see settle.go).
				dmax, _ := sg.scaleAt(i)
				m := marginScale * (math.Abs(best) + math.Abs(value) + math.Abs(add) + max(room, 0)*dmax + k.wholeV[i])
				est := value + add + rest
				if est-m > best {
					continue
				}
				if est+m < best {
					return true
				}
			}
			add = k.cappedBound(sg, i, room, lambda)
		}
		if value+add <= best {
			return true
		}
	}
	return false
}

// fillPasses reports whether value plus boundWith's greedy fill of items i… under sg passes
// best; for items without shared caps only. When it does not, it returns value plus the
// whole fill as well, and the fill's stop density: the value per weight of the first item it
// did not take whole, 0 when it took every item whole.
func (k *Solver) fillPasses(sg *surrogate, i int, value, best float64) (bool, float64, float64) {
	left, add := k.roomOf(sg), 0.0
	fill := sg.from(i)
	stop := len(fill)
	for x := range fill {
		f := &fill[x]
		if f.j < i {
			continue
		}
		if value+add > best {
			return true, 0, 0
		}
		if f.w <= 0 {
			add += f.fullV
			continue
		}
		if left <= 0 {
			stop = min(stop, x)
			break
		}
		if left >= f.whole {
			add += f.fullV
			left -= f.fullW
			continue
		}
		stop = min(stop, x)
		take := min(f.lim, left/f.w)
		add += take * f.v
		left -= take * f.w
	}
	if value+add > best {
		return true, 0, 0
	}
	if stop == len(fill) {
		return false, value + add, 0
	}
	return false, value + add, fill[stop].v / fill[stop].w
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
	room := k.roomOf(sg)
	add, lambda, capped, _, _ := k.greedyFill(sg, i, room)
	if !capped {
		return add
	}
	return k.cappedBound(sg, i, room, lambda)
}

// greedyFill fills room with items i… by value per surrogate weight, caps ignored: it returns
// the value added, the critical density λ where the room ran out, and whether any item it
// read has a shared cap (then the value is not a bound); and for settling cappedBound without
// computing it (settle.go), whether every cap first of a capped item it read has room for all
// the copies of the items from i on that count against it first, and what the copies it left
// out of the items it read are worth at λ, Σ rest_j·(v_j − λ·w_j).
func (k *Solver) greedyFill(sg *surrogate, i int, room float64) (add, lambda float64, capped, feasible bool, rest float64) {
	left := room
	fill := sg.from(i)
	feasible = true
	restV, restW := 0.0, 0.0
	for x := range fill {
		f := &fill[x]
		if f.j < i {
			continue
		}
		if f.capped {
			capped = true
			feasible = feasible && k.capFrom[i*len(k.caps)+int(f.cap)] <= k.capLeft[f.cap]
		}
		if f.w <= 0 {
			add += f.fullV
			continue
		}
		if left <= 0 {
			lambda = f.v / f.w
			break
		}
		if left >= f.whole {
			add += f.fullV
			left -= f.fullW
		} else {
			take := min(f.lim, left/f.w)
			add += take * f.v
			left -= take * f.w
			if r := f.lim - take; r > 0 {
				restV += r * f.v
				restW += r * f.w
			}
		}
		if left <= 0 {
			lambda = f.v / f.w
		}
	}
	return add, lambda, capped, feasible, restV - lambda*restW
}

// cappedBound is boundWith's Lagrangian at density lambda. It takes from k.capLeft, the room
// each shared cap has left, and puts back what it took before it returns.
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
		c := k.firstCap[j]
		if c < 0 {
			total += r * float64(it.maxk)
			continue
		}
		k.red = append(k.red, capItem{c: c, r: r, n: float64(it.maxk)})
	}
	// Each cap takes its best units first: repeatedly the most valuable member left whose cap
	// has room. That is one pass over the members by reduced value, best first (ties in item
	// order, as the repeated choice breaks them): a member passed over for a full cap finds it
	// full later too. (With a reduced value not a number, the order is not total: choose anew
	// each time.)
	k.taken = k.taken[:0]
	if sortByReduced(k.red) {
		total = k.takeInOrder(total)
	} else {
		total = k.takeBestEach(total)
	}
	k.putBack()
	return total
}

// takeInOrder adds to total what the capped members take, one pass in k.red's order.
func (k *Solver) takeInOrder(total float64) float64 {
	for xi := range k.red {
		x := &k.red[xi]
		if x.n <= 0 || k.capLeft[x.c] <= 0 {
			continue
		}
		take := min(x.n, k.capLeft[x.c])
		total += take * x.r
		k.taken = append(k.taken, capItem{c: x.c, n: k.capLeft[x.c]})
		k.capLeft[x.c] -= take
	}
	return total
}

// takeBestEach is cappedBound's choice made anew each time: the most valuable member left
// whose cap has room takes what it can, until none is left.
func (k *Solver) takeBestEach(total float64) float64 {
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
		k.taken = append(k.taken, capItem{c: x.c, n: k.capLeft[x.c]})
		k.capLeft[x.c] -= take
		x.n = 0
	}
}

// putBack gives the caps back the room the takes used, latest first (the old values, not
// sums: exact).
func (k *Solver) putBack() {
	for t := len(k.taken) - 1; t >= 0; t-- {
		k.capLeft[k.taken[t].c] = k.taken[t].n
	}
	k.taken = k.taken[:0]
}

// sortByReduced sorts red by reduced value, greatest first, stably (there are a few), and
// reports whether every value is a number.
func sortByReduced(red []capItem) bool {
	for a := range red {
		x := red[a]
		if x.r != x.r {
			return false
		}
		b := a
		for ; b > 0 && red[b-1].r < x.r; b-- {
			red[b] = red[b-1]
		}
		red[b] = x
	}
	return true
}

// capItem is a capped item's reduced value r and count limit n under cap c, for boundWith;
// in cappedBound's k.taken, a cap and the room n it had before a take.
type capItem struct {
	c    int
	r, n float64
}
