package scheduling

import (
	"cmp"
	"maps"
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
	keys := podKeys{p: p, cursor: make([]int, len(p.groups)), all: make([]string, 0, placedPods(st))}
	for i, b := range p.bins {
		placed := st.bins[i].placed
		if len(placed) == 0 {
			continue
		}
		pl := Placement{Name: b.name, Pods: keys.of(placed)}
		if b.inflight {
			res.InFlight = append(res.InFlight, pl)
		} else {
			res.Existing = append(res.Existing, pl)
		}
	}
	byName := func(a, b Placement) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(res.Existing, byName)
	slices.SortFunc(res.InFlight, byName)

	if len(st.claims) > 0 {
		res.NodeClaims = make([]NewNodeClaim, 0, len(st.claims))
	}
	for i, c := range st.claims {
		nc := requests[i]
		nc.Pods = keys.of(c.placed)
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
		message := strings.Join(msg, "; ")
		for _, key := range keys.take(g.id, int64(n)) {
			res.Unschedulable = append(res.Unschedulable, Unschedulable{Pod: key, Code: code, Message: message, Pools: pools})
		}
	}
	slices.SortFunc(res.Unschedulable, func(a, b Unschedulable) int { return strings.Compare(a.Pod, b.Pod) })
	return res
}

// podKeys hands out the groups' pod keys in group order, each key once.
type podKeys struct {
	p      *problem
	cursor []int // per group: its keys handed out so far
	// all holds every placed pod's key, each node's keys a full slice expression of it
	// (appending to one cannot reach the next): one array for them all.
	all []string
}

// take returns group g's next k keys.
func (pk *podKeys) take(g int, k int64) []string {
	keys := pk.p.groups[g].keys[pk.cursor[g] : pk.cursor[g]+int(k)]
	pk.cursor[g] += int(k)
	return keys
}

// of returns the keys of the pods of placed, sorted; nil when there are none.
func (pk *podKeys) of(placed []placement) []string {
	from := len(pk.all)
	for _, x := range placed {
		pk.all = append(pk.all, pk.take(x.g, x.k)...)
	}
	if len(pk.all) == from {
		return nil
	}
	pods := pk.all[from:len(pk.all):len(pk.all)]
	slices.Sort(pods)
	return pods
}

// placedPods counts the pods st places on bins and claims.
func placedPods(st *packState) int {
	n := int64(0)
	for i := range st.bins {
		n += podsIn(st.bins[i].placed)
	}
	for _, c := range st.claims {
		n += podsIn(c.placed)
	}
	return int(n)
}

// rejectMinValues builds every planned claim's launch request. A claim whose instance-type
// options cannot meet its pool's minValues together is split (splitForMinValues): fewer pods
// fit more types, as Karpenter opens another NodeClaim rather than give up a pod. Pods no
// claim of theirs can meet minValues for return to st.remaining with their groups marked in
// st.minValuesHit (ReasonMinValues). It returns the requests of the claims kept, in st.claims
// order.
func (p *problem) rejectMinValues(st *packState) []NewNodeClaim {
	lb := p.newLaunchBuilder(st)
	kept := make([]*claim, 0, len(st.claims)) // a split adds claims: no reuse of st.claims
	for _, c := range st.claims {
		if lb.add(c) {
			kept = append(kept, c)
			continue
		}
		parts, left := lb.splitForMinValues(st, c)
		kept = append(kept, parts...)
		for _, x := range left {
			st.remaining[x.g] += x.k
			st.minValuesHit[x.g] = true
		}
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
	// relaxed: the last options call fell short of minValues under MinValuesBestEffort.
	relaxed bool
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
// nothing mutable ([nodeplan.NodeClaim.DeepCopy]). Pods are left for the caller to fill.
func (c NewNodeClaim) clone() NewNodeClaim {
	out := c
	c.NodeClaim.DeepCopyInto(&out.NodeClaim)
	out.Pods = nil
	return out
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
	if lb.relaxed {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[nodeplan.AnnotationMinValuesRelaxed] = "true"
	}
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
//
// The options are taken in order as the cut needs them, so the shapes past the last one
// needed are never checked against the claim's groups.
func (lb *launchBuilder) options(c *claim, cands *candidates) ([]claimOption, bool) {
	growth := lb.growth[c.shape.pool.idx]
	opts := lb.opts[:0]
	i := 0 // the next position in cands.order to look at
	next := func() bool {
		for ; i < len(cands.order); i++ {
			o := cands.order[i]
			if !c.used.fitsIn(o.s.alloc) || o.s != c.shape && !withinGrowth(growth, c.shape.capacity, o.s.capacity) {
				continue
			}
			if lb.takes(cands, i) {
				opts = append(opts, o)
				i++
				return true
			}
		}
		return false
	}
	maxTypes := lb.p.in.Options.MaxInstanceTypes
	if maxTypes <= 0 {
		maxTypes = 60
	}
	for len(opts) < maxTypes && next() {
	}
	n := len(opts)
	lb.relaxed = false
	for _, mv := range c.shape.pool.minValues {
		// Extend the list until it has enough distinct values of the key; fail if all the
		// options together do not (under BestEffort, launch with what there is).
		seen := map[string]bool{}
		for _, o := range opts[:n] {
			noteValue(seen, o.s.it.Labels, mv.Key)
		}
		for len(seen) < mv.MinValues {
			if n == len(opts) && !next() {
				if lb.p.in.Options.MinValues == MinValuesBestEffort {
					lb.relaxed = true
					break
				}
				lb.opts = opts
				return nil, false
			}
			noteValue(seen, opts[n].s.it.Labels, mv.Key)
			n++
		}
	}
	lb.opts = opts
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
	// in option order (cheapest first, then by name), shared by the candidates with those.
	order []claimOption
	// take is the set (a bitset) of the positions in order of the shapes that take every
	// group, worked out as the options ask (takes): known marks the positions looked at.
	take, known []uint64
	groups      []int // the claims' groups
	// single: every group has one alternative (see takes).
	single bool
}

// candidates returns the candidates for c's shape and groups, shared by the claims with the
// same set (many claims differ only in how many pods of each group they hold).
func (lb *launchBuilder) candidates(c *claim) *candidates {
	lb.key = appendGroupSetKey(lb.key[:0], c, &lb.ids)
	if cs, ok := lb.cands[string(lb.key)]; ok {
		return cs
	}
	key := string(lb.key)
	p := lb.p
	cs := &candidates{reqs: p.claimReqs(c), groups: slices.Clone(lb.ids), single: true}
	cs.order = lb.offerOrders(cs.reqs).order(c.shape.pool)
	cs.take = make([]uint64, (len(cs.order)+63)/64)
	cs.known = make([]uint64, len(cs.take))
	for _, g := range cs.groups {
		cs.single = cs.single && len(p.groups[g].alts) == 1
	}
	lb.cands[key] = cs
	return cs
}

// takes reports whether the shape at position i of cs.order takes every group of cs: each fits
// it, and their requirements are compatible with its labels.
//
// A shape's labels have one value each except zone and capacity type (which the offering mask
// checks) and its narrow keys. So when every group has a single alternative, a shape that fits
// each group fits them together, and the requirements need no check of their own.
func (lb *launchBuilder) takes(cs *candidates, i int) bool {
	w, bit := i/64, uint64(1)<<uint(i%64)
	if cs.known[w]&bit != 0 {
		return cs.take[w]&bit != 0
	}
	cs.known[w] |= bit
	s := cs.order[i].s
	for _, g := range cs.groups {
		if _, ok := lb.p.fitAny(s, g); !ok {
			return false
		}
	}
	if !(cs.single && len(s.narrowKeys) == 0) && !s.reqs.compatible(cs.reqs) {
		return false
	}
	cs.take[w] |= bit
	return true
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
