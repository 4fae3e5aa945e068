package scheduling

import (
	"cmp"
	"math"
	"slices"

	"github.com/nodeplan/nodeplan"
)

// claim is a planned new node: a shape (the type it is costed at), the offerings its pods allow,
// and its pods by group.
type claim struct {
	shape  *shape
	mask   uint64
	used   vec
	placed []placement
	value  float64
}

func (c *claim) price() float64 {
	pr, _ := c.shape.priceFor(c.mask)
	return pr
}

// fitIndex finds a group's entry in a shape's fit list: dense when the problem is small enough,
// a map otherwise. The dense index is by group, then shape: a claim's launch request asks, shape
// after shape, whether each of its few groups fits (claimCandidates), so each group's row is
// read in order.
type fitIndex struct {
	dense  [][]int32 // [group][shape] → entry index+1 (0 = none)
	all    []int32   // dense's backing array
	sparse []map[int]int32
}

const denseFitLimit = 4 << 20

// buildFitIndex indexes p.byShape. It runs again each time the fit lists are re-sorted
// (orderFits, on every new set of pod values), so it reuses the index it built before when
// the problem's size is the same: a fresh one was megabytes of garbage per sort on the drawn
// mixes.
func (p *problem) buildFitIndex() {
	if len(p.shapes)*len(p.groups) <= denseFitLimit {
		p.fits.sparse = nil
		p.buildDenseFitIndex()
		return
	}
	p.fits.dense, p.fits.all = nil, nil
	if len(p.fits.sparse) != len(p.shapes) {
		p.fits.sparse = make([]map[int]int32, len(p.shapes))
	}
	for s := range p.shapes {
		m := p.fits.sparse[s]
		if m == nil {
			m = make(map[int]int32, len(p.byShape[s]))
			p.fits.sparse[s] = m
		}
		clear(m)
		for i, e := range p.byShape[s] {
			m[int(e.g)] = int32(i + 1)
		}
	}
}

func (p *problem) buildDenseFitIndex() {
	n := len(p.shapes)
	if len(p.fits.dense) != len(p.groups) || len(p.fits.all) != len(p.groups)*n {
		p.fits.dense = make([][]int32, len(p.groups))
		p.fits.all = make([]int32, len(p.groups)*n)
		for g := range p.groups {
			p.fits.dense[g] = p.fits.all[g*n : (g+1)*n : (g+1)*n]
		}
	} else {
		clear(p.fits.all)
	}
	for s := range p.shapes {
		for i, e := range p.byShape[s] {
			p.fits.dense[e.g][s] = int32(i + 1)
		}
	}
}

// fitAt returns where group g's entry is in shape s's fit list, plus one (0: none).
func (p *problem) fitAt(s *shape, g int) int32 {
	if p.fits.dense != nil {
		return p.fits.dense[g][s.idx]
	}
	return p.fits.sparse[s.idx][g]
}

// fit returns group g's entry on shape s.
func (p *problem) fit(s *shape, g int) (fitEntry, bool) {
	i := p.fitAt(s, g)
	if i == 0 {
		return fitEntry{}, false
	}
	return p.byShape[s.idx][i-1], true
}

// orderFits sorts every shape's fit list by group value, largest first: the order a node is
// filled in (first-fit decreasing by worth, which tracks size across dimensions).
//
// The order is one total order of the groups (by value, then group), so the groups are ranked
// once and the lists filled again in that order (fillFits): linear in the entries, where
// sorting each list was most of a drawn mix's setValues.
func (p *problem) orderFits() {
	order := make([]int, len(p.groups))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(p.groups[b].value, p.groups[a].value), cmp.Compare(a, b))
	})
	p.fillFits(order)
	p.buildFitIndex()
}

// nodeState is a node being filled.
type nodeState struct {
	free   vec
	mask   uint64
	placed []placement
	value  float64
	// blocks holds the groups the node's pods conflict with, so that the fills check a
	// conflict with one load instead of searching each placed group's conflicts (packPool sets
	// it on the one nodeState it fills).
	blocks *conflictStamps
}

// conflictStamps marks, for the node being filled, the groups that may not join it because
// of a conflict with a pod on it: group h is blocked when at[h] is the node's stamp. A new
// node takes a new stamp, so nothing is cleared between nodes.
type conflictStamps struct {
	by   [][]int // per group, the groups whose conflicts name it (conflictedBy)
	at   []uint32
	node uint32
}

func (p *problem) newConflictStamps() *conflictStamps {
	return &conflictStamps{by: conflictedBy(p.groups), at: make([]uint32, len(p.groups))}
}

// reset starts a new, empty node.
func (b *conflictStamps) reset() {
	b.node++
	if b.node == 0 { // wrapped: stamps of old nodes could match again
		clear(b.at)
		b.node = 1
	}
}

// place notes pods of group g on the node: the groups whose conflicts name g are blocked (not
// g itself: canJoin does not hold a group's conflict with itself against it).
func (b *conflictStamps) place(g int) {
	for _, h := range b.by[g] {
		if h != g {
			b.at[h] = b.node
		}
	}
}

// startNode empties st for a new node of shape s.
func (st *nodeState) startNode(s *shape) {
	st.free = append(st.free[:0], s.alloc...)
	st.mask = fullMask(len(s.offerings))
	st.placed = st.placed[:0]
	st.value = 0
	st.blocks.reset()
}

// add puts k pods of group g (requests req, worth value each) on the node, whose offerings
// become m.
func (st *nodeState) add(g int, req vec, k int64, value float64, m uint64) {
	st.free.addScaled(req, -k)
	st.mask = m
	st.placed = addPlacement(st.placed, g, k)
	st.value += float64(k) * value
	st.blocks.place(g)
}

// joins is canJoin for the node st is filling.
func (p *problem) joins(s *shape, e fitEntry, st *nodeState) bool {
	return st.blocks.at[e.g] != st.blocks.node && p.altsAgree(s, e, st.placed)
}

// canJoin reports whether group g may join the pods already on the node, apart from room and
// offerings: per-node caps, conflicts and pinned labels.
func (p *problem) canJoin(s *shape, e fitEntry, placed []placement) bool {
	g := p.groups[e.g]
	for _, pl := range placed {
		if pl.g == int(e.g) {
			continue
		}
		if g.conflictsWithGroup(pl.g) {
			return false
		}
	}
	return p.altsAgree(s, e, placed)
}

// altsAgree reports whether the alternative group e.g uses on shape s pins no key the shape
// leaves open to another value than the placed groups' alternatives do: canJoin's pinned labels.
func (p *problem) altsAgree(s *shape, e fitEntry, placed []placement) bool {
	if len(s.narrowKeys) == 0 || len(placed) == 0 {
		return true
	}
	// Pods may pin a key the shape leaves open (e.g. a pool label with several values) to
	// different values: check the alternatives they chose are compatible together.
	alt := p.groups[e.g].alts[e.alt]
	for _, pl := range placed {
		o, _ := p.fit(s, pl.g)
		if !alt.Intersects(p.groups[pl.g].alts[o.alt]) {
			return false
		}
	}
	return true
}

// perNodeCap is how many pods of g an empty new node may take.
func perNodeCap(g *group, rem int64) int64 {
	return min(rem, g.room(nil, ""))
}

// nodeCap limits the pods of a set of groups on any one node: a hostname spread's maxSkew over
// every group its selector matches, or anti-affinity's one-per-node over a family of groups
// that repel each other. existing counts matching pods already on existing nodes.
type nodeCap struct {
	limit    int64
	members  []*group
	ids      []bool // by group id: members
	idx      int    // its number in the problem, 0…ncaps-1
	existing map[string]int64
}

// room returns how many more pods of g a node may take given what is placed on it (and, for an
// existing node, its name): per-node caps and shared caps. math.MaxInt64 when unbounded.
func (g *group) room(placed []placement, node string) int64 {
	r := int64(math.MaxInt64)
	if g.perNode > 0 {
		r = g.perNode - placedOf(placed, g.id)
	}
	for _, c := range g.caps {
		used := c.existing[node]
		for _, x := range placed {
			if c.ids[x.g] {
				used += x.k
			}
		}
		r = min(r, c.limit-used)
	}
	return max(r, 0)
}

// fillFFD fills one node of shape s from rem, groups in decreasing worth, each taking as many
// pods as fit. entries are s's fit entries (p.byShape's order), or those of them with pods left.
func (p *problem) fillFFD(s *shape, entries []fitEntry, rem []int64, st *nodeState) {
	st.startNode(s)
	p.fillRest(s, entries, rem, st)
}

func (p *problem) fillRest(s *shape, entries []fitEntry, rem []int64, st *nodeState) {
	for _, e := range entries {
		g := p.groups[e.g]
		m := st.mask & e.mask
		// Room first: on a filling node it rules out most groups, and it is the cheapest test.
		if rem[e.g] <= 0 || m == 0 || maxCopies(g.req, st.free, 1) <= 0 {
			continue
		}
		left := rem[e.g] - placedOf(st.placed, int(e.g))
		if left <= 0 || !p.joins(s, e, st) {
			continue
		}
		k := maxCopies(g.req, st.free, min(left, g.room(st.placed, "")))
		if k <= 0 {
			continue
		}
		st.add(int(e.g), g.req, k, g.value, m)
	}
}

// fillMix fills one node with the remaining pods in proportion to how many of each are left,
// then tops it up first-fit. It finds the balanced mixes (cpu-heavy with memory-heavy pods) that
// greedy-by-size misses. entries are as for fillFFD. It reports false, leaving st undefined,
// when it would find no node other than fillFFD's: everything fits in one node, fewer than two
// groups are left, or no group's share rounds to a pod.
func (p *problem) fillMix(s *shape, entries []fitEntry, rem []int64, st *nodeState, total vec) bool {
	for i := range total {
		total[i] = 0
	}
	n := 0
	for _, e := range entries {
		if rem[e.g] > 0 {
			total.addScaled(p.groups[e.g].req, rem[e.g])
			n++
		}
	}
	if n < 2 {
		return false
	}
	lambda := math.Inf(1)
	for i, t := range total {
		if t > 0 {
			lambda = min(lambda, float64(s.alloc[i])/float64(t))
		}
	}
	if lambda >= 1 {
		return false // everything fits in one node: FFD already found it
	}
	st.startNode(s)
	for _, e := range entries {
		g := p.groups[e.g]
		m := st.mask & e.mask
		// A group whose share rounds to no pod takes none (maxCopies of 0 is 0): where every
		// pod is its own group that is nearly all of them, so it is the first test.
		share := int64(lambda * float64(rem[e.g]))
		if share <= 0 || m == 0 || maxCopies(g.req, st.free, 1) <= 0 || !p.joins(s, e, st) {
			continue
		}
		k := maxCopies(g.req, st.free, min(share, g.room(st.placed, "")))
		if k <= 0 {
			continue
		}
		st.add(int(e.g), g.req, k, g.value, m)
	}
	if len(st.placed) == 0 {
		// Nothing in proportion: topping up the empty node is fillFFD's node again.
		return false
	}
	p.fillRest(s, entries, rem, st)
	return true
}

func fullMask(n int) uint64 {
	if n >= 64 {
		return math.MaxUint64
	}
	return 1<<uint(n) - 1
}

func placedOf(pl []placement, g int) int64 {
	for _, x := range pl {
		if x.g == g {
			return x.k
		}
	}
	return 0
}

func addPlacement(pl []placement, g int, k int64) []placement {
	for i := range pl {
		if pl[i].g == g {
			pl[i].k += k
			return pl
		}
	}
	return append(pl, placement{g: g, k: k})
}

// packPool plans new nodes of one pool for the remaining pods of the groups it may take (rem
// holds only those), within the pool's limits at usage u. It returns the claims; rem is
// decremented and u counts the claims.
func (p *problem) packPool(pl *pool, u *poolUsage, rem []int64) []*claim {
	var out []*claim
	f := &poolFill{p: p, pl: pl, rem: rem, total: make(vec, len(p.dims.names))}
	f.cur.blocks = p.newConflictStamps()
	for {
		bestShape := f.bestNode(u)
		if bestShape == nil {
			return out
		}
		best := &f.best
		// Replicate the pattern as often as the remaining pods and the limits allow.
		k := int64(math.MaxInt64)
		for _, x := range best.placed {
			k = min(k, rem[x.g]/x.k)
		}
		k = max(k, 1)
		k = p.singles(limitCopies(pl, u, bestShape, k), best.placed)
		used := bestShape.alloc.clone()
		used.sub(best.free)
		for range k {
			c := &claim{shape: bestShape, mask: best.mask, used: used.clone(), placed: slices.Clone(best.placed), value: best.value}
			out = append(out, c)
		}
		for _, x := range best.placed {
			rem[x.g] -= x.k * k
		}
		p.afterPlace(rem, best.placed)
		u.used.addScaled(bestShape.capacity, k)
		u.nodes += k
	}
}

// poolFill is packPool's search for the next node: every shape the pool may still launch,
// filled first-fit and by mix, the best kept.
type poolFill struct {
	p     *problem
	pl    *pool
	rem   []int64
	total vec // fillMix's scratch
	// live[i] are the fit entries of pl.shapes[i] whose groups have pods left in rem, in
	// p.byShape's order. The fills skip the others, and rem only falls while packPool runs,
	// so dropping them changes nothing: after the LP's patterns, most groups have none left.
	live      [][]fitEntry
	cur, best nodeState
	ratio     float64
}

// bestNode fills a node of every shape the pool may still launch (within its limits at
// usage u) and returns the shape of the best, held in f.best; nil when none holds a pod.
func (f *poolFill) bestNode(u *poolUsage) *shape {
	f.prune()
	var bestShape *shape
	for i, s := range f.pl.shapes {
		if s.dominated || !withinLimits(f.pl, u, s, 1) {
			continue
		}
		f.p.fillFFD(s, f.live[i], f.rem, &f.cur)
		if f.better(s, bestShape) {
			bestShape = s
		}
		if f.p.fillMix(s, f.live[i], f.rem, &f.cur, f.total) && f.better(s, bestShape) {
			bestShape = s
		}
	}
	return bestShape
}

// prune brings f.live up to date with f.rem.
func (f *poolFill) prune() {
	if f.live == nil {
		f.live = make([][]fitEntry, len(f.pl.shapes))
		for i, s := range f.pl.shapes {
			if !s.dominated {
				f.live[i] = f.keepLive(nil, f.p.byShape[s.idx])
			}
		}
		return
	}
	for i, es := range f.live {
		f.live[i] = f.keepLive(es[:0], es)
	}
}

// keepLive appends to dst the entries of es whose groups have pods left (dst may be es[:0]).
func (f *poolFill) keepLive(dst, es []fitEntry) []fitEntry {
	for _, e := range es {
		if f.rem[e.g] > 0 {
			dst = append(dst, e)
		}
	}
	return dst
}

// better reports whether the node in f.cur, of shape s, beats the best so far (of shape
// bestShape, nil if none), and if so copies it to f.best. Lower price per unit of worth wins;
// on a tie the node holding more (fewer nodes, less DaemonSet overhead), then the cheaper shape
// (shapes are in price order, and the first found is kept).
func (f *poolFill) better(s, bestShape *shape) bool {
	cur, best := &f.cur, &f.best
	if cur.value <= 0 {
		return false
	}
	price, _ := s.priceFor(cur.mask)
	ratio := price / cur.value
	if bestShape != nil && ratio >= f.ratio*(1-1e-9) &&
		(ratio > f.ratio*(1+1e-9) || cur.value <= best.value*(1+1e-9)) {
		return false
	}
	f.ratio = ratio
	best.free = append(best.free[:0], cur.free...)
	best.mask = cur.mask
	best.placed = append(best.placed[:0], cur.placed...)
	best.value = cur.value
	return true
}

// withinLimits reports whether n more nodes of shape s keep pool pl, at usage u, within its
// limits.
func withinLimits(pl *pool, u *poolUsage, s *shape, n int64) bool {
	if pl.nodeLimit >= 0 && u.nodes+n > pl.nodeLimit {
		return false
	}
	for i, lim := range pl.limited {
		if lim && u.used[i]+n*s.capacity[i] > pl.limit[i] {
			return false
		}
	}
	return true
}

// limitCopies caps k so that k nodes of s keep pool pl, at usage u, within its limits (at least
// 1: the caller checked one fits).
func limitCopies(pl *pool, u *poolUsage, s *shape, k int64) int64 {
	if pl.nodeLimit >= 0 {
		k = min(k, pl.nodeLimit-u.nodes)
	}
	for i, lim := range pl.limited {
		if lim && s.capacity[i] > 0 {
			k = min(k, (pl.limit[i]-u.used[i])/s.capacity[i])
		}
	}
	return max(k, 1)
}

// claimReqs returns the requirements a claim's pods put on its node: the pool's, narrowed by the
// alternative each group uses on the claim's shape.
func (p *problem) claimReqs(c *claim) nodeplan.Requirements {
	rs := c.shape.pool.desc
	for _, x := range c.placed {
		e, _ := p.fitAny(c.shape, x.g)
		rs = rs.Intersect(p.groups[x.g].alts[e.alt])
	}
	return rs
}
