package scheduling

import (
	"cmp"
	"slices"
)

// improve lowers the cost of the first packing with a bounded local search, pool by pool:
//
//  1. re-size: every node becomes the cheapest shape that still holds its pods (the last node
//     of a pattern is often part-empty);
//  2. merge: two nodes whose pods fit together in a shape cheaper than the pair become one (or
//     one at the same price: fewer nodes, less DaemonSet overhead);
//  3. absorb: a small node's pods move into the spare room of others;
//  4. move (small plans): some pods of one group move from one node to another when the two,
//     each re-sized, then cost less — 7+1 pods on an 8xl and a large become 4+4 on two 2xl;
//
// until a round changes nothing or the round budget is spent. Both moves only ever lower the
// cost, so the search cannot make a plan worse.
func (p *problem) improve(u *poolUsage, claims []*claim, rounds int) []*claim {
	ls := &localSearch{p: p, u: u}
	// settled are the claims resize left as they were in a pool without resource limits: the
	// moves replace the claims they change, and only the limits (through u) could make a
	// later resize of the same claim find another shape.
	settled := map[*claim]bool{}
	var merges, moves pairsTried
	for round := 0; round < rounds; round++ {
		changed := false
		for _, c := range claims {
			if settled[c] {
				continue
			}
			if ls.resize(c) {
				changed = true
			} else if !anyTrue(c.shape.pool.limited) {
				settled[c] = true
			}
		}
		var merged, absorbed bool
		claims, absorbed = ls.absorbPass(claims)
		claims, merged = ls.mergePass(claims, &merges)
		moved := ls.movePass(claims, &moves)
		if !changed && !merged && !absorbed && !moved {
			break
		}
	}
	return claims
}

// localSearch is one run of improve over one pool's claims: the problem it reads and the
// pool's usage, which its moves keep up to date.
type localSearch struct {
	p *problem
	u *poolUsage
}

// bestShapeFor returns the cheapest shape of c's pool that holds exactly these pods, and the
// offerings they leave, at a price of at most limit, within the pool's limits at usage u. ok is
// false when none does.
func (ls *localSearch) bestShapeFor(c *claim, placed []placement, used vec, limit float64) (best *shape, mask uint64, price float64, ok bool) {
	p, u := ls.p, ls.u
	pl := c.shape.pool
	// Caps do not depend on the shape: check them once.
	for _, x := range placed {
		if !capsHold(p.groups[x.g], placed) {
			return nil, 0, 0, false
		}
	}
	price = limit * (1 + 1e-12)
	for _, s := range pl.shapes {
		if s.minPrice >= price {
			break // shapes are cheapest first
		}
		if s.dominated || !used.fitsIn(s.alloc) {
			continue
		}
		m := fullMask(len(s.offerings))
		fits := true
		for i, x := range placed {
			e, found := p.fit(s, x.g)
			if !found {
				fits = false
				break
			}
			m &= e.mask
			if m == 0 || !p.canJoin(s, e, placed[:i]) {
				fits = false
				break
			}
		}
		if !fits {
			continue
		}
		// Growing past the current shape must still respect the pool's limits.
		if s != c.shape && !limitsAllowSwap(pl, u, c.shape, s) {
			continue
		}
		if pr, _ := s.priceFor(m); pr < price {
			best, mask, price, ok = s, m, pr, true
		}
	}
	return best, mask, price, ok
}

// limitsAllowSwap reports whether re-sizing one node from one shape to another keeps the pool
// within its limits at usage u.
func limitsAllowSwap(pl *pool, u *poolUsage, from, to *shape) bool {
	return swapsWithinLimits(pl, u, from, to, from, from)
}

// resize re-sizes c to the cheapest shape that holds its pods, if cheaper, and updates u.
func (ls *localSearch) resize(c *claim) bool {
	u := ls.u
	s, m, price, ok := ls.bestShapeFor(c, c.placed, c.used, c.price())
	if !ok || price >= c.price()*(1-1e-12) {
		return false
	}
	u.used.sub(c.shape.capacity)
	u.used.add(s.capacity)
	c.used = c.used.clone()
	c.shape, c.mask = s, m
	return true
}

// mergeCandidates bounds the pairs a merge pass looks at: the least efficient nodes.
const mergeCandidates = 64

// mergePass merges pairs of the least efficient nodes into one where a shape holds both for
// less, and updates u. tried holds the pairs the last pass found would not merge, and is
// brought up to date.
func (ls *localSearch) mergePass(claims []*claim, tried *pairsTried) ([]*claim, bool) {
	idx := leastEfficient(claims, mergeCandidates)
	removed := make([]bool, len(claims))
	merged := false
	tried.start(claims, idx)
	var sc mergeScratch
	for ai, a := range idx {
		if removed[a] {
			continue // merged into an earlier node
		}
		for bi := ai + 1; bi < len(idx); bi++ {
			b := idx[bi]
			ca, cb := claims[a], claims[b]
			if removed[b] || ca.shape.pool != cb.shape.pool || tried.skip(ai, bi, ca.shape.pool) {
				continue
			}
			c := ls.tryMerge(ca, cb, &sc)
			if c == nil {
				tried.fail(ai, bi)
				continue
			}
			claims[a] = c
			removed[b] = true
			merged = true
			tried.replaced(ai)
		}
	}
	tried.finish(claims, idx, removed)
	if !merged {
		return claims, false
	}
	out := claims[:0]
	for i, c := range claims {
		if !removed[i] {
			out = append(out, c)
		}
	}
	return out, true
}

// mergeScratch holds a pair's merged pods and use: most pairs do not merge, so they are copied
// out only for a merge made.
type mergeScratch struct {
	placed []placement
	used   vec
}

// tryMerge returns the node holding ca's and cb's pods in a shape that costs no more than the
// two, and updates u for it; nil when there is none.
func (ls *localSearch) tryMerge(ca, cb *claim, sc *mergeScratch) *claim {
	u := ls.u
	sc.placed = append(sc.placed[:0], ca.placed...)
	for _, x := range cb.placed {
		sc.placed = addPlacement(sc.placed, x.g, x.k)
	}
	sc.used = append(sc.used[:0], ca.used...)
	sc.used.add(cb.used)
	// The merged node replaces both: free their capacity for the limit check.
	u.used.sub(cb.shape.capacity)
	s, m, price, ok := ls.bestShapeFor(ca, sc.placed, sc.used, ca.price()+cb.price()+1e-12)
	if !ok || price > ca.price()+cb.price()+1e-12 {
		u.used.add(cb.shape.capacity)
		return nil
	}
	u.used.sub(ca.shape.capacity)
	u.used.add(s.capacity)
	u.nodes--
	return &claim{shape: s, mask: m, used: sc.used.clone(), placed: slices.Clone(sc.placed), value: ca.value + cb.value}
}

// pairsTried is what one pass over pairs of nodes (merge, move) leaves the next of its kind:
// its candidates, and the pairs of them (in the order tried) that came to nothing. The same
// two nodes come to nothing again where no limit reads the pool's usage: the claims improve
// works on are replaced, never edited, except by resize, which changes a claim's shape and
// mask (kept here to tell). Where a limit does, a pair refused for want of room may
// succeed once another change has freed some, so it is tried again
// (TestMergeRetriedWhereALimitFreedRoom).
type pairsTried struct {
	nodes  []triedNode
	failed [mergeCandidates]uint64 // bit j of failed[i]: nodes[i], then nodes[j], did nothing
	// The pass under way: its candidates' positions among nodes (-1: none), and its pairs
	// that did nothing, by position in its candidates.
	was []int
	now [mergeCandidates]uint64
}

type triedNode struct {
	c     *claim
	shape *shape
	mask  uint64
}

// start begins a pass over the candidates claims[idx[i]].
func (t *pairsTried) start(claims []*claim, idx []int) {
	t.was = slices.Grow(t.was[:0], len(idx))
	for _, a := range idx {
		c, w := claims[a], -1
		for j, n := range t.nodes {
			if n.c == c && n.shape == c.shape && n.mask == c.mask {
				w = j
				break
			}
		}
		t.was = append(t.was, w)
	}
	t.now = [mergeCandidates]uint64{}
}

// skip reports whether the pair of candidates i, j (in that order) of pool pl did nothing in
// the last pass, and so will do nothing now.
func (t *pairsTried) skip(i, j int, pl *pool) bool {
	wi, wj := t.was[i], t.was[j]
	if wi < 0 || wj < 0 || t.failed[wi]&(1<<uint(wj)) == 0 || anyTrue(pl.limited) {
		return false
	}
	t.fail(i, j)
	return true
}

// fail notes that the pair of candidates i, j did nothing.
func (t *pairsTried) fail(i, j int) { t.now[i] |= 1 << uint(j) }

// replaced notes that candidate i is a new node: what was noted of the one it replaces says
// nothing of it.
func (t *pairsTried) replaced(i int) {
	t.was[i] = -1
	t.now[i] = 0
	for r := range t.now {
		t.now[r] &^= 1 << uint(i)
	}
}

// finish keeps the pass's candidates still planned and the pairs of them that did nothing.
func (t *pairsTried) finish(claims []*claim, idx []int, removed []bool) {
	t.nodes = t.nodes[:0]
	for _, a := range idx {
		var n triedNode // a node merged into another: matches no claim
		if c := claims[a]; removed == nil || !removed[a] {
			n = triedNode{c: c, shape: c.shape, mask: c.mask}
		}
		t.nodes = append(t.nodes, n)
	}
	t.failed = t.now
}

// leastEfficient returns the indexes of the n claims of least worth per unit of price (ties:
// in claims' order), in ascending index order.
func leastEfficient(claims []*claim, n int) []int {
	idx := make([]int, len(claims))
	eff := make([]float64, len(claims))
	for i, c := range claims {
		idx[i] = i
		eff[i] = c.value / c.price()
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(eff[a], eff[b]) })
	idx = idx[:min(len(idx), n)]
	slices.Sort(idx)
	return idx
}

// capsHold reports whether a placement respects g's per-node and shared caps.
func capsHold(g *group, placed []placement) bool {
	if g.perNode > 0 && placedOf(placed, g.id) > g.perNode {
		return false
	}
	for _, c := range g.caps {
		used := int64(0)
		for _, x := range placed {
			if c.ids[x.g] {
				used += x.k
			}
		}
		if used > c.limit {
			return false
		}
	}
	return true
}

// absorbPass empties nodes into the spare room of others: a node whose pods all fit, without
// resizing anything, into nodes already planned is dropped. It matters where constraints force
// many part-empty nodes (one pod per node for anti-affinity): their room takes the pods that
// would otherwise get nodes of their own. Smallest nodes are emptied first, into the fullest
// nodes that take them. u loses the nodes emptied.
func (ls *localSearch) absorbPass(claims []*claim) ([]*claim, bool) {
	p, u := ls.p, ls.u
	order := make([]int, len(claims))
	pods := make([]int64, len(claims))
	for i, c := range claims {
		order[i] = i
		pods[i] = podCount(c)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(pods[a], pods[b]) })
	if len(order) > absorbSources {
		order = order[:absorbSources]
	}
	removed := make([]bool, len(claims))
	// Free cpu and memory per node: a quick filter before the exact checks (the scan over
	// every node is the cost of this pass).
	free := make([]cpuMem, len(claims))
	for j, c := range claims {
		free[j] = freeCPUMem(c.shape, c.used)
	}
	// No node has more room than the most any had at the start: the moves only fill nodes.
	most := mostFree(free)
	changed := false
	for _, i := range order {
		src := claims[i]
		if removed[i] || podCount(src) > absorbMaxPods || !ls.roomFor(src, most) {
			continue
		}
		staged, ok := ls.stageAbsorb(claims, i, removed, free)
		if !ok {
			continue
		}
		for _, m := range staged {
			d := claims[m.dst]
			v := 0.0
			for _, x := range m.placed {
				v += float64(x.k) * p.groups[x.g].value
			}
			claims[m.dst] = &claim{shape: d.shape, mask: m.mask, used: m.used, placed: m.placed, value: v}
			free[m.dst] = freeCPUMem(d.shape, m.used)
		}
		removed[i] = true
		u.used.sub(src.shape.capacity)
		u.nodes--
		changed = true
	}
	if !changed {
		return claims, false
	}
	out := claims[:0]
	for i, c := range claims {
		if !removed[i] {
			out = append(out, c)
		}
	}
	return out, true
}

// cpuMem is a node's free cpu and memory and its pool, absorbPass's quick filter: read from
// one array, without loading the node's claim and shape for the many nodes it rules out.
type cpuMem struct {
	cpu, mem int64
	pool     *pool
}

// mostFree returns the most free cpu and memory of any node (not together on one node).
func mostFree(free []cpuMem) cpuMem {
	var most cpuMem
	for _, f := range free {
		most.cpu, most.mem = max(most.cpu, f.cpu), max(most.mem, f.mem)
	}
	return most
}

// roomFor reports whether each of c's pods asks no more cpu and memory than most: a node
// with a pod that does cannot be emptied.
func (ls *localSearch) roomFor(c *claim, most cpuMem) bool {
	p := ls.p
	for _, x := range c.placed {
		if r := p.groups[x.g].req; r[dimCPU] > most.cpu || r[dimMemory] > most.mem {
			return false
		}
	}
	return true
}

func freeCPUMem(s *shape, used vec) cpuMem {
	return cpuMem{s.alloc[dimCPU] - used[dimCPU], s.alloc[dimMemory] - used[dimMemory], s.pool}
}

func podCount(c *claim) int64 { return podsIn(c.placed) }

// podsIn returns how many pods a node's placements hold.
func podsIn(placed []placement) int64 {
	n := int64(0)
	for _, x := range placed {
		n += x.k
	}
	return n
}

// absorbMove is node dst as it would be with some of another node's pods moved onto it.
type absorbMove struct {
	dst    int
	placed []placement
	used   vec
	mask   uint64
}

// stageAbsorb moves claim i's pods, on copies, into the spare room of the other nodes of its
// pool that are not removed; ok is false when some pod finds no room. Each node is copied
// only once a pod actually moves there; there is one move per destination. The moves and the
// one-node groups' destinations are made only when needed: most tries stage nothing.
func (ls *localSearch) stageAbsorb(claims []*claim, i int, removed []bool, free []cpuMem) (staged []*absorbMove, ok bool) {
	p := ls.p
	src := claims[i]
	// Pods that must share one node (required hostname affinity to their own group) move
	// together, to one node.
	var singleDst map[*singleState]int
	for _, x := range src.placed {
		left := x.k
		g := p.groups[x.g]
		for j := range claims {
			if left == 0 {
				break
			}
			if f := &free[j]; f.cpu < g.req[dimCPU] || f.mem < g.req[dimMemory] || f.pool != src.shape.pool || j == i || removed[j] {
				continue
			}
			dst := claims[j]
			// Check against the staged copy if there is one, the node itself otherwise.
			m := stagedAt(staged, j)
			placed, used, mask := dst.placed, dst.used, dst.mask
			if m != nil {
				placed, used, mask = m.placed, m.used, m.mask
			}
			e, fits := p.fit(dst.shape, x.g)
			if !fits || mask&e.mask == 0 {
				continue
			}
			k := maxCopiesLeft(g.req, dst.shape.alloc, used, left)
			if k <= 0 {
				continue
			}
			if k = min(k, g.room(placed, "")); k <= 0 || !p.canJoin(dst.shape, e, placed) {
				continue
			}
			if g.single != nil {
				if d, ok := singleDst[g.single]; k < left || (ok && d != j) {
					continue
				}
				if singleDst == nil {
					singleDst = map[*singleState]int{}
				}
				singleDst[g.single] = j
			}
			if m == nil {
				m = &absorbMove{dst: j, placed: slices.Clone(dst.placed), used: dst.used.clone(), mask: dst.mask}
				staged = append(staged, m)
			}
			m.placed = addPlacement(m.placed, x.g, k)
			m.used.addScaled(g.req, k)
			m.mask &= e.mask
			left -= k
		}
		if left > 0 {
			return nil, false
		}
	}
	return staged, true
}

// stagedAt returns the move staged to node j, nil if none: a node's few pods go to a few nodes.
func stagedAt(staged []*absorbMove, j int) *absorbMove {
	for _, m := range staged {
		if m.dst == j {
			return m
		}
	}
	return nil
}

// absorbMaxPods bounds the nodes absorbPass tries to empty: small ones, where it pays; and
// absorbSources how many it tries per round (each tries every other node as a destination).
const (
	absorbMaxPods = 8
	absorbSources = 256
)

// moveLimit is the most nodes a plan may have for movePass to run, and moveCandidates how many
// of the least efficient it pairs up: the pass is quadratic in them.
const (
	moveLimit      = 200
	moveCandidates = 32
)

// movePass tries, for pairs of the least efficient nodes, moving some of the first's pods to
// the second, each node re-sized to the cheapest shape that holds what it then has; it applies
// the best move per pair that lowers their total price, and updates u. tried holds the pairs
// the last pass found no move for, and is brought up to date.
func (ls *localSearch) movePass(claims []*claim, tried *pairsTried) bool {
	if len(claims) > moveLimit {
		return false
	}
	idx := leastEfficient(claims, moveCandidates)
	changed := false
	tried.start(claims, idx)
	var sc moveScratch
	for ai, a := range idx {
		for bi, b := range idx {
			pl := claims[a].shape.pool
			if a == b || pl != claims[b].shape.pool || tried.skip(ai, bi, pl) {
				continue
			}
			if !ls.tryMove(claims, a, b, &sc) {
				tried.fail(ai, bi)
				continue
			}
			changed = true
			tried.replaced(ai)
			tried.replaced(bi)
		}
	}
	tried.finish(claims, idx, nil)
	return changed
}

// moveScratch is movePass's working memory, reused from pair to pair: most pairs move nothing,
// so only a move made is copied out of it.
type moveScratch struct {
	units  []moveUnit
	pa, pb []placement // the two nodes' pods as the shift goes
	live   []placement // pa without its emptied placements
	ua, ub vec
	best   pairMove // the cheapest pair found; its slices are scratch too
	found  bool
}

// moveUnit is one pod tryMove may move: its group, and the size it is ordered by.
type moveUnit struct {
	g    int
	size int64
}

// tryMove looks for a move from claims[a] to claims[b] and applies the best that pays. The
// moves tried are the prefixes of a's pods taken one at a time, largest first and then
// smallest first (a's pods may be of several groups: 7 pods on an 8xl become 4 and 3 only by
// moving three together).
func (ls *localSearch) tryMove(claims []*claim, a, b int, sc *moveScratch) bool {
	p, u := ls.p, ls.u
	ca, cb := claims[a], claims[b]
	n := int64(0)
	for _, x := range ca.placed {
		n += min(x.k, moveUnits)
	}
	if n < 2 || n > 2*moveUnits {
		return false
	}
	sc.units = sc.units[:0]
	for _, x := range ca.placed {
		req := p.groups[x.g].req
		for range min(x.k, moveUnits) {
			sc.units = append(sc.units, moveUnit{g: x.g, size: req[dimCPU] + req[dimMemory]>>20})
		}
	}
	before := ca.price() + cb.price()
	sc.found = false
	// Each sort is stable, so equal sizes keep a's order both ways.
	slices.SortStableFunc(sc.units, func(x, y moveUnit) int { return cmp.Compare(y.size, x.size) })
	ls.shiftPods(ca, cb, sc.units[:len(sc.units)-1], before, sc)
	slices.SortStableFunc(sc.units, func(x, y moveUnit) int { return cmp.Compare(x.size, y.size) })
	ls.shiftPods(ca, cb, sc.units[:len(sc.units)-1], before, sc)
	if !sc.found {
		return false
	}
	best := &sc.best
	u.used.sub(ca.shape.capacity)
	u.used.sub(cb.shape.capacity)
	u.used.add(best.sa.capacity)
	u.used.add(best.sb.capacity)
	claims[a] = &claim{shape: best.sa, mask: best.ma, used: best.ua.clone(), placed: slices.Clone(best.pa), value: best.va}
	claims[b] = &claim{shape: best.sb, mask: best.mb, used: best.ub.clone(), placed: slices.Clone(best.pb), value: best.vb}
	return true
}

// pairMove is two nodes re-sized after pods moved from one to the other.
type pairMove struct {
	sa, sb        *shape
	ma, mb        uint64
	pa, pb        []placement
	ua, ub        vec
	va, vb, price float64
}

// shiftPods moves the pods of units from ca to cb one at a time, re-sizing both nodes after
// each, and records in sc.best the cheapest pair found below before (and below sc.best's price
// if sc.found).
//
// Once cb finds no shape under the limit it never will again: each step adds a pod to it, which
// only removes shapes (fit, offerings, conflicts, caps) and offerings, and the limit only
// falls. So the shift stops there.
func (ls *localSearch) shiftPods(ca, cb *claim, units []moveUnit, before float64, sc *moveScratch) {
	p, u := ls.p, ls.u
	pl := ca.shape.pool
	sc.pa, sc.pb = append(sc.pa[:0], ca.placed...), append(sc.pb[:0], cb.placed...)
	sc.ua, sc.ub = append(sc.ua[:0], ca.used...), append(sc.ub[:0], cb.used...)
	va, vb := ca.value, cb.value
	for _, un := range units {
		gr := p.groups[un.g]
		sc.pa = addPlacement(sc.pa, un.g, -1)
		sc.pb = addPlacement(sc.pb, un.g, 1)
		sc.ua.addScaled(gr.req, -1)
		sc.ub.addScaled(gr.req, 1)
		va -= gr.value
		vb += gr.value
		if p.splitsSingle(sc.pa, sc.pb) {
			continue // pods that must share one node are on both
		}
		limit := before
		if sc.found {
			limit = sc.best.price
		}
		sb, mb, prb, ok := ls.bestShapeFor(cb, sc.pb, sc.ub, limit)
		if !ok {
			return
		}
		sc.live = appendNonEmpty(sc.live[:0], sc.pa)
		sa, ma, pra, ok := ls.bestShapeFor(ca, sc.live, sc.ua, limit-prb)
		if !ok || pra+prb >= limit*(1-1e-9) || !swapsWithinLimits(pl, u, ca.shape, sa, cb.shape, sb) {
			continue
		}
		sc.found = true
		b := &sc.best
		b.sa, b.sb, b.ma, b.mb, b.va, b.vb, b.price = sa, sb, ma, mb, va, vb, pra+prb
		b.pa, b.pb = append(b.pa[:0], sc.live...), append(b.pb[:0], sc.pb...)
		b.ua, b.ub = append(b.ua[:0], sc.ua...), append(b.ub[:0], sc.ub...)
	}
}

// moveUnits bounds the pods per group, and twice it the pods per node, that movePass moves.
const moveUnits = 8

// appendNonEmpty appends to dst the placements of pl of at least one pod.
func appendNonEmpty(dst, pl []placement) []placement {
	for _, x := range pl {
		if x.k > 0 {
			dst = append(dst, x)
		}
	}
	return dst
}

// swapsWithinLimits reports whether re-sizing two nodes at once (from1→to1, from2→to2) keeps
// the pool within its limits at usage u.
func swapsWithinLimits(pl *pool, u *poolUsage, from1, to1, from2, to2 *shape) bool {
	for i, lim := range pl.limited {
		if lim && u.used[i]-from1.capacity[i]-from2.capacity[i]+to1.capacity[i]+to2.capacity[i] > pl.limit[i] {
			return false
		}
	}
	return true
}
