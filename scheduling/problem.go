package scheduling

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
)

// problem is the model of one solve: what newProblem builds from an Input and the steps of
// solveOnce (solve.go) read. The packing state those steps write — which pods are placed where —
// is a packState, created by solveOnce and handed to each step that reads or writes it. Both are
// thrown away after the solve.
type problem struct {
	// newProblem builds the model, applyTopology splitting and annotating the groups, before any
	// step runs. The steps write into it only what orders or annotates their work: each group's
	// value and the order of the fit lists by it (setValues: valuePods, and packNewNodes for a
	// pool priced alone); why a group's pods were taken back (g.blocked, enforceTopology); and
	// the memos below.
	in    *Input
	prefs preferences // which preferences this solve treats as requirements
	dims  *dims
	// base is the grouping of the pending pods before topology split any group.
	base   []*group
	groups []*group
	pools  []*pool
	shapes []*shape
	// bins are the existing nodes and in-flight claims, with the room they had before this
	// solve; the room left and what is placed there is packState.bins. Likewise each pool's
	// usage against its limits before any new node (pool.used0) and with the planned claims
	// (packState.usage).
	bins []*bin

	daemons []*daemon
	// facts is what this build worked out from the input alone, for a later build on the same
	// input to take (see buildFacts).
	facts *buildFacts

	// byShape lists, per shape, the groups it can take and how: fit is checked per node, but
	// labels, taints, host ports against DaemonSets and offerings are settled here once.
	byShape [][]fitEntry
	fits    fitIndex
	// fitSrc is what the fit lists are filled from (buildFits, orderFits).
	fitSrc fitSource
	// conflictPairs are pairs of groups (ids) that may not share a node, recorded once the
	// groups have their final ids (conflict) and turned into each group's conflicts by
	// finishConflicts.
	conflictPairs [][2]int32
	// poolOK[g][pool] says whether group g has any shape in the pool.
	poolOK [][]bool
	// ncaps counts the shared per-node caps (nodeCap.idx).
	ncaps int
	// running indexes the running pods by label value for spread counting (runindex.go).
	running *runningIndex
	// spreadFams are the split spreads, checked again after packing.
	spreadFams []*spreadFam
	// famSigs[o] are the family signatures (spreadSignature and scope) of the spreads of the
	// groups of origin o, worked out once (familySigs).
	famSigs [][]string
	// relaxable: applyTopology split or pinned groups, or capped them by a hostname spread,
	// so a bound proved on this problem would hold only for plans made the same way; the
	// bound is proved on the relaxed problem instead (topologyFreeBound), and noProof spares this
	// one the work.
	relaxable, noProof bool

	// Built while topology is applied (topology.go), read after.
	//
	// topo holds each group's parsed topology constraints.
	topo map[*group]groupTopo
	// domainMemo holds what the shapes offer on a key, per list of alternatives (domains.go).
	domainMemo domainMemo
	// affinityDomain is the domain chosen for a self-affine group (and all its subgroups).
	affinityDomain map[string]string
	// singles are the one-node states, by representative pod.
	singleStates map[*corev1.Pod]*singleState

	// Worked out on demand and kept for the rest of the solve.
	//
	// lpClass maps each group to the group that stands for its class in the LP (lpclass.go).
	lpClass []int
	// lpMembers lists, for a group standing for a class of more than one, the class's groups.
	lpMembers map[int][]int
}

// packState is which pods one solve has placed where: solveOnce creates it (newPackState) after
// the model is built and hands it to each step in turn. placeOnBins, packNewNodes, placeWith and
// returnDropped place pods; enforceTopology and rejectMinValues take some back; result and
// finalBound read it.
type packState struct {
	// remaining[g] counts the group's pods not placed yet.
	remaining []int64
	// bins[i] is the room left on the model's bins[i] and the pods placed there.
	bins []binState
	// usage[i] is what pool i's existing, in-flight and planned nodes take against its limits.
	usage []poolUsage
	// claims are the planned new nodes.
	claims []*claim
	// dropped counts pods a pool's packing took out for good (see drop), given back to
	// remaining by returnDropped once every pool has packed.
	dropped map[int]int64
	// singlePlaced marks the one-node states (group.single) whose node is chosen: an existing
	// one or a planned claim. The rest of their pods can go nowhere else.
	singlePlaced map[*singleState]bool
	// minValuesHit marks groups whose claims failed their pool's minValues.
	minValuesHit map[int]bool
}

// binState is an existing node's or in-flight claim's room left, and the pods this solve placed
// on it.
type binState struct {
	free   vec
	placed []placement
}

// newPackState is the packing state at its start: every pending pod remaining, every bin with
// the room it had before the solve, every pool's usage that of its existing nodes and in-flight
// claims.
func (p *problem) newPackState() *packState {
	st := &packState{
		remaining:    make([]int64, len(p.groups)),
		bins:         make([]binState, len(p.bins)),
		usage:        make([]poolUsage, len(p.pools)),
		dropped:      map[int]int64{},
		singlePlaced: map[*singleState]bool{},
		minValuesHit: map[int]bool{},
	}
	for _, g := range p.groups {
		st.remaining[g.id] = int64(len(g.pods))
	}
	for i, b := range p.bins {
		st.bins[i].free = b.free0.clone()
	}
	for _, pl := range p.pools {
		st.usage[pl.idx] = poolUsage{used: pl.used0.clone(), nodes: pl.nodes0}
	}
	return st
}

// placed returns how many of g's pods st has placed.
func (st *packState) placed(g *group) int {
	return len(g.pods) - int(st.remaining[g.id])
}

// fitEntry says group g may go on a shape, through the offerings in mask, using alternative alt
// of its node requirements. The fit lists hold one per group and shape it fits (a hundred
// thousand on the 1,000-pod drawn mix, twice: the plan's and the relaxed problem's), so the
// numbers are 32-bit: 16 bytes an entry.
type fitEntry struct {
	g    int32
	alt  int32
	mask uint64
}

// InputError is an Input the solver cannot read: which object, and why.
type InputError struct {
	Object string
	Err    error
}

func (e *InputError) Error() string { return fmt.Sprintf("scheduling: %s: %v", e.Object, e.Err) }
func (e *InputError) Unwrap() error { return e.Err }

func newProblem(in *Input, prefs preferences) (*problem, error) {
	return newProblemGrouped(in, prefs, nil, nil)
}

// newProblemGrouped is newProblem with the pending pods already grouped (base, as saved in
// problem.base by an earlier newProblem on the same input); nil groups them. from is that
// earlier build's facts (problem.facts), taken instead of being worked out again where they
// hold (nil: none). Its steps, in order: the groups, copied (later steps split and annotate
// them; pods and keys are only read, so they are shared); what each group's pods ask for, the
// DaemonSets and every resource the input names (describe); the pools and their shapes; the
// existing nodes and in-flight claims as bins; topology (applyTopology); conflicts, fits and
// dominated shapes.
func newProblemGrouped(in *Input, prefs preferences, base []*group, from *buildFacts) (*problem, error) {
	if base == nil {
		base = groupPending(in)
	}
	if !from.holdFor(prefs, base) {
		from = nil
	}
	p := &problem{in: in, prefs: prefs, base: base, groups: copyGroups(base), facts: newBuildFacts(prefs, base)}
	if err := p.describe(in, from); err != nil {
		return nil, err
	}
	p.buildPools(in, from)
	if err := p.buildBins(in); err != nil {
		return nil, err
	}
	if err := p.applyTopology(in, from); err != nil {
		return nil, err
	}
	p.finishConflicts()
	p.buildFits(from)
	p.markDominated()
	return p, nil
}

// buildFacts is what a build works out from the input alone, before topology touches the
// groups: the relaxed problem (topologyFreeBound), built on the same input and grouping while
// the plan is packed, takes them from the plan's build instead of working them out again.
// Read-only once the build that made them returns, so the two builds may run at once.
type buildFacts struct {
	// prefs (relaxTopology aside) and base are what the facts were worked out for.
	prefs preferences
	base  []*group
	dims  *dims
	// daemons are the DaemonSets' pods, their requests over dims.
	daemons []*daemon
	// groups[i] describes base group i (describeGroups), before topology.
	groups []groupDesc
	// shapes[i] are the facts of pool i's shapes, in the pool's order.
	shapes [][]*shapeFacts
	// altFits is buildFits' memo: which alternative each shape of a pool accepts, by pool and
	// alternatives (poolAltFits).
	altFits map[string][]altFit
	// topos[i] are base group i's parsed topology constraints (parseGroups).
	topos []groupTopo
}

// groupDesc is what describeGroups reads from a group's representative pod.
type groupDesc struct {
	requests       corev1.ResourceList
	alts, nodeAlts []nodeplan.Requirements
	tolerations    []corev1.Toleration
	ports          []nodeplan.HostPort
	priority       int32
}

func newBuildFacts(prefs preferences, base []*group) *buildFacts {
	prefs.relaxTopology = false
	return &buildFacts{prefs: prefs, base: base}
}

// holdFor reports whether the facts were worked out for this grouping and preferences (the
// relaxed problem's differ only in relaxTopology, which no fact depends on).
func (f *buildFacts) holdFor(prefs preferences, base []*group) bool {
	prefs.relaxTopology = false
	return f != nil && f.prefs == prefs && len(f.base) == len(base) && (len(base) == 0 || &f.base[0] == &base[0])
}

// describe works out what each group's pods ask for, the DaemonSets, and the resource
// dimensions (every resource the input names), then the groups' requests as vectors; from
// from's facts where given.
func (p *problem) describe(in *Input, from *buildFacts) error {
	if from != nil {
		p.dims, p.daemons = from.dims, from.daemons
		p.facts.dims, p.facts.daemons, p.facts.groups = from.dims, from.daemons, from.groups
		p.applyDescs(from.groups)
		return nil
	}
	p.dims = newDims()
	reqLists, err := p.describeGroups(in)
	if err != nil {
		return err
	}
	daemonLists, err := p.buildDaemons(in.DaemonSets)
	if err != nil {
		return err
	}
	p.addInputDims(in)
	p.finishDaemons(daemonLists)
	p.setRequests(reqLists)
	p.facts.dims, p.facts.daemons = p.dims, p.daemons
	p.facts.groups = make([]groupDesc, len(p.groups))
	for i, g := range p.groups {
		p.facts.groups[i] = groupDesc{requests: reqLists[i], alts: slices.Clone(g.alts), nodeAlts: slices.Clone(g.nodeAlts),
			tolerations: g.tolerations, ports: g.ports, priority: g.priority}
	}
	return nil
}

// applyDescs gives each group the description an earlier build read; the alternatives are
// copied, as topology rewrites them in place.
func (p *problem) applyDescs(descs []groupDesc) {
	reqLists := make([]corev1.ResourceList, len(p.groups))
	for i, g := range p.groups {
		d := &descs[i]
		g.alts, g.nodeAlts = slices.Clone(d.alts), slices.Clone(d.nodeAlts)
		g.tolerations, g.ports, g.priority = d.tolerations, d.ports, d.priority
		reqLists[i] = d.requests
	}
	p.setRequests(reqLists)
}

// groupPending groups the pods of in not bound to a node yet.
func groupPending(in *Input) []*group {
	var pending []*corev1.Pod
	for _, pod := range in.Pods {
		if pod.Spec.NodeName == "" {
			pending = append(pending, pod)
		}
	}
	return pinApart(groupPods(pending, selectorKeys(in), in.VolumeZones, inputTaints(in)), in.Pins)
}

// pinApart splits each group whose pods Input.Pins restricts to different nodes (or some not at
// all) into one group per node, unpinned pods first, and numbers the groups again in order.
func pinApart(groups []*group, pins map[string]string) []*group {
	if len(pins) == 0 {
		return groups
	}
	var out []*group
	for _, g := range groups {
		byPin := map[string]*group{}
		for i, k := range g.keys {
			pin := pins[k]
			sub := byPin[pin]
			if sub == nil {
				sub = &group{rep: g.pods[i], constraints: g.constraints}
				byPin[pin] = sub
			}
			sub.pods = append(sub.pods, g.pods[i])
			sub.keys = append(sub.keys, k)
		}
		for _, pin := range slices.Sorted(maps.Keys(byPin)) {
			out = append(out, byPin[pin])
		}
	}
	for i, g := range out {
		g.id = i
	}
	return out
}

// copyGroups returns fresh groups with the pods of base, before any step annotated them.
func copyGroups(base []*group) []*group {
	out := make([]*group, len(base))
	for i, g := range base {
		out[i] = &group{id: g.id, origin: i + 1, rep: g.rep, pods: g.pods, keys: g.keys, constraints: g.constraints}
	}
	return out
}

// setRequests gives each group its requests as a vector over the problem's dimensions, and a
// cap of one pod per node to groups with host ports (two replicas cannot bind the same one).
func (p *problem) setRequests(reqLists []corev1.ResourceList) {
	for i, g := range p.groups {
		g.req = p.dims.vec(reqLists[i])
		if g.ports != nil {
			g.perNode = 1
		}
	}
}

// describeGroups reads each group's node alternatives, tolerations, host ports and priority
// from its representative pod, and returns its requests (the dimensions they name added).
func (p *problem) describeGroups(in *Input) ([]corev1.ResourceList, error) {
	reqLists := make([]corev1.ResourceList, len(p.groups))
	for i, g := range p.groups {
		reqLists[i] = nodeplan.PodRequests(g.rep)
		p.dims.addAll(reqLists[i])
		alts, err := podAlternatives(g.rep, in.VolumeZones[g.keys[0]], p.prefs.nodeAffinity, p.prefs.nodeTermsDropped)
		if err != nil {
			return nil, &InputError{Object: "pod " + g.keys[0], Err: err}
		}
		g.alts = alts
		g.nodeAlts = slices.Clone(alts)
		if node, ok := in.Pins[g.keys[0]]; ok {
			for i := range g.alts {
				g.alts[i] = g.alts[i].Add(nodeplan.In(metadataName, node))
			}
		}
		if in.VolumeZones[g.keys[0]] != nil || p.prefs.nodeAffinity {
			// Spread domains are the nodes the pod's required node selection allows, as
			// kube-scheduler counts them (nodeAffinityPolicy Honor reads only the required
			// terms): not narrowed by its volumes, nor by a preferred term this solve treats as
			// required — a spot preference must not drop the on-demand nodes' pods from the
			// count (seed 246 of the disruption differential test).
			if g.nodeAlts, err = podAlternatives(g.rep, nil, false, 0); err != nil {
				return nil, &InputError{Object: "pod " + g.keys[0], Err: err}
			}
		}
		g.tolerations = g.rep.Spec.Tolerations
		g.ports = nodeplan.PodHostPorts(g.rep)
		if g.rep.Spec.Priority != nil {
			g.priority = *g.rep.Spec.Priority
		}
	}
	return reqLists, nil
}

// addInputDims adds the resources instance types, pool limits and existing nodes name.
func (p *problem) addInputDims(in *Input) {
	for i := range in.InstanceTypes {
		p.dims.addAll(in.InstanceTypes[i].Capacity)
	}
	for _, its := range in.PoolInstanceTypes {
		for i := range its {
			p.dims.addAll(its[i].Capacity)
		}
	}
	for i := range in.NodePools {
		for name := range in.NodePools[i].Limits {
			if name != nodeplan.ResourceNodes {
				p.dims.add(name)
			}
		}
	}
	for _, n := range in.Nodes {
		p.dims.addAll(n.Node.Status.Allocatable)
	}
}

// finishConflicts numbers each group's conflicting groups (topology's, and groups whose host
// ports collide, which may not share a node), sorted and without repeats so membership is a
// binary search (conflictsWithGroup), and caps single-node groups at their size.
func (p *problem) finishConflicts() {
	// Only groups with host ports can collide: pairing every two groups was quadratic in the
	// groups, which on the drawn mix are nearly as many as the pods.
	var withPorts []*group
	for _, g := range p.groups {
		if len(g.ports) > 0 {
			withPorts = append(withPorts, g)
		}
	}
	for i, g := range withPorts {
		for _, h := range withPorts[i+1:] {
			if _, clash := portsConflict(g.ports, h.ports); clash {
				p.conflict(g, h)
			}
		}
	}
	p.numberConflicts()
	for _, g := range p.groups {
		slices.Sort(g.conflicts)
		g.conflicts = slices.Compact(g.conflicts)
		if g.single != nil && (g.perNode == 0 || g.perNode > int64(len(g.pods))) {
			g.perNode = int64(len(g.pods))
		}
	}
}

// numberConflicts lists each group's side of every pair of conflictPairs as the other group's
// id in g.conflicts, every list cut from one array of the exact size (grown pair by pair they
// were much of the drawn mix's garbage).
func (p *problem) numberConflicts() {
	n := make([]int, len(p.groups))
	for _, c := range p.conflictPairs {
		n[c[0]]++
		n[c[1]]++
	}
	all := make([]int, 2*len(p.conflictPairs))
	for _, g := range p.groups {
		k := n[g.id]
		g.conflicts, all = all[:0:k], all[k:]
	}
	for _, c := range p.conflictPairs {
		g, h := p.groups[c[0]], p.groups[c[1]]
		g.conflicts = append(g.conflicts, h.id)
		h.conflicts = append(h.conflicts, g.id)
	}
	p.conflictPairs = nil
}

// conflictsWithGroup reports whether g may not share a node with group h.
func (g *group) conflictsWithGroup(h int) bool {
	_, found := slices.BinarySearch(g.conflicts, h)
	return found
}

// selectorKeys returns the label keys some spread or affinity selector looks at: pods that
// differ only in other labels are interchangeable.
//
// A bound pod's spread constraints are not read: kube-scheduler checks a spread constraint only
// for the pod that carries it, when that pod is scheduled, so a bound pod's constraints never
// constrain pending pods (its affinity terms do: required anti-affinity holds both ways). Left
// out, they cost nothing where most bound pods carry one — a disruption simulation hands the
// solver tens of thousands of them, once per simulation.
func selectorKeys(in *Input) []string {
	keys := map[string]bool{}
	affinity := func(p *corev1.Pod) {
		if p.Spec.Affinity == nil {
			return
		}
		for _, t := range nodeplan.PodAffinityTerms(p) {
			addLabelSelectorKeys(keys, t.LabelSelector)
			for _, k := range t.MatchLabelKeys {
				keys[k] = true
			}
			for _, k := range t.MismatchLabelKeys {
				keys[k] = true
			}
		}
	}
	for _, p := range in.Pods {
		for _, c := range p.Spec.TopologySpreadConstraints {
			addLabelSelectorKeys(keys, c.LabelSelector)
			for _, k := range c.MatchLabelKeys {
				keys[k] = true
			}
		}
		affinity(p)
	}
	for _, n := range in.Nodes {
		for _, p := range n.Pods {
			affinity(p)
		}
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// buildFits settles, for every group and shape, whether the group may ever go there and through
// which offerings. The fit lists are counted first and then filled, each a slice of one
// allocation: grown by appends they were a fifth of the drawn mix's allocation.
func (p *problem) buildFits(from *buildFacts) {
	p.byShape = make([][]fitEntry, len(p.shapes))
	p.poolOK = make([][]bool, len(p.groups))
	ok := make([]bool, len(p.groups)*len(p.pools))
	for _, g := range p.groups {
		p.poolOK[g.id] = ok[g.id*len(p.pools) : (g.id+1)*len(p.pools) : (g.id+1)*len(p.pools)]
	}
	fitsOf, marks, sizes := p.settleFits(from)
	p.fitSrc = fitSource{fitsOf: fitsOf, marks: marks}
	total := 0
	for _, n := range sizes {
		total += n
	}
	all := make([]fitEntry, 0, total)
	for i, n := range sizes {
		p.byShape[i] = all[:0:n]
		all = all[n:n:cap(all)]
	}
	p.fillFits(nil)
}

// fitSource is what settleFits worked out, kept to fill the fit lists again in another order
// of the groups (orderFits).
type fitSource struct {
	// fitsOf[pool][group] is the alternative each shape of the pool accepts (nil: the group may
	// never go to the pool); marks[pool] a bit per shape of the pool, words of 64 per group: the
	// shapes the group fits.
	fitsOf [][][]altFit
	marks  [][]uint64
}

// fillFits fills every shape's fit list with the groups in order (their ids; nil: by id), each
// list holding a group once and in the order given: filling them again in another order is
// sorting them, in time linear in the entries. Each list has room for exactly its entries
// (buildFits), so they are written in place, one list after another: the writes run through
// memory in order instead of touching every list for each group.
func (p *problem) fillFits(order []int) {
	for _, pl := range p.pools {
		words := (len(pl.shapes) + 63) / 64
		marks, fitsOf := p.fitSrc.marks[pl.idx], p.fitSrc.fitsOf[pl.idx]
		for i, s := range pl.shapes {
			list := p.byShape[s.idx][:cap(p.byShape[s.idx])]
			n, w, bit := 0, i/64, uint64(1)<<uint(i%64)
			for k := range p.groups {
				gi := k
				if order != nil {
					gi = order[k]
				}
				if marks[gi*words+w]&bit != 0 {
					f := fitsOf[gi][i]
					list[n] = fitEntry{g: int32(gi), mask: f.mask, alt: int32(f.alt)}
					n++
				}
			}
			p.byShape[s.idx] = list[:n]
		}
		for gi := range p.groups {
			if slices.ContainsFunc(marks[gi*words:(gi+1)*words], func(m uint64) bool { return m != 0 }) {
				p.poolOK[gi][pl.idx] = true
			}
		}
	}
}

// settleFits works out, per pool and group, which alternative each shape accepts (fitsOf, nil
// where the group may never go to the pool) and which shapes the group fits (marks: a bit per
// shape of the pool, words of 64 per group, so the lists are filled without asking again), and
// counts the groups each shape fits (sizes).
func (p *problem) settleFits(from *buildFacts) (fitsOf [][][]altFit, marks [][]uint64, sizes []int) {
	// Which alternative a shape accepts, and through which offerings, depends only on the
	// alternatives: many groups share them (a deployment's sizes, a zone's pins), so it is
	// worked out once per distinct list and shape.
	memo := map[string][]altFit{}
	p.facts.altFits = memo
	var earlier map[string][]altFit
	if from != nil {
		earlier = from.altFits
	}
	fitsOf = make([][][]altFit, len(p.pools))
	marks = make([][]uint64, len(p.pools))
	sizes = make([]int, len(p.shapes))
	var key []byte
	for _, pl := range p.pools {
		words := (len(pl.shapes) + 63) / 64
		fitsOf[pl.idx] = make([][]altFit, len(p.groups))
		marks[pl.idx] = make([]uint64, words*len(p.groups))
		for _, g := range p.groups {
			var fits []altFit
			fits, key = p.poolAltFits(pl, g, memo, earlier, key)
			if fits == nil {
				continue
			}
			fitsOf[pl.idx][g.id] = fits
			mark := marks[pl.idx][g.id*words:]
			for i, s := range pl.shapes {
				if groupFitsShape(g, s, fits[i]) {
					mark[i/64] |= 1 << uint(i%64)
					sizes[s.idx]++
				}
			}
		}
	}
	return fitsOf, marks, sizes
}

// poolAltFits returns, for each shape of pl, the alternative of g it accepts (shapeAltFits,
// memoised by pool and alternatives in memo; earlier is an earlier build's memo, read only), or
// nil when g may never go to pl. key is a buffer for the memo's key, returned for reuse.
func (p *problem) poolAltFits(pl *pool, g *group, memo, earlier map[string][]altFit, key []byte) ([]altFit, []byte) {
	if g.blocked != nil || g.noNew || g.with != nil {
		return nil, key
	}
	if _, blocked := p.untolerated(g.tolerations, pl.np.Template.Taints); blocked {
		return nil, key
	}
	key = strconv.AppendInt(key[:0], int64(pl.idx), 10)
	for _, alt := range g.alts {
		key = append(key, '|')
		key = append(key, alt.String()...)
	}
	fits, seen := memo[string(key)]
	if !seen {
		fits, seen = earlier[string(key)]
	}
	if !seen {
		fits = shapeAltFits(pl, g.alts)
		memo[string(key)] = fits
	}
	return fits, key
}

// groupFitsShape reports whether g may go on s through fit (an entry of poolAltFits): an alternative and offering accept it, its requests fit the shape's
// allocatable, and its host ports are free of the DaemonSets'.
func groupFitsShape(g *group, s *shape, fit altFit) bool {
	if fit.alt < 0 || !g.req.fitsIn(s.alloc) {
		return false
	}
	_, clash := portsConflict(g.ports, s.dsPorts)
	return !clash
}

// altFit is the first alternative a shape accepts (-1: none) and the offerings it accepts there.
type altFit struct {
	alt  int
	mask uint64
}

// shapeAltFits returns, for each shape of pl, the first of alts it accepts with some offering.
func shapeAltFits(pl *pool, alts []nodeplan.Requirements) []altFit {
	fits := make([]altFit, len(pl.shapes))
	for i, s := range pl.shapes {
		fits[i] = altFit{alt: -1}
		for ai, alt := range alts {
			if !s.reqs.compatible(alt) {
				continue
			}
			if mask := offeringMask(s, alt); mask != 0 {
				fits[i] = altFit{alt: ai, mask: mask}
				break
			}
		}
	}
	return fits
}

// offeringMask returns the set of the shape's offerings whose zone and capacity type rs accepts.
func offeringMask(s *shape, rs nodeplan.Requirements) uint64 {
	zr, hasZ := rs.Get(nodeplan.LabelZone)
	cr, hasC := rs.Get(nodeplan.LabelCapacityType)
	var mask uint64
	for i, o := range s.offerings {
		if (!hasZ || zr.Accepts(o.Zone, true)) && (!hasC || cr.Accepts(string(o.CapacityType), true)) {
			mask |= 1 << uint(i)
		}
	}
	return mask
}

// preferences says which soft constraints a solve treats as hard (see preferences.go).
type preferences struct {
	nodeAffinity, podAffinity, podAnti, spread, preferNoSchedule bool
	// nodeTermsDropped is how many of each pod's heaviest preferred node-affinity terms are set
	// aside when nodeAffinity is honoured: the next heaviest is treated as required.
	nodeTermsDropped int
	// largestFirst fills existing room with the largest pods (cpu, then memory) rather than
	// the most valuable: the alternative tried on small inputs (see solveWithPreferences).
	largestFirst bool
	// relaxTopology builds the problem the lower bound is proved on (see topologyFreeBound): the
	// constraints the solver meets by splitting and pinning groups are left out.
	relaxTopology bool
}

// untolerated is nodeplan.UntoleratedTaint, with PreferNoSchedule taints blocking too when this
// solve honours them.
func (p *problem) untolerated(tols []corev1.Toleration, taints []corev1.Taint) (corev1.Taint, bool) {
	if t, ok := nodeplan.UntoleratedTaint(tols, taints); ok {
		return t, true
	}
	if p.prefs.preferNoSchedule {
		for _, t := range taints {
			if t.Effect == corev1.TaintEffectPreferNoSchedule && !nodeplan.Tolerates(tols, t) {
				return t, true
			}
		}
	}
	return corev1.Taint{}, false
}

func addLabelSelectorKeys(keys map[string]bool, sel *metav1.LabelSelector) {
	if sel == nil {
		return
	}
	for k := range sel.MatchLabels {
		keys[k] = true
	}
	for _, e := range sel.MatchExpressions {
		keys[e.Key] = true
	}
}
