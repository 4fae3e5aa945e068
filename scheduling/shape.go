package scheduling

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// pool is a NodePool prepared for one solve.
type pool struct {
	idx int
	np  *nodeplan.NodePool
	// desc is what every node of the pool is: its requirements, its labels, its name.
	desc   nodeplan.Requirements
	shapes []*shape
	// types are the pool's instance types, sorted by name, for explanations.
	types []*nodeplan.InstanceType

	// limited[i] says whether dimension i is limited; limit[i] is the cap. nodeLimit < 0: no
	// cap on nodes.
	limited   []bool
	limit     vec
	nodeLimit int64
	// used0 and nodes0 are what the pool's existing nodes and in-flight claims take against
	// its limits, before any new node; with the planned claims, packState.usage.
	used0  vec
	nodes0 int64
	// unknownLimits are limited resources no pod or type mentions; they cannot be exceeded.
	minValues []nodeplan.Requirement
	// nodeCost is what each node of the pool costs beyond its instance's price (NodeCost):
	// every offering price a shape holds includes it.
	nodeCost float64
}

// shape is one instance type as a node of one pool: what it offers pods once DaemonSets are
// subtracted, and where and how it can be bought (shapeFacts), numbered in this problem.
type shape struct {
	idx  int
	pool *pool
	// shapeFacts depend only on the input, never on the pods' grouping or the preferences: a
	// second build on the same input (the relaxed problem) shares them. Read-only.
	*shapeFacts
	// dominated: another shape of the pool is as large, as cheap and as welcoming (see
	// dominance.go); the packers skip it. It depends on which groups fit: per problem.
	dominated bool
}

// shapeFacts is what an instance type is as a node of one pool.
type shapeFacts struct {
	it *nodeplan.InstanceType
	// capacity counts against limits; alloc is what pending pods can use (allocatable minus the
	// DaemonSet pods that will run on it).
	capacity vec
	alloc    vec
	ds       vec
	dsPorts  []nodeplan.HostPort
	// reqs describes the node completely: pool requirements and labels, instance-type labels,
	// the zones and capacity types of its offerings.
	reqs shapeReqs
	// offerings are the available offerings the pool allows, cheapest first (ties: zone,
	// capacity type), priced with the pool's node cost; listPrices are their own prices. At
	// most 64, so a set of them fits in a uint64.
	offerings  []nodeplan.Offering
	listPrices []float64
	minPrice   float64
	// narrowKeys are keys other than zone and capacity type for which reqs allows several
	// values: pods may pin them differently, so mixing pods needs an exact check.
	narrowKeys []string
}

const maxOfferings = 64

// buildPools prepares every NodePool: its description, limits and shapes; the shapes' facts
// are from's where an earlier build on the same input worked them out (nil: none did).
func (p *problem) buildPools(in *Input, from *buildFacts) {
	nps := make([]*nodeplan.NodePool, len(in.NodePools))
	for i := range in.NodePools {
		nps[i] = &in.NodePools[i]
	}
	slices.SortStableFunc(nps, func(a, b *nodeplan.NodePool) int {
		return cmp.Or(cmp.Compare(b.Weight, a.Weight), strings.Compare(a.Name, b.Name))
	})
	for _, np := range nps {
		pl := &pool{idx: len(p.pools), np: np, nodeLimit: -1, nodeCost: in.Options.NodeCost.For(np.Name)}
		pl.desc = np.Template.Requirements.
			Intersect(nodeplan.RequirementsFromLabels(np.Template.Labels)).
			Add(nodeplan.In(nodeplan.LabelNodePool, np.Name))
		for _, r := range pl.desc.All() {
			if r.MinValues > 0 {
				pl.minValues = append(pl.minValues, r)
			}
		}
		pl.limited = make([]bool, len(p.dims.names))
		pl.limit = make(vec, len(p.dims.names))
		pl.used0 = make(vec, len(p.dims.names))
		for name, q := range np.Limits {
			if name == nodeplan.ResourceNodes {
				pl.nodeLimit = nodeplan.Value(q)
				continue
			}
			i := p.dims.index[name]
			pl.limited[i] = true
			pl.limit[i] = nodeplan.MilliValue(q) // saturated: cpu 1e16 limits nothing instead of wrapping
		}
		its := in.InstanceTypes
		if own, ok := in.PoolInstanceTypes[np.Name]; ok {
			its = own
		}
		pl.types = make([]*nodeplan.InstanceType, len(its))
		for i := range its {
			pl.types[i] = &its[i]
		}
		slices.SortFunc(pl.types, func(a, b *nodeplan.InstanceType) int { return strings.Compare(a.Name, b.Name) })
		facts := p.poolShapeFacts(pl, its, from)
		if ok, _ := np.CanLaunch(); !ok {
			// Karpenter launches nothing for a pool being deleted or not ready; its nodes and
			// in-flight claims still take pods and count against its limits.
			facts = nil
		}
		for _, f := range facts {
			pl.shapes = append(pl.shapes, &shape{pool: pl, shapeFacts: f})
		}
		for _, s := range pl.shapes {
			s.idx = len(p.shapes)
			p.shapes = append(p.shapes, s)
		}
		p.pools = append(p.pools, pl)
	}
}

// poolShapeFacts returns the facts of the pool's shapes, cheapest first (ties: the type's name,
// so that ties in the packer's choice go to the cheaper type): from's when an earlier build
// worked them out, else one per type of its the pool can launch (newShape). p.facts keeps them
// for a later build.
func (p *problem) poolShapeFacts(pl *pool, its []nodeplan.InstanceType, from *buildFacts) []*shapeFacts {
	if from != nil {
		p.facts.shapes = append(p.facts.shapes, from.shapes[pl.idx])
		return from.shapes[pl.idx]
	}
	b := p.newShapeBuilder(pl, its)
	out := make([]*shapeFacts, 0, len(b.its))
	for i, it := range b.its {
		if f := b.newShape(it, b.labelled[i]); f != nil {
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b *shapeFacts) int {
		if c := cmp.Compare(a.minPrice, b.minPrice); c != 0 {
			return c // prices mostly differ: the names are compared only on a tie
		}
		return strings.Compare(a.it.Name, b.it.Name)
	})
	p.facts.shapes = append(p.facts.shapes, out)
	return out
}

// shapeBuilder builds one pool's shapes. It runs for every pool and instance type of every
// solve, so it allocates little: the catalog is hundreds of types and a small solve's whole
// cost was mostly here. The facts, offerings, prices and vectors of all the pool's shapes are
// cut from one backing array each, sized for the types the pool may launch.
type shapeBuilder struct {
	p  *problem
	pl *pool
	// its are the types the pool's requirements accept (launchable); labelled[i] says which of
	// the pool's requirement keys its[i] has a label on (launchable).
	its      []*nodeplan.InstanceType
	labelled []uint64
	// zone and ct are the pool's requirements on zone and capacity type (has*: present).
	offeringReqs
	// narrowFor and narrow are the last narrowKeys worked out, and for which labelled keys.
	narrowFor uint64
	narrow    []string
	facts     []shapeFacts
	offs      []nodeplan.Offering
	prices    []float64
	vecs      vec
	// tolerated[i]: DaemonSet i tolerates the pool's taints.
	tolerated []bool
	// wheres are the sets of zones and capacity types the shapes were built with (where);
	// zones and cts are where's scratch.
	wheres     []poolWhere
	zones, cts []string
}

func (p *problem) newShapeBuilder(pl *pool, its []nodeplan.InstanceType) *shapeBuilder {
	b := &shapeBuilder{p: p, pl: pl, narrowFor: math.MaxUint64}
	b.its, b.labelled = make([]*nodeplan.InstanceType, 0, len(its)), make([]uint64, 0, len(its))
	offs := 0
	for i := range its {
		if labelled, ok := pl.launchable(&its[i]); ok {
			b.its = append(b.its, &its[i])
			b.labelled = append(b.labelled, labelled)
			offs += len(its[i].Offerings)
		}
	}
	b.zone, b.hasZone = pl.desc.Get(nodeplan.LabelZone)
	b.ct, b.hasCT = pl.desc.Get(nodeplan.LabelCapacityType)
	n := len(p.dims.names)
	b.facts = make([]shapeFacts, len(b.its))
	b.offs = make([]nodeplan.Offering, offs)
	b.prices = make([]float64, offs)
	b.vecs = make(vec, 3*n*len(b.its))
	b.tolerated = make([]bool, len(p.daemons))
	for i, d := range p.daemons {
		_, blocked := nodeplan.UntoleratedTaint(d.tols, pl.np.Template.Taints)
		b.tolerated[i] = !blocked
	}
	return b
}

// newShape returns the facts of it as a node of the pool, or nil when no offering is available
// and allowed. The type's labels were accepted already (launchable), labelled are its labelled
// keys of the pool's requirements.
func (b *shapeBuilder) newShape(it *nodeplan.InstanceType, labelled uint64) *shapeFacts {
	pl := b.pl
	// The offerings are filtered by the zone and capacity-type requirements of the pool and the
	// type's labels together; then the node is described as the pool's requirements with the
	// offerings' zones and capacity types, and the type's labels (shapeReqs).
	offReqs := b.offeringReqs
	offReqs.zone, offReqs.hasZone = withLabel(offReqs.zone, offReqs.hasZone, it.Labels)
	offReqs.ct, offReqs.hasCT = withLabel(offReqs.ct, offReqs.hasCT, it.Labels)
	offs := allowedOfferings(b.offs[:0:len(it.Offerings)], it, &offReqs)
	if len(offs) == 0 {
		return nil
	}
	b.offs = b.offs[len(offs):]
	s := &b.facts[0]
	b.facts = b.facts[1:]
	s.it, s.offerings, s.minPrice = it, offs, offs[0].Price+pl.nodeCost
	s.listPrices, b.prices = b.prices[:len(offs):len(offs)], b.prices[len(offs):]
	for i := range offs {
		s.listPrices[i] = offs[i].Price
		offs[i].Price += pl.nodeCost
	}
	s.reqs = shapeReqs{where: b.where(offs), labels: it.Labels, name: it.Name, named: true}
	n := len(b.p.dims.names)
	s.capacity, s.alloc, s.ds, b.vecs = b.vecs[:n:n], b.vecs[n:2*n:2*n], b.vecs[2*n:3*n:3*n], b.vecs[3*n:]
	b.p.dims.capacityInto(s.capacity, s.alloc, it)
	for i, d := range b.p.daemons {
		if b.tolerated[i] && d.runsOn(&s.reqs) {
			s.ds.add(d.req)
			s.dsPorts = append(s.dsPorts, d.ports...)
		}
	}
	s.alloc.sub(s.ds)
	s.narrowKeys = b.narrowKeys(&s.reqs, labelled)
	return s
}

// narrowKeys is reqs.narrowKeys() for a type with labels on the pool's requirement keys in
// labelled, which launchable found accepted. where's keys other than zone and capacity type
// are the pool's, with the pool's requirements; a labelled one is pinned, so the narrow keys
// are the unlabelled ones that allow other than one value: the same for every type labelled
// alike (a catalog's types mostly are), so the last answer is kept.
func (b *shapeBuilder) narrowKeys(reqs *shapeReqs, labelled uint64) []string {
	if b.pl.desc.Len() > 64 {
		return reqs.narrowKeys()
	}
	if labelled == b.narrowFor {
		return b.narrow
	}
	var out []string
	for i, r := range b.pl.desc.All() {
		if r.Key == nodeplan.LabelZone || r.Key == nodeplan.LabelCapacityType || labelled&(1<<uint(i)) != 0 {
			continue
		}
		if _, single := r.Single(); !single {
			out = append(out, r.Key)
		}
	}
	b.narrowFor, b.narrow = labelled, out
	return out
}

// launchable reports whether the pool's requirements accept the instance type's labels (and its
// name as the instance-type label when it has none): pl.desc intersected with them is empty
// exactly when it does not (TestMayLaunchIsIntersectionNotEmpty), and this says so without
// building the intersection — most of a pool's rejections (a GPU pool's of the whole general
// catalog) cost nothing. labelled has bit i set when the type labels (or names) the key of
// the pool's i-th requirement (the first 64).
func (pl *pool) launchable(it *nodeplan.InstanceType) (labelled uint64, ok bool) {
	for i, r := range pl.desc.All() {
		v, has := it.Labels[r.Key]
		if !has && r.Key == nodeplan.LabelInstanceType {
			v, has = it.Name, true
		}
		if has && !r.Accepts(v, true) || !has && r.IsEmpty() {
			return 0, false
		}
		if has && i < 64 {
			labelled |= 1 << uint(i)
		}
	}
	return labelled, true
}

// where returns the pool's requirements with the zones and capacity types of offs: a catalog
// has a handful of such sets (types sold in the same zones), so each is built once per pool.
func (b *shapeBuilder) where(offs []nodeplan.Offering) nodeplan.Requirements {
	zones, cts := b.zones[:0], b.cts[:0]
	for _, o := range offs {
		zones, cts = append(zones, o.Zone), append(cts, string(o.CapacityType))
	}
	slices.Sort(zones)
	slices.Sort(cts)
	zones, cts = slices.Compact(zones), slices.Compact(cts)
	b.zones, b.cts = zones, cts
	for _, w := range b.wheres {
		if slices.Equal(w.zones, zones) && slices.Equal(w.cts, cts) {
			return w.reqs
		}
	}
	zones, cts = slices.Clone(zones), slices.Clone(cts)
	reqs := b.pl.desc.Intersect(nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelZone, zones...), nodeplan.In(nodeplan.LabelCapacityType, cts...)))
	b.wheres = append(b.wheres, poolWhere{zones: zones, cts: cts, reqs: reqs})
	return reqs
}

// poolWhere is the pool's requirements with a set of zones and capacity types (where).
type poolWhere struct {
	zones, cts []string
	reqs       nodeplan.Requirements
}

// withLabel is r (ok: present, rs.Get(r.Key)) intersected with the labels' value on its key,
// as rs.Intersect(RequirementsFromLabels(labels)).Get(key) would be.
func withLabel(r nodeplan.Requirement, ok bool, labels map[string]string) (nodeplan.Requirement, bool) {
	v, labelled := labels[r.Key]
	return withValue(r, ok, r.Key, v, labelled)
}

// withValue is requirement r on key (ok: present) intersected with a label of value v on it
// (labelled: present): the requirement a node with that label meets on key.
func withValue(r nodeplan.Requirement, ok bool, key, v string, labelled bool) (nodeplan.Requirement, bool) {
	switch {
	case ok && labelled:
		return r.Intersect(nodeplan.In(key, v)), true
	case labelled:
		return nodeplan.In(key, v), true
	}
	return r, ok
}

// offeringReqs are the requirements on zone and capacity type that Offering.Accepts reads,
// looked up once for many offerings (has*: present).
type offeringReqs struct {
	zone, ct       nodeplan.Requirement
	hasZone, hasCT bool
}

// accepts is Offering.Accepts of the requirements these were read from.
func (w *offeringReqs) accepts(o nodeplan.Offering) bool {
	return (!w.hasZone || w.zone.Accepts(o.Zone, true)) && (!w.hasCT || w.ct.Accepts(string(o.CapacityType), true))
}

// allowedOfferings appends to offs (empty, with room for all of it.Offerings) the available,
// priced offerings of it that where accepts, cheapest first (ties: zone, capacity type), at
// most maxOfferings, at their list prices.
func allowedOfferings(offs []nodeplan.Offering, it *nodeplan.InstanceType, where *offeringReqs) []nodeplan.Offering {
	for _, o := range it.Offerings {
		if o.Available && o.Price > 0 && where.accepts(o) {
			offs = append(offs, o)
		}
	}
	slices.SortStableFunc(offs, func(a, b nodeplan.Offering) int {
		if c := cmp.Compare(a.Price, b.Price); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.Zone, b.Zone), strings.Compare(string(a.CapacityType), string(b.CapacityType)))
	})
	n := min(len(offs), maxOfferings)
	return offs[:n:n]
}

// capacityInto writes the type's capacity (as vecInto) into capacity and it.Allocatable() into
// alloc (both zeroed, of the dimensions' length) in one pass, without the three resource lists
// Allocatable builds: each capacity less the overhead's kube-reserved, system-reserved and
// eviction amounts, floored at zero, in exact quantity arithmetic before the one conversion to
// milli-units, so the amounts are those of Allocatable to the last unit.
func (d *dims) capacityInto(capacity, alloc vec, it *nodeplan.InstanceType) {
	var lists [3]corev1.ResourceList
	over := lists[:0] // the overhead's lists that say something (a catalog's types mostly have one)
	for _, o := range [...]corev1.ResourceList{it.Overhead.KubeReserved, it.Overhead.SystemReserved, it.Overhead.EvictionThreshold} {
		if len(o) > 0 {
			over = append(over, o)
		}
	}
	for i, n := range d.names { // every capacity name is a dimension (addInputDims)
		q, ok := it.Capacity[n]
		if !ok {
			continue
		}
		capacity[i] = nodeplan.MilliValue(q) // saturated, as vecInto
		copied := false
		for _, o := range over {
			if x, ok := o[n]; ok {
				if !copied {
					q, copied = q.DeepCopy(), true
				}
				q.Sub(x)
			}
		}
		if q.Sign() > 0 {
			alloc[i] = nodeplan.MilliValue(q)
		}
	}
}

// daemon is a DaemonSet's pod, prepared.
type daemon struct {
	name  string
	req   vec
	alts  []nodeplan.Requirements
	tols  []corev1.Toleration
	ports []nodeplan.HostPort
}

// buildDaemons prepares each DaemonSet's pod, its requests as vectors left to finishDaemons
// (once every dimension is known), and returns those requests.
func (p *problem) buildDaemons(dss []*appsv1.DaemonSet) ([]corev1.ResourceList, error) {
	var lists []corev1.ResourceList
	for _, ds := range dss {
		pod := &corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta, Spec: ds.Spec.Template.Spec}
		pod.Namespace, pod.Name = ds.Namespace, ds.Name
		alts, err := podAlternatives(pod, nil, false, 0)
		if err != nil {
			return nil, &InputError{Object: "DaemonSet " + ds.Namespace + "/" + ds.Name, Err: err}
		}
		rl := nodeplan.PodRequests(pod)
		p.dims.addAll(rl)
		p.daemons = append(p.daemons, &daemon{name: ds.Namespace + "/" + ds.Name, alts: alts,
			tols: pod.Spec.Tolerations, ports: nodeplan.PodHostPorts(pod), req: nil})
		lists = append(lists, rl)
	}
	return lists, nil
}

// finishDaemons sets each DaemonSet pod's requests (lists, from buildDaemons) over the dimensions.
func (p *problem) finishDaemons(lists []corev1.ResourceList) {
	for i, d := range p.daemons {
		d.req = p.dims.vec(lists[i])
	}
}

// runsOn reports whether the DaemonSet's pod, tolerating the node's taints, would run on a node
// described by reqs: some alternative of its node affinity accepts the node.
func (d *daemon) runsOn(reqs *shapeReqs) bool {
	for _, a := range d.alts {
		if reqs.compatible(a) {
			return true
		}
	}
	return false
}

// runsOnLabels is runsOn for a node whose labels are known exactly.
func (d *daemon) runsOnLabels(labels map[string]string, taints []corev1.Taint) bool {
	if _, blocked := nodeplan.UntoleratedTaint(d.tols, taints); blocked {
		return false
	}
	for _, a := range d.alts {
		if a.Matches(labels) {
			return true
		}
	}
	return false
}

// priceFor returns the cheapest offering in mask, and its index.
func (s *shape) priceFor(mask uint64) (float64, int) {
	if mask == 0 {
		return math.Inf(1), -1
	}
	i := bits.TrailingZeros64(mask) // offerings are sorted by price
	return s.offerings[i].Price, i
}
