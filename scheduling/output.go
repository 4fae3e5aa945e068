package scheduling

import (
	"cmp"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/nodeplan/nodeplan"
)

// groupsByValue returns the groups, most valuable pod first (ties by id).
func (p *problem) groupsByValue() []*group {
	gs := slices.Clone(p.groups)
	slices.SortStableFunc(gs, func(a, b *group) int { return cmp.Or(cmp.Compare(b.value, a.value), cmp.Compare(a.id, b.id)) })
	return gs
}

// result turns the packing state into a Result, with requests[i] the launch request of
// st.claims[i] (see rejectMinValues): pods are handed out to bins and claims in group order, so
// equal inputs give equal results. It only reads st, and decides nothing.
func (p *problem) result(st *packState, requests []NewNodeClaim) Result {
	var res Result
	cursor := make([]int, len(p.groups))
	take := func(g int, k int64) []string {
		keys := p.groups[g].keys[cursor[g] : cursor[g]+int(k)]
		cursor[g] += int(k)
		return keys
	}
	for i, b := range p.bins {
		placed := st.bins[i].placed
		if len(placed) == 0 {
			continue
		}
		pl := Placement{Name: b.name}
		for _, x := range placed {
			pl.Pods = append(pl.Pods, take(x.g, x.k)...)
		}
		slices.Sort(pl.Pods)
		if b.inflight {
			res.InFlight = append(res.InFlight, pl)
		} else {
			res.Existing = append(res.Existing, pl)
		}
	}
	byName := func(a, b Placement) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(res.Existing, byName)
	slices.SortFunc(res.InFlight, byName)

	for i, c := range st.claims {
		nc := requests[i]
		for _, x := range c.placed {
			nc.Pods = append(nc.Pods, take(x.g, x.k)...)
		}
		slices.Sort(nc.Pods)
		res.NodeClaims = append(res.NodeClaims, nc)
		res.Cost += nc.Offering.Price + c.shape.pool.nodeCost
		res.NodeCost += c.shape.pool.nodeCost
	}
	for _, g := range p.groups {
		n := st.remaining[g.id]
		if n == 0 {
			continue
		}
		code, pools := p.explain(st, g)
		msg := make([]string, len(pools))
		for i, r := range pools {
			msg[i] = r.Message
		}
		for _, key := range take(g.id, n) {
			res.Unschedulable = append(res.Unschedulable, Unschedulable{Pod: key, Code: code, Message: strings.Join(msg, "; "), Pools: pools})
		}
	}
	slices.SortFunc(res.Unschedulable, func(a, b Unschedulable) int { return strings.Compare(a.Pod, b.Pod) })
	return res
}

// rejectMinValues builds every planned claim's launch request and takes back the pods of the
// claims whose instance-type options cannot meet their pool's minValues together: those pods
// return to st.remaining with their groups marked in st.minValuesHit (ReasonMinValues), and the
// claims leave st.claims. It returns the requests of the claims kept, in st.claims order.
func (p *problem) rejectMinValues(st *packState) []NewNodeClaim {
	lb := p.newLaunchBuilder(st)
	kept := st.claims[:0]
	for _, c := range st.claims {
		if !lb.add(c) {
			for _, x := range c.placed {
				st.remaining[x.g] += x.k
				st.minValuesHit[x.g] = true
			}
			continue
		}
		kept = append(kept, c)
	}
	st.claims = kept
	return lb.out
}

// launchBuilder builds the launch requests of one solve's claims. Most of a request depends on
// much less than the claim, and when every pod is different (each its own group) nearly every
// claim is different too, while a few zone and capacity-type requirements and a few option
// lists repeat. So it keeps what it works out, keyed by what that depends on:
//
//   - index: the whole request, by shape, offerings and pods (the copies of one pattern), as
//     its position in out (-1: none, minValues cannot be met);
//   - cands: the candidate shapes and requirements, by shape and set of groups;
//   - offers: per zone and capacity-type requirement, each pool's shapes in option order;
//   - types: the instance-type requirement, by the options' shapes.
type launchBuilder struct {
	p      *problem
	growth []vec          // per pool: see claimGrowth
	out    []NewNodeClaim // the requests of the claims added and kept
	index  map[string]int
	cands  map[string]*candidates
	offers []*offerOrders
	types  map[string]nodeplan.Requirement
	key    []byte        // scratch for map keys
	ids    []int         // scratch for a claim's groups
	opts   []claimOption // scratch for a claim's options
}

func (p *problem) newLaunchBuilder(st *packState) *launchBuilder {
	return &launchBuilder{
		p:      p,
		growth: p.claimGrowth(st.claims, st.usage),
		out:    make([]NewNodeClaim, 0, len(st.claims)),
		index:  map[string]int{},
		cands:  map[string]*candidates{},
		types:  map[string]nodeplan.Requirement{},
	}
}

// add appends c's launch request to lb.out; it returns false, appending nothing, when c's
// options cannot meet its pool's minValues. Claims with the same shape, offerings and pods get
// the same request: the first gets the one built, the others copies (clone), so no two
// requests share anything mutable.
func (lb *launchBuilder) add(c *claim) bool {
	lb.key = appendClaimKey(lb.key[:0], c)
	if i, seen := lb.index[string(lb.key)]; seen {
		if i < 0 {
			return false
		}
		lb.out = append(lb.out, lb.out[i].clone())
		return true
	}
	key := string(lb.key) // newNodeClaim reuses lb.key
	nc, ok := lb.newNodeClaim(c)
	if !ok {
		lb.index[key] = -1
		return false
	}
	lb.index[key] = len(lb.out)
	lb.out = append(lb.out, nc)
	return true
}

func appendClaimKey(b []byte, c *claim) []byte {
	b = strconv.AppendInt(b, int64(c.shape.idx), 36)
	b = append(b, '/')
	b = strconv.AppendUint(b, c.mask, 36)
	for _, x := range c.placed {
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(x.g), 36)
		b = append(b, ':')
		b = strconv.AppendInt(b, x.k, 36)
	}
	return b
}

// clone copies everything a caller might modify, so claims built from one memo entry share
// nothing mutable. Requirements are immutable values and are shared.
func (c NewNodeClaim) clone() NewNodeClaim {
	c.InstanceTypeOptions = slices.Clone(c.InstanceTypeOptions)
	c.Labels = maps.Clone(c.Labels)
	c.Annotations = maps.Clone(c.Annotations)
	c.Taints = slices.Clone(c.Taints)
	c.StartupTaints = slices.Clone(c.StartupTaints)
	c.Resources = c.Resources.DeepCopy()
	c.Pods = nil
	return c
}

// claimGrowth returns, per pool, how far each of the planned claims may grow past the type it
// is costed at, per limited dimension (-1: unlimited), if the provider falls back to a bigger
// option: an equal share of the slack the limits leave at usage (per pool), so that even if
// every claim fell back, the limits would hold.
func (p *problem) claimGrowth(claims []*claim, usage []poolUsage) []vec {
	count := make([]int64, len(p.pools))
	for _, c := range claims {
		count[c.shape.pool.idx]++
	}
	growth := make([]vec, len(p.pools))
	for _, pl := range p.pools {
		g := make(vec, len(p.dims.names))
		for i, lim := range pl.limited {
			if !lim {
				g[i] = -1
				continue
			}
			if n := count[pl.idx]; n > 0 {
				g[i] = max(0, (pl.limit[i]-usage[pl.idx].used[i])/n)
			}
		}
		growth[pl.idx] = g
	}
	return growth
}

// newNodeClaim builds the launch request for a planned node: its requirements, its instance-type
// options cheapest first (within limits: no option grows past the claim's type by more than
// the pool's growth; honouring minValues), labels, taints and resources.
func (lb *launchBuilder) newNodeClaim(c *claim) (NewNodeClaim, bool) {
	np := c.shape.pool.np
	cands := lb.candidates(c)
	opts, ok := lb.options(c, cands)
	if !ok {
		return NewNodeClaim{}, false
	}
	names := make([]string, len(opts))
	for i, o := range opts {
		names[i] = o.s.it.Name
	}
	reqs := cands.reqs.Add(lb.typeRequirement(opts, names))
	chosen := opts[0]
	// The options' DaemonSet overheads differ where a DaemonSet runs on some types only (an
	// arch selector): Resources adds the smallest, per resource, as Karpenter's
	// FinalizeScheduling does, so every option fits all of Resources (providers filter the
	// options by it) while each option was chosen because its own overhead fits.
	resources := c.used.clone()
	overhead := chosen.s.ds.clone()
	for _, o := range opts[1:] {
		for d, x := range o.s.ds {
			overhead[d] = min(overhead[d], x)
		}
	}
	resources.add(overhead)
	out := NewNodeClaim{
		NodeClaim: nodeplan.NodeClaim{
			NodePool:               np.Name,
			NodeClassRef:           np.Template.NodeClassRef,
			Requirements:           reqs,
			InstanceTypeOptions:    names,
			Labels:                 claimLabels(np, reqs),
			Annotations:            maps.Clone(np.Template.Annotations),
			Taints:                 slices.Clone(np.Template.Taints),
			StartupTaints:          slices.Clone(np.Template.StartupTaints),
			Resources:              lb.p.dims.list(resources),
			ExpireAfter:            np.Template.ExpireAfter,
			TerminationGracePeriod: np.Template.TerminationGracePeriod,
		},
		InstanceType: chosen.s.it.Name,
		Offering:     chosen.s.offerings[chosen.off],
	}
	out.Offering.Price = chosen.s.listPrices[chosen.off]
	return out, true
}

// claimLabels are a claim's labels: its pool's template labels, then every label its
// requirements pin to one value.
func claimLabels(np *nodeplan.NodePool, reqs nodeplan.Requirements) map[string]string {
	pinned := reqs.Labels()
	labels := make(map[string]string, len(np.Template.Labels)+len(pinned))
	for k, v := range np.Template.Labels {
		labels[k] = v
	}
	for k, v := range pinned {
		labels[k] = v
	}
	delete(labels, metadataName)
	return labels
}

// typeRequirement is "instance type In names", names those of opts: the same few option lists
// recur across many claims, so it is made once per list.
func (lb *launchBuilder) typeRequirement(opts []claimOption, names []string) nodeplan.Requirement {
	lb.key = lb.key[:0]
	for _, o := range opts {
		lb.key = strconv.AppendInt(lb.key, int64(o.s.idx), 36)
		lb.key = append(lb.key, '/')
	}
	if r, ok := lb.types[string(lb.key)]; ok {
		return r
	}
	r := nodeplan.In(nodeplan.LabelInstanceType, names...)
	lb.types[string(lb.key)] = r
	return r
}

// claimOption is one instance type a claim may launch as, at its cheapest allowed offering.
type claimOption struct {
	s     *shape
	price float64
	off   int // offering index
}

// options lists the claim's instance-type options, cheapest first: the candidate shapes that
// hold its pods and grow past its type by at most the pool's growth (its limits), cut to
// Options.MaxInstanceTypes (60) but extended until the pool's minValues are met; ok is false
// when they cannot be. The slice is scratch, valid until the next call.
func (lb *launchBuilder) options(c *claim, cands *candidates) ([]claimOption, bool) {
	growth := lb.growth[c.shape.pool.idx]
	opts := lb.opts[:0]
	// The candidates are in option order already: filtering keeps it.
	for w, word := range cands.take {
		for ; word != 0; word &= word - 1 {
			o := cands.order[w*64+bits.TrailingZeros64(word)]
			if !c.used.fitsIn(o.s.alloc) {
				continue
			}
			if o.s != c.shape && !withinGrowth(growth, c.shape.capacity, o.s.capacity) {
				continue
			}
			opts = append(opts, o)
		}
	}
	lb.opts = opts
	maxTypes := lb.p.in.Options.MaxInstanceTypes
	if maxTypes <= 0 {
		maxTypes = 60
	}
	n := min(maxTypes, len(opts))
	for _, mv := range c.shape.pool.minValues {
		// Extend the list until it has enough distinct values of the key; fail if all the
		// options together do not.
		seen := map[string]bool{}
		for _, o := range opts[:n] {
			noteValue(seen, o.s.it.Labels, mv.Key)
		}
		for len(seen) < mv.MinValues {
			if n == len(opts) {
				return nil, false
			}
			noteValue(seen, opts[n].s.it.Labels, mv.Key)
			n++
		}
	}
	return opts[:n], n > 0
}

// noteValue adds the value of key in labels, if it has one, to seen.
func noteValue(seen map[string]bool, labels map[string]string, key string) {
	if v, ok := labels[key]; ok {
		seen[v] = true
	}
}

// candidates are what a claim's pods allow whatever their counts: the requirements they put
// on the node, and the shapes of the pool that take them all, as options at their cheapest
// offering left.
type candidates struct {
	reqs nodeplan.Requirements
	// order is every shape of the pool with offerings left under reqs' zone and capacity type,
	// in option order (cheapest first, then by name), shared by the candidates with those;
	// take is the set (a bitset) of the positions in order of the shapes that take every group.
	order []claimOption
	take  []uint64
	// least is the use the shapes in take were checked to hold (see newCandidates).
	least vec
}

// candidates returns the candidates for c's shape and groups, worked out once per distinct
// set (many claims differ only in how many pods of each group they hold).
func (lb *launchBuilder) candidates(c *claim) *candidates {
	lb.key = appendGroupSetKey(lb.key[:0], c, &lb.ids)
	cs, ok := lb.cands[string(lb.key)]
	if ok && cs.least.fitsIn(c.used) {
		return cs
	}
	least := make(vec, len(lb.p.dims.names))
	for _, x := range c.placed {
		least.add(lb.p.groups[x.g].req)
	}
	if !least.fitsIn(c.used) {
		clear(least) // not a claim of its pods' requests: no shape is ruled out by size
	}
	if ok {
		return lb.newCandidates(c, least) // the set's candidates assume more use than c's
	}
	key := string(lb.key)
	cs = lb.newCandidates(c, least)
	lb.cands[key] = cs
	return cs
}

// newCandidates works out the candidates for c's shape and groups among the shapes that hold
// least: one pod of each group, the least any claim of these groups uses.
//
// The options (see options) are the candidates that hold the claim's use, so the shapes that
// cannot hold least are never options of a claim using at least that: they are ruled out
// first, with one comparison, and each group's fit is checked on the shapes left, group after
// group (a group's fits are one row of the fit index).
func (lb *launchBuilder) newCandidates(c *claim, least vec) *candidates {
	p := lb.p
	cs := &candidates{reqs: p.claimReqs(c), least: least}
	cs.order = lb.offerOrders(cs.reqs).order(c.shape.pool)
	cs.take = make([]uint64, (len(cs.order)+63)/64)
	for i, o := range cs.order {
		if least.fitsIn(o.s.alloc) {
			cs.take[i/64] |= 1 << uint(i%64)
		}
	}
	for _, x := range c.placed {
		lb.keep(cs, func(s *shape) bool {
			_, ok := p.fitAny(s, x.g)
			return ok
		})
	}
	// A shape's labels have one value each except zone and capacity type (which the offering
	// mask checks) and its narrow keys. So when every group has a single alternative, a shape
	// that fits each group fits them together, and the requirements need no check of their own.
	single := true
	for _, x := range c.placed {
		single = single && len(p.groups[x.g].alts) == 1
	}
	lb.keep(cs, func(s *shape) bool {
		return single && len(s.narrowKeys) == 0 || s.reqs.compatible(cs.reqs)
	})
	return cs
}

// keep drops from cs.take the shapes ok rejects.
func (lb *launchBuilder) keep(cs *candidates, ok func(*shape) bool) {
	for w, word := range cs.take {
		for rest := word; rest != 0; rest &= rest - 1 {
			b := bits.TrailingZeros64(rest)
			if !ok(cs.order[w*64+b].s) {
				word &^= 1 << uint(b)
			}
		}
		cs.take[w] = word
	}
}

// appendGroupSetKey appends the key of c's shape and its groups, sorted (ids is scratch).
func appendGroupSetKey(b []byte, c *claim, ids *[]int) []byte {
	gs := (*ids)[:0]
	for _, x := range c.placed {
		gs = append(gs, x.g)
	}
	slices.Sort(gs)
	*ids = gs
	b = strconv.AppendInt(b, int64(c.shape.idx), 36)
	for _, g := range gs {
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(g), 36)
	}
	return b
}

// offerOrders holds, per pool, the pool's shapes as options under one zone and capacity-type
// requirement: each at its cheapest offering the requirement allows (offeringMask, which reads
// nothing else of the requirements), in option order. A solve sees a few such requirements
// (the pools' and a few pinned zones) and many claims, so each order is sorted once.
type offerOrders struct {
	rs         nodeplan.Requirements // the first requirements seen with this zone and capacity type
	zone, ct   nodeplan.Requirement
	hasZ, hasC bool
	orders     [][]claimOption // by pool idx; nil when not kept
}

// maxOfferOrders bounds the zone and capacity-type requirements kept; beyond them the orders
// are worked out each time.
const maxOfferOrders = 16

// offerOrders returns the options for the zone and capacity-type requirements of rs.
func (lb *launchBuilder) offerOrders(rs nodeplan.Requirements) *offerOrders {
	zone, hasZ := rs.Get(nodeplan.LabelZone)
	ct, hasC := rs.Get(nodeplan.LabelCapacityType)
	for _, om := range lb.offers {
		if om.hasZ == hasZ && om.hasC == hasC && om.zone.Equal(zone) && om.ct.Equal(ct) {
			return om
		}
	}
	om := &offerOrders{rs: rs, zone: zone, ct: ct, hasZ: hasZ, hasC: hasC}
	if len(lb.offers) < maxOfferOrders {
		om.orders = make([][]claimOption, len(lb.p.pools))
		lb.offers = append(lb.offers, om)
	}
	return om
}

// order returns pool pl's shapes that keep an offering, as options in option order. Sorting
// them all once and filtering per claim gives what sorting each claim's options would: the
// order is a stable sort by one key, and filtering keeps relative order.
func (om *offerOrders) order(pl *pool) []claimOption {
	if om.orders != nil && om.orders[pl.idx] != nil {
		return om.orders[pl.idx]
	}
	order := make([]claimOption, 0, len(pl.shapes))
	for _, s := range pl.shapes {
		if m := offeringMask(s, om.rs); m != 0 {
			price, off := s.priceFor(m)
			order = append(order, claimOption{s: s, price: price, off: off})
		}
	}
	slices.SortStableFunc(order, func(a, b claimOption) int {
		return cmp.Or(cmp.Compare(a.price, b.price), strings.Compare(a.s.it.Name, b.s.it.Name))
	})
	if om.orders != nil {
		om.orders[pl.idx] = order
	}
	return order
}

// fitAny is fit, or, for groups the packer never fits itself (those placed with a partner
// group by placeWith), the check fitOnShape makes.
func (p *problem) fitAny(s *shape, g int) (fitEntry, bool) {
	if e, ok := p.fit(s, g); ok {
		return e, true
	}
	if p.groups[g].with != nil {
		return p.fitOnShape(p.groups[g], s)
	}
	return fitEntry{}, false
}

func withinGrowth(growth, from, to vec) bool {
	for i, g := range growth {
		if g >= 0 && to[i]-from[i] > g {
			return false
		}
	}
	return true
}
