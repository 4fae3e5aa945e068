package disruption

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// vec is the part of a resource list the planner's cheap screens look at.
type vec struct{ cpu, mem, pods int64 }

func toVec(rl corev1.ResourceList) vec {
	var v vec
	if q, ok := rl[corev1.ResourceCPU]; ok {
		v.cpu = nodeplan.MilliValue(q)
	}
	if q, ok := rl[corev1.ResourceMemory]; ok {
		v.mem = units(q)
	}
	if q, ok := rl[corev1.ResourcePods]; ok {
		v.pods = units(q)
	}
	return v
}

// units is q in whole units, rounded up as resource.Quantity.Value rounds, and saturated as
// nodeplan.MilliValue is: Value wraps around above about 9.2e18 units and MilliValue above
// 9.2e15, so a pod asking cpu 1e16 or memory 10E looked small enough to move anywhere.
// Saturated, it fits no node. Below the limit it is exactly Value.
func units(q resource.Quantity) int64 {
	m := nodeplan.MilliValue(q)
	if m > 0 {
		return (m + 999) / 1000
	}
	return m / 1000
}

// add sums, saturating each amount at nodeplan.MaxMilliValue so that no count of saturated
// requests overflows (amounts are never negative here, so each sum stays below 2× the limit).
func (v vec) add(o vec) vec {
	const top = nodeplan.MaxMilliValue
	return vec{min(v.cpu+o.cpu, top), min(v.mem+o.mem, top), min(v.pods+o.pods, top)}
}
func (v vec) sub(o vec) vec        { return vec{v.cpu - o.cpu, v.mem - o.mem, v.pods - o.pods} }
func (v vec) leq(o vec) bool       { return v.cpu <= o.cpu && v.mem <= o.mem && v.pods <= o.pods }
func (v vec) zeroFloor() vec       { return vec{max(v.cpu, 0), max(v.mem, 0), max(v.pods, 0)} }
func (v vec) cpuCores() float64    { return float64(v.cpu) / 1000 }
func (v vec) memGiB() float64      { return float64(v.mem) / (1 << 30) }
func (v vec) String() string       { return formatVec(v) }
func sortStrings(s []string)       { slices.Sort(s) }
func joinSorted(s []string) string { return strings.Join(s, ", ") }

// nstate is one node during a pass.
type nstate struct {
	in    *Node
	name  string
	pool  *nodeplan.NodePool // nil when unmanaged or the pool is missing
	price float64

	movable    []*corev1.Pod // evicted when the node goes
	req        vec           // Σ requests of movable
	disruption float64

	sched     scheduling.Node // the simulation's view: allocatable already net of bound pods
	free      vec
	receives  bool   // took pods this pass, so it must stay
	changedAt int    // planner.version when it last took pods
	mark      int    // equals planner.mark while the node is in the set being evaluated
	group     string // see groupKey

	dest      bool // may take pods: initialized, not disrupting, not going away
	gone      bool // in a command
	nominated string
	blocked   *Blocked
}

// planner is one pass. It is used by one goroutine and dropped after Plan returns.
type planner struct {
	in    *Input
	opts  Options
	now   time.Time
	pools map[string]*nodeplan.NodePool

	nodes  []*nstate // sorted by name
	byName map[string]*nstate

	budgets *budgets
	pdbs    *pdbSet

	selectors   []labels.Selector      // from the inter-pod terms of pods that may move
	selIndex    map[string]int         // a selector's string to its index in selectors
	masks       map[*corev1.Pod]uint64 // see selectorMask
	aggregate   bool                   // no inter-pod term is per node, so count-only nodes may merge
	prices      *pricer
	requests    map[*corev1.Pod]corev1.ResourceList
	version     int  // bumped by every commit that changes where pods can go
	interPodMvd bool // a committed move carried pods with inter-pod terms

	mark    int         // see nstate.mark
	dests   []destEntry // see destIndex
	destsAt int         // planner.version dests was built at
	scratch []destEntry // fastDelete's working copy of dests

	virtual []scheduling.Node // replacements of earlier commands, for inter-pod terms only
	placed  []placedPod       // pods placed this pass whose hard inter-pod terms count others

	sims     int
	maxSims  int
	commands []Command
	claimSeq int
}

func newPlanner(in *Input) *planner {
	p := &planner{in: in, opts: in.Options, now: in.Now, pools: map[string]*nodeplan.NodePool{},
		byName: map[string]*nstate{}, prices: newPricer(in),
		requests: map[*corev1.Pod]corev1.ResourceList{}, maxSims: in.Options.maxSimulations()}
	for i := range in.NodePools {
		p.pools[in.NodePools[i].Name] = &in.NodePools[i]
	}
	p.budgets = newBudgets(in.Now, p.pools, in.Nodes)

	var all []*corev1.Pod
	for i := range in.Nodes {
		all = append(all, in.Nodes[i].Pods...)
	}
	all = append(all, in.Pending...)
	p.pdbs = newPDBSet(in.PDBs, all)
	var selKeys []string
	p.selectors, selKeys = interPodSelectors(all)
	p.selIndex = make(map[string]int, len(selKeys))
	for i, k := range selKeys {
		p.selIndex[k] = i
	}
	p.masks = map[*corev1.Pod]uint64{}
	p.aggregate = !usesKey(all, nodeplan.LabelHostname)

	for i := range in.Nodes {
		n := &in.Nodes[i]
		s := &nstate{in: n, name: n.Name(), pool: p.pools[n.NodePool]}
		if s.price = p.prices.nodePrice(n); s.price > 0 {
			s.price += p.prices.nodeCost(n.NodePool)
		}
		used := corev1.ResourceList{} // pods the quick path cannot sum
		var quick vec
		var kept []*corev1.Pod
		for _, pod := range n.Pods {
			if terminal(pod) {
				continue
			}
			if v, ok := quickRequests(pod); ok {
				quick = quick.add(v)
			} else {
				for k, q := range p.podRequests(pod) {
					u := used[k]
					u.Add(q)
					used[k] = u
				}
			}
			if movable(pod) {
				s.movable = append(s.movable, pod)
			}
			if p.relevant(pod) {
				kept = append(kept, pod)
			}
		}
		for _, pod := range s.movable {
			if v, ok := quickRequests(pod); ok {
				s.req = s.req.add(v)
			} else {
				s.req = s.req.add(toVec(p.podRequests(pod)))
			}
		}
		s.disruption = disruptionCost(s.movable)
		node := *n.Node
		node.Status.Allocatable = subtractVec(nodeplan.SubtractResources(n.Node.Status.Allocatable, used), quick)
		s.sched = scheduling.Node{Node: &node, Pods: kept, AttachLimit: n.AttachLimit, VolumeCount: n.VolumeCount}
		s.free = toVec(node.Status.Allocatable)
		s.dest = !n.Initialized.IsZero() && !n.Disrupting && n.Interruption == nil
		p.nodes = append(p.nodes, s)
	}
	slices.SortFunc(p.nodes, func(a, b *nstate) int { return strings.Compare(a.name, b.name) })
	for _, s := range p.nodes {
		p.byName[s.name] = s
	}
	return p
}

// quickRequests returns a pod's requests when they are only cpu and memory on regular containers
// without limits, init containers, overhead, pod-level resources or a resize in progress — most
// pods — without building a ResourceList.
// Each container's amounts round up to the milli-core and the byte, so the sum is never below
// what nodeplan.PodRequests gives.
func quickRequests(pod *corev1.Pod) (vec, bool) {
	// Pod-level resources and in-place resizes follow nodeplan.PodRequests' full rule.
	if len(pod.Spec.InitContainers) > 0 || len(pod.Spec.Overhead) > 0 || pod.Spec.Resources != nil || !nodeplan.StatusRequestsMatchSpec(pod) {
		return vec{}, false
	}
	v := vec{pods: 1}
	for i := range pod.Spec.Containers {
		r := &pod.Spec.Containers[i].Resources
		if len(r.Limits) > 0 {
			return vec{}, false
		}
		for k, q := range r.Requests {
			switch k {
			case corev1.ResourceCPU:
				v.cpu = min(v.cpu+nodeplan.MilliValue(q), nodeplan.MaxMilliValue)
			case corev1.ResourceMemory:
				v.mem = min(v.mem+units(q), nodeplan.MaxMilliValue)
			default:
				return vec{}, false
			}
		}
	}
	return v, true
}

// subtractVec takes v off the cpu, memory and pods of rl (which it modifies), floored at zero.
func subtractVec(rl corev1.ResourceList, v vec) corev1.ResourceList {
	if v == (vec{}) {
		return rl
	}
	if q, ok := rl[corev1.ResourceCPU]; ok {
		rl[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(nodeplan.MilliValue(q)-v.cpu, 0), resource.DecimalSI)
	}
	if q, ok := rl[corev1.ResourceMemory]; ok {
		rl[corev1.ResourceMemory] = *resource.NewQuantity(max(units(q)-v.mem, 0), resource.BinarySI)
	}
	if q, ok := rl[corev1.ResourcePods]; ok {
		rl[corev1.ResourcePods] = *resource.NewQuantity(max(units(q)-v.pods, 0), resource.DecimalSI)
	}
	return rl
}

func (p *planner) podRequests(pod *corev1.Pod) corev1.ResourceList {
	if r, ok := p.requests[pod]; ok {
		return r
	}
	r := nodeplan.PodRequests(pod)
	p.requests[pod] = r
	return r
}

// interPodSelectors collects the label selectors of every inter-pod term of the pods: a bound
// pod matching none of them cannot affect where a moved pod may go, so simulations leave it out
// and keep only its requests. The second result is each selector as a string, for selectorMask.
func interPodSelectors(pods []*corev1.Pod) ([]labels.Selector, []string) {
	seen := map[string]bool{}
	var out []labels.Selector
	var keys []string
	add := func(ls *metav1.LabelSelector) {
		if ls == nil {
			return
		}
		k := ls.String()
		if seen[k] {
			return
		}
		seen[k] = true
		keys = append(keys, k)
		if sel, err := metav1.LabelSelectorAsSelector(ls); err == nil {
			out = append(out, sel)
		} else {
			out = append(out, labels.Everything())
		}
	}
	for _, p := range pods {
		if !movable(p) {
			continue
		}
		for i := range p.Spec.TopologySpreadConstraints {
			add(p.Spec.TopologySpreadConstraints[i].LabelSelector)
		}
		for _, t := range nodeplan.PodAffinityTerms(p) {
			add(t.LabelSelector)
		}
	}
	return out, keys
}

// usesKey reports whether any pod's spread constraints or pod (anti-)affinity terms use key as
// their topology key.
func usesKey(pods []*corev1.Pod, key string) bool {
	for _, p := range pods {
		for _, c := range p.Spec.TopologySpreadConstraints {
			if c.TopologyKey == key {
				return true
			}
		}
		for _, t := range nodeplan.PodAffinityTerms(p) {
			if t.TopologyKey == key {
				return true
			}
		}
	}
	return false
}

// relevant reports whether a bound pod can affect where moved pods go beyond the room it takes:
// it matches an inter-pod selector, has its own anti-affinity (which repels newcomers), or holds a
// host port.
func (p *planner) relevant(pod *corev1.Pod) bool {
	if !active(pod) {
		return false
	}
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		return true
	}
	if hostPorts(pod) {
		return true
	}
	if len(p.selectors) == 0 {
		return false
	}
	set := labels.Set(pod.Labels)
	for _, s := range p.selectors {
		if s.Matches(set) {
			return true
		}
	}
	return false
}

// place records pods moved onto node s: its free room shrinks, and pods that matter to
// inter-pod terms join its view.
func (p *planner) place(s *nstate, pods []*corev1.Pod) {
	alloc := s.sched.Node.Status.Allocatable
	for _, pod := range pods {
		r := p.podRequests(pod)
		alloc = nodeplan.SubtractResources(alloc, r)
		if p.relevant(pod) {
			bound := pod.DeepCopy()
			bound.Spec.NodeName = s.name
			s.sched.Pods = append(s.sched.Pods, bound)
		}
	}
	s.sched.Node.Status.Allocatable = alloc
	s.free = toVec(alloc)
	s.receives = true
}

func sortedMapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// selectorMask returns the bits of the pass's selectors (planner.selectors) with the given
// strings, and false when some string is not among the first 64 of them. Every simulation asks
// which bound pods its moving pods' selectors match; with the masks of maskOf, remembered for
// the pass, that costs an AND per pod instead of matching labels against each selector again.
func (p *planner) selectorMask(keys []string) (uint64, bool) {
	var m uint64
	for _, k := range keys {
		i, ok := p.selIndex[k]
		if !ok || i >= 64 {
			return 0, false
		}
		m |= 1 << i
	}
	return m, true
}

// maskOf returns which of the pass's first 64 selectors match the pod's labels, bit i for
// planner.selectors[i], computed once per pod for the pass.
func (p *planner) maskOf(pod *corev1.Pod) uint64 {
	if m, ok := p.masks[pod]; ok {
		return m
	}
	var m uint64
	set := labels.Set(pod.Labels)
	for i, s := range p.selectors[:min(len(p.selectors), 64)] {
		if s.Matches(set) {
			m |= 1 << i
		}
	}
	p.masks[pod] = m
	return m
}
