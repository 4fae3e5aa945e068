package knapsack

import "math"

// dfs explores items i… with the current value; it reports true when the node budget ran out.
// When the node is pruned by a surrogate's whole fill, k.prunedBy, k.prunedAt and k.prunedStop
// say which, what it came to and the density where it stopped (for surelyPruned); else
// k.prunedBy is -1.
func (k *Solver) dfs(i int, value float64) bool {
	k.nodes++
	k.keepBest(value)
	k.prunedBy = -1
	if i == len(k.items) || k.prunes(i, value, max(k.bestV*(1+1e-12), k.target)) {
		return false
	}
	if k.nodes > k.budget {
		return true
	}
	it := &k.items[i]
	kmax := MaxCopies(k.reqOf(i), k.free, min(it.maxk, k.room(i)))
	if kmax > 0 && !k.canJoin(i) {
		kmax = 0
	}
	// The last item adds value and nothing after it needs its room: fewer copies than fit are
	// never better, and its one child is a leaf.
	if i == len(k.items)-1 {
		k.leaf(i, value, kmax)
		return false
	}
	if kmax > 0 {
		k.push(i, kmax)
	}
	out := k.counts(i, value, kmax)
	k.prunedBy = -1
	return out
}

// leaf is the visit of the search node below the last item i with kmax copies of it: what
// dfs would do there (count it, keep it when best), without taking the copies and giving them
// back.
// (k.prunedBy is already -1: dfs set it, and returned had prunes changed it.)
func (k *Solver) leaf(i int, value float64, kmax int64) {
	k.nodes++
	if k.keepBest(value+float64(kmax)*k.items[i].v) && kmax > 0 {
		k.best = append(k.best, pick{src: k.items[i].src, j: i, n: kmax})
	}
}

// keepBest keeps the current partial set as the best, worth value, when it is worth more than
// the best so far, and reports whether it did.
func (k *Solver) keepBest(value float64) bool {
	if value > k.bestV+1e-15 {
		k.bestV = value
		k.best = append(k.best[:0], k.cur...)
		return true
	}
	return false
}

// counts explores item i's counts from kmax down to 0, kmax copies in the partial set: the
// copies are taken once and given back one at a time (drop), rather than taken anew for every
// count. Counts that surelyPruned shows the search would prune are counted, not visited.
func (k *Solver) counts(i int, value float64, kmax int64) bool {
	it := &k.items[i]
	lastBy, lastC, lastAt := -1, int64(0), 0.0
	for c := kmax; ; {
		out := k.dfs(i+1, value+float64(c)*it.v)
		if out || c == 0 {
			if c > 0 {
				k.pop(i, c)
			}
			return out
		}
		skip := int64(0)
		if k.skips && k.prunedBy >= 0 {
			c1 := int64(-1)
			if k.prunedBy == lastBy {
				c1 = lastC
			}
			skip = k.surelyPruned(i, c, k.prunedBy, c1, lastAt, k.prunedAt, k.prunedStop)
		}
		lastBy, lastC, lastAt = k.prunedBy, c, k.prunedAt
		k.nodes += int(skip)
		if skip == c {
			if c > 0 {
				k.pop(i, c)
			}
			return false
		}
		k.give(i, skip+1)
		c -= skip + 1
	}
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
		value := 0.0
		for _, f := range k.surr[si].fill {
			it := &k.items[f.j]
			c := MaxCopies(k.reqOf(f.j), k.free, min(it.maxk, k.room(f.j)))
			if c <= 0 || !k.canJoin(f.j) {
				continue
			}
			k.push(f.j, c)
			value += float64(c) * it.v
		}
		k.keepBest(value)
		// Back to the empty set the search starts from: the whole node free, no cap used.
		k.resetFree()
		k.cur = k.cur[:0]
		clear(k.capUsed)
		k.resetCapLeft()
	}
	k.Work += len(k.surr) * len(k.items) * 4
}

// reqOf is loaded item j's request.
func (k *loaded) reqOf(j int) []int64 {
	return k.req[j*k.nd : (j+1)*k.nd : (j+1)*k.nd]
}

// push adds c copies of loaded item i to the partial set: their room taken, their caps used.
func (k *Solver) push(i int, c int64) {
	addScaled(k.free, k.reqOf(i), -c)
	k.cur = append(k.cur, pick{src: k.items[i].src, j: i, n: c})
	k.useCaps(i, c)
}

// pop undoes push(i, c), which must be the last push still in the partial set.
func (k *Solver) pop(i int, c int64) {
	addScaled(k.free, k.reqOf(i), c)
	k.cur = k.cur[:len(k.cur)-1]
	k.useCaps(i, -c)
}

// give gives back n copies of loaded item i, the last push still in the partial set (n no
// more than it holds); the pick goes when its last copy does. The room is counted in
// integers, so it is exactly what taking n copies fewer in the first place leaves.
func (k *Solver) give(i int, n int64) {
	addScaled(k.free, k.reqOf(i), n)
	last := &k.cur[len(k.cur)-1]
	if last.n -= n; last.n == 0 {
		k.cur = k.cur[:len(k.cur)-1]
	}
	k.useCaps(i, -n)
}

// useCaps counts n more copies of loaded item i against its shared caps.
func (k *loaded) useCaps(i int, n int64) {
	for _, ci := range k.itemCaps[i] {
		k.capUsed[ci] += n
		k.capLeft[ci] = float64(max(k.prob.CapLimits[k.caps[ci]]-k.capUsed[ci], 0))
	}
}

// room is how many copies of loaded item i its shared caps still admit beside the partial
// set (its own per-node cap is in its Max).
func (k *loaded) room(i int) int64 {
	r := int64(math.MaxInt64)
	for _, ci := range k.itemCaps[i] {
		r = min(r, k.prob.CapLimits[k.caps[ci]]-k.capUsed[ci])
	}
	return max(r, 0)
}

// canJoin reports whether loaded item i may join the items of the partial set. Problem.Conflict
// is asked once per pair and problem (see conf).
func (k *Solver) canJoin(i int) bool {
	conflict := k.prob.Conflict
	if conflict == nil {
		return true
	}
	src, n := k.items[i].src, len(k.items)
	for _, x := range k.cur {
		if x.src == src {
			continue
		}
		if len(k.conf) == 0 {
			if conflict(src, x.src) {
				return false
			}
			continue
		}
		m := &k.conf[i*n+x.j]
		if *m == 0 {
			*m = 1
			if conflict(src, x.src) {
				*m = 2
			}
		}
		if *m == 2 {
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
	v = v[:len(req)]
	for d, r := range req {
		v[d] += c * r
	}
}
