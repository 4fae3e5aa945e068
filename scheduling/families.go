package scheduling

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/nodeplan/nodeplan/scheduling/internal/knapsack"
)

// A column family is one shape bought through one offering, with the groups that may go on it:
// the unit the pricing searches work on.

// colFamily is a column family of the LP: a shape and an offering, with the rows (groups) that
// accept that offering on that shape.
type colFamily struct {
	s     *shape
	o     int
	price float64
	items []famItem
	all   []famCand         // while building: every group of the shape, whatever the offering
	kp    *knapsack.Problem // its knapsack, once priced (pricer.knapsackOf)
}

type famItem struct {
	row  int
	g    int
	e    fitEntry
	maxk int64   // most pods of the group one node of the family holds (resources and caps)
	size float64 // the pod's size: Σ request/capacity over the shape's resources
}

// famItem describes group g on shape s for a pricing problem with these counts; ok is false
// when not one pod fits.
func (k *pricer) famItem(s *shape, row, g int, e fitEntry, counts []int64) (famItem, bool) {
	gr := k.p.groups[g]
	mk := maxCopies(gr.req, s.alloc, perNodeCap(gr, counts[g]))
	if mk <= 0 {
		return famItem{}, false
	}
	return famItem{row: row, g: g, e: e, maxk: mk, size: famSize(gr, s)}, true
}

// famSize is a pod of gr's size on shape s: Σ request/capacity over the shape's resources.
func famSize(gr *group, s *shape) float64 {
	size := 0.0
	for d, c := range s.alloc {
		if c > 0 {
			size += float64(gr.req[d]) / float64(c)
		}
	}
	return max(size, 1e-12)
}

// famCand is a group of a shape while the families are built (newFamItem's answer, kept small:
// most families are dominated, so their items are made only for the families kept): its row,
// its entry's place in the shape's fit list, the entry's offerings and the most pods a node
// holds.
type famCand struct {
	row, at int32
	mask    uint64
	maxk    int64
}

// dropDominated removes a family when another is no dearer, has at least its room in every
// resource, and accepts every group it accepts: any pattern of the first is a pattern of the
// second at no more cost, so the LP (and its bound) is unchanged. Across shapes this needs the
// same pool and no narrow keys (where pods pin labels, the shapes' own values matter). A
// catalog has many types of one size at different prices (c5, c6i, c7i…), and each has
// on-demand and spot offerings: most families go, and every pricing round gets cheaper.
//
// Of equal ones the first is kept. Dominance is transitive (each of its conditions is), so a
// family is dominated exactly when a family that is kept dominates it: walking the families in
// (price, index) order, each is compared only with the kept ones before it that could dominate
// it — its pool's families without narrow keys, or, where its shape has narrow keys, its own
// shape's — not with every other family.
func dropDominated(fams []colFamily, rows int) []colFamily {
	words := (rows + 63) / 64
	sets := famRowSets(fams, words)
	covers := func(j, i int) bool {
		for w := 0; w < words; w++ {
			if sets[i*words+w]&^sets[j*words+w] != 0 {
				return false
			}
		}
		return true
	}
	order := make([]int, len(fams))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(fams[a].price, fams[b].price) })
	wide := map[*pool][]int{}    // kept families of shapes without narrow keys, by pool
	narrow := map[*shape][]int{} // kept families of shapes with narrow keys, by shape
	keep := make([]bool, len(fams))
	for _, i := range order {
		s := fams[i].s
		if len(s.narrowKeys) > 0 {
			if !slices.ContainsFunc(narrow[s], func(j int) bool { return covers(j, i) }) {
				keep[i] = true
				narrow[s] = append(narrow[s], i)
			}
			continue
		}
		dominated := slices.ContainsFunc(wide[s.pool], func(j int) bool {
			return (fams[j].s == s || s.alloc.fitsIn(fams[j].s.alloc)) && covers(j, i)
		})
		if !dominated {
			keep[i] = true
			wide[s.pool] = append(wide[s.pool], i)
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

// famRowSets are the families' rows as bit sets, words uint64s a family: the groups of its
// shape its offering accepts.
func famRowSets(fams []colFamily, words int) []uint64 {
	sets := make([]uint64, len(fams)*words)
	for i := range fams {
		bit := uint64(1) << uint(fams[i].o)
		for _, it := range fams[i].all {
			if it.mask&bit != 0 {
				sets[i*words+int(it.row)/64] |= 1 << uint(it.row%64)
			}
		}
	}
	return sets
}

// buildFamilies numbers the rows of the LP (the groups with counts > 0 that some shape takes,
// in the order the shapes meet them: rowOf[g] is group g's row, -1 for none) and lists the
// column families over the shapes, the dominated ones left out, at the LP's prices: c.rowOf,
// c.rows and c.fams.
func (c *colGen) buildFamilies(shapes []*shape) {
	p := c.p
	c.rowOf = make([]int, len(p.groups))
	for _, g := range p.groups {
		c.rowOf[g.id] = -1
	}
	cands := c.shapeCands(shapes)
	if len(c.rows) == 0 {
		return
	}
	// One family per offering some group accepts: a node mixing groups must be bought
	// through an offering all of them accept, which need not be any one's cheapest.
	n := 0
	for _, sc := range cands {
		n += bits.OnesCount64(sc.seen)
	}
	fams := make([]colFamily, 0, n)
	for _, sc := range cands {
		for m := sc.seen; m != 0; m &= m - 1 {
			o := bits.TrailingZeros64(m)
			fams = append(fams, colFamily{s: sc.s, o: o, price: c.adj.of(sc.s, o), all: sc.items})
		}
	}
	// Most families are dominated: drop them before building their item lists.
	fams = dropDominated(fams, len(c.rows))
	for i := range fams {
		c.keepOffering(&fams[i])
	}
	c.fams = fams
}

// shapeCand is a shape's groups while the families are built, and the offerings they accept.
type shapeCand struct {
	s     *shape
	seen  uint64
	items []famCand
}

// shapeCands lists each shape's groups with pods to place (their items cut from one array),
// numbering the rows as the shapes meet them (c.rowOf, c.rows).
func (c *colGen) shapeCands(shapes []*shape) []shapeCand {
	p, counts, rowOf := c.p, c.counts, c.rowOf
	n := 0
	for _, s := range shapes {
		n += len(p.byShape[s.idx])
	}
	all := make([]famCand, 0, n)
	out := make([]shapeCand, 0, len(shapes))
	var rows []int
	for _, s := range shapes {
		if s.dominated && c.adj == nil {
			// Another shape's families dominate its families (at adjusted prices they may not:
			// dropDominated compares those).
			continue
		}
		sc := shapeCand{s: s}
		from := len(all)
		for at, f := range p.byShape[s.idx] {
			if counts[f.g] <= 0 {
				continue
			}
			if rowOf[f.g] < 0 {
				rowOf[f.g] = len(rows)
				rows = append(rows, int(f.g))
			}
			gr := p.groups[f.g]
			if mk := maxCopies(gr.req, s.alloc, perNodeCap(gr, counts[f.g])); mk > 0 {
				all = append(all, famCand{row: int32(rowOf[f.g]), at: int32(at), mask: f.mask, maxk: mk})
				sc.seen |= f.mask
			}
		}
		sc.items = all[from:len(all):len(all)]
		out = append(out, sc)
	}
	c.rows = rows
	return out
}

// keepOffering makes the family's items, while building, from those of its shape's groups its
// offering accepts.
func (c *colGen) keepOffering(f *colFamily) {
	p := c.p
	bit := uint64(1) << uint(f.o)
	k := 0
	for _, it := range f.all {
		if it.mask&bit != 0 {
			k++
		}
	}
	f.items = make([]famItem, 0, k)
	for _, it := range f.all {
		if it.mask&bit != 0 {
			e := p.byShape[f.s.idx][it.at]
			f.items = append(f.items, famItem{row: int(it.row), g: int(e.g), e: e, maxk: it.maxk, size: famSize(p.groups[e.g], f.s)})
		}
	}
	f.all = nil
}

// lpPrices is what an LP adds to the price of each shape's nodes (by shape idx): the pools'
// limits priced in, where limitedBound proves a bound so; nil adds nothing.
type lpPrices []float64

// of is what the LP pays for a node of shape s through offering o.
func (a lpPrices) of(s *shape, o int) float64 {
	if a == nil {
		return s.offerings[o].Price
	}
	return s.offerings[o].Price + a[s.idx]
}

// upperBound is a cheap bound on the family's best pattern value: per resource, the capacity
// times the best value per unit (ratio, from unitValues); and the sum of everything that could
// fit. It runs for every family at every iteration, so it reads only precomputed numbers.
// scratch is reused.
func (f *colFamily) upperBound(v, ratio []float64, scratch *[]float64) float64 {
	nd := len(f.s.alloc)
	best := append((*scratch)[:0], make([]float64, nd)...)
	*scratch = best
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

// pricer prices column families with the knapsack (internal/knapsack): it describes each
// family to the knapsack once (requests, most pods per node, shared caps, conflicts on the
// family's shape), then only the pod values change, and turns the knapsack's picks into
// patterns. Work (the knapsack's) counts what its searches and bounds spent.
type pricer struct {
	knapsack.Solver
	p *problem
	// capIdx are each group's shared caps as knapsack cap indices (nodeCap.idx), by group id;
	// capLimits their limits, by index.
	capIdx    [][]int
	capLimits []int64
	ub        []float64 // scratch for upperBound
}

func newPricer(p *problem) *pricer {
	k := &pricer{p: p, capIdx: make([][]int, len(p.groups)), capLimits: make([]int64, p.ncaps)}
	for _, g := range p.groups {
		for _, c := range g.caps {
			k.capIdx[g.id] = append(k.capIdx[g.id], c.idx)
			k.capLimits[c.idx] = c.limit
		}
	}
	return k
}

// knapsackOf returns family f's knapsack at row values v.
func (k *pricer) knapsackOf(f *colFamily, v []float64) *knapsack.Problem {
	if f.kp == nil {
		p := k.p
		kp := &knapsack.Problem{Capacity: f.s.alloc, CapLimits: k.capLimits, Items: make([]knapsack.Item, len(f.items))}
		for j, it := range f.items {
			kp.Items[j] = knapsack.Item{ID: it.g, Req: p.groups[it.g].req, Max: it.maxk, Size: it.size, Caps: k.capIdx[it.g]}
		}
		s, items := f.s, f.items
		kp.Conflict = func(a, b int) bool { return k.joinConflict(s, items[a].e, items[b].g) }
		f.kp = kp
	}
	for j, it := range f.items {
		f.kp.Items[j].Value = v[it.row]
	}
	return f.kp
}

// joinConflict reports whether group e.g may not join a node of shape s holding group h (see
// canJoin: the same rules, for one pair).
func (k *pricer) joinConflict(s *shape, e fitEntry, h int) bool {
	p := k.p
	if h == int(e.g) {
		return false
	}
	g := p.groups[e.g]
	if g.conflictsWithGroup(h) {
		return true
	}
	if len(s.narrowKeys) == 0 {
		return false
	}
	o, _ := p.fit(s, h)
	return !g.alts[e.alt].Intersects(p.groups[h].alts[o.alt])
}

func (f *colFamily) pattern(picks []knapsack.Pick, value float64) pattern {
	placed := make([]placement, len(picks))
	for i, x := range picks {
		placed[i] = placement{g: x.ID, k: x.N}
	}
	return pattern{s: f.s, o: f.o, placed: placed, value: value}
}

// solve is knapsack.Solver.Solve on family f at values v: the best pattern found, its value,
// and an upper bound on the family's best.
func (k *pricer) solve(f *colFamily, v []float64, budget, topK int) (pattern, float64, float64) {
	picks, val, upper := k.Solve(k.knapsackOf(f, v), budget, topK)
	return f.pattern(picks, val), val, upper
}

// search is knapsack.Solver.Search on family f at values v: only patterns worth more than
// target matter; proved says no pattern is worth more than max(value, target).
func (k *pricer) search(f *colFamily, v []float64, budget, topK int, target float64) (pattern, float64, bool) {
	picks, val, proved := k.Search(k.knapsackOf(f, v), budget, topK, target)
	return f.pattern(picks, val), val, proved
}

// bound is knapsack.Solver.Bound on family f at values v; refine is Refine, tighter.
func (k *pricer) bound(f *colFamily, v []float64) float64 { return k.Bound(k.knapsackOf(f, v)) }

func (k *pricer) refine(f *colFamily, v []float64) (float64, int) {
	return k.Refine(k.knapsackOf(f, v))
}
